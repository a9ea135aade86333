#!/usr/bin/env python3
"""The audit's benchmark: `attenu-hook audit` over N shipped sessions in a local Garage.

    python3 bench/audit.py                 # 1,000 sessions of 100 entries, 3 timed runs
    python3 bench/audit.py --sessions 200 --entries 50 --runs 1

Standard library only. What it does:

 1. Builds `attenu-hook`, `attenu-hook-ship` (which runs `audit`) and
    `examples/audit_bench.rs` with `cargo build --release`.
 2. Starts a single-node Garage on loopback (ATTENU_GARAGE_BIN, else `garage` on PATH), with a
    bucket and a key, in a temp dir (removed at the end).
 3. Makes one template session with the real hook (SessionStart, reviewer Reads, SessionEnd)
    until its ledger has --entries entries.
 4. Runs the example, which copies the template into N sessions (each sealed again under its
    own session name and chain id) and writes the objects the hook would ship: a checkpoint
    after the opening entries, one every 64 entries and one at the end, the entries between
    them, and the closing bundle, all signed with the template's anchor key. No hook call.
 5. Times `attenu-hook audit s3://evidence/bench --pub anchor.pub --json` (whole process,
    wall clock) --runs times, checks that every session is complete, prints the median.

The target in issue 25 is at most 30 s for 1,000 sessions of 100 entries on this machine.
Run it on an otherwise idle machine: a concurrent build on 2 cores doubles the figure.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "target" / "release" / "attenu-hook"
EXAMPLE = REPO / "target" / "release" / "examples" / "audit_bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Garage:
    def __init__(self, bin_: str, root: Path):
        self.bin, self.root = bin_, root
        rpc, s3 = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{s3}"
        self.config = root / "garage.toml"
        self.config.write_text(
            f'metadata_dir = "{root}/meta"\ndata_dir = "{root}/data"\ndb_engine = "sqlite"\n'
            f'replication_factor = 1\nrpc_bind_addr = "127.0.0.1:{rpc}"\n'
            f'rpc_public_addr = "127.0.0.1:{rpc}"\nrpc_secret = "{secrets.token_hex(32)}"\n\n'
            f'[s3_api]\ns3_region = "garage"\napi_bind_addr = "127.0.0.1:{s3}"\n'
        )
        log = open(root / "server.log", "w")
        self.server = subprocess.Popen(
            [bin_, "-c", str(self.config), "server"], stdout=log, stderr=log
        )
        for _ in range(300):
            if subprocess.run(self.cmd("status"), capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        node = self.cli("node", "id", "-q").strip().split("@")[0]
        self.cli("layout", "assign", "-z", "dc1", "-c", "1G", node)
        self.cli("layout", "apply", "--version", "1")
        self.cli("bucket", "create", "evidence")
        key = self.cli("key", "create", "bench")
        field = lambda name: next(
            l.split(":", 1)[1].strip() for l in key.splitlines() if l.startswith(name)
        )
        self.key_id, self.secret = field("Key ID:"), field("Secret key:")
        self.cli("bucket", "allow", "--read", "--write", "--owner", "evidence", "--key", "bench")
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", s3), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)

    def cmd(self, *args: str) -> list[str]:
        return [self.bin, "-c", str(self.config), *args]

    def cli(self, *args: str) -> str:
        return subprocess.run(self.cmd(*args), capture_output=True, text=True, check=True).stdout

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ACCESS_KEY_ID=self.key_id,
            AWS_SECRET_ACCESS_KEY=self.secret,
            AWS_REGION="garage",
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_ALLOW_HTTP="true",
        )
        return env

    def stop(self) -> None:
        self.server.kill()
        self.server.wait()


def hook(project: Path, payload: dict) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["CLAUDE_PROJECT_DIR"] = str(project)
    subprocess.run([str(BIN)], input=json.dumps(payload), text=True, env=env,
                   capture_output=True, check=True)


def template(project: Path, session: str, entries: int) -> None:
    """A real session of about `entries` entries, made by the hook (shipping off)."""
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: r\ntools: Read\n---\n")
    base = {"session_id": session, "cwd": str(project),
            "transcript_path": f"/x/{session}.jsonl"}
    hook(project, {**base, "hook_event_name": "SessionStart", "source": "startup"})
    ledger = project / ".attenu" / f"ledger-{session}.jsonl"
    i = 0
    # SessionEnd adds the done entry of the idle reviewer node: stop one short.
    while len(ledger.read_text().splitlines()) < entries - 1:
        hook(project, {**base, "hook_event_name": "PreToolUse", "permission_mode": "default",
                       "tool_name": "Read", "tool_input": {"file_path": f"/p/{i}"},
                       "tool_use_id": f"t{i}", "agent_id": "a-r", "agent_type": "reviewer"})
        i += 1
    hook(project, {**base, "hook_event_name": "SessionEnd", "reason": "other"})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--entries", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-build", action="store_true", help="use the release builds as they are")
    args = ap.parse_args()
    garage_bin = os.environ.get("ATTENU_GARAGE_BIN") or shutil.which("garage")
    if not garage_bin:
        print("needs Garage: set ATTENU_GARAGE_BIN or put `garage` on PATH", file=sys.stderr)
        return 2
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--bin", "attenu-hook", "--bin", "attenu-hook-ship",
                        "--example", "audit_bench"], cwd=REPO, check=True)
    tmp = Path(tempfile.mkdtemp(prefix="attenu-audit-bench-"))
    garage = None
    try:
        (tmp / "garage").mkdir()
        garage = Garage(garage_bin, tmp / "garage")
        project, session = tmp / "project", "benchtemplate0000"
        template(project, session, args.entries)
        entries = len((project / ".attenu" / f"ledger-{session}.jsonl").read_text().splitlines())
        url = "s3://evidence/bench"
        subprocess.run([str(EXAMPLE), url, str(project), session, str(args.sessions)],
                       env=garage.env(), check=True)
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            out = subprocess.run([str(BIN), "audit", url, "--json", "--pub",
                                  str(project / ".attenu" / "anchor.pub")],
                                 env=garage.env(), capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
            report = json.loads(out.stdout)
            statuses = {s["status"] for s in report["sessions"]}
            if out.returncode != 0 or statuses != {"complete"} or len(report["sessions"]) != args.sessions:
                print(f"unexpected audit result (exit {out.returncode}): {statuses}\n{out.stderr}",
                      file=sys.stderr)
                return 1
        print(json.dumps({"sessions": args.sessions, "entries_per_session": entries,
                          "runs_s": [round(t, 2) for t in times],
                          "median_s": round(statistics.median(times), 2)}))
        return 0
    finally:
        if garage:
            garage.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
