"""Helpers run with the reference's own Python (target/bench-venv), never with ours.

`bench/run.py` calls this file as a separate process. It imports the reference recipe's
`hook.py` from the directory given with --hook-dir (extracted from the attenu-guard 0.21.0
sdist at run time, under target/; the recipe's code is never committed here).

    python ref_tools.py build-ledger --hook-dir D --project P --session S --sizes 1000,10000 --out DIR
    python ref_tools.py count --ledger FILE

`build-ledger` constructs the reference's ledger of N entries in ONE process with the recipe's
own functions, exactly as its hook does on each PreToolUse call minus the reload-and-verify
step (which is what makes growing a 100,000-entry ledger call by call take days):
`derive_roster`, `_build_chain` (a fresh delegation chain per call, as each hook process
builds), `decide`, the new entries `root.audit_log().entries[structural:]`, `Ledger.rechain`
onto the current head, and the same `json.dumps(entry, sort_keys=True)` line format. The
payload sequence is the one run.py uses (see `payload_for`). Every snapshot is then checked
with `AuditLog.verify`, the same check the hook runs on load.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def payload_for(i: int, project: str, session: str) -> tuple[dict, bool]:
    """The i-th PreToolUse of the ledger-building sequence: a reviewer Read (allowed), and
    every 10th call a reviewer Write (denied). Must match `ref_payload` in run.py."""
    deny = i % 10 == 9
    tool = "Write" if deny else "Read"
    tool_input = {"file_path": f"{project}/src/app.py"}
    if deny:
        tool_input["content"] = "x = 1\n"
    return ({
        "session_id": session,
        "transcript_path": f"/nonexistent/{session}.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "agent_id": "a0bench",
        "agent_type": "reviewer",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_build_{i}",
    }, deny)


def build_ledger(args: argparse.Namespace) -> int:
    sys.path.insert(0, args.hook_dir)
    import hook  # the reference recipe, extracted at run time
    from attenu_guard import AuditLog

    project = Path(args.project)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root_dir = hook.find_project_root(project)
    roster = hook.derive_roster(root_dir)
    session = hook.safe_session_name(args.session)
    chain_id = f"cc-{session}-{roster.digest()[:8]}"
    config = dict(hook.DEFAULT_CONFIG)
    t0 = time.perf_counter()
    lines: list[str] = []
    entries: list[dict] = []
    structural_present = False
    i = 0
    report = {"method": "constructed in one process with the recipe's own functions", "sizes": {}}
    for target in sizes:
        while len(lines) < target:
            payload, _ = payload_for(i, str(project), args.session)
            i += 1
            root, children = hook._build_chain(roster, chain_id)
            structural = len(root.audit_log().entries)
            hook.decide(payload, roster, root, children, config)
            made = root.audit_log().entries
            new = made[structural:] if structural_present else made
            structural_present = True
            prev = entries[-1]["hash"] if entries else hook.GENESIS
            seq = entries[-1]["seq"] + 1 if entries else 0
            for e in hook.Ledger.rechain(new, prev, seq):
                entries.append(e)
                lines.append(json.dumps(e, sort_keys=True) + "\n")
        # A snapshot holds exactly `target` lines (the last call may have made more; none here:
        # after the 3 structural entries every call adds exactly one).
        snap = lines[:target]
        ok, why = AuditLog.verify(entries[:target])
        if not ok:
            print(f"constructed ledger does not verify at {target}: {why}", file=sys.stderr)
            return 1
        path = out / f"ref-{target}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(snap)
        report["sizes"][str(target)] = {"file": str(path), "entries": len(snap),
                                        "calls": i, "seconds": round(time.perf_counter() - t0, 2)}
    print(json.dumps(report))
    return 0


def count(args: argparse.Namespace) -> int:
    """Decision entries and whether the chain verifies, by the reference's own check."""
    from attenu_guard import AuditLog
    entries = AuditLog.load(args.ledger)
    ok, why = AuditLog.verify(entries)
    decisions = sum(1 for e in entries if e.get("event") in ("allow", "deny"))
    print(json.dumps({"entries": len(entries), "decisions": decisions, "verifies": bool(ok),
                      "why": None if ok else str(why)}))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build-ledger")
    b.add_argument("--hook-dir", required=True)
    b.add_argument("--project", required=True)
    b.add_argument("--session", required=True)
    b.add_argument("--sizes", required=True)
    b.add_argument("--out", required=True)
    c = sub.add_parser("count")
    c.add_argument("--ledger", required=True)
    args = ap.parse_args()
    return {"build-ledger": build_ledger, "count": count}[args.cmd](args)


if __name__ == "__main__":
    os.environ.pop("CLAUDE_PROJECT_DIR", None)
    sys.exit(main())
