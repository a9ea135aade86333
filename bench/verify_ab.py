#!/usr/bin/env python3
"""Interleaved A/B of `attenu-hook verify` on one big bundle (issue 37's 1M-entry target).

    python3 bench/scale.py --keep                 # grows a 1M-entry session, prints "kept DIR"
    python3 bench/verify_ab.py DIR --a OLD/attenu-hook --b NEW/attenu-hook [--runs 5]

Runs `verify DIR/bundle-big.json --pub DIR/project/.attenu/anchor.pub` with build A, then B,
then A... (--runs times each), every process under `/usr/bin/time -v`, and prints each run and
the medians of wall time, CPU time (user + system, all threads) and maximum RSS per build. It
also checks that both builds exit 0 and print byte-for-byte the same report, as text and as
`--json` (once each, outside the timed runs): a change to the verifier's structure must not
change what it says. Interleaving keeps a machine's drift (other work, page cache, thermal)
out of the comparison; on a shared machine compare the CPU figures first.

Standard library only; Linux. The bundle must exist: run scale.py with --keep first, or pass
a DIR from an earlier run (`--reuse DIR` there times export again).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import timed  # noqa: E402  (one timing helper for both scripts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path, help="a directory scale.py --keep kept")
    ap.add_argument("--a", type=Path, required=True, help="the previous build")
    ap.add_argument("--b", type=Path, required=True, help="the build under test")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    bundle = args.dir / "bundle-big.json"
    key = args.dir / "project" / ".attenu" / "anchor.pub"
    if not bundle.is_file():
        raise SystemExit(f"no bundle at {bundle}: run bench/scale.py --keep first")
    builds = {"a": str(args.a.resolve()), "b": str(args.b.resolve())}

    for flag in ([], ["--json"]):
        outs = {n: subprocess.run([b, "verify", str(bundle), "--pub", str(key), *flag],
                                  capture_output=True) for n, b in builds.items()}
        for n, o in outs.items():
            if o.returncode != 0:
                raise SystemExit(f"build {n} exited {o.returncode}: {o.stdout[-500:]!r} {o.stderr[-500:]!r}")
        if outs["a"].stdout != outs["b"].stdout:
            raise SystemExit(f"the builds' reports differ ({flag or 'text'})")

    runs: dict[str, list[dict]] = {"a": [], "b": []}
    for _ in range(args.runs):
        for n, b in builds.items():
            r = timed([b, "verify", str(bundle), "--pub", str(key)])
            r.pop("stdout")
            runs[n].append(r)
            print(n, r, file=sys.stderr)
    result = {
        "bundle_mb": round(bundle.stat().st_size / 2**20, 1),
        "same_report": True,
        "load_avg_1m": os.getloadavg()[0],
        **{n: {"build": builds[n],
               "median_wall_s": round(statistics.median(r["wall_s"] for r in rs), 2),
               "median_cpu_s": round(statistics.median(r["cpu_s"] for r in rs), 2),
               "max_rss_mb": max(r["max_rss_mb"] for r in rs),
               "runs": rs} for n, rs in runs.items()},
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
