#!/usr/bin/env python3
"""A scripted Anthropic Messages API server for the live Claude Code test.

Stdlib only. Binds 127.0.0.1 on a free port and prints that port alone on the first line of
stdout. It exits by itself after --timeout seconds, and (with --exit-on-stdin-eof) as soon as
its parent closes stdin, so it can never outlive the test that started it.

Every reply is decided from the request alone:

* The main thread (the prompt carries no "ATTENU-SCRIPT agent=" marker) runs MAIN_SCRIPT:
  one tool-call turn per step, the step chosen by the number of tool_result blocks already in
  `messages`; when the script is exhausted it ends the turn with plain text.
* A subagent's request has `cc_is_subagent=true` in its system text. Which subagent is asking
  is read from the prompt the main thread gave it ("ATTENU-SCRIPT agent=<key>"), which is the
  text of its first user message. It then runs AGENT_SCRIPTS[<key>] the same way.
* Anything else Claude Code asks (title or summary generation, requests without tools,
  count_tokens, unknown paths) gets a short harmless reply.

Every tool body that matters is a Bash `touch <trace-dir>/trace-<name>`, so a body that ran
leaves a file. Tool-use ids are deterministic (`toolu_<key>_<step>`), so a test can find each
call in the hook's ledger.

    python3 mock_messages_api.py --trace-dir DIR [--timeout 120] [--log FILE] [--exit-on-stdin-eof]
        [--scenario spawns|pin|rules --project DIR]

`--scenario pin` is live_pinning.rs's: see build_pin_scripts; `--scenario rules` is
live_argument_rules.rs's: see build_rules_scripts.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = re.compile(r"ATTENU-SCRIPT agent=([A-Za-z0-9_-]+)")

# Filled in by main(): lists of Step (one assistant turn of (tool_name, tool_input) calls).
MAIN_SCRIPT: list = []
AGENT_SCRIPTS: dict = {}
# (who, step) -> a function run once, just before that step's reply is sent.
BEFORE_STEP: dict = {}

# The subagents the main thread spawns in one turn: (key, subagent_type).
# `key` is what the prompt names and what trace files are called after.
SPAWNS = [
    ("gp", "general-purpose"),   # built-in, not declared by the project -> hook denies
    ("explore", "Explore"),      # built-in, not declared by the project -> hook denies
    ("worker", "worker"),        # declared, no tools line: inherits the pool (Bash included)
    ("builder", "builder"),      # declared with Bash in its tools
    ("reviewer", "reviewer"),    # declared with Read, Grep, Glob only
]


class Step:
    """One assistant turn of tool calls. `after_notifications`: do not start it before that
    many background subagents have reported completion to this conversation."""

    def __init__(self, calls, after_notifications: int = 0):
        self.calls = calls
        self.after_notifications = after_notifications


def build_scripts(trace_dir: str, read_target: str) -> None:
    def touch(name: str):
        return ("Bash", {"command": f"touch {os.path.join(trace_dir, 'trace-' + name)}",
                         "description": f"leave trace {name}"})

    read = ("Read", {"file_path": read_target})
    spawns = [("Agent", {"description": f"scripted {key}",
                         "prompt": f"ATTENU-SCRIPT agent={key}. Follow the script.",
                         "subagent_type": stype}) for key, stype in SPAWNS]
    MAIN_SCRIPT[:] = [
        Step([touch("main")]),
        Step(spawns),
        # Only once every subagent has reported back (background agents notify the main
        # thread), so that whatever a hook answers to a failed call cannot cut them short.
        Step([("Bash", {"command": "exit 3", "description": "a command that fails"})],
             after_notifications=len(SPAWNS)),
    ]
    AGENT_SCRIPTS.clear()
    AGENT_SCRIPTS.update({
        "gp": [Step([touch("gp")])],
        "explore": [Step([touch("explore")])],
        "worker": [Step([touch("worker")]),
                   Step([("Write", {"file_path": os.path.join(trace_dir, "trace-worker-write"),
                                    "content": "written by worker\n"})])],
        "builder": [Step([touch("builder")]), Step([read])],
        # Bash is not in the reviewer's tools: Claude Code refuses it before any hook runs.
        "reviewer": [Step([read]), Step([touch("reviewer")])],
    })


PINNED_MD = "---\nname: pinned\ndescription: Reads files.\ntools: Read\n---\nYou read.\n"
WIDENED_MD = "---\nname: pinned\ndescription: Reads files.\ntools: Read, Write\n---\nYou read.\n"
NEWCOMER_MD = "---\nname: newcomer\ndescription: Writes files.\ntools: Read, Write\n---\nYou write.\n"


def build_pin_scripts(trace_dir: str, read_target: str, project: str) -> None:
    """The `pin` scenario (issue 40): the main thread runs one Bash; before the model's next
    turn this server gives agent `pinned` (tools: Read) Write too and creates agent
    `newcomer`; the main thread then spawns both. What Claude Code offers `pinned` (its
    request's `tools`) and what it answers for `newcomer` show whether it reloaded them."""
    agents = os.path.join(project, ".claude", "agents")

    def touch(name: str):
        return ("Bash", {"command": f"touch {os.path.join(trace_dir, 'trace-' + name)}",
                         "description": f"leave trace {name}"})

    def edit() -> None:
        with open(os.path.join(agents, "pinned.md"), "w", encoding="utf-8") as fh:
            fh.write(WIDENED_MD)
        with open(os.path.join(agents, "newcomer.md"), "w", encoding="utf-8") as fh:
            fh.write(NEWCOMER_MD)
        open(os.path.join(trace_dir, "trace-edited"), "w").close()

    spawns = [("Agent", {"description": f"scripted {key}",
                         "prompt": f"ATTENU-SCRIPT agent={key}. Follow the script.",
                         "subagent_type": key}) for key in ("pinned", "newcomer")]
    MAIN_SCRIPT[:] = [Step([touch("main")]), Step(spawns, after_notifications=0),
                      Step([touch("main-done")], after_notifications=1)]
    BEFORE_STEP.clear()
    BEFORE_STEP[("main", 1)] = edit
    write = ("Write", {"file_path": os.path.join(trace_dir, "trace-pinned-write"),
                       "content": "written by pinned\n"})
    AGENT_SCRIPTS.clear()
    AGENT_SCRIPTS.update({
        "pinned": [Step([("Read", {"file_path": read_target})]), Step([write])],
        "newcomer": [Step([write])],
    })


def build_rules_scripts(trace_dir: str) -> None:
    """The `rules` scenario (issue 39): the main thread spawns `release`, declared with
    `tools: Bash(git tag:*)`, which runs `git tag`, then `touch`, then `git tag … && touch`,
    then `git tag` again, then two lines that run `touch` through `git tag`'s own words
    (`~$(…)`, and `$[_]` after a quoted `a[$(…)]`). A tag in the project's repository, or a trace file, shows which
    bodies ran."""
    def bash(command: str):
        return ("Bash", {"command": command, "description": "scripted"})

    MAIN_SCRIPT[:] = [
        Step([("Agent", {"description": "scripted release",
                         "prompt": "ATTENU-SCRIPT agent=release. Follow the script.",
                         "subagent_type": "release"})]),
        Step([bash(f"touch {os.path.join(trace_dir, 'trace-main-done')}")],
             after_notifications=1),
    ]
    AGENT_SCRIPTS.clear()
    AGENT_SCRIPTS.update({
        "release": [
            Step([bash("git tag v1-live")]),
            Step([bash(f"touch {os.path.join(trace_dir, 'trace-x')}")]),
            Step([bash(f"git tag v2-live && touch {os.path.join(trace_dir, 'trace-y')}")]),
            Step([bash("git tag v3-live")]),
            # Red-team holes: a command substitution after a tilde, and `$[_]` evaluating
            # the last argument (a string that runs `touch`).
            Step([bash(f"git tag v4-live ~$(touch {os.path.join(trace_dir, 'trace-z')})")]),
            Step([bash(f"git tag 'a[$(touch {os.path.join(trace_dir, 'trace-w')})]' 2>/dev/null;"
                       " git tag $[_]")]),
        ],
    })


# ---------------------------------------------------------------------------------------
# request analysis
# ---------------------------------------------------------------------------------------
def system_text(body: dict) -> str:
    sysv = body.get("system")
    if isinstance(sysv, str):
        return sysv
    if isinstance(sysv, list):
        return "\n".join(b.get("text", "") for b in sysv if isinstance(b, dict))
    return ""


def user_texts(body: dict):
    """Top-level text of user messages only: never tool_use inputs (the main thread's own
    Agent calls carry the marker) and never tool_result contents (a subagent's answer)."""
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "text":
                    yield block.get("text", "")


def count_tool_results(body: dict) -> int:
    n = 0
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


NOTIFIED = re.compile(r"<task-notification>.*?<tool-use-id>([^<]+)</tool-use-id>.*?"
                      r"<status>(completed|failed|killed)</status>", re.S)


def count_notifications(body: dict) -> int:
    """Distinct background subagents that told this conversation they have finished."""
    return len({m.group(1) for t in user_texts(body) for m in NOTIFIED.finditer(t)})


def tool_results(body: dict) -> list:
    """Every tool_result block of the conversation: what the model has been told. (The last
    message is not always the one: Claude Code also appends `system` role messages.)"""
    out = []
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                if isinstance(c, list):
                    c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
                out.append({"tool_use_id": b.get("tool_use_id"),
                            "is_error": bool(b.get("is_error")), "text": str(c or "")[:2000]})
    return out


def tool_names(body: dict) -> set:
    return {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}


def decide(body: dict):
    """Returns (who, content_blocks, stop_reason)."""
    tools = tool_names(body)
    is_sub = "cc_is_subagent=true" in system_text(body)
    key = None
    for text in user_texts(body):
        m = MARKER.search(text)
        if m:
            key = m.group(1)
            break
    done = count_tool_results(body)

    if is_sub and key in AGENT_SCRIPTS:
        who, script, prefix = key, AGENT_SCRIPTS[key], key
    elif not is_sub and "Agent" in tools and any("ATTENU-MAIN" in t for t in user_texts(body)):
        who, script, prefix = "main", MAIN_SCRIPT, "main"
    else:
        # auxiliary request (title, summary, a subagent we do not script): answer harmlessly
        return "aux", [{"type": "text", "text": "ok"}], "end_turn"

    # The step is given by the number of completed tool calls of this conversation: each
    # step's calls all come back before the next request, so walk the steps summing sizes.
    step, seen = 0, 0
    while step < len(script) and seen + len(script[step].calls) <= done:
        seen += len(script[step].calls)
        step += 1
    if step >= len(script):
        return who, [{"type": "text", "text": f"{who}: script finished"}], "end_turn"
    if count_notifications(body) < script[step].after_notifications:
        return who, [{"type": "text", "text": f"{who}: waiting for subagents"}], "end_turn"
    with _lock:
        before = BEFORE_STEP.pop((who, step), None)
    if before:
        before()
    blocks = []
    for i, (name, inp) in enumerate(script[step].calls):
        blocks.append({"type": "tool_use", "id": f"toolu_{prefix}_{step}_{i}",
                       "name": name, "input": inp})
    return who, blocks, "tool_use"


# ---------------------------------------------------------------------------------------
# wire format
# ---------------------------------------------------------------------------------------
_msg_counter = [0]
_lock = threading.Lock()


def next_msg_id() -> str:
    with _lock:
        _msg_counter[0] += 1
        return f"msg_mock_{_msg_counter[0]:06d}"


def sse(blocks: list, stop_reason: str, model: str) -> bytes:
    out = []

    def ev(name: str, data: dict) -> None:
        out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")

    ev("message_start", {"type": "message_start", "message": {
        "id": next_msg_id(), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
    for idx, block in enumerate(blocks):
        if block["type"] == "text":
            ev("content_block_start", {"type": "content_block_start", "index": idx,
                                       "content_block": {"type": "text", "text": ""}})
            ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                       "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            ev("content_block_start", {"type": "content_block_start", "index": idx,
                                       "content_block": {"type": "tool_use", "id": block["id"],
                                                         "name": block["name"], "input": {}}})
            ev("content_block_delta", {"type": "content_block_delta", "index": idx,
                                       "delta": {"type": "input_json_delta",
                                                 "partial_json": json.dumps(block["input"])}})
        ev("content_block_stop", {"type": "content_block_stop", "index": idx})
    ev("message_delta", {"type": "message_delta",
                         "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                         "usage": {"output_tokens": 20}})
    ev("message_stop", {"type": "message_stop"})
    return "".join(out).encode()


def whole_message(blocks: list, stop_reason: str, model: str) -> bytes:
    return json.dumps({"id": next_msg_id(), "type": "message", "role": "assistant",
                       "model": model, "content": blocks, "stop_reason": stop_reason,
                       "stop_sequence": None,
                       "usage": {"input_tokens": 10, "output_tokens": 20}}).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_file = None

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def _log(self, record: dict) -> None:
        if Handler.log_file:
            with _lock, open(Handler.log_file, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")

    def _send(self, code: int, ctype: str, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", "req_mock")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self._log({"method": "GET", "path": self.path})
        self._send(200, "application/json", b"{}")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            self._log({"method": "POST", "path": self.path, "who": "count_tokens"})
            self._send(200, "application/json", b'{"input_tokens": 10}')
            return
        if not path.endswith("/v1/messages"):
            self._log({"method": "POST", "path": self.path, "who": "unknown"})
            self._send(200, "application/json", b"{}")
            return
        who, blocks, stop = decide(body if isinstance(body, dict) else {})
        model = str(body.get("model") or "claude-mock") if isinstance(body, dict) else "claude-mock"
        self._log({"method": "POST", "path": self.path, "who": who, "stop": stop,
                   "tool_results": count_tool_results(body),
                   "results": tool_results(body),
                   "reply": [b.get("id") or b.get("text") for b in blocks],
                   "subagent": "cc_is_subagent=true" in system_text(body),
                   "tools": sorted(n for n in tool_names(body) if n),
                   "body": body if os.environ.get("MOCK_LOG_BODIES") else None})
        if body.get("stream"):
            self._send(200, "text/event-stream", sse(blocks, stop, model))
        else:
            self._send(200, "application/json", whole_message(blocks, stop, model))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace-dir", required=True)
    ap.add_argument("--read-target", default=None,
                    help="absolute path the Read calls use (default: <trace-dir>/README.md)")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--log", default=None)
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    ap.add_argument("--scenario", choices=["spawns", "pin", "rules"], default="spawns")
    ap.add_argument("--project", default=None, help="the project the `pin` scenario edits")
    args = ap.parse_args()

    trace_dir = os.path.abspath(args.trace_dir)
    read_target = args.read_target or os.path.join(trace_dir, "README.md")
    if args.scenario == "pin":
        build_pin_scripts(trace_dir, read_target, os.path.abspath(args.project))
    elif args.scenario == "rules":
        build_rules_scripts(trace_dir)
    else:
        build_scripts(trace_dir, read_target)
    Handler.log_file = args.log

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)

    threading.Timer(args.timeout, lambda: os._exit(3)).start()
    if args.exit_on_stdin_eof:
        def watch() -> None:
            try:
                while sys.stdin.buffer.read(4096):
                    pass
            finally:
                os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
