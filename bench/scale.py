#!/usr/bin/env python3
"""Scale benchmark (issue 27): `export` and `verify` of a session of N entries (default 1M).

    python3 bench/scale.py                              # 1,000,000 entries, ours only
    python3 bench/scale.py --reference-python /work/main/target/ci-tools/venv/bin/python
    python3 bench/scale.py --entries 100000 --runs 3 --no-build
    python3 bench/scale.py --no-build --keep            # prints the temp dir it kept
    python3 bench/scale.py --no-build --reuse DIR --bin OTHER/attenu-hook   # same ledger, another build

Standard library only; Linux (`/usr/bin/time -v` gives each process's maximum RSS).

 1. Builds `attenu-hook` and `examples/big_ledger.rs` with `cargo build --release`.
 2. Makes a template session with the real hook: SessionStart, one reviewer Read allowed and
    its PostToolUse outcome, SessionEnd.
 3. Runs the example, which grows a session of --entries entries from that template through
    `Ledger::append` (a fresh call id and tool_use_id per allow/outcome pair), so the chain,
    the tree and the sealed checkpoint are the hook's own, signed with the project's keys.
 4. Times `attenu-hook export` (wall clock and maximum RSS), --runs times, each to a new path
    after `sync` (so no run pays for the growth's writeback or for freeing the run before's
    bundle; replacing a bundle of 750 MB adds its removal, measured apart in BENCHMARKS.md).
 5. Times `attenu-hook verify BUNDLE --pub anchor.pub` the same way, checking exit 0.
 6. With --reference-python, times the reference `attenu_guard.evidence.verify_bundle` on the
    same bundle once (tests/support/ref_verify.py), checking it answers ok.

Everything is made under a temp dir (removed at the end unless --keep; --reuse DIR times a kept
one again without growing the session anew). A 1M-entry session is
about 750 MB of ledger and as much again of bundle. Run it on an idle machine: export's wall
time is mostly the fsync of the bundle, so the disk's state shows in it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "target" / "release" / "attenu-hook"
EXAMPLE = REPO / "target" / "release" / "examples" / "big_ledger"
REF_VERIFY = REPO / "tests" / "support" / "ref_verify.py"


def hook(project: Path, payload: dict) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["CLAUDE_PROJECT_DIR"] = str(project)
    subprocess.run([str(BIN)], input=json.dumps(payload), text=True, env=env,
                   capture_output=True, check=True)


def template(project: Path, session: str) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: r\ntools: Read\n---\n")
    base = {"session_id": session, "cwd": str(project), "transcript_path": f"/x/{session}.jsonl"}
    call = {"tool_name": "Read", "tool_input": {"file_path": f"{project}/src/app.py"},
            "tool_use_id": "t0", "agent_id": "a-r", "agent_type": "reviewer"}
    hook(project, {**base, "hook_event_name": "SessionStart", "source": "startup"})
    hook(project, {**base, **call, "hook_event_name": "PreToolUse", "permission_mode": "default"})
    hook(project, {**base, **call, "hook_event_name": "PostToolUse", "tool_response": {"ok": True}})
    hook(project, {**base, "hook_event_name": "SessionEnd", "reason": "other"})


def timed(cmd: list[str], ok_codes=(0,)) -> dict:
    """One process under /usr/bin/time -v: wall seconds, CPU seconds, max RSS in MB."""
    t0 = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode not in ok_codes:
        raise SystemExit(f"{cmd[0]} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")

    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: ([0-9.]+)", out.stderr)
        return float(m.group(1)) if m else float("nan")

    return {"wall_s": round(wall, 2),
            "cpu_s": round(field("User time (seconds)") + field("System time (seconds)"), 2),
            "max_rss_mb": round(field("Maximum resident set size (kbytes)") / 1024, 1),
            "stdout": out.stdout}


def summary(runs: list[dict]) -> dict:
    return {"runs": [{k: r[k] for k in ("wall_s", "cpu_s", "max_rss_mb")} for r in runs],
            "median_wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
            "max_rss_mb": max(r["max_rss_mb"] for r in runs)}


def main() -> int:
    global BIN
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--reference-python", help="a Python with attenu-guard 0.21.0 installed")
    ap.add_argument("--no-build", action="store_true", help="use the release builds as they are")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (its path is printed)")
    ap.add_argument("--reuse", type=Path, help="a temp dir --keep kept: its session is timed again")
    ap.add_argument("--bin", type=Path, default=BIN, help="the attenu-hook binary to time")
    args = ap.parse_args()
    BIN = args.bin.resolve()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--bin", "attenu-hook", "--example", "big_ledger"],
                       cwd=REPO, check=True)
    tmp = args.reuse.resolve() if args.reuse else Path(tempfile.mkdtemp(prefix="attenu-scale-bench-"))
    try:
        project = tmp / "project"
        ledger = project / ".attenu" / "ledger-big.jsonl"
        grow_s = 0.0
        if not args.reuse:
            template(project, "tpl")
            t0 = time.perf_counter()
            subprocess.run([str(EXAMPLE), str(project), "tpl", "big", str(args.entries)], check=True)
            grow_s = time.perf_counter() - t0
        bundle = tmp / "bundle-big.json"
        key = project / ".attenu" / "anchor.pub"
        export, verify = [], []
        for _ in range(args.runs):
            # Each run a first export, after the writeback of what came before it: otherwise a
            # run pays for freeing the previous run's 750 MB bundle and for the growth's flush.
            bundle.unlink(missing_ok=True)
            os.sync()
            export.append(timed([str(BIN), "export", "--project", str(project), "--session", "big",
                                 "--out", str(bundle)]))
        for _ in range(args.runs):
            verify.append(timed([str(BIN), "verify", str(bundle), "--pub", str(key)]))
        verdict = verify[-1]["stdout"].strip().splitlines()[-1]
        if not verdict.startswith("VALID:"):
            raise SystemExit(f"verify did not answer VALID: {verdict}")
        result = {"entries": args.entries, "ledger_mb": round(ledger.stat().st_size / 2**20, 1),
                  "bundle_mb": round(bundle.stat().st_size / 2**20, 1), "grow_s": round(grow_s, 1),
                  "export": summary(export), "verify": summary(verify), "verdict": verdict[:120],
                  "load_avg_1m": os.getloadavg()[0]}
        if args.reference_python:
            ref = timed([args.reference_python, str(REF_VERIFY), str(bundle), str(key)])
            answer = json.loads(ref["stdout"])
            if answer.get("ok") is not True:
                raise SystemExit(f"the reference rejected the bundle: {answer}")
            result["reference_verify"] = summary([ref])
        print(json.dumps(result, indent=2))
        return 0
    finally:
        if args.keep or args.reuse:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
