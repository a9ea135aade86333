#!/usr/bin/env python3
"""Where one hook call's time goes: interleaved A/B timings of whole processes.

    python3 bench/breakdown.py [--rounds 200]

Run after `python3 bench/run.py` (it uses the release binary and the cached 10,000-entry
ledger under target/bench-cache/). Standard library only, plus `cc` for one variant.

Each round runs every variant once, in turn, so a change in machine load hits all of them
alike. Variants:

  bin_true        /bin/true through the same harness: the cost of spawning anything
  version         attenu-hook --version: our process start and exit, no hook work
  call_10k        one PreToolUse (reviewer Read, allowed) on the 10,000-entry ledger, each
                  followed by its PostToolUse (untimed) so no call stays open
  call_10k_nosync the same with fsync/fdatasync made no-ops by an LD_PRELOAD shim (cc-built
                  under target/), so call_10k - call_10k_nosync is what durability costs
  call_open256    the same on a session holding 256 open calls (allows with no PostToolUse,
                  the cap), so the checkpoint carries 256 pending entries
  call_empty      a new session per call (empty ledger: root, spawns and decision written)

Nothing here changes the binary; the shim only replaces two libc calls in the child.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as b  # noqa: E402

SHIM = r"""
int fsync(int fd) { (void)fd; return 0; }
int fdatasync(int fd) { (void)fd; return 0; }
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = ap.parse_args()
    binary = b.TARGET / "release" / "attenu-hook"
    src = b.ours_attenu(10000)
    if not binary.exists() or not src.is_dir():
        sys.exit("run `python3 bench/run.py` first (release binary and cached ledgers)")
    ours = b.Ours(binary)
    shim = b.CACHE / "nosync.so"
    have_shim = True
    if not shim.exists():
        c = b.CACHE / "nosync.c"
        c.write_text(SHIM)
        have_shim = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(c)]).returncode == 0
    tmp = Path(tempfile.mkdtemp(prefix="attenu-breakdown-"))
    try:
        p10k = str(tmp / "p10k")
        shutil.copytree(b.SAMPLE, p10k, ignore=shutil.ignore_patterns(".attenu"))
        shutil.copytree(src, Path(p10k) / ".attenu")
        # First call after the copy re-verifies from GENESIS; then open 256 calls on another
        # session of the same project.
        ours.hook(p10k, b.pre_payload(p10k, b.SESSION, "toolu_first"))
        ours.hook(p10k, b.post_payload(p10k, b.SESSION, "toolu_first"))
        for i in range(300):
            dt, rc, out, err = ours.hook(p10k, b.pre_payload(p10k, "bench-open", f"toolu_o{i}"))
            if rc != 0 or not b.is_allow(out):
                sys.exit(f"setup call failed: {out!r} {err!r}")
        env = ours.env(p10k)
        env_nosync = dict(env, LD_PRELOAD=str(shim))
        def closed(tu: str, e: dict):
            """A timed PreToolUse, then its PostToolUse (untimed), so no call stays open."""
            r = b.timed([ours.bin], b.enc(b.pre_payload(p10k, b.SESSION, tu)), e)
            b.timed([ours.bin], b.enc(b.post_payload(p10k, b.SESSION, tu)), env)
            return r

        variants = {
            "bin_true": lambda i: b.timed(["/bin/true"], b"", env),
            "version": lambda i: b.timed([ours.bin, "--version"], b"", env),
            "call_10k": lambda i: closed(f"toolu_a{i}", env),
            "call_open256": lambda i: b.timed([ours.bin], b.enc(b.pre_payload(p10k, "bench-open", f"toolu_b{i}")), env),
            "call_empty": lambda i: b.timed([ours.bin], b.enc(b.pre_payload(p10k, f"bench-e{i}", "toolu_e")), env),
        }
        if have_shim:
            variants["call_10k_nosync"] = lambda i: closed(f"toolu_c{i}", env_nosync)
        ms: dict[str, list[float]] = {k: [] for k in variants}
        for i in range(args.rounds):
            for k, f in variants.items():
                dt, rc, out, err = f(i)
                if rc != 0:
                    sys.exit(f"{k} failed: rc={rc} {out!r} {err!r}")
                ms[k].append(dt)
        res = {k: b.stats(v) for k, v in ms.items()}
        res["loadavg"] = os.getloadavg()
        state = Path(p10k) / ".attenu" / "ledger-bench-open.state.json"
        res["open256_checkpoint_bytes"] = state.stat().st_size
        res["plain_checkpoint_bytes"] = (Path(p10k) / ".attenu" / f"ledger-{b.SESSION}.state.json").stat().st_size
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for k in variants:
        s = res[k]
        print(f"{k:16} p50 {s['p50']:7.3f} ms  p99 {s['p99']:7.3f} ms  mean {s['mean']:7.3f} ms")
    p = {k: res[k]["p50"] for k in variants}
    print("\nmedians, by difference:")
    print(f"  spawning any process (bin_true)             {p['bin_true']:.3f} ms")
    print(f"  our process start/exit beyond that          {p['version'] - p['bin_true']:.3f} ms")
    if "call_10k_nosync" in p:
        print(f"  hook work without fsync (nosync - version)  {p['call_10k_nosync'] - p['version']:.3f} ms")
        print(f"  fdatasync of the append (call - nosync)     {p['call_10k'] - p['call_10k_nosync']:.3f} ms")
    print(f"  256 open calls in the checkpoint            {p['call_open256'] - p['call_10k']:+.3f} ms "
          f"(checkpoint {res['open256_checkpoint_bytes']} bytes vs {res['plain_checkpoint_bytes']})")
    print(f"  empty ledger vs 10k ledger                  {p['call_empty'] - p['call_10k']:+.3f} ms")
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
