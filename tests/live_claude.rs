//! Live end-to-end test with the real Claude Code (npm `@anthropic-ai/claude-code@2.1.332`).
//!
//! `claude -p` runs against a scripted Messages API server on loopback
//! (`tests/support/mock_messages_api.py`, Python 3 stdlib). The script makes the main thread
//! run Bash, then spawn five subagents in one turn, then (once all five have reported back)
//! run a Bash command that fails. Each subagent makes its own tool calls; every call that
//! matters is a `touch <project>/trace/trace-<name>`, so a body that ran leaves a file.
//!
//! The same session runs twice, in two fresh copies of one project:
//!
//! * control: no hooks. Every body Claude Code lets through runs.
//! * hooked: attenu-hook wired exactly as `settings.snippet.json` wires it.
//!
//! and the test proves, against the control:
//!
//! | caller | call | with the hook |
//! |---|---|---|
//! | main thread | Bash, Agent ×5, a failing Bash | recorded, not enforced: bodies run, all 5 agents spawn |
//! | `general-purpose` (built-in, undeclared) | Bash | denied, body never runs |
//! | `Explore` (built-in, undeclared) | Bash | denied, body never runs |
//! | `worker` (declared, no `tools`: inherits) | Bash | allowed, runs |
//! | `worker` | Write | as `attenu-hook --derive` says for `worker` (derived pool: denied) |
//! | `builder` (declared, `tools: Bash, Read`) | Bash, Read | allowed, run |
//! | `reviewer` (declared, `tools: Read, Grep, Glob`) | Read | allowed |
//! | `reviewer` | Bash | refused by Claude Code itself: never reaches the hook, no ledger line |
//!
//! and that `.attenu/ledger-<session>.jsonl` names each call's agent type, agent id,
//! tool_use_id, tool and scope, that the deny reason reached the model, and that the bundle
//! `attenu-hook export` writes passes `attenu-hook verify` (and a tampered copy does not).
//!
//! Finding `claude`: `ATTENU_CLAUDE_BIN`, else `claude` on `PATH`, else
//! `node_modules/.bin/claude` under the repository root. When it is not found the test shows as
//! ignored, unless `ATTENU_REQUIRE_LIVE=1` (or `ATTENU_CLAUDE_BIN` names a missing file): then it
//! fails. `ATTENU_PYTHON` overrides `python3` for the mock server.
//! With `ATTENU_REF_PYTHON` (a Python with `attenu-guard[crypto]==0.21.0`), the exported
//! bundles are also checked with the reference `attenu_guard.evidence.verify_bundle`; without it
//! the test runs everything else and then shows as ignored, saying so.
//! Set `ATTENU_LIVE_KEEP=1` to keep the scratch directory after a passing run.
//!
//! Every subprocess has a deadline and is killed (with its process group) when it passes it.
//! A whole run takes about 5 to 15 seconds.
//!
//! The session is driven by `support/live_session.rs`, its ledger and bundles checked by
//! `support/live_checks.rs`; processes, deadlines and the scratch directory are
//! `support/live_process.rs`.

#[path = "support/live_checks.rs"]
mod checks;
mod common;
#[allow(dead_code)]
#[path = "support/live_process.rs"]
mod process;
#[path = "support/live_session.rs"]
mod session;

use attenu_hook::ops::EVENTS;
use checks::*;
use common::{harness, skip};
use process::*;
use serde_json::{json, Value};
use session::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    harness::run(tests![live_claude_code_hook_denies_records_and_exports]);
}

/// One `claude -p` session (observed: 2 to 9 seconds); shorter than the other live tests'
/// (`support/live_process.rs` holds the constants they share).
const CLAUDE_DEADLINE: Duration = Duration::from_secs(60);

/// `python -c REF_VERIFY_PY BUNDLE ANCHOR_PUB`: exit 0 iff attenu-guard's own verifier accepts.
const REF_VERIFY_PY: &str = r#"
import json, sys
from attenu_guard.evidence import verify_bundle
from attenu_guard.wire import Ed25519Verifier
pub = json.load(open(sys.argv[2]))
report = verify_bundle(json.load(open(sys.argv[1])),
                       Ed25519Verifier(bytes.fromhex(pub["public_key"]), kid=pub.get("kid") or "k1"))
print(json.dumps({"ok": report["ok"], "checks": report["checks"], "failures": report.get("failures")}, default=str))
sys.exit(0 if report["ok"] else 1)
"#;

const PROMPT: &str = "ATTENU-MAIN run the script";
const ALLOWED_TOOLS: [&str; 4] = ["Bash", "Read", "Write", "Agent"];

/// The subagents the script spawns, in spawn order: (script key, subagent_type).
/// Tool-use ids are `toolu_<key>_<step>_<index>` (main thread: key `main`).
const SPAWNED: [(&str, &str); 5] = [
    ("gp", "general-purpose"),
    ("explore", "Explore"),
    ("worker", "worker"),
    ("builder", "builder"),
    ("reviewer", "reviewer"),
];

const REVIEWER_MD: &str = "---
name: reviewer
description: Reviews code already in the repository. Reads and searches only.
tools: Read, Grep, Glob
---
You review code. You never run commands.
";

const WORKER_MD: &str = "---
name: worker
description: Does general work. Declares no tools line, so it inherits the session's tools except WebFetch.
disallowedTools: WebFetch
---
You do the work you are given.
";

const BUILDER_MD: &str = "---
name: builder
description: Builds the project with shell commands.
tools: Bash, Read
---
You build the project.
";

/// Used only when the repository has no `settings.snippet.json` yet (the test says so).
fn fallback_snippet() -> Value {
    let handler = json!([{ "hooks": [{
        "type": "command",
        "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/attenu-hook",
        "timeout": 10,
        "onFailure": "block"
    }]}]);
    let mut hooks = serde_json::Map::new();
    // Every event install wires but SessionStart.
    for event in EVENTS.iter().filter(|&&e| e != "SessionStart") {
        hooks.insert(event.to_string(), handler.clone());
    }
    json!({ "hooks": hooks })
}

fn live_claude_code_hook_denies_records_and_exports() {
    let claude = find_claude();
    let python = std::env::var("ATTENU_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let scratch = Scratch::new();
    eprintln!(
        "live_claude: claude = {}, scratch = {}",
        claude.display(),
        scratch.path.display()
    );
    check_version(&claude, &scratch.path);

    let (snippet, snippet_from_repo) = load_snippet_or(fallback_snippet);
    if !snippet_from_repo {
        loud(&format!(
            "live_claude: WARNING: {REPO}/settings.snippet.json not found; wiring the hook with the \
             built-in block from shared/CLAUDE-CODE.md instead\n"
        ));
    }

    let control = Session::run(
        &claude,
        &python,
        &scratch.path.join("control"),
        &snippet,
        false,
    );
    let hooked = Session::run(
        &claude,
        &python,
        &scratch.path.join("hooked"),
        &snippet,
        true,
    );
    eprintln!(
        "live_claude: control run {:.1}s, hooked run {:.1}s, session {}",
        control.elapsed.as_secs_f64(),
        hooked.elapsed.as_secs_f64(),
        hooked.session_id
    );

    // ---- both runs went through the whole script ------------------------------------------
    for s in [&control, &hooked] {
        s.assert_completed();
    }

    // ---- control: without the hook every body Claude Code lets through runs ---------------
    for name in ["main", "gp", "explore", "worker", "worker-write", "builder"] {
        assert!(control.ran(name), "control run: trace-{name} missing, so the script did not do what this test relies on\n{}", control.ctx());
    }
    assert!(
        !control.ran("reviewer"),
        "control run: the reviewer's Bash ran, but Claude Code should refuse a tool outside its `tools`\n{}",
        control.ctx()
    );
    assert!(
        !control.project.join(".attenu").exists(),
        "control run has no hook, yet .attenu/ exists"
    );

    // ---- hooked: what the hook's own derivation says --------------------------------------
    let derived = hooked.derive();
    assert!(
        derived
            .get("worker")
            .is_some_and(|s| s.contains("exec.bash")),
        "--derive: worker (no tools line) must inherit exec.bash: {derived:?}"
    );
    assert!(
        derived
            .get("builder")
            .is_some_and(|s| s.contains("exec.bash") && s.contains("fs.read")),
        "--derive: builder must hold exec.bash and fs.read: {derived:?}"
    );
    assert!(
        derived
            .get("reviewer")
            .is_some_and(|s| s.contains("fs.read") && !s.contains("exec.bash")),
        "--derive: reviewer must hold fs.read and not exec.bash: {derived:?}"
    );
    for undeclared in ["general-purpose", "Explore"] {
        assert!(
            !derived.contains_key(undeclared),
            "--derive lists {undeclared}, which the project does not declare: {derived:?}"
        );
    }
    let worker_may_write = derived["worker"].contains("fs.write");

    // ---- hooked: bodies ------------------------------------------------------------------
    for (name, why) in [
        ("main", "the main thread is recorded, not enforced"),
        (
            "worker",
            "worker declares no tools line and inherits exec.bash",
        ),
        ("builder", "builder declares Bash"),
    ] {
        assert!(
            hooked.ran(name),
            "hooked run: trace-{name} missing although {why}\n{}",
            hooked.ctx()
        );
    }
    for (name, why) in [
        (
            "gp",
            "general-purpose is a built-in type the project does not declare",
        ),
        (
            "explore",
            "Explore is a built-in type the project does not declare",
        ),
    ] {
        assert!(
            !hooked.ran(name),
            "hooked run: trace-{name} exists: a call the hook must deny ran its body ({why})\n{}",
            hooked.ctx()
        );
    }
    assert_eq!(
        hooked.ran("worker-write"),
        worker_may_write,
        "hooked run: worker's Write {} although --derive says worker {} fs.write\n{}",
        if hooked.ran("worker-write") {
            "ran"
        } else {
            "did not run"
        },
        if worker_may_write {
            "holds"
        } else {
            "does not hold"
        },
        hooked.ctx()
    );
    assert!(
        !hooked.ran("reviewer"),
        "hooked run: the reviewer's Bash ran\n{}",
        hooked.ctx()
    );

    // ---- hooked: what the model was told --------------------------------------------------
    for id in ["toolu_gp_0_0", "toolu_explore_0_0"] {
        let (is_error, text) = hooked.result(id);
        assert!(is_error && text.contains("attenu-hook"), "the model should see attenu-hook's deny reason for {id}, saw is_error={is_error}: {text}");
    }
    for id in [
        "toolu_main_0_0",
        "toolu_worker_0_0",
        "toolu_builder_0_0",
        "toolu_builder_1_0",
        "toolu_reviewer_0_0",
    ] {
        let (is_error, text) = hooked.result(id);
        assert!(!is_error, "allowed call {id} came back as an error: {text}");
    }

    // ---- hooked: the ledger --------------------------------------------------------------
    let ledger = hooked.ledger();
    check_ledger(&hooked, &ledger, worker_may_write);

    // ---- hooked: evidence ----------------------------------------------------------------
    check_evidence(&hooked, &scratch.path);

    eprintln!("live_claude: OK ({} ledger lines)", ledger.len());
    if std::env::var_os("ATTENU_REF_PYTHON").is_none_or(|v| v.is_empty()) {
        skip("everything ran but the reference verifier's cross-check: set ATTENU_REF_PYTHON to a python with `attenu-guard[crypto]==0.21.0`");
    }
}
