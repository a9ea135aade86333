#!/usr/bin/env python3
"""Re-verify of a big ledger whose sealed checkpoint is lost (issue 27).

    python3 bench/bigledger.py [--bin target/release/attenu-hook] [--sizes 100000,1000000]

For each size: a project whose session the hook itself opens (two reviewer Reads, with
outcomes), grown to N entries by `examples/bigledger.rs` (which removes the checkpoint), then
one PreToolUse timed: it re-verifies the whole ledger from GENESIS before it appends. Prints
the wall time, microseconds per entry, the hook's answer and its peak RSS. A call that ran out
of time is followed by more calls until one is allowed (a resumed re-verify), each timed.
Standard library only. Build first: cargo build --release --example bigledger.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def payload(project, event, tool_use_id, path, response=None):
    p = {"session_id": "s1", "transcript_path": "/home/u/.claude/projects/p/s1.jsonl",
         "cwd": project, "permission_mode": "default", "hook_event_name": event,
         "tool_name": "Read", "tool_input": {"file_path": path}, "tool_use_id": tool_use_id,
         "agent_id": "a-reviewer", "agent_type": "reviewer"}
    if response is not None:
        p["tool_response"] = response
    return p


def hook(binary, project, p):
    env = dict(os.environ, CLAUDE_PROJECT_DIR=project)
    t = time.perf_counter()
    r = subprocess.run([binary], input=json.dumps(p).encode(), capture_output=True, env=env)
    return time.perf_counter() - t, r


def child_rss_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/attenu-hook"))
    ap.add_argument("--gen", default=os.path.join(ROOT, "target/release/examples/bigledger"))
    ap.add_argument("--sizes", default="100000,1000000")
    args = ap.parse_args()
    results = []
    for n in [int(s) for s in args.sizes.split(",")]:
        project = tempfile.mkdtemp(prefix="attenu-bigledger-")
        try:
            os.makedirs(os.path.join(project, ".claude/agents"))
            with open(os.path.join(project, ".claude/agents/reviewer.md"), "w") as f:
                f.write("---\nname: reviewer\ndescription: reviews\ntools: Read\n---\nbody\n")
            for i in range(2):
                hook(args.bin, project, payload(project, "PreToolUse", f"t{i}", f"/x{i}"))
                hook(args.bin, project, payload(project, "PostToolUse", f"t{i}", f"/x{i}", "ok"))
            subprocess.run([args.gen, project, "s1", str(n)], check=True)
            size = os.path.getsize(os.path.join(project, ".attenu/ledger-s1.jsonl"))
            calls = []
            for attempt in range(20):
                secs, r = hook(args.bin, project, payload(project, "PreToolUse", f"z{attempt}", "/z"))
                out = r.stdout.decode()
                allowed = '"permissionDecision":"allow"' in out.replace(" ", "")
                calls.append({"seconds": round(secs, 3), "allowed": allowed,
                              "answer": out[:200] if not allowed else "allow"})
                if allowed:
                    break
            first = calls[0]["seconds"]
            res = {"entries": n, "ledger_mb": round(size / 1e6, 1), "first_call_s": first,
                   "us_per_entry": round(first * 1e6 / n, 2), "calls": calls,
                   "peak_child_rss_mb": round(child_rss_mb(), 1)}
            print(json.dumps(res), flush=True)
            results.append(res)
        finally:
            shutil.rmtree(project, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
