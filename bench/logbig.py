#!/usr/bin/env python3
"""`attenu-hook log` on a big session ledger: wall, CPU and maximum RSS of `log --summary`,
`log --sessions` and `log --session big` (its table read to the end, as `| tail -1` would),
for one or more builds, interleaved run by run.

    python3 bench/logbig.py --keep --bin A                   # grows a 1M-entry session, keeps it
    python3 bench/logbig.py --reuse DIR --bin OLD --bin NEW --runs 3

Standard library only; Linux (`/usr/bin/time -v`). The session is grown as bench/scale.py
grows it (the hook records a template, `examples/big_ledger.rs` repeats it through
`Ledger::append`), so it needs `cargo build --release --example big_ledger` first (--gen).
Every build's output of each command must be the same bytes (checked by their SHA-256).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scale

COMMANDS = {
    "summary": ["log", "--summary"],
    "sessions": ["log", "--sessions"],
    "table": ["log", "--session", "big"],
}


def timed(cmd: list[str]) -> dict:
    """One process under /usr/bin/time -v, its stdout read to the end and hashed."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-v", *cmd], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    digest, last = hashlib.sha256(), b""
    for chunk in iter(lambda: p.stdout.read(1 << 16), b""):
        digest.update(chunk)
        last = (last + chunk)[-4096:]
    err = p.stderr.read().decode()
    code = p.wait()
    wall = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"{cmd} exited {code}:\n{err[-2000:]}")

    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: ([0-9.]+)", err)
        return float(m.group(1)) if m else float("nan")

    return {"wall_s": round(wall, 2),
            "cpu_s": round(field("User time (seconds)") + field("System time (seconds)"), 2),
            "max_rss_mb": round(field("Maximum resident set size (kbytes)") / 1024, 1),
            "sha256": digest.hexdigest()[:16],
            "last_line": last.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode(errors="replace")[:100]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bin", type=Path, action="append", required=True,
                    help="a build to time (repeat to compare; interleaved run by run)")
    ap.add_argument("--gen", type=Path, default=scale.EXAMPLE)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (its path is printed)")
    ap.add_argument("--reuse", type=Path, help="a dir --keep kept")
    args = ap.parse_args()
    bins = [b.resolve() for b in args.bin]
    tmp = args.reuse.resolve() if args.reuse else Path(tempfile.mkdtemp(prefix="attenu-logbig-"))
    try:
        project = tmp / "project"
        if not args.reuse:
            scale.BIN = bins[0]
            scale.template(project, "tpl")
            subprocess.run([str(args.gen), str(project), "tpl", "big", str(args.entries)], check=True)
        ledger = project / ".attenu" / "ledger-big.jsonl"
        results: dict = {str(b): {name: [] for name in COMMANDS} for b in bins}
        for _ in range(args.runs):
            for name, cmd in COMMANDS.items():
                for b in bins:
                    results[str(b)][name].append(timed([str(b), *cmd, "--project", str(project)]))
        for name in COMMANDS:
            outputs = {r["sha256"] for b in bins for r in results[str(b)][name]}
            if len(outputs) > 1:
                raise SystemExit(f"`{name}` differs between builds: {outputs}")
        print(json.dumps({"entries": args.entries, "ledger_mb": round(ledger.stat().st_size / 2**20, 1),
                          "load_avg_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
                          "results": results}, indent=1))
        return 0
    finally:
        if args.keep or args.reuse:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
