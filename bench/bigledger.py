#!/usr/bin/env python3
"""Re-verify of a big ledger whose sealed checkpoint is lost (issue 27).

    python3 bench/bigledger.py [--bin target/release/attenu-hook] [--sizes 100000,1000000]

For each size: a project where the hook itself records a template session (two reviewer
Reads, with outcomes), from which `examples/big_ledger.rs --lose-checkpoint` grows session s1
to N entries and then removes its sealed checkpoint; then
one PreToolUse timed: it re-verifies the whole ledger from GENESIS before it appends. A call
that ran out of time is followed by more calls until one is allowed (a resumed re-verify), at
most --max-calls. Prints, per size, each call's wall and CPU time (user + system, all threads:
on a shared machine the CPU time is the steadier figure) and reason code, the totals per entry,
the peak RSS of the hook processes and the load average.
Standard library only. Build first: cargo build --release --example big_ledger.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def payload(project, event, tool_use_id, path, response=None, session="s1"):
    p = {"session_id": session, "transcript_path": f"/home/u/.claude/projects/p/{session}.jsonl",
         "cwd": project, "permission_mode": "default", "hook_event_name": event,
         "tool_name": "Read", "tool_input": {"file_path": path}, "tool_use_id": tool_use_id,
         "agent_id": "a-reviewer", "agent_type": "reviewer"}
    if response is not None:
        p["tool_response"] = response
    return p


def hook(binary, project, p):
    """Runs one hook call: (wall seconds, CPU seconds of the process, the result)."""
    env = dict(os.environ, CLAUDE_PROJECT_DIR=project)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run([binary], input=json.dumps(p).encode(), capture_output=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r


def child_rss_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/attenu-hook"))
    ap.add_argument("--gen", default=os.path.join(ROOT, "target/release/examples/big_ledger"))
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--max-calls", type=int, default=20)
    args = ap.parse_args()
    results = []
    for n in [int(s) for s in args.sizes.split(",")]:
        project = tempfile.mkdtemp(prefix="attenu-bigledger-")
        try:
            os.makedirs(os.path.join(project, ".claude/agents"))
            with open(os.path.join(project, ".claude/agents/reviewer.md"), "w") as f:
                f.write("---\nname: reviewer\ndescription: reviews\ntools: Read\n---\nbody\n")
            for i in range(2):
                hook(args.bin, project, payload(project, "PreToolUse", f"t{i}", f"/x{i}", session="tpl"))
                hook(args.bin, project, payload(project, "PostToolUse", f"t{i}", f"/x{i}", "ok", session="tpl"))
            subprocess.run([args.gen, project, "tpl", "s1", str(n), "--lose-checkpoint"], check=True)
            size = os.path.getsize(os.path.join(project, ".attenu/ledger-s1.jsonl"))
            # A ledger this big was written over days, not just now: its writeback is not the call's.
            os.sync()
            calls = []
            for attempt in range(args.max_calls):
                secs, cpu, r = hook(args.bin, project, payload(project, "PreToolUse", f"z{attempt}", "/z"))
                out = r.stdout.decode()
                # `{}` (no objection) or an explicit allow; a deny names its reason code.
                allowed = r.returncode == 0 and '"deny"' not in out and '"continue":false' not in out
                code = out.split("[", 1)[1].split("]", 1)[0] if "[" in out else None
                calls.append({"seconds": round(secs, 3), "cpu_s": round(cpu, 3),
                              "allowed": allowed, "reason": code})
                if allowed:
                    break
            wall = sum(c["seconds"] for c in calls)
            cpu = sum(c["cpu_s"] for c in calls)
            res = {"entries": n, "ledger_mb": round(size / 1e6, 1), "calls_until_allowed": len(calls),
                   "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                   "wall_us_per_entry": round(wall * 1e6 / n, 2),
                   "cpu_us_per_entry": round(cpu * 1e6 / n, 2), "calls": calls,
                   "peak_child_rss_mb": round(child_rss_mb(), 1),
                   "loadavg": os.getloadavg()[0]}
            print(json.dumps(res), flush=True)
            results.append(res)
        finally:
            shutil.rmtree(project, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
