#!/usr/bin/env python3
"""The roster case: what a project with many agent files costs per call (issue 27).

    python3 bench/roster.py --bin target/release/attenu-hook [--agents 2,200,864]
    python3 bench/roster.py --bin target/release/attenu-hook --interleaved --agents 2,200,500

`--interleaved` (issue 40) times a running session's call and a new session's first call of
every size in turn, round by round, and counts a running-session call's system calls with
`strace -c`; 500 agents and more are shaped as three collections in one project (nested
folders, duplicate names, `roster_gen.generate_collections`).

For each size, a copy of sample_project gets `size - 2` agent files from bench/roster_gen.py
beside its two (so 200 is the sample's reviewer and researcher and 198 generated agents, 187
of them without `tools:`), and the hook is timed as a new user meets it:

* `warm`: PreToolUse of the sample's reviewer (a Read) on a running session, each followed by
  its PostToolUse (timed apart), and the same for an agent that inherits the session pool;
* `first_call`: the first PreToolUse of a new session, with no SessionStart before it;
* `session_start` and `first_after_start`: a SessionStart, then that session's first call;
* `after_edit`: a new session's first PreToolUse right after an agent file's `tools:` line
  changed (the edit is not settled, so the roster is derived from the files; a running
  session keeps the roster it was pinned to), `after_edit_settled`: the next new session's
  once it settled (which writes the roster cache), and `after_settled_edit`: a new session's
  first call after an edit made `SETTLE` before it, the usual case (it derives and writes the
  cache);
* `opening_bytes`: the bytes of the `root` and `spawn` lines a new session's first call
  wrote, `ledger_bytes` the whole file, `cache_bytes` the roster cache.

Run from bench/run.py with `--only roster`, or alone. Standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
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


# From this many agents on, the roster is shaped as three collections in one project (nested
# folders, duplicate names: roster_gen.generate_collections), below it as one collection.
COLLECTIONS_FROM = 400


def make_project(root: Path, agents: int) -> tuple[str, str | None]:
    """A copy of sample_project with `agents` agents in all; returns it and an inheriting
    agent's name (None when there is none), one declared once."""
    dst = root / f"roster-{agents}"
    shutil.copytree(SAMPLE, dst, ignore=shutil.ignore_patterns(".attenu"))
    inheriting = None
    if agents > 2:
        gen = Path(tempfile.mkdtemp(dir=root))
        shape = (roster_gen.generate_collections if agents >= COLLECTIONS_FROM
                 else roster_gen.generate)
        shape(gen, agents - 2)
        shutil.copytree(gen / ".claude" / "agents", dst / ".claude" / "agents" / "collection")
        heads = [f.read_text().split("\n---\n", 1)[0]
                 for f in sorted((dst / ".claude" / "agents" / "collection").rglob("*.md"))]
        declared = [h.split("\nname: ", 1)[1].split("\n", 1)[0] for h in heads]
        for head, name in zip(heads, declared):
            if ("\ntools:" not in head and "disallowedTools" not in head
                    and declared.count(name) == 1):
                inheriting = name
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
        # A running session keeps its pinned roster: an edit is first read by a new session.
        after.append(checked(ours, project, pre_payload(project, f"edit-{i}", f"toolu_e{i}"),
                             "after edit", "after_edit"))
        time.sleep(SETTLE_S)
        settled.append(checked(ours, project, pre_payload(project, f"settled-{i}",
                                                          f"toolu_es{i}"),
                               "after edit, settled", "after_edit_settled"))
        # The usual case: a person edits, and the next tool call comes seconds later.
        edited.write_text(original.replace("tools: Read, WebFetch", "tools: Read, WebFetch, Glob"))
        time.sleep(SETTLE_S)
        later.append(checked(ours, project, pre_payload(project, f"later-{i}", f"toolu_el{i}"),
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
        ("a new session's first call after a `tools:` edit (not yet settled)", "after_edit"),
        ("the next new session's, once that edit settled (writes the cache)",
         "after_edit_settled"),
        ("a new session's first call after an edit made 2 s before it", "after_settled_edit"),
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


def strace_counts(ours: Ours, project: str, payload: dict) -> dict:
    """`strace -f -c` of one call: the number of system calls in all, and of those that touch
    files, by name."""
    out = Path(tempfile.mkstemp(prefix="strace-")[1])
    try:
        r = subprocess.run(["strace", "-f", "-c", "-o", str(out), ours.bin], input=enc(payload),
                           env=ours.env(project), capture_output=True, timeout=60)
        if r.returncode != 0 or not is_allow(r.stdout):
            sys.exit(f"strace run: rc={r.returncode} {r.stdout!r} {r.stderr.decode()[-2000:]}")
        counts = {}
        for line in out.read_text().splitlines():
            f = line.split()
            if len(f) >= 5 and f[-1] != "syscall" and f[3].isdigit():
                counts[f[-1]] = int(f[3])
        return counts
    finally:
        out.unlink()


def interleaved(ours: Ours, sizes: list, root: Path, rounds: int) -> dict:
    """The sizes measured round by round (each round visits every size, in a rotated order),
    so a machine whose speed drifts weighs on all of them alike: a running session's call
    (the reviewer, and an agent that inherits), and a new session's first call (no
    SessionStart before it), then `strace -c` of one running-session call of each size."""
    projects = {n: make_project(root, n) for n in sizes}
    CPU.clear()
    times: dict = {n: {} for n in sizes}
    for n, (project, inheriting) in projects.items():
        checked(ours, project, session_start_payload(project, "warm"), "SessionStart")
        for who, agent in (("warm", "reviewer"), ("warm_inheriting", inheriting)):
            if agent:
                checked(ours, project, agent_call(project, "warm", f"toolu_{who}_x", agent),
                        "warm first")
    for i in range(rounds):
        for n in sizes[i % len(sizes):] + sizes[:i % len(sizes)]:
            project, inheriting = projects[n]
            for who, agent in (("warm", "reviewer"), ("warm_inheriting", inheriting)):
                if agent:
                    times[n].setdefault(who, []).append(checked(
                        ours, project, agent_call(project, "warm", f"toolu_{who}_{i}", agent),
                        who, f"{n}:{who}"))
            times[n].setdefault("first_call", []).append(checked(
                ours, project, pre_payload(project, f"first-{i}", f"toolu_f{i}"), "first call",
                f"{n}:first_call"))
    res = {"sizes": sizes, "rounds": rounds, "by_size": {}}
    for n in sizes:
        project, inheriting = projects[n]
        row = {k: stats(v) for k, v in times[n].items()}
        row["cpu_ms"] = {k.split(":", 1)[1]: stats(v) for k, v in CPU.items()
                         if k.startswith(f"{n}:")}
        row["inheriting_agent"] = inheriting
        if shutil.which("strace"):
            row["strace_warm"] = strace_counts(
                ours, project, agent_call(project, "warm", "toolu_strace", "reviewer"))
        res["by_size"][n] = row
    return res


def interleaved_table(res: dict) -> str:
    base = res["by_size"][res["sizes"][0]]
    out = ["| p50 ms wall (CPU), ratio to the first size | "
           + " | ".join(f"{n} agents" for n in res["sizes"]) + " |",
           "|---" * (len(res["sizes"]) + 1) + "|"]
    for label, key in (("running session, reviewer", "warm"),
                       ("running session, an inheriting agent", "warm_inheriting"),
                       ("a session's first call", "first_call")):
        cells = []
        for n in res["sizes"]:
            r = res["by_size"][n]
            if key not in r:
                cells.append("–")
                continue
            ratio = r[key]["p50"] / base["warm" if key == "warm_inheriting" else key]["p50"]
            cells.append(f"{r[key]['p50']:.2f} ({r['cpu_ms'][key]['p50']:.2f}) {ratio:.2f}x")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    if all("strace_warm" in r for r in res["by_size"].values()):
        for label, names in (("system calls of a running-session call (strace -c)", None),
                             ("of them getdents64 / openat / statx / newfstatat",
                              ["getdents64", "openat", "statx", "newfstatat"])):
            cells = []
            for n in res["sizes"]:
                c = res["by_size"][n]["strace_warm"]
                cells.append(str(c.get("total", 0)) if names is None
                             else " / ".join(str(c.get(x, 0)) for x in names))
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
    ap.add_argument("--interleaved", action="store_true",
                    help="only the running-session and first calls, the sizes in turn each "
                         "round (--rounds of them), and strace -c of a running-session call")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="attenu-roster-"))
    try:
        binary = root / "attenu-hook"
        shutil.copyfile(a.bin, binary)
        os.chmod(binary, 0o755)
        ours = Ours(binary)
        if a.interleaved:
            sizes = [int(x) for x in a.agents.split(",")]
            log(f"== roster case, interleaved: {sizes}, {a.rounds} rounds")
            res = interleaved(ours, sizes, root, a.rounds)
            print(interleaved_table(res))
            if a.out:
                Path(a.out).write_text(json.dumps({"interleaved": res}, indent=1) + "\n")
            return 0
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
