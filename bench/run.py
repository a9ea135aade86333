#!/usr/bin/env python3
"""Whole-process benchmark: attenu-hook vs the reference recipe (attenu-guard 0.21.0).

    python3 bench/run.py            # the full run that BENCHMARKS.md records (~15-25 min the
                                    # first time: it grows the 100,000-entry ledger once)
    python3 bench/run.py --quick    # a fast pass: fewer calls, no 100,000-entry ledger

Standard library only. What it does (see bench/README.md):

 1. Builds attenu-hook statically linked (the recommended Linux x86_64 install; see
    `--build`) and times target/x86_64-unknown-linux-gnu/release/attenu-hook; the default
    dynamically linked `cargo build --release` is timed per call too, for comparison.
 2. Makes its own venv at target/bench-venv with `pip install "attenu-guard[crypto]==0.21.0"`,
    fetches the sdist with `pip download --no-deps --no-binary :all: attenu-guard==0.21.0` and
    extracts the recipe (hook.py and its attenu_hook.py wrapper) under target/bench-ref/ at run
    time. Nothing of the reference is committed.
 3. Builds the ledgers (0, 1,000, 10,000, 100,000 entries) once and caches them under
    target/bench-cache/: ours by real hook calls, the reference's with its own functions
    (bench/ref_tools.py).
 4. Times whole processes (time.perf_counter around posix_spawn -> payload on stdin -> stdout
    read -> waitpid), side by side: one PreToolUse per ledger size, export and verify of a
    10,000-entry session, and 16 parallel hook processes x 100 calls on one session.
 5. Prints a table of medians and ratios and writes bench/results.json.

Each hook call gets a sample-project copy in a temp dir, named by CLAUDE_PROJECT_DIR.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
TARGET = REPO / "target"
VENV = TARGET / "bench-venv"
REF_DIR = TARGET / "bench-ref"
CACHE = TARGET / "bench-cache"
SAMPLE = REPO / "sample_project"
# src/derive/cache.rs SETTLE (2 s), and a margin.
SETTLE_S = 2.2
REF_VERSION = "0.21.0"
SESSION = "bench-ledger"  # the session of every pre-built ledger

# The performance targets of the product specification (milliseconds).
TARGETS = {
    "call_0_p50": 2.0, "call_0_p99": 5.0, "call_10000_p50": 3.0, "call_100000_p50": 10.0,
    "export_10000_p50": 150.0, "verify_10000_p50": 150.0, "parallel_p99": 100.0,
}


# ---------------------------------------------------------------------------------------
# Process timing
# ---------------------------------------------------------------------------------------
def timed(argv: list[str], stdin: bytes, env: dict):
    """Spawn argv, write stdin, read stdout and stderr to EOF, wait. Returns
    (milliseconds, exit code, stdout, stderr). The clock runs from just before the spawn to
    just after the process is reaped: what a host waiting on the hook waits."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, r_in, 0), (os.POSIX_SPAWN_DUP2, w_out, 1),
        (os.POSIX_SPAWN_DUP2, w_err, 2),
    ] + [(os.POSIX_SPAWN_CLOSE, fd) for fd in (r_in, w_in, r_out, w_out, r_err, w_err)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    os.close(r_in)
    os.close(w_out)
    os.close(w_err)
    try:
        view = memoryview(stdin)
        while view:
            n = os.write(w_in, view[:65536])
            view = view[n:]
    except BrokenPipeError:
        pass
    os.close(w_in)
    out = bytearray()
    while True:
        b = os.read(r_out, 1 << 16)
        if not b:
            break
        out += b
    err = bytearray()
    while True:
        b = os.read(r_err, 1 << 16)
        if not b:
            break
        err += b
    _, status = os.waitpid(pid, 0)
    dt = (time.perf_counter() - t0) * 1000.0
    os.close(r_out)
    os.close(r_err)
    return dt, os.waitstatus_to_exitcode(status), bytes(out), bytes(err)


def stats(ms: list[float]) -> dict:
    """p50 (median), p99 (nearest rank), mean, min, max, n."""
    if not ms:
        return {"n": 0}
    s = sorted(ms)
    p99 = s[max(0, math.ceil(0.99 * len(s)) - 1)]
    return {"n": len(s), "p50": round(statistics.median(s), 3), "p99": round(p99, 3),
            "mean": round(statistics.fmean(s), 3), "min": round(s[0], 3), "max": round(s[-1], 3)}


def disk_activity() -> tuple[int, int, int]:
    """Writes, discards and requests in flight, summed over /proc/diskstats (0s elsewhere)."""
    writes = discards = in_flight = 0
    try:
        for line in Path("/proc/diskstats").read_text().splitlines():
            f = line.split()  # major minor name, then the kernel's iostats fields
            if len(f) < 12:
                continue
            writes += int(f[7])
            in_flight += int(f[11])
            if len(f) > 14:
                discards += int(f[14])
    except OSError:
        pass
    return writes, discards, in_flight


def quiesce(max_s: float = 30.0) -> float:
    """Flush, then wait until the disks have written and discarded nothing for a second.

    Preparing a phase copies and deletes hundreds of MB (cached ledgers, temp projects; the
    temp dir here is mounted with `discard`), and that writeback would otherwise land on the
    timed calls' fsyncs. Returns the seconds waited."""
    t0 = time.monotonic()
    os.sync()
    prev = disk_activity()
    while time.monotonic() - t0 < max_s:
        time.sleep(1.0)
        cur = disk_activity()
        if cur[:2] == prev[:2] and cur[2] == 0:
            return time.monotonic() - t0
        prev = cur
    log(f"   the disk did not go quiet within {max_s:.0f} s; timing anyway")
    return time.monotonic() - t0


class LoadSampler:
    """Samples the 1-minute load average every 5 s during the run (others' jobs show here)."""

    def __init__(self):
        import threading
        self.samples: list[float] = []
        self.times: list[float] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _loop(self):
        while not self._stop.wait(5.0):
            self.samples.append(os.getloadavg()[0])
            self.times.append(time.monotonic())

    def window(self, t0: float, t1: float) -> dict:
        """Load samples taken between two time.monotonic() readings (one section)."""
        s = [l for l, t in zip(self.samples, self.times) if t0 <= t <= t1] or [os.getloadavg()[0]]
        return {"samples": len(s), "min": round(min(s), 2), "mean": round(statistics.fmean(s), 2),
                "max": round(max(s), 2)}

    def stop(self) -> dict:
        self._stop.set()
        s = self.samples or [os.getloadavg()[0]]
        return {"samples": len(s), "min": round(min(s), 2), "mean": round(statistics.fmean(s), 2),
                "max": round(max(s), 2)}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("check", True)
    return subprocess.run(cmd, **kw)


# ---------------------------------------------------------------------------------------
# Payloads
# ---------------------------------------------------------------------------------------
def pre_payload(project: str, session: str, tool_use_id: str, *, deny: bool = False) -> dict:
    """A subagent's PreToolUse: reviewer Read of src/app.py (allowed), or Write (denied)."""
    tool_input = {"file_path": f"{project}/src/app.py"}
    if deny:
        tool_input["content"] = "x = 1\n"
    return {
        "session_id": session,
        "transcript_path": f"/nonexistent/{session}.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "agent_id": "a0bench",
        "agent_type": "reviewer",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write" if deny else "Read",
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
    }


def session_start_payload(project: str, session: str) -> dict:
    return {"session_id": session, "transcript_path": f"/nonexistent/{session}.jsonl",
            "cwd": project, "hook_event_name": "SessionStart", "source": "startup"}


def post_payload(project: str, session: str, tool_use_id: str) -> dict:
    p = pre_payload(project, session, tool_use_id)
    p["hook_event_name"] = "PostToolUse"
    p["tool_response"] = {"type": "text", "file": {
        "filePath": f"{project}/src/app.py",
        "content": "def greet(name):\n    return f\"hello, {name}\"\n",
        "numLines": 3, "startLine": 1, "totalLines": 3}}
    p["duration_ms"] = 3
    return p


def enc(p: dict) -> bytes:
    return json.dumps(p).encode()


def is_allow(out: bytes) -> bool:
    """Both hooks answer an allowed call with `{}` (or, the reference, nothing)."""
    s = out.strip()
    return s in (b"", b"{}")


def is_deny(out: bytes) -> bool:
    try:
        return json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    except (ValueError, KeyError, TypeError):
        return False


def count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def decisions_in(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if json.loads(line).get("event") in ("allow", "deny"):
                n += 1
    return n


# ---------------------------------------------------------------------------------------
# The two implementations
# ---------------------------------------------------------------------------------------
class Ours:
    name = "attenu-hook"

    def __init__(self, binary: Path):
        self.bin = str(binary)

    def env(self, project: str) -> dict:
        e = dict(os.environ)
        e["CLAUDE_PROJECT_DIR"] = project
        return e

    def hook(self, project: str, payload: dict):
        return timed([self.bin], enc(payload), self.env(project))

    def ledger(self, project: str, session: str) -> Path:
        return Path(project) / ".attenu" / f"ledger-{session}.jsonl"

    def checkpoint(self, project: str, session: str) -> Path:
        """The ledger's sealed state (src/ledger/store/mod.rs, SessionPaths)."""
        return Path(project) / ".attenu" / f"ledger-{session}.state.json"


class Reference:
    name = "reference"

    def __init__(self):
        self.python = str(VENV / "bin" / "python")
        # The recipe's documented install: hook.py beside the sample project's wrapper
        # attenu_hook.py, which imports it (so hook.py's bytecode is cached: its best case).
        self.wrapper = str(REF_DIR / "hooks" / "attenu_hook.py")
        self.hook_dir = str(REF_DIR / "hooks")
        self.cli = str(VENV / "bin" / "attenu-guard")

    def env(self, project: str | None = None) -> dict:
        e = dict(os.environ)
        e.pop("PYTHONDONTWRITEBYTECODE", None)  # let it use and keep its .pyc files
        e.pop("VIRTUAL_ENV", None)
        if project:
            e["CLAUDE_PROJECT_DIR"] = project
        return e

    def hook(self, project: str, payload: dict):
        return timed([self.python, self.wrapper], enc(payload), self.env(project))

    def ledger(self, project: str, session: str) -> Path:
        return Path(project) / ".attenu" / f"ledger-{session}.jsonl"


# ---------------------------------------------------------------------------------------
# Set-up
# ---------------------------------------------------------------------------------------
STATIC_TARGET = "x86_64-unknown-linux-gnu"


def build_ours(skip: bool, kind: str) -> Path:
    """kind "static": the statically linked build README.md recommends for Linux x86_64
    (`RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --target
    x86_64-unknown-linux-gnu`), which starts about 0.4 ms sooner than the default dynamically
    linked `cargo build --release` ("dynamic")."""
    env = dict(os.environ)
    if kind == "static":
        binary = TARGET / STATIC_TARGET / "release" / "attenu-hook"
        cmd = ["cargo", "build", "--release", "--quiet", "--target", STATIC_TARGET]
        env["RUSTFLAGS"] = "-C target-feature=+crt-static"
    else:
        binary = TARGET / "release" / "attenu-hook"
        cmd = ["cargo", "build", "--release", "--quiet"]
    if not skip:
        log(f"== {' '.join(cmd)}" + (f"  (RUSTFLAGS={env['RUSTFLAGS']})" if kind == "static" else ""))
        r = subprocess.run(cmd, cwd=REPO, env=env)
        if r.returncode != 0:
            sys.exit(f"the {kind} build failed" + ("; on a machine without a static glibc "
                                                     "(libc.a) run with --build dynamic" if kind == "static" else ""))
    if not binary.exists():
        sys.exit(f"{binary} does not exist; run {' '.join(cmd)}")
    return binary


def build_floor(scratch: "Scratch") -> tuple[str, str] | None:
    """bench/floor.c, linked the way our binary is (static, position independent): a new
    session's first call's system work (create, one write, fdatasync, directory fsync, the
    checkpoint) and a later call's (append, fdatasync, checkpoint), with nothing else. Timed
    in the same rounds as ours, it is the floor on this disk in this moment. Returns the
    binary and the command that built it."""
    out = scratch.root / "floor"
    for flags in (["-static-pie"], ["-static"], []):
        r = subprocess.run(["cc", "-O2", *flags, "-o", str(out), str(BENCH / "floor.c")],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return str(out), " ".join(["cc", "-O2", *flags, "bench/floor.c"])
    log("!! bench/floor.c did not compile (no C compiler?); the floor process is not measured")
    return None


def setup_reference() -> dict:
    """target/bench-venv with attenu-guard[crypto]==0.21.0, and the recipe from its sdist."""
    py = VENV / "bin" / "python"
    if not py.exists():
        log(f"== python3 -m venv {VENV}")
        run([sys.executable, "-m", "venv", str(VENV)])
    have = subprocess.run([str(py), "-c", "import importlib.metadata as m, cryptography;"
                           "print(m.version('attenu-guard'))"],
                          capture_output=True, text=True).stdout.strip()
    if have != REF_VERSION:
        log(f"== pip install attenu-guard[crypto]=={REF_VERSION}")
        run([str(py), "-m", "pip", "install", "--quiet", f"attenu-guard[crypto]=={REF_VERSION}"])
    sdist_dir = REF_DIR / "sdist"
    sdists = sorted(sdist_dir.glob(f"attenu_guard-{REF_VERSION}.tar.gz")) + \
        sorted(sdist_dir.glob(f"attenu-guard-{REF_VERSION}.tar.gz"))
    if not sdists:
        log(f"== pip download --no-deps --no-binary :all: attenu-guard=={REF_VERSION}")
        sdist_dir.mkdir(parents=True, exist_ok=True)
        run([str(py), "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             "-d", str(sdist_dir), f"attenu-guard=={REF_VERSION}"])
        sdists = sorted(sdist_dir.glob("attenu*guard-*.tar.gz"))
    sdist = sdists[0]
    hooks = REF_DIR / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    wanted = {
        "examples/integrations/claude_code/hooks_receipt/hook.py": "hook.py",
        "examples/integrations/claude_code/hooks_receipt/sample_project/.claude/hooks/attenu_hook.py":
            "attenu_hook.py",
    }
    with tarfile.open(sdist) as tf:
        for m in tf.getmembers():
            rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
            if rel in wanted:
                data = tf.extractfile(m).read()
                (hooks / wanted[rel]).write_bytes(data)
    for f in wanted.values():
        if not (hooks / f).exists():
            sys.exit(f"{f} not found in {sdist}")
    # Compile once so every timed call reads bytecode (the reference's best case).
    run([str(py), "-m", "compileall", "-q", str(hooks)], env=Reference().env())
    site = run([str(py), "-c", "import attenu_guard, os; print(os.path.dirname(attenu_guard.__file__))"],
               capture_output=True, text=True).stdout.strip()
    run([str(py), "-m", "compileall", "-q", site], env=Reference().env())
    return {"version": REF_VERSION, "sdist": sdist.name,
            "sdist_sha256": hashlib.sha256(sdist.read_bytes()).hexdigest(),
            "hook_py_sha256": hashlib.sha256((hooks / "hook.py").read_bytes()).hexdigest(),
            "python": run([str(py), "-V"], capture_output=True, text=True).stdout.strip()}


class Scratch:
    """Temp projects: copies of sample_project, in one temp dir removed at the end."""

    def __init__(self, keep: bool, tmpdir: str | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="attenu-bench-", dir=tmpdir))
        self.keep = keep
        self.n = 0

    def project(self, attenu_from: Path | None = None) -> str:
        self.n += 1
        dst = self.root / f"p{self.n}"
        shutil.copytree(SAMPLE, dst, ignore=shutil.ignore_patterns(".attenu"))
        if attenu_from is not None:
            shutil.copytree(attenu_from, dst / ".attenu")
        # Write the copy back now, so its writeback does not overlap the timed calls' fsyncs.
        os.sync()
        # A project's agent and settings files are normally older than the two seconds after
        # which our hook caches its derivation (src/derive/cache.rs, SETTLE); the copy's are
        # seconds old, so wait that out: calls are timed as they run in a real project.
        time.sleep(SETTLE_S)
        return str(dst)

    def fresh_copy(self, binary: str) -> str:
        """A copy of `binary` written a moment ago. The VM this was measured on reclaims idle
        page cache on its own (a DAMON `pageout` scheme, kdamond): an executable whose pages
        were reclaimed and faulted back in by exec costs 0.3-0.6 ms more per process than the
        same bytes freshly written (more, smaller page-cache folios: about 105 page faults per
        call instead of 78), and how much of a given file was reclaimed depends on how long it
        sat idle. Each phase times its own fresh copy, so ours and the floor process (also
        copied) start every phase in the same page-cache state, whatever happened before."""
        self.n += 1
        dst = self.root / f"bin{self.n}-{Path(binary).name}"
        shutil.copyfile(binary, dst)
        os.chmod(dst, 0o755)
        return str(dst)

    def close(self):
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            log(f"kept {self.root}")


def sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------
# Ledgers
# ---------------------------------------------------------------------------------------
def ledger_format(ours: "Ours") -> str:
    """The producer version and entry version this build writes (one call in a scratch dir)."""
    d = Path(tempfile.mkdtemp(prefix="attenu-bench-fmt-"))
    try:
        project = d / "p"
        shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns(".attenu"))
        ours.hook(str(project), pre_payload(str(project), "fmt", "toolu_fmt"))
        root = json.loads(ours.ledger(str(project), "fmt").read_text().splitlines()[0])
        prod = root.get("context", {}).get("producer", {})
        return f"{prod.get('name')}/{prod.get('version')} v{root.get('v')}"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def build_our_ledgers(ours: Ours, sizes: list[int], scratch: Scratch, bin_sha: str,
                      policy: str) -> dict:
    """Grow one session with real hook calls and snapshot its .attenu at each size.

    The sequence is a realistic subagent session: a reviewer Read (PreToolUse, allowed) and
    its PostToolUse outcome, and every 10th call a denied Write (PreToolUse only, as Claude
    Code sends no PostToolUse for a denied call). The 3 entries of a new chain (root and one
    spawn per declared agent) come with the first call."""
    want = [s for s in sizes if s > 0]
    if not want:
        return {}
    meta_path = CACHE / "ours-meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    have = meta.get("sizes", {})
    usable = all(str(s) in have and (CACHE / f"ours-{s}" / ".attenu").is_dir() for s in want)
    if usable and policy == "reuse":
        return meta
    if usable and policy == "auto" and meta.get("format") == ledger_format(ours):
        # Written by another build of the same version and format; the first timed call
        # re-verifies the copy from GENESIS with this build and stops the run if it fails.
        return meta
    top = max(want) if want else 0
    log(f"== growing our ledger to {top} entries with real hook calls (cached under {CACHE})")
    project = scratch.project()
    led = ours.ledger(project, SESSION)
    t0 = time.perf_counter()
    entries = 0
    i = 0
    meta = {"method": "real attenu-hook calls, one process each, sequentially (PreToolUse allow + "
                      "PostToolUse for it; every 10th turn a denied PreToolUse)",
            "binary_sha256": bin_sha, "format": ledger_format(ours), "built": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "sizes": {}}
    call_ms: list[float] = []
    for target in sorted(want):
        while entries < target:
            left = target - entries
            first = entries == 0
            tu = f"toolu_build_{i}"
            deny_turn = i % 10 == 9
            if deny_turn or left == 1 or (first and left <= 5):
                dt, rc, out, err = ours.hook(project, pre_payload(project, SESSION, tu, deny=True))
                if rc != 0 or not is_deny(out):
                    sys.exit(f"ledger build: expected a deny, got rc={rc} {out!r} {err!r}")
                call_ms.append(dt)
                entries += 4 if first else 1
            else:
                dt, rc, out, err = ours.hook(project, pre_payload(project, SESSION, tu))
                if rc != 0 or not is_allow(out):
                    sys.exit(f"ledger build: expected an allow, got rc={rc} {out!r} {err!r}")
                call_ms.append(dt)
                dt, rc, out, err = ours.hook(project, post_payload(project, SESSION, tu))
                if rc != 0 or not is_allow(out):
                    sys.exit(f"ledger build: PostToolUse failed rc={rc} {out!r} {err!r}")
                call_ms.append(dt)
                entries += 5 if first else 2
            i += 1
            if i % 5000 == 0:
                log(f"   {entries} entries, {time.perf_counter() - t0:.0f} s")
        n = count_lines(led)
        if n != target:
            sys.exit(f"ledger build: expected {target} lines, found {n}")
        dst = CACHE / f"ours-{target}"
        shutil.rmtree(dst, ignore_errors=True)
        dst.mkdir(parents=True)
        shutil.copytree(Path(project) / ".attenu", dst / ".attenu")
        meta["sizes"][str(target)] = {"entries": n, "turns": i, "bytes": led.stat().st_size,
                                      "seconds": round(time.perf_counter() - t0, 1)}
        log(f"   snapshot {target}: {led.stat().st_size} bytes, {time.perf_counter() - t0:.0f} s")
    meta["build_call_ms"] = stats(call_ms)
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def build_ref_ledgers(ref: Reference, sizes: list[int], scratch: Scratch, policy: str) -> dict:
    """Construct the reference's ledgers with its own functions (bench/ref_tools.py), after
    checking that the construction reproduces, byte for byte, the ledger its real hook writes
    for the first 10 calls of the same sequence."""
    want = [s for s in sizes if s > 0]
    if not want:
        return {}
    meta_path = CACHE / "ref-meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    have = meta.get("sizes", {})
    if policy != "rebuild" and all(str(s) in have and (CACHE / f"ref-{s}.jsonl").exists()
                                   for s in want):
        return meta
    CACHE.mkdir(parents=True, exist_ok=True)
    # 1. The real hook, 10 calls (one denied), in a scratch project.
    real = scratch.project()
    for i in range(10):
        deny = i % 10 == 9
        dt, rc, out, err = ref.hook(real, pre_payload(real, SESSION, f"toolu_build_{i}", deny=deny))
        if rc != 0 or not (is_deny(out) if deny else is_allow(out)):
            sys.exit(f"reference hook failed: rc={rc} {out!r} {err.decode()[-2000:]}")
    real_bytes = ref.ledger(real, SESSION).read_bytes()
    # 2. The same sequence, constructed, in a project at the same path length.
    log(f"== constructing the reference's ledgers {want} with its own functions")
    out = run([ref.python, str(BENCH / "ref_tools.py"), "build-ledger", "--hook-dir", ref.hook_dir,
               "--project", real, "--session", SESSION,
               "--sizes", ",".join(str(s) for s in sorted(set(want + [13]))), "--out", str(CACHE)],
              capture_output=True, text=True, env=ref.env())
    report = json.loads(out.stdout)
    small = (CACHE / "ref-13.jsonl").read_bytes()
    if small != real_bytes:
        sys.exit("the constructed reference ledger differs from the one its hook writes; "
                 f"compare {CACHE / 'ref-13.jsonl'} with {ref.ledger(real, SESSION)}")
    (CACHE / "ref-13.jsonl").unlink()
    report["sizes"].pop("13", None)
    report["checked"] = ("the construction's first 13 lines are byte-identical to the ledger "
                         "the reference hook writes for the same 10 calls")
    # The ledgers embed the scratch project's path only in nothing: entries carry no path.
    meta = report
    meta["built"] = _dt.datetime.now(_dt.timezone.utc).isoformat()
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def ours_attenu(size: int) -> Path:
    return CACHE / f"ours-{size}" / ".attenu"


def ref_attenu(size: int, scratch: Scratch) -> Path:
    """A .attenu dir holding the reference's ledger of `size` entries."""
    d = scratch.root / f"ref-attenu-{size}"
    if not d.exists():
        d.mkdir()
        shutil.copyfile(CACHE / f"ref-{size}.jsonl", d / f"ledger-{SESSION}.jsonl")
    return d


# ---------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------
# DELETIONS: nothing is deleted until the run ends. On ext4 without a journal (the temp dir of
# BENCHMARKS.md), an inode freed in the last 60 s (300 s while its inode-table block is dirty)
# is skipped when a file is created, and each skip costs a lookup: after a few hundred
# deletions every file creation there costs 0.3-0.6 ms instead of 0.03-0.1 ms, for minutes.


def create_cost(root: Path, n: int = 200) -> dict:
    """Microseconds to create (open O_CREAT) one empty file in the temp dir: a new session's
    first call creates two (ledger, checkpoint). On the machine of BENCHMARKS.md this
    differs ten-fold between directories of the same filesystem."""
    d = Path(tempfile.mkdtemp(dir=root, prefix="create-"))
    us = []
    for i in range(n):
        t = time.perf_counter()
        fd = os.open(d / f"f{i}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        us.append((time.perf_counter() - t) * 1e6)
        os.close(fd)
    # Left for the end of the run: see DELETIONS.
    return {"p50_us": round(statistics.median(us), 1), "n": n}


def sync_cost(root: Path, n: int = 200) -> dict:
    """What the disk charges for durability, in this process (no spawn), at about a hook
    call's cadence (a 2 ms pause between writes): `fdatasync` after appending 800 bytes to a
    file (a steady call), and creating a file, writing 4,600 bytes and `fdatasync` (a new
    session's first call writes its root, spawns and decision in one write)."""
    d = Path(tempfile.mkdtemp(dir=root, prefix="sync-"))
    append, new = [], []
    fd = os.open(d / "ledger", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    for i in range(n):
        os.write(fd, b"x" * 799 + b"\n")
        t = time.perf_counter()
        os.fdatasync(fd)
        append.append((time.perf_counter() - t) * 1e3)
        time.sleep(0.002)
        t = time.perf_counter()
        g = os.open(d / f"new{i}", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        os.write(g, b"y" * 4599 + b"\n")
        os.fdatasync(g)
        new.append((time.perf_counter() - t) * 1e3)
        os.close(g)
        time.sleep(0.002)
    os.close(fd)
    # Left for the end of the run: see DELETIONS.
    return {"append_fdatasync_p50_ms": round(statistics.median(append), 3),
            "new_file_fdatasync_p50_ms": round(statistics.median(new), 3), "n": n}


def name_durable_with_file(path: Path) -> bool:
    """What src/fs/durable.rs `new_name_durable_with_file` answers for the file system of `path`:
    whether it is ext4 or XFS, whose fsync of a new file also makes its name durable, so that
    our hook skips the directory fsync after creating a ledger there."""
    dev = path.stat().st_dev
    try:
        target = os.readlink(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    except OSError:
        return False
    name = os.path.basename(target)
    return bool(name) and any(os.path.isdir(f"/sys/fs/{d}/{name}") for d in ("ext4", "xfs"))


def measure_floor(ours: Ours, as_built: Ours, ref: Reference, n: int) -> dict:
    res = {}
    env = dict(os.environ)
    for key, argv in [("bin_true", ["/bin/true"]), ("ours_version", [ours.bin, "--version"]),
                      ("ours_version_as_built", [as_built.bin, "--version"])]:
        res[key] = stats([timed(argv, b"", env)[0] for _ in range(n)])
    res["ref_python_startup"] = stats(
        [timed([ref.python, "-c", "pass"], b"", ref.env())[0] for _ in range(max(5, n // 10))])
    return res


def measure_calls(impl, size: int, n: int, scratch: Scratch, attenu_src: Path | None,
                  floor: str | None = None, as_built: "Ours | None" = None) -> dict:
    """n PreToolUse calls (a reviewer Read, allowed) on a ledger of `size` entries.

    size 0: each call is on a new session, so every one starts from an empty ledger (and
    writes the new chain's root and spawns with its decision). For ours, each round also
    times a SessionStart on another new session and then that session's first PreToolUse,
    which finds the ledger SessionStart opened (root and spawns) and appends only its
    decision: what the first tool call costs when SessionStart is wired, as `install` wires
    it. The strict empty-ledger call is what it costs when it is not. Otherwise all calls go to the
    pre-built session, which grows by one entry per call. The first call after the ledger was
    copied into the temp project is timed apart: the copy has a new inode, so our checkpoint
    no longer matches and that call re-verifies the whole file from GENESIS.

    With `floor` (bench/floor.c), each size-0 round also times that minimal process doing the
    same system work with the sizes ours wrote in that round: after the empty-ledger call, a
    new file of that ledger's size and its checkpoint; after the first call that followed
    SessionStart, an append of what that call appended and a checkpoint rewrite.

    With `as_built` (ours, run from the build's own file in target/ rather than a fresh copy),
    each size-0 round also times one empty-ledger call with it: what this VM's page-cache
    reclaim costs the same bytes (`as_built_binary` in the JSON)."""
    project = scratch.project(attenu_src)
    res: dict = {"size": size, "quiesce_s": round(quiesce(), 1)}
    if size == 0:
        # Warm-up on another session (creates the anchor key, fills the page cache).
        dt, rc, out, err = impl.hook(project, pre_payload(project, "bench-warm", "toolu_w"))
        if rc != 0 or not is_allow(out):
            sys.exit(f"{impl.name}: warm-up failed rc={rc} {out!r} {err.decode()[-2000:]}")
        ms, ms_start, ms_after_start, ms_floor_new, ms_floor_append, ms_built = [], [], [], [], [], []
        ms_floor_dir_fsync = []
        floor_dir = Path(project) / ".floor"
        if floor and isinstance(impl, Ours):
            floor_dir.mkdir(mode=0o700)
        # The floor does what ours does on this file system: no directory fsync after a new
        # ledger where the file's own fsync makes its name durable. Where that is so, the
        # floor with the directory fsync is timed too, in the same rounds: what skipping it saves.
        trusts_name = name_durable_with_file(Path(project))

        def floor_run(mode: str, name: str, ledger_bytes: int, checkpoint: Path) -> float:
            argv = [floor, mode, str(floor_dir), name, str(ledger_bytes), str(checkpoint.stat().st_size)]
            dt, rc, out, err = timed(argv, enc(pre_payload(project, name, "toolu_floor")), dict(os.environ))
            if rc != 0 or out.strip() != b"{}":
                sys.exit(f"floor process failed rc={rc} {err.decode()}")
            return dt
        for i in range(n):
            s = f"bench-empty-{i}"
            dt, rc, out, err = impl.hook(project, pre_payload(project, s, f"toolu_e{i}"))
            if rc != 0 or not is_allow(out):
                sys.exit(f"{impl.name}: call failed rc={rc} {out!r} {err.decode()[-2000:]}")
            ms.append(dt)
            # The reference writes its root, both spawns and the decision; ours the root, the
            # reviewer's spawn (agents are spawned when first seen) and the decision.
            want = 3 if isinstance(impl, Ours) else 4
            if count_lines(impl.ledger(project, s)) != want:
                sys.exit(f"{impl.name}: an empty-ledger call did not write {want} entries")
            if not isinstance(impl, Ours):
                continue
            if floor:
                wrote, checkpoint = impl.ledger(project, s).stat().st_size, impl.checkpoint(project, s)
                ms_floor_new.append(floor_run("new-no-dir-fsync" if trusts_name else "new", f"floor-{i}",
                                              wrote, checkpoint))
                if trusts_name:
                    ms_floor_dir_fsync.append(floor_run("new", f"floor-dirsync-{i}", wrote, checkpoint))
            s = f"bench-started-{i}"
            dt, rc, out, err = impl.hook(project, session_start_payload(project, s))
            if rc != 0 or not is_allow(out) or count_lines(impl.ledger(project, s)) != 1:
                sys.exit(f"SessionStart failed rc={rc} {out!r} {err.decode()[-2000:]}")
            ms_start.append(dt)
            opened = impl.ledger(project, s).stat().st_size
            dt, rc, out, err = impl.hook(project, pre_payload(project, s, f"toolu_f{i}"))
            if rc != 0 or not is_allow(out) or count_lines(impl.ledger(project, s)) != 3:
                sys.exit(f"first call after SessionStart failed rc={rc} {out!r} {err.decode()[-2000:]}")
            ms_after_start.append(dt)
            if floor:
                ms_floor_append.append(floor_run("append", f"floor-{i}",
                                                 impl.ledger(project, s).stat().st_size - opened,
                                                 impl.checkpoint(project, s)))
            if as_built is not None:
                s = f"bench-built-{i}"
                dt, rc, out, err = as_built.hook(project, pre_payload(project, s, f"toolu_b{i}"))
                if rc != 0 or not is_allow(out):
                    sys.exit(f"as-built binary: call failed rc={rc} {out!r} {err.decode()[-2000:]}")
                ms_built.append(dt)
        res.update(stats(ms))
        if ms_built:
            res["as_built_binary"] = stats(ms_built)
        if ms_start:
            res["session_start"] = stats(ms_start)
            res["first_call_after_session_start"] = stats(ms_after_start)
        if ms_floor_new:
            res["floor_process"] = {"new_ledger": stats(ms_floor_new), "append": stats(ms_floor_append),
                                    "new_ledger_dir_fsync": not trusts_name}
            if ms_floor_dir_fsync:
                res["floor_process"]["new_ledger_with_dir_fsync"] = stats(ms_floor_dir_fsync)
        res["ledger_entries"] = [0, 0]
        return res
    led = impl.ledger(project, SESSION)
    before = count_lines(led)
    # Ours records outcomes: each timed PreToolUse is followed by its PostToolUse, as Claude
    # Code sends it, so the session does not pile up open calls (each would be carried in the
    # checkpoint; see bench/breakdown.py). The PostToolUse calls are timed apart. The
    # reference's settings register no PostToolUse hook, so it gets none.
    post = isinstance(impl, Ours)

    def call(tu: str) -> tuple[float, float | None]:
        dt, rc, out, err = impl.hook(project, pre_payload(project, SESSION, tu))
        if rc != 0 or not is_allow(out):
            sys.exit(f"{impl.name} at {size}: call failed rc={rc} {out!r} {err.decode()[-3000:]}")
        if not post:
            return dt, None
        dt2, rc, out, err = impl.hook(project, post_payload(project, SESSION, tu))
        if rc != 0 or not is_allow(out):
            sys.exit(f"{impl.name} at {size}: PostToolUse failed rc={rc} {out!r} {err.decode()[-3000:]}")
        return dt, dt2

    res["first_call_after_copy_ms"] = round(call("toolu_first")[0], 3)
    ms, ms_post = [], []
    for i in range(n):
        dt, dt2 = call(f"toolu_m{i}")
        ms.append(dt)
        if dt2 is not None:
            ms_post.append(dt2)
    per = 2 if post else 1
    after = count_lines(led)
    if after != before + per * (n + 1):
        sys.exit(f"{impl.name} at {size}: expected {before + per * (n + 1)} entries, found {after}")
    res.update(stats(ms))
    if ms_post:
        res["post_tool_use"] = stats(ms_post)
    res["ledger_entries"] = [before + per, after - per]
    return res


def measure_export_verify_ours(ours: Ours, n: int, scratch: Scratch) -> dict:
    project = scratch.project(ours_attenu(10000))
    bundle = str(Path(project) / "bundle-10k.json")
    pub = str(Path(project) / ".attenu" / "anchor.pub")
    export = [ours.bin, "export", "--project", project, "--session", SESSION, "--out", bundle]
    verify = [ours.bin, "verify", bundle, "--pub", pub]
    env = dict(os.environ)
    res = {"quiesce_s": round(quiesce(), 1)}
    dt, rc, out, err = timed(export, b"", env)
    if rc != 0:
        sys.exit(f"export failed rc={rc} {out!r} {err!r}")
    res["export_first_after_copy_ms"] = round(dt, 3)
    ex, ve = [], []
    for _ in range(n):
        dt, rc, out, err = timed(export, b"", env)
        if rc != 0:
            sys.exit(f"export failed rc={rc} {err!r}")
        ex.append(dt)
    for _ in range(n):
        dt, rc, out, err = timed(verify, b"", env)
        if rc != 0:
            sys.exit(f"verify failed rc={rc} {out!r} {err!r}")
        ve.append(dt)
    b = json.loads(Path(bundle).read_text())
    res["export"] = stats(ex)
    res["verify"] = stats(ve)
    res["bundle_entries"] = len(b["entries"])
    res["bundle_bytes"] = Path(bundle).stat().st_size
    res["verify_output"] = out.decode().strip().splitlines()[-1]
    return res


def measure_export_verify_ref(ref: Reference, n: int, n_end: int, scratch: Scratch) -> dict:
    project = scratch.project(ref_attenu(10000, scratch))
    attenu = Path(project) / ".attenu"
    bundle = Path(project) / "bundle-10k.json"
    # The recipe's own export function (what its hook runs at SubagentStop/SessionEnd),
    # in a process of its own.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import hook; from pathlib import Path; "
            "hook.export_evidence(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))")
    export = [ref.python, "-c", code, ref.hook_dir, str(attenu),
              str(attenu / f"ledger-{SESSION}.jsonl"), str(bundle)]
    env = ref.env()
    res = {}
    dt, rc, out, err = timed(export, b"", env)  # first: also creates the anchor key
    if rc != 0:
        sys.exit(f"reference export failed rc={rc} {err.decode()[-3000:]}")
    pub = json.loads((attenu / "anchor.pub").read_text())["public_key"]
    verify = [ref.cli, "verify", str(bundle), "--pubkey", pub]
    ex, ve = [], []
    for _ in range(n):
        dt, rc, out, err = timed(export, b"", env)
        if rc != 0:
            sys.exit(f"reference export failed rc={rc} {err.decode()[-3000:]}")
        ex.append(dt)
    for _ in range(n):
        dt, rc, out, err = timed(verify, b"", env)
        if rc != 0:
            sys.exit(f"reference verify failed rc={rc} {out!r} {err.decode()[-3000:]}")
        ve.append(dt)
    res["export"] = stats(ex)
    res["verify"] = stats(ve)
    res["bundle_entries"] = len(json.loads(bundle.read_text())["entries"])
    res["verify_output"] = out.decode().strip().splitlines()[-1]
    # Its hook at SessionEnd: export + verify_bundle in one process, what a session end costs.
    end = {"session_id": SESSION, "transcript_path": "/nonexistent", "cwd": project,
           "hook_event_name": "SessionEnd", "reason": "other"}
    se = []
    for _ in range(n_end):
        dt, rc, out, err = ref.hook(project, end)
        if rc != 0 or b"verifies=True" not in out:
            sys.exit(f"reference SessionEnd failed rc={rc} {out!r} {err.decode()[-3000:]}")
        se.append(dt)
    res["session_end_hook"] = stats(se)
    return res


WORKER_CODE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import run as bench
args = json.loads(sys.argv[2])
impl = bench.Ours(args["bin"]) if args["kind"] == "ours" else bench.Reference()
project, session, k, n = args["project"], args["session"], args["worker"], args["calls"]
payloads = [bench.pre_payload(project, session, f"toolu_p{k}_{i}") for i in range(n)]
print("ready", flush=True)
sys.stdin.readline()
res = []
for p in payloads:
    dt, rc, out, err = impl.hook(project, p)
    res.append([dt, rc, bench.is_allow(out), err.decode(errors="replace")[-300:]])
print(json.dumps(res), flush=True)
"""


def measure_parallel(impl, procs: int, calls: int, scratch: Scratch) -> dict:
    """`procs` concurrent workers, each running `calls` hook processes one after another on
    the same session (a reviewer Read, allowed). Every call's wall time counts as its wait."""
    project = scratch.project()
    # The anchor key exists before a session starts (one call on another session).
    dt, rc, out, err = impl.hook(project, pre_payload(project, "bench-warm", "toolu_w"))
    if rc != 0:
        sys.exit(f"{impl.name}: warm-up failed {out!r} {err!r}")
    session = "bench-parallel"
    workers = []
    for k in range(procs):
        a = {"kind": "ours" if isinstance(impl, Ours) else "ref", "bin": getattr(impl, "bin", ""),
             "project": project, "session": session, "worker": k, "calls": calls}
        workers.append(subprocess.Popen([sys.executable, "-c", WORKER_CODE, str(BENCH), json.dumps(a)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    for w in workers:
        if w.stdout.readline().strip() != "ready":
            sys.exit("a parallel worker failed to start")
    quiesce()
    t0 = time.perf_counter()
    for w in workers:
        w.stdin.write("go\n")
        w.stdin.flush()
    results = [json.loads(w.stdout.readline()) for w in workers]
    wall = time.perf_counter() - t0
    for w in workers:
        w.wait()
    ms = [r[0] for rs in results for r in rs]
    bad = [r for rs in results for r in rs if r[1] != 0 or not r[2]]
    res = stats(ms)
    res.update({"procs": procs, "calls_each": calls, "wall_s": round(wall, 2),
                "failed_calls": len(bad), "failed_examples": [b[3] for b in bad[:3]]})
    led = impl.ledger(project, session)
    res["ledger_entries"] = count_lines(led)
    if isinstance(impl, Ours):
        res["decision_entries"] = decisions_in(led)
        bundle = str(Path(project) / "bundle-parallel.json")
        env = dict(os.environ)
        dt, rc1, out1, err1 = timed([impl.bin, "export", "--project", project, "--session", session,
                                     "--out", bundle], b"", env)
        dt, rc2, out2, err2 = timed([impl.bin, "verify", bundle, "--pub",
                                     str(Path(project) / ".attenu" / "anchor.pub")], b"", env)
        res["export_exit"] = rc1
        res["verify_exit"] = rc2
        res["verify_output"] = (out2.decode().strip().splitlines() or [""])[-1]
        b = json.loads(Path(bundle).read_text()) if rc1 == 0 else {"entries": []}
        res["bundle_decisions"] = sum(1 for e in b["entries"] if e.get("event") in ("allow", "deny"))
        res["chain_valid"] = (rc1 == 0 and rc2 == 0 and res["decision_entries"] == procs * calls
                              and res["bundle_decisions"] == procs * calls)
    else:
        out = run([impl.python, str(BENCH / "ref_tools.py"), "count", "--ledger", str(led)],
                  capture_output=True, text=True, env=impl.env())
        c = json.loads(out.stdout)
        res["decision_entries"] = c["decisions"]
        res["verifies"] = c["verifies"]
        res["chain_valid"] = c["verifies"] and c["decisions"] == procs * calls
    return res


# ---------------------------------------------------------------------------------------
# Machine, table
# ---------------------------------------------------------------------------------------
def machine(tmp: Path) -> dict:
    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    model = ""
    for line in out(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    mem = ""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    fs = out(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", "-T", str(tmp)])
    return {
        "cpu_model": model, "cpus": os.cpu_count(), "memory": mem, "kernel": platform.release(),
        "hypervisor": next((l.split(":", 1)[1].strip() for l in out(["lscpu"]).splitlines()
                            if l.startswith("Hypervisor vendor:")), ""),
        "rustc": out(["rustc", "-V"]), "python_driver": platform.python_version(),
        "tmp_dir": str(tmp.parent), "tmp_fs": fs,
        "git_commit": out(["git", "-C", str(REPO), "rev-parse", "HEAD"]),
        "git_dirty": bool(out(["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "Cargo.toml", "Cargo.lock"])),
    }


def fmt(v, digits=1):
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v / 1000:.2f} s"
    return f"{v:.{digits}f} ms"


def table(r: dict) -> str:
    rows = []

    def row(label, o, f, target=None, key="p50", target_p99=None):
        ov = o.get(key) if o else None
        fv = f.get(key) if f else None
        ratio = f"{fv / ov:.0f}x" if ov and fv else "-"
        met = "-"
        if target is not None and ov is not None:
            met = "yes" if ov <= target else f"NO (+{ov - target:.1f} ms)"
        tgt = "-" if target is None else f"<= {target:g} ms"
        if target_p99 is not None and o:
            tgt += f" p50, <= {target_p99:g} ms p99"
            p99 = o["p99"]
            met += ", p99 " + ("yes" if p99 <= target_p99 else f"NO (+{p99 - target_p99:.1f} ms)")
        rows.append((label, fmt(ov, 2), fmt(o.get("p99") if o else None, 2), str(o.get("n", "-") if o else "-"),
                     fmt(fv), str(f.get("n", "-") if f else "-"), ratio, tgt, met))

    calls_o = r.get("calls", {}).get("ours", {})
    calls_r = r.get("calls", {}).get("reference", {})
    for size in sorted(int(s) for s in calls_o):
        o, f = calls_o[str(size)], calls_r.get(str(size), {})
        t = {0: TARGETS["call_0_p50"], 10000: TARGETS["call_10000_p50"],
             100000: TARGETS["call_100000_p50"]}.get(size)
        row(f"PreToolUse, {size:,}-entry ledger", o, f, t,
            target_p99=TARGETS["call_0_p99"] if size == 0 else None)
        if size == 0 and "first_call_after_session_start" in o:
            row("PreToolUse, first of a session after SessionStart", o["first_call_after_session_start"], {})
            row("SessionStart (opens the ledger)", o["session_start"], {})
        if size == 0 and "as_built_binary" in o:
            row("PreToolUse, empty ledger, run from the build's own file in target/ "
                "(its page cache as this VM's reclaim left it)", o["as_built_binary"], {})
        if size == 0 and "floor_process" in o:
            fp = o["floor_process"]
            row("floor: the empty-ledger call's system work alone (bench/floor.c)"
                + ("" if fp.get("new_ledger_dir_fsync", True) else ", no directory fsync, as ours on ext4/XFS"),
                fp["new_ledger"], {})
            if "new_ledger_with_dir_fsync" in fp:
                row("floor: the same with the directory fsync ours skips here", fp["new_ledger_with_dir_fsync"], {})
            row("floor: the first call after SessionStart's system work alone",
                o["floor_process"]["append"], {})
    if "export" in r:
        eo, er = r["export"]["ours"], r["export"].get("reference", {})
        row("export, 10,000 entries", eo.get("export"), er.get("export"), TARGETS["export_10000_p50"])
        row("verify that bundle", eo.get("verify"), er.get("verify"), TARGETS["verify_10000_p50"])
    if "parallel" in r:
        po, pr = r["parallel"]["ours"], r["parallel"].get("reference", {})
        row(f"parallel {po['procs']}x{po['calls_each']}: per-call wait", po, pr,
            TARGETS["parallel_p99"], key="p99")
    head = ("measurement", "ours p50", "ours p99", "n", "reference", "n", "ref/ours", "target", "met")
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    lines = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += [line(x) for x in rows]
    lines.append("\n(a markdown table; reference column: its p50, except the parallel row: p99 "
                 "for both; ref/ours = reference / ours on the same statistic)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer calls; sizes 0, 1,000, 10,000")
    ap.add_argument("--no-reference", action="store_true", help="time attenu-hook only")
    ap.add_argument("--no-build", action="store_true", help="skip cargo build --release")
    ap.add_argument("--build", choices=["static", "dynamic"], default="static",
                    help="which build of attenu-hook to time (default: static, the recommended "
                         "install on Linux x86_64); with static, the default dynamic build's "
                         "per-call figures are measured too")
    ap.add_argument("--only", default="calls,export,parallel",
                    help="comma-separated sections: calls, export, parallel, roster (the "
                         "roster case of bench/roster.py: 2, 200 and 864 agents)")
    ap.add_argument("--sizes", help="ledger sizes, e.g. 0,1000,10000,100000")
    ap.add_argument("--calls", type=int, help="timed calls per size for attenu-hook (default 200)")
    ap.add_argument("--ledgers", choices=["auto", "reuse", "rebuild"], default="auto",
                    help="auto: reuse the cached ledgers when this build writes the same producer "
                         "version and entry format; reuse: any cached ledger; rebuild: always")
    ap.add_argument("--out", default=str(BENCH / "results.json"), help="results JSON path")
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temp projects")
    ap.add_argument("--tmpdir", help="where the temp projects go (default: the system temp dir)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="build the venv and the cached ledgers, measure nothing")
    args = ap.parse_args()

    quick = args.quick
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        ([0, 1000, 10000] if quick else [0, 1000, 10000, 100000])
    only = set(args.only.split(","))
    if "export" in only and 10000 not in sizes:
        sizes.append(10000)
    n_ours = args.calls or (50 if quick else 200)
    # Reference calls per size: it takes ~0.07 s empty, ~0.8 s at 10k, ~6.5 s at 100k.
    n_ref = {0: 10 if quick else 30, 1000: 5 if quick else 20, 10000: 3 if quick else 10,
             100000: 3 if quick else 5}
    started = _dt.datetime.now(_dt.timezone.utc)
    binary = build_ours(args.no_build, args.build)
    dynamic = build_ours(args.no_build, "dynamic") if args.build == "static" else None
    ours = Ours(binary)
    bin_sha = sha256_file(binary)
    ref = None
    results: dict = {"started": started.isoformat(timespec="seconds"), "quick": quick,
                     "command": "python3 bench/run.py" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""),
                     "binary_sha256": bin_sha, "build": args.build, "targets_ms": TARGETS}
    if not args.no_reference:
        results["reference"] = setup_reference()
        ref = Reference()
    scratch = Scratch(args.keep_tmp, args.tmpdir)
    try:
        results["machine"] = machine(scratch.root)
        results["loadavg_start"] = os.getloadavg()
        sampler = LoadSampler()
        results["ledgers"] = {"ours": build_our_ledgers(ours, sizes, scratch, bin_sha, args.ledgers)}
        if ref:
            results["ledgers"]["reference"] = build_ref_ledgers(ref, sizes, scratch, args.ledgers)
        if args.prepare_only:
            log("ledgers ready")
            return 0
        log("== harness floor")
        results["floor"] = measure_floor(Ours(scratch.fresh_copy(binary)), ours, ref or Reference(),
                                         50 if quick else 200) if ref else \
            {"bin_true": stats([timed(["/bin/true"], b"", dict(os.environ))[0] for _ in range(100)])}
        results["floor"]["file_create_in_tmp"] = create_cost(scratch.root)
        results["floor"]["durability"] = sync_cost(scratch.root)
        if "calls" in only:
            built = build_floor(scratch)
            floor = built[0] if built else None
            results["floor_process_build"] = built[1] if built else None
            results["calls"] = {"ours": {}, "reference": {}}
            for size in sorted(sizes):
                log(f"== PreToolUse on a {size}-entry ledger: ours x{n_ours}")
                t0 = time.monotonic()
                results["calls"]["ours"][str(size)] = measure_calls(
                    Ours(scratch.fresh_copy(binary)), size, n_ours, scratch,
                    ours_attenu(size) if size else None,
                    scratch.fresh_copy(floor) if size == 0 and floor else None,
                    ours if size == 0 else None)
                results["calls"]["ours"][str(size)]["load1"] = sampler.window(t0, time.monotonic())
                if ref:
                    n = n_ref.get(size, 5)
                    log(f"   reference x{n}")
                    t0 = time.monotonic()
                    results["calls"]["reference"][str(size)] = measure_calls(
                        ref, size, n, scratch, ref_attenu(size, scratch) if size else None)
                    results["calls"]["reference"][str(size)]["load1"] = sampler.window(t0, time.monotonic())
        if "calls" in only and dynamic is not None:
            # The default `cargo build --release` (dynamically linked), for comparison.
            d = Ours(scratch.fresh_copy(dynamic))
            results["dynamic_build"] = {"binary_sha256": sha256_file(dynamic), "calls": {}}
            results["dynamic_build"]["version"] = stats(
                [timed([d.bin, "--version"], b"", dict(os.environ))[0] for _ in range(n_ours)])
            for size in [s for s in (0, 10000) if s in sizes]:
                log(f"== dynamic build: PreToolUse on a {size}-entry ledger x{n_ours}")
                results["dynamic_build"]["calls"][str(size)] = measure_calls(
                    d, size, n_ours, scratch, ours_attenu(size) if size else None)
        if "export" in only:
            log("== export and verify, 10,000 entries")
            t0 = time.monotonic()
            results["export"] = {"ours": measure_export_verify_ours(
                Ours(scratch.fresh_copy(binary)), 5 if quick else 20, scratch)}
            results["export"]["ours"]["load1"] = sampler.window(t0, time.monotonic())
            if ref:
                results["export"]["reference"] = measure_export_verify_ref(
                    ref, 1 if quick else 3, 1 if quick else 2, scratch)
        if "parallel" in only:
            log("== parallel: 16 processes x 100 calls, one session")
            t0 = time.monotonic()
            results["parallel"] = {"ours": measure_parallel(
                Ours(scratch.fresh_copy(binary)), 16, 100, scratch)}
            results["parallel"]["ours"]["load1"] = sampler.window(t0, time.monotonic())
            if ref:
                rc = 10 if quick else 100
                log(f"   reference: 16 x {rc}")
                results["parallel"]["reference"] = measure_parallel(ref, 16, rc, scratch)
        if "roster" in only:
            import roster  # bench/roster.py, beside this file
            results["roster"] = []
            for n_agents in (2, 200, 864):
                log(f"== roster case, {n_agents} agents")
                t0 = time.monotonic()
                r = roster.measure(Ours(scratch.fresh_copy(binary)), n_agents, scratch.root,
                                   50 if quick else 200, 5 if quick else 20, 3 if quick else 10)
                r["load1"] = sampler.window(t0, time.monotonic())
                results["roster"].append(r)
            print(roster.table(results["roster"], None))
        results["loadavg_end"] = os.getloadavg()
        results["load1_during"] = sampler.stop()
        results["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    finally:
        scratch.close()
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    dur = results["floor"]["durability"]
    print(f"\nfloor: creating a file in the temp dir {results['floor']['file_create_in_tmp']['p50_us']} us p50; "
          f"fdatasync of an 800-byte append {dur['append_fdatasync_p50_ms']} ms p50, "
          f"a new file's create + 4,600-byte write + fdatasync {dur['new_file_fdatasync_p50_ms']} ms p50; "
          f"/bin/true {fmt(results['floor']['bin_true']['p50'], 2)} p50"
          + (f", attenu-hook --version {fmt(results['floor']['ours_version']['p50'], 2)} p50"
             f" ({fmt(results['floor']['ours_version_as_built']['p50'], 2)} from the build's own file)"
             f", reference python -c pass {fmt(results['floor']['ref_python_startup']['p50'])} p50"
             if "ours_version" in results["floor"] else ""))
    if "dynamic_build" in results:
        db = results["dynamic_build"]
        print("default dynamically linked build (cargo build --release): --version "
              f"{fmt(db['version']['p50'], 2)} p50; "
              + "; ".join(f"PreToolUse at {int(k):,} entries {fmt(v['p50'], 2)} p50, {fmt(v['p99'], 2)} p99"
                          for k, v in db["calls"].items()))
    if "parallel" in results:
        for k, p in results["parallel"].items():
            print(f"parallel {k}: {p['ledger_entries']} entries, {p['decision_entries']} decisions, "
                  f"chain valid: {p['chain_valid']}, failed calls: {p['failed_calls']}, wall {p['wall_s']} s")
    for size, o in results.get("calls", {}).get("ours", {}).items():
        if "post_tool_use" in o:
            print(f"ours at {int(size):,}: first call after the copy (full re-verify) "
                  f"{fmt(o['first_call_after_copy_ms'])}; its PostToolUse p50 {fmt(o['post_tool_use']['p50'], 2)}")
    if "export" in results:
        print(f"ours: first export after the copy (full re-verify) "
              f"{fmt(results['export']['ours']['export_first_after_copy_ms'])}")
        if "reference" in results["export"]:
            print(f"reference SessionEnd hook (export + verify_bundle) "
                  f"{fmt(results['export']['reference']['session_end_hook']['p50'])} p50")
    for size, o in results.get("calls", {}).get("ours", {}).items():
        if "load1" in o:
            print(f"load during ours at {int(size):,}: mean {o['load1']['mean']}, max {o['load1']['max']}")
    if "load1_during" in results:
        l = results["load1_during"]
        print(f"load average (1 min) during the run: min {l['min']:.2f}, mean {l['mean']:.2f}, max {l['max']:.2f}")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
