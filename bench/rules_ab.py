#!/usr/bin/env python3
"""A Bash call under argument rules against one without, same build, calls interleaved.

    python3 bench/rules_ab.py --bin target/release/attenu-hook [--calls 300]

Two copies of the sample project, each with one more agent: `whole` (`tools: Bash`) and
`ruled` (`tools: Bash(git tag:*), Bash(git log *)`, with the settings' `deny` of
`Bash(rm *)` and `ask` of `Bash(git push:*)`). Each timed call is that agent's Bash of
`git tag -l && git log --oneline -5 | git tag --contains HEAD` (allowed in both) on a session
of ~200 entries, timed as bench/run.py times a call (spawn, payload on stdin, answer read,
reaped). Also times the `reviewer`'s Read in both projects, which rules do not touch. Prints
medians and p99s and writes bench/rules-ab.json. Standard library only.
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

COMMAND = "git tag -l && git log --oneline -5 | git tag --contains HEAD"


def project(root: Path, name: str, tools: str, settings_extra: dict) -> str:
    dst = sample_copy(root, name)
    (dst / ".claude/agents/bench.md").write_text(f"---\nname: bench\ntools: {tools}\n---\nBench.\n")
    settings_path = dst / ".claude/settings.json"
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    perms = settings.setdefault("permissions", {})
    for k, v in settings_extra.items():
        perms.setdefault(k, []).extend(v)
    settings_path.write_text(json.dumps(settings))
    return str(dst)


def bash_payload(proj: str, session: str, n: int) -> dict:
    p = bench.pre_payload(proj, session, f"toolu_{n:06d}")
    p["agent_type"] = "bench"
    p["tool_name"] = "Bash"
    p["tool_input"] = {"command": COMMAND, "description": "bench"}
    return p


call = allowed_call


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--out", default=str(bench.BENCH / "rules-ab.json"))
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="attenu-rules-ab-"))
    try:
        binary = shutil.copy(args.bin, root / "bin")
        whole = project(root, "whole", "Bash, Read", {})
        ruled = project(root, "ruled", "Bash(git tag:*), Bash(git log *), Read",
                        {"deny": ["Bash(rm *)"], "ask": ["Bash(git push:*)"]})
        os.sync()
        time.sleep(bench.SETTLE_S)
        for i in range(200):  # sessions of ~200 entries
            for proj in (whole, ruled):
                call(binary, proj, bash_payload(proj, "s", i))
        res = {k: [] for k in ("whole_bash", "ruled_bash", "whole_read", "ruled_read")}
        projects = {"whole": whole, "ruled": ruled}

        def one_round(i: int, side: str) -> None:
            proj = projects[side]
            res[f"{side}_bash"].append(call(binary, proj, bash_payload(proj, "s", 1000 + i)))
            res[f"{side}_read"].append(call(binary, proj, bench.pre_payload(proj, "s", f"toolu_r{i:06d}")))

        interleaved(args.calls, ["whole", "ruled"], one_round)
        summary = {k: p50_p99(v) for k, v in res.items()}
        summary["ruled_minus_whole_bash_p50"] = round(summary["ruled_bash"]["p50"] - summary["whole_bash"]["p50"], 3)
        summary["calls"] = args.calls
        summary["command"] = COMMAND
        print(json.dumps(summary, indent=2))
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
