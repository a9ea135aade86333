#!/usr/bin/env python3
"""Side-by-side A/B of hook builds, calls interleaved so both see the same machine.

    python3 bench/ab.py --a OLD_BINARY --b NEW_BINARY [--calls 200]
    python3 bench/ab.py --b NEW_BINARY --ship        # the same build, shipping off vs on

Cases, each a PreToolUse of the sample project's reviewer (Read, allowed), timed as a whole
process like bench/run.py does (spawn, payload on stdin, answer read, reaped):

  empty    a new session's first call (the ledger is created)
  append   a call on a session of ~200 entries (the typical call)

With --ship, A and B are the same binary and B's project has `[ship] url = "file://..."`, so
checkpoints are queued every `checkpoint_every` (64) entries and a detached shipper drains
them: the p50 shows a typical call, the p99 the calls that queue a checkpoint. Prints medians
and p99s and writes bench/ab.json. Standard library only; reuses bench/run.py's timing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402
from abkit import allowed_call, interleaved, p50_p99, sample_copy  # noqa: E402


def project(root: Path, name: str, ship_to: Path | None) -> str:
    dst = sample_copy(root, name)
    if ship_to is not None:
        (dst / ".attenu").mkdir(mode=0o700)
        (dst / ".attenu" / "config.toml").write_text(f'[ship]\nurl = "file://{ship_to}"\n')
    return str(dst)


def call(binary: str, proj: str, session: str, n: int) -> float:
    return allowed_call(binary, proj, bench.pre_payload(proj, session, f"toolu_{n:06d}"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", help="the A build (default: the B build, for --ship)")
    ap.add_argument("--b", required=True, help="the B build")
    ap.add_argument("--ship", action="store_true", help="B ships to a directory; A does not")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--out", default=str(bench.BENCH / "ab.json"))
    args = ap.parse_args()
    a_bin = args.a or args.b
    root = Path(tempfile.mkdtemp(prefix="attenu-ab-"))
    try:
        a_bin = shutil.copy(a_bin, root / "a-bin")
        b_bin = shutil.copy(args.b, root / "b-bin")
        # The hook starts its shipper from beside itself (src/ship/spawn.rs).
        shipper = Path(args.b).with_name("attenu-hook-ship")
        if args.ship and shipper.is_file():
            shutil.copy(shipper, root / "attenu-hook-ship")
        share = root / "share"
        share.mkdir()
        ship_b = share if args.ship else None
        # Projects older than the derivation cache's settle time, as in a real project.
        pa = project(root, "pa", None)
        pb = project(root, "pb", ship_b)
        empties = [(project(root, f"ea{i}", None), project(root, f"eb{i}", ship_b)) for i in range(args.calls)]
        os.sync()
        time.sleep(bench.SETTLE_S)
        for i in range(200):  # the append case's sessions, ~200 entries each
            call(a_bin, pa, "s-append", i)
            call(b_bin, pb, "s-append", i)
        res = {"a": {"empty": [], "append": []}, "b": {"empty": [], "append": []}}
        builds = {"a": (a_bin, pa, 0), "b": (b_bin, pb, 1)}

        def one_round(i: int, side: str) -> None:
            binary, busy, k = builds[side]
            res[side]["empty"].append(call(binary, empties[i][k], "s-empty", 0))
            res[side]["append"].append(call(binary, busy, "s-append", 1000 + i))

        interleaved(args.calls, ["a", "b"], one_round)
        summary = {side: {case: p50_p99(ms) for case, ms in cases.items()} for side, cases in res.items()}
        summary["a_build"] = args.a or args.b
        summary["b_build"] = args.b
        summary["b_ships"] = args.ship
        summary["calls"] = args.calls
        if args.ship:
            summary["objects_shipped"] = sum(1 for _ in share.rglob("*") if _.is_file())
        print(json.dumps(summary, indent=2))
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
