#!/usr/bin/env python3
"""The roster case: what a project with many agent files costs per call (issue 27).

    python3 bench/roster.py --bin target/release/attenu-hook [--agents 2,200,864]

For each size, a copy of sample_project gets `size - 2` agent files from bench/roster_gen.py
beside its two (so 200 is the sample's reviewer and researcher and 198 generated agents, 187
of them without `tools:`), and the hook is timed as a new user meets it:

* `warm`: PreToolUse of the sample's reviewer (a Read) on a running session, each followed by
  its PostToolUse (timed apart), and the same for an agent that inherits the session pool;
* `first_call`: the first PreToolUse of a new session, with no SessionStart before it;
* `session_start` and `first_after_start`: a SessionStart, then that session's first call;
* `after_edit`: the first PreToolUse right after an agent file's `tools:` line changed (the
  edit is not settled, so the roster is derived from the files and a new chain opens),
  `after_edit_settled`: the next call once it settled (which writes the roster cache), and
  `after_settled_edit`: the first call after an edit made `SETTLE` before it, the usual case
  (it derives, opens a new chain and writes the cache);
* `opening_bytes`: the bytes of the `root` and `spawn` lines a new session's first call
  wrote, `ledger_bytes` the whole file, `cache_bytes` the roster cache.

Run from bench/run.py with `--only roster`, or alone. Standard library only.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import roster_gen  # noqa: E402
from run import (SAMPLE, SETTLE_S, Ours, enc, is_allow, log, post_payload,  # noqa: E402
                 pre_payload, session_start_payload, stats)

# CPU time (user + system) of each timed call, by the key it is recorded under: on a machine
# other work shares, wall time carries its noise and CPU time much less of it.
CPU: dict = {}


def timed_cpu(argv: list, stdin: bytes, env: dict):
    """run.timed, but reaped with wait4 so the child's CPU time is known: (ms, cpu_ms, rc,
    stdout, stderr)."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, r_in, 0), (os.POSIX_SPAWN_DUP2, w_out, 1),
        (os.POSIX_SPAWN_DUP2, w_err, 2),
    ] + [(os.POSIX_SPAWN_CLOSE, fd) for fd in (r_in, w_in, r_out, w_out, r_err, w_err)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    for fd in (r_in, w_out, w_err):
        os.close(fd)
    try:
        view = memoryview(stdin)
        while view:
            view = view[os.write(w_in, view[:65536]):]
    except BrokenPipeError:
        pass
    os.close(w_in)
    bufs = []
    for fd in (r_out, r_err):
        b = bytearray()
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            b += chunk
        bufs.append(bytes(b))
        os.close(fd)
    _, status, ru = os.wait4(pid, 0)
    dt = (time.perf_counter() - t0) * 1000.0
    cpu = (ru.ru_utime + ru.ru_stime) * 1000.0
    return dt, cpu, os.waitstatus_to_exitcode(status), bufs[0], bufs[1]


def agent_call(project: str, session: str, tu: str, agent: str) -> dict:
    p = pre_payload(project, session, tu)
    p["agent_type"] = agent
    return p


def make_project(root: Path, agents: int) -> tuple[str, str | None]:
    """A copy of sample_project with `agents` agents in all; returns it and an inheriting
    agent's name (None when there is none)."""
    dst = root / f"roster-{agents}"
    shutil.copytree(SAMPLE, dst, ignore=shutil.ignore_patterns(".attenu"))
    inheriting = None
    if agents > 2:
        gen = Path(tempfile.mkdtemp(dir=root))
        roster_gen.generate(gen, agents - 2)
        shutil.copytree(gen / ".claude" / "agents", dst / ".claude" / "agents" / "collection")
        for f in sorted((dst / ".claude" / "agents" / "collection").rglob("*.md")):
            text = f.read_text()
            head = text.split("\n---\n", 1)[0]
            if "\ntools:" not in head and "disallowedTools" not in head:
                inheriting = head.split("\nname: ", 1)[1].split("\n", 1)[0]
                break
    os.sync()
    time.sleep(SETTLE_S)
    return str(dst), inheriting


def checked(ours: Ours, project: str, payload: dict, what: str, key: str | None = None) -> float:
    """The call's wall time; its CPU time goes to CPU[key]."""
    dt, cpu_ms, rc, out, err = timed_cpu([ours.bin], enc(payload), ours.env(project))
    if rc != 0 or not is_allow(out):
        sys.exit(f"{what}: rc={rc} {out!r} {err.decode()[-2000:]}")
    if key is not None:
        CPU.setdefault(key, []).append(cpu_ms)
    return dt


def opening_bytes(ledger: Path) -> int:
    n = 0
    with open(ledger, "rb") as f:
        for line in f:
            if json.loads(line).get("event") in ("root", "spawn"):
                n += len(line)
    return n


def measure(ours: Ours, agents: int, root: Path, warm: int, rounds: int, edits: int) -> dict:
    project, inheriting = make_project(root, agents)
    CPU.clear()
    res: dict = {"agents": agents, "inheriting_agent": inheriting}
    checked(ours, project, pre_payload(project, "warmup", "toolu_w"), "warm-up")
    first, opening, sizes, start, after_start = [], [], [], [], []
    for i in range(rounds):
        s = f"first-{i}"
        first.append(checked(ours, project, pre_payload(project, s, f"toolu_f{i}"), "first call", "first_call"))
        led = ours.ledger(project, s)
        opening.append(opening_bytes(led))
        sizes.append(led.stat().st_size)
        s = f"started-{i}"
        start.append(checked(ours, project, session_start_payload(project, s), "SessionStart",
                             "session_start"))
        after_start.append(checked(ours, project, pre_payload(project, s, f"toolu_s{i}"),
                                   "first call after SessionStart", "first_after_start"))
    res["first_call"] = stats(first)
    res["session_start"] = stats(start)
    res["first_after_start"] = stats(after_start)
    res["opening_bytes"] = max(opening)
    res["ledger_bytes_after_first_call"] = max(sizes)
    s = "warm"
    checked(ours, project, session_start_payload(project, s), "SessionStart")
    for who, agent in (("warm", "reviewer"), ("warm_inheriting", inheriting)):
        if agent is None:
            continue
        pre, post = [], []
        checked(ours, project, agent_call(project, s, f"toolu_{who}_x", agent), "warm first")
        for i in range(warm):
            tu = f"toolu_{who}_{i}"
            pre.append(checked(ours, project, agent_call(project, s, tu, agent), who, who))
            p = post_payload(project, s, tu)
            p["agent_type"] = agent
            post.append(checked(ours, project, p, f"{who} PostToolUse", who + "_post"))
        res[who] = stats(pre)
        res[who + "_post"] = stats(post)
    cache = Path(project) / ".attenu" / "roster.cache"
    res["cache_bytes"] = cache.stat().st_size if cache.exists() else 0
    edited = Path(project) / ".claude" / "agents" / "researcher.md"
    original = edited.read_text()
    after, settled, later = [], [], []
    for i in range(edits):
        extra = ", Grep" if i % 2 == 0 else ""
        edited.write_text(original.replace("tools: Read, WebFetch",
                                           f"tools: Read, WebFetch{extra}"))
        after.append(checked(ours, project, pre_payload(project, s, f"toolu_e{i}"), "after edit",
                             "after_edit"))
        time.sleep(SETTLE_S)
        settled.append(checked(ours, project, pre_payload(project, s, f"toolu_es{i}"),
                               "after edit, settled", "after_edit_settled"))
        # The usual case: a person edits, and the next tool call comes seconds later.
        edited.write_text(original.replace("tools: Read, WebFetch", "tools: Read, WebFetch, Glob"))
        time.sleep(SETTLE_S)
        later.append(checked(ours, project, pre_payload(project, s, f"toolu_el{i}"),
                             "after a settled edit", "after_settled_edit"))
    res["after_edit"] = stats(after)
    res["after_edit_settled"] = stats(settled)
    res["after_settled_edit"] = stats(later)
    res["session_ledger_bytes"] = ours.ledger(project, s).stat().st_size
    res["cpu_ms"] = {k: stats(v) for k, v in CPU.items()}
    return res


def table(results: list, reference: dict | None) -> str:
    rows = [
        ("PreToolUse, running session (reviewer)", "warm"),
        ("PreToolUse, running session (an inheriting agent)", "warm_inheriting"),
        ("PostToolUse after it (reviewer)", "warm_post"),
        ("first call of a session, no SessionStart", "first_call"),
        ("SessionStart", "session_start"),
        ("first call after SessionStart", "first_after_start"),
        ("first call after a `tools:` edit (not yet settled)", "after_edit"),
        ("second call, once that edit settled (writes the cache)", "after_edit_settled"),
        ("first call after an edit made 2 s before it", "after_settled_edit"),
    ]
    head = "| measurement: p50 ms wall (CPU) | " + " | ".join(f"{r['agents']} agents" for r in results)
    if reference:
        head += " | reference (recorded run)"
    out = [head + " |", "|---" * (len(results) + 1 + bool(reference)) + "|"]
    for label, key in rows:
        cells = [f"{r[key]['p50']:.2f} ({r['cpu_ms'][key]['p50']:.2f})" if key in r else "–"
                 for r in results]
        if reference:
            cells.append(reference.get(key, "–"))
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, key in (("opening entries of a new chain (bytes)", "opening_bytes"),
                       ("ledger after a session's first call (bytes)", "ledger_bytes_after_first_call"),
                       ("roster cache (bytes)", "cache_bytes")):
        cells = [f"{r[key]:,}" for r in results]
        if reference:
            cells.append("–")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--agents", default="2,200,864")
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--out")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="attenu-roster-"))
    try:
        binary = root / "attenu-hook"
        shutil.copyfile(a.bin, binary)
        os.chmod(binary, 0o755)
        ours = Ours(binary)
        results = []
        for n in (int(x) for x in a.agents.split(",")):
            log(f"== roster case, {n} agents")
            results.append(measure(ours, n, root, a.warm, a.rounds, a.edits))
        print(table(results, None))
        if a.out:
            Path(a.out).write_text(json.dumps({"roster": results}, indent=1) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
