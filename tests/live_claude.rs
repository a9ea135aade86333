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

use attenu_hook::ops::EVENTS;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod common;
use common::{harness, skip};

fn main() {
    harness::run(tests![live_claude_code_hook_denies_records_and_exports]);
}

const HOOK_BIN: &str = env!("CARGO_BIN_EXE_attenu-hook");
const REPO: &str = env!("CARGO_MANIFEST_DIR");
const PINNED_VERSION: &str = "2.1.332";

/// One `claude -p` session (observed: 2 to 9 seconds).
const CLAUDE_DEADLINE: Duration = Duration::from_secs(60);
/// `--version`, `--derive`, `export`, `verify`.
const COMMAND_DEADLINE: Duration = Duration::from_secs(30);
/// The mock server exits by itself after this, whatever happens to the test.
const MOCK_LIFETIME_SECS: u64 = 150;

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

    let (snippet, snippet_from_repo) = load_snippet();
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

// =============================================================================================
// the ledger
// =============================================================================================

struct Expected {
    id: String,
    tool: &'static str,
    scope: String,
    /// `None`: the main thread.
    agent_type: Option<&'static str>,
    /// `None`: recorded, not enforced (main thread); any event value is accepted.
    event: Option<&'static str>,
}

fn expected_calls(worker_may_write: bool) -> Vec<Expected> {
    let e = |id: &str, tool, scope: &str, agent_type, event| Expected {
        id: id.to_string(),
        tool,
        scope: scope.to_string(),
        agent_type,
        event,
    };
    let mut v = vec![e("toolu_main_0_0", "Bash", "exec.bash", None, None)];
    for (i, (_, stype)) in SPAWNED.iter().enumerate() {
        v.push(e(
            &format!("toolu_main_1_{i}"),
            "Agent",
            &format!("agent.delegate.{stype}"),
            None,
            None,
        ));
    }
    v.push(e("toolu_main_2_0", "Bash", "exec.bash", None, None));
    v.push(e(
        "toolu_gp_0_0",
        "Bash",
        "exec.bash",
        Some("general-purpose"),
        Some("deny"),
    ));
    v.push(e(
        "toolu_explore_0_0",
        "Bash",
        "exec.bash",
        Some("Explore"),
        Some("deny"),
    ));
    v.push(e(
        "toolu_worker_0_0",
        "Bash",
        "exec.bash",
        Some("worker"),
        Some("allow"),
    ));
    v.push(e(
        "toolu_worker_1_0",
        "Write",
        "fs.write",
        Some("worker"),
        Some(if worker_may_write { "allow" } else { "deny" }),
    ));
    v.push(e(
        "toolu_builder_0_0",
        "Bash",
        "exec.bash",
        Some("builder"),
        Some("allow"),
    ));
    v.push(e(
        "toolu_builder_1_0",
        "Read",
        "fs.read",
        Some("builder"),
        Some("allow"),
    ));
    v.push(e(
        "toolu_reviewer_0_0",
        "Read",
        "fs.read",
        Some("reviewer"),
        Some("allow"),
    ));
    v
}

fn check_ledger(s: &Session, ledger: &[Value], worker_may_write: bool) {
    let where_ = format!("ledger {}", s.ledger_path().display());
    if s.wired_events.contains("SessionStart") {
        // Claude Code ran SessionStart before any tool call, so it opened the ledger and the
        // session's first PreToolUse only appended its decision.
        let first = ledger.first().expect("an empty ledger");
        assert_eq!(
            (first.get("event"), first.pointer("/context/hook_event")),
            (Some(&json!("root")), Some(&json!("SessionStart"))),
            "{where_}: the ledger was not opened by the SessionStart hook: {first}"
        );
    }
    // decisions by tool_use_id
    let mut by_id: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for entry in ledger {
        let event = entry.get("event").and_then(Value::as_str).unwrap_or("");
        if event != "allow" && event != "deny" {
            continue;
        }
        let ctx = entry
            .get("context")
            .unwrap_or_else(|| panic!("{where_}: decision without `context`: {entry}"));
        let id = ctx
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{where_}: decision without context.tool_use_id: {entry}"));
        by_id.entry(id.to_string()).or_default().push(entry);
    }

    let mut agent_ids: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut delegation_scopes: BTreeSet<String> = BTreeSet::new();
    for exp in expected_calls(worker_may_write) {
        let found = by_id.get(&exp.id).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(
            found.len(),
            1,
            "{where_}: expected exactly one decision for {} ({} by {}), found {}: {found:?}",
            exp.id,
            exp.tool,
            exp.agent_type.unwrap_or("the main thread"),
            found.len()
        );
        let entry = found[0];
        let ctx = &entry["context"];
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        assert_eq!(
            field(entry, "tool").as_deref(),
            Some(exp.tool),
            "{where_}: `tool` of {}: {entry}",
            exp.id
        );
        let scope = field(entry, "scope").unwrap_or_default();
        match exp.scope.strip_prefix("agent.delegate.") {
            // A subagent type outside the scope grammar (`Explore`) is written in an escaped
            // form; all this test relies on is that it stays a distinct delegation scope.
            Some(name) if !plain_segment(name) => {
                assert!(
                    scope.starts_with("agent.delegate.") && !delegation_scopes.contains(&scope),
                    "{where_}: `scope` of {} should be a delegation scope of its own for {name}: {entry}",
                    exp.id
                );
                delegation_scopes.insert(scope);
            }
            _ => {
                assert_eq!(scope, exp.scope, "{where_}: `scope` of {}: {entry}", exp.id);
                if exp.scope.starts_with("agent.delegate.") {
                    delegation_scopes.insert(scope);
                }
            }
        }
        assert_eq!(
            field(ctx, "session_id").as_deref(),
            Some(s.session_id.as_str()),
            "{where_}: context.session_id of {}: {entry}",
            exp.id
        );
        if let Some(event) = exp.event {
            assert_eq!(
                field(entry, "event").as_deref(),
                Some(event),
                "{where_}: decision for {} ({} by {:?}): {entry}",
                exp.id,
                exp.tool,
                exp.agent_type
            );
        }
        match exp.agent_type {
            None => {
                // main thread: no agent id on the record, and not attributed to a subagent type
                assert!(
                    ctx.get("agent_id").is_none_or(Value::is_null),
                    "{where_}: main-thread call {} recorded with a context.agent_id: {entry}",
                    exp.id
                );
                let t = field(ctx, "agent_type");
                assert!(
                    !SPAWNED.iter().any(|(_, st)| t.as_deref() == Some(*st)),
                    "{where_}: main-thread call {} attributed to subagent type {t:?}: {entry}",
                    exp.id
                );
            }
            Some(agent_type) => {
                assert_eq!(
                    field(ctx, "agent_type").as_deref(),
                    Some(agent_type),
                    "{where_}: context.agent_type of {}: {entry}",
                    exp.id
                );
                let agent_id = field(ctx, "agent_id")
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| {
                        panic!(
                            "{where_}: subagent call {} without context.agent_id: {entry}",
                            exp.id
                        )
                    });
                agent_ids.entry(agent_type).or_default().insert(agent_id);
            }
        }
    }

    // one agent id per spawned subagent, all different, and the ones Claude Code reported
    let mut seen = BTreeSet::new();
    for (i, (_, stype)) in SPAWNED.iter().enumerate() {
        let Some(ids) = agent_ids.get(stype) else {
            continue;
        };
        assert_eq!(
            ids.len(),
            1,
            "{where_}: calls of the one {stype} subagent carry different agent ids: {ids:?}"
        );
        let id = ids.iter().next().unwrap().clone();
        assert!(
            seen.insert(id.clone()),
            "{where_}: two subagents share agent id {id}"
        );
        // The Agent tool's result names the agent it launched ("agentId: <id>").
        let (_, text) = s.result(&format!("toolu_main_1_{i}"));
        match text.split("agentId: ").nth(1).map(|t| t.chars().take_while(char::is_ascii_alphanumeric).collect::<String>()) {
            Some(reported) if !reported.is_empty() => assert_eq!(id, reported, "{where_}: {stype}'s calls are recorded under agent id {id}, Claude Code launched it as {reported}"),
            _ => eprintln!("live_claude: note: the Agent result for {stype} did not name an agentId; agent id not cross-checked"),
        }
    }

    // the reviewer's Bash never reached the hook: Claude Code refused it first
    assert!(!by_id.contains_key("toolu_reviewer_1_0"), "{where_}: the reviewer's Bash reached the hook, but Claude Code should have refused it: {:?}", by_id.get("toolu_reviewer_1_0"));

    // the ledger names every agent type that ran, and the main thread
    let types: BTreeSet<&str> = ledger
        .iter()
        .filter_map(|e| e.get("context")?.get("agent_type")?.as_str())
        .collect();
    for (_, stype) in SPAWNED {
        assert!(
            types.contains(stype),
            "{where_}: no entry names agent type {stype}; named: {types:?}"
        );
    }
}

/// A scope segment written as is: lower-case letters, digits, `_` and `-`.
fn plain_segment(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

// =============================================================================================
// evidence
// =============================================================================================

fn check_evidence(s: &Session, scratch: &Path) {
    let attenu = s.project.join(".attenu");

    // The SessionEnd hook exports by itself when the snippet wires SessionEnd (checked before
    // `export` runs, which may write the same file).
    if s.wired_events.contains("SessionEnd") {
        let auto = attenu.join(format!("bundle-{}.json", s.session_id));
        assert!(
            auto.is_file(),
            "SessionEnd is wired but {} was not written",
            auto.display()
        );
        let v = run_command(
            Command::new(HOOK_BIN).arg("verify").arg(&auto),
            COMMAND_DEADLINE,
            scratch,
            "verify-auto",
        );
        // Without --pub the key beside the bundle is used: valid, but not pinned (exit 3).
        assert!(
            v.valid_key_not_pinned(),
            "attenu-hook verify {} (written at SessionEnd) did not exit 3: {}",
            auto.display(),
            v.describe()
        );
    }

    let out = run_command(
        Command::new(HOOK_BIN)
            .arg("export")
            .arg("--project")
            .arg(&s.project)
            .arg("--session")
            .arg(&s.session_id)
            .current_dir(&s.project),
        COMMAND_DEADLINE,
        scratch,
        "export",
    );
    assert!(out.ok(), "attenu-hook export failed: {}", out.describe());
    let bundles: Vec<PathBuf> = out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect();
    assert!(
        !bundles.is_empty(),
        "attenu-hook export printed no bundle path: {}",
        out.describe()
    );

    let anchor_pub = attenu.join("anchor.pub");
    assert!(
        anchor_pub.is_file(),
        "{} missing after export",
        anchor_pub.display()
    );
    for bundle in &bundles {
        let bundle = if bundle.is_absolute() {
            bundle.clone()
        } else {
            s.project.join(bundle)
        };
        assert!(
            bundle.is_file(),
            "export printed {}, which is not a file",
            bundle.display()
        );
        let v = run_command(
            Command::new(HOOK_BIN).arg("verify").arg(&bundle),
            COMMAND_DEADLINE,
            scratch,
            "verify",
        );
        assert!(
            v.valid_key_not_pinned(),
            "attenu-hook verify {} did not exit 3 (valid, key not pinned): {}",
            bundle.display(),
            v.describe()
        );
        let v = run_command(
            Command::new(HOOK_BIN)
                .arg("verify")
                .arg(&bundle)
                .arg("--pub")
                .arg(&anchor_pub),
            COMMAND_DEADLINE,
            scratch,
            "verify-pub",
        );
        assert!(
            v.ok(),
            "attenu-hook verify {} --pub {} failed: {}",
            bundle.display(),
            anchor_pub.display(),
            v.describe()
        );
    }

    // Optional: the reference verifier (attenu-guard 0.21.0) agrees, with only anchor.pub.
    if let Some(py) = std::env::var_os("ATTENU_REF_PYTHON").filter(|v| !v.is_empty()) {
        for bundle in &bundles {
            let bundle = if bundle.is_absolute() {
                bundle.clone()
            } else {
                s.project.join(bundle)
            };
            let v = run_command(
                Command::new(&py)
                    .arg("-c")
                    .arg(REF_VERIFY_PY)
                    .arg(&bundle)
                    .arg(&anchor_pub),
                COMMAND_DEADLINE,
                scratch,
                "ref-verify",
            );
            assert!(
                v.ok(),
                "attenu_guard.evidence.verify_bundle rejects {}: {}",
                bundle.display(),
                v.describe()
            );
        }
    } else {
        eprintln!(
            "live_claude: note: ATTENU_REF_PYTHON unset; reference verifier cross-check skipped"
        );
    }

    // A bundle in which the general-purpose deny is turned into an allow must not verify.
    let first = if bundles[0].is_absolute() {
        bundles[0].clone()
    } else {
        s.project.join(&bundles[0])
    };
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(&first).unwrap())
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", first.display()));
    let entries = doc
        .get_mut("entries")
        .and_then(Value::as_array_mut)
        .unwrap_or_else(|| panic!("{}: no `entries` array", first.display()));
    let target = entries
        .iter_mut()
        .find(|e| {
            e.get("event").and_then(Value::as_str) == Some("deny")
                && e.pointer("/context/tool_use_id").and_then(Value::as_str) == Some("toolu_gp_0_0")
        })
        .unwrap_or_else(|| {
            panic!(
                "{}: the general-purpose deny (toolu_gp_0_0) is not in the bundle",
                first.display()
            )
        });
    target["event"] = json!("allow");
    let tampered = scratch.join("tampered-bundle.json");
    fs::write(&tampered, serde_json::to_vec(&doc).unwrap()).unwrap();
    let v = run_command(
        Command::new(HOOK_BIN).arg("verify").arg(&tampered),
        COMMAND_DEADLINE,
        scratch,
        "verify-tampered",
    );
    assert!(
        v.status.and_then(|s| s.code()) == Some(1),
        "attenu-hook verify did not call a bundle whose deny was rewritten to allow invalid (exit 1): {}",
        v.describe()
    );
}

// =============================================================================================
// one claude session
// =============================================================================================

struct Session {
    dir: PathBuf,
    project: PathBuf,
    output: Value,
    session_id: String,
    /// tool_use_id -> (is_error, text) of every tool_result the model was sent
    results: BTreeMap<String, (bool, String)>,
    wired_events: BTreeSet<String>,
    elapsed: Duration,
}

impl Session {
    fn run(claude: &Path, python: &str, dir: &Path, snippet: &Value, with_hook: bool) -> Session {
        let project = dir.join("project");
        let home = dir.join("home");
        let cctmp = dir.join("tmp");
        for d in [
            &home,
            &cctmp,
            &project.join(".claude/agents"),
            &project.join("trace"),
        ] {
            fs::create_dir_all(d).unwrap();
        }
        fs::set_permissions(&cctmp, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(
            project.join("README.md"),
            "# scratch project for the live test\n",
        )
        .unwrap();
        fs::write(project.join(".claude/agents/reviewer.md"), REVIEWER_MD).unwrap();
        fs::write(project.join(".claude/agents/worker.md"), WORKER_MD).unwrap();
        fs::write(project.join(".claude/agents/builder.md"), BUILDER_MD).unwrap();

        let mut settings = snippet.clone();
        let mut wired_events = BTreeSet::new();
        if with_hook {
            let hooks = settings
                .get("hooks")
                .and_then(Value::as_object)
                .expect("settings snippet has no `hooks` object");
            assert!(
                hooks.contains_key("PreToolUse"),
                "settings snippet does not wire PreToolUse"
            );
            for (event, groups) in hooks {
                wired_events.insert(event.clone());
                for group in groups.as_array().into_iter().flatten() {
                    for handler in group
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let command = handler
                            .get("command")
                            .and_then(Value::as_str)
                            .expect("hook handler without a command");
                        install_hook(command, &project);
                    }
                }
            }
        } else if let Some(obj) = settings.as_object_mut() {
            obj.remove("hooks");
        }
        fs::write(
            project.join(".claude/settings.json"),
            serde_json::to_vec_pretty(&settings).unwrap(),
        )
        .unwrap();

        let mock_log = dir.join("mock.log");
        let (mock, port) = start_mock(python, dir, &project, &mock_log);

        let out_path = dir.join("claude.stdout");
        let err_path = dir.join("claude.stderr");
        let mut cmd = Command::new(claude);
        cmd.arg("-p")
            .arg(PROMPT)
            .args(["--output-format", "json", "--allowedTools"])
            .args(ALLOWED_TOOLS);
        claude_env(&mut cmd, &home, &cctmp)
            .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
            .current_dir(&project);
        let started = Instant::now();
        let status = run_to_files(&mut cmd, CLAUDE_DEADLINE, &out_path, &err_path);
        let elapsed = started.elapsed();
        drop(mock);

        let label = if with_hook { "hooked" } else { "control" };
        let stdout = fs::read_to_string(&out_path).unwrap_or_default();
        let stderr = fs::read_to_string(&err_path).unwrap_or_default();
        let status = status.unwrap_or_else(|| panic!("{label} run: claude -p did not finish within {CLAUDE_DEADLINE:?} (killed)\nstderr: {}\nmock log: {}", tail(&stderr), mock_log.display()));
        assert!(
            status.success(),
            "{label} run: claude -p exited {status}\nstdout: {}\nstderr: {}\nmock log: {}",
            tail(&stdout),
            tail(&stderr),
            mock_log.display()
        );
        let output: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "{label} run: claude -p printed no JSON result ({e}): {}",
                tail(&stdout)
            )
        });
        let session_id = output
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{label} run: no session_id in {output}"))
            .to_string();

        let mut results = BTreeMap::new();
        for line in fs::read_to_string(&mock_log).unwrap_or_default().lines() {
            let Ok(rec) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            for r in rec
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(id) = r.get("tool_use_id").and_then(Value::as_str) {
                    let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let text = r
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    results.insert(id.to_string(), (is_error, text));
                }
            }
        }
        Session {
            dir: dir.to_path_buf(),
            project,
            output,
            session_id,
            results,
            wired_events,
            elapsed,
        }
    }

    fn ran(&self, name: &str) -> bool {
        self.project
            .join("trace")
            .join(format!("trace-{name}"))
            .exists()
    }

    fn result(&self, id: &str) -> (bool, String) {
        self.results
            .get(id)
            .cloned()
            .unwrap_or_else(|| panic!("the model was never sent a result for {id}\n{}", self.ctx()))
    }

    fn ctx(&self) -> String {
        let traces: Vec<String> = fs::read_dir(self.project.join("trace"))
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "  traces: {traces:?}\n  claude stderr: {}\n  mock log: {}\n  ledger: {}",
            self.dir.join("claude.stderr").display(),
            self.dir.join("mock.log").display(),
            self.ledger_path().display()
        )
    }

    /// The script ran to its end: all five subagents spawned and completed, the main thread's
    /// last (failing) call was made after them, and the session was not an error.
    fn assert_completed(&self) {
        let o = &self.output;
        assert_eq!(
            o.get("is_error"),
            Some(&json!(false)),
            "claude -p reported an error: {o}"
        );
        assert_eq!(
            o.get("result").and_then(Value::as_str),
            Some("main: script finished"),
            "the main thread did not finish its script: {o}\n{}",
            self.ctx()
        );
        let by_type = o
            .pointer("/subagent_stats/by_type")
            .unwrap_or_else(|| panic!("no subagent_stats.by_type in {o}"));
        for (_, stype) in SPAWNED {
            assert_eq!(
                by_type.get(stype).and_then(Value::as_u64),
                Some(1),
                "subagent {stype} was not spawned exactly once: {by_type}"
            );
        }
        for (key, _) in SPAWNED {
            assert!(
                self.results.contains_key(&format!("toolu_{key}_0_0")),
                "subagent {key} never made its first call\n{}",
                self.ctx()
            );
        }
        // Made last, after all five subagents reported back: the hook answers its
        // PostToolUseFailure with `continue: false` (SPEC 7: a failed call's side effects are
        // uncertain, so Claude stops for a person), which would cut short any call after it.
        let (is_error, text) = self.result("toolu_main_2_0");
        assert!(
            is_error,
            "the main thread's failing command did not fail: {text}"
        );
    }

    fn ledger_path(&self) -> PathBuf {
        self.project
            .join(".attenu")
            .join(format!("ledger-{}.jsonl", self.session_id))
    }

    fn ledger(&self) -> Vec<Value> {
        let path = self.ledger_path();
        let text = fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "no ledger at {} ({e}); .attenu holds {:?}",
                path.display(),
                list_dir(&self.project.join(".attenu"))
            )
        });
        text.lines()
            .enumerate()
            .map(|(i, line)| {
                let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!("{} line {}: not JSON ({e}): {line}", path.display(), i + 1)
                });
                assert!(
                    v.is_object(),
                    "{} line {}: not a JSON object: {line}",
                    path.display(),
                    i + 1
                );
                v
            })
            .collect()
    }

    /// `attenu-hook --derive <project>`: agent name -> scopes.
    fn derive(&self) -> BTreeMap<String, BTreeSet<String>> {
        let out = run_command(
            Command::new(HOOK_BIN).arg("--derive").arg(&self.project),
            COMMAND_DEADLINE,
            &self.dir,
            "derive",
        );
        assert!(out.ok(), "attenu-hook --derive failed: {}", out.describe());
        let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "attenu-hook --derive did not print JSON ({e}): {}",
                out.describe()
            )
        });
        let agents = v
            .get("agents")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("attenu-hook --derive: no `agents` object: {v}"));
        agents
            .iter()
            .map(|(name, scopes)| {
                let set = scopes
                    .as_array()
                    .unwrap_or_else(|| panic!("--derive: agents.{name} is not a list: {v}"))
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect();
                (name.clone(), set)
            })
            .collect()
    }
}

/// Put our binary where the snippet's command expects it. The command names a path inside
/// the project through `$CLAUDE_PROJECT_DIR` (quoted or braced), e.g.
/// `"$CLAUDE_PROJECT_DIR"/.claude/hooks/attenu-hook`.
fn install_hook(command: &str, project: &Path) {
    let p = project.to_str().expect("scratch path is not UTF-8");
    let expanded = command
        .replace("\"$CLAUDE_PROJECT_DIR\"", p)
        .replace("\"${CLAUDE_PROJECT_DIR}\"", p)
        .replace("${CLAUDE_PROJECT_DIR}", p)
        .replace("$CLAUDE_PROJECT_DIR", p);
    let program = match expanded.strip_prefix('"') {
        Some(rest) => rest.split('"').next().unwrap_or(""),
        None => expanded.split_whitespace().next().unwrap_or(""),
    };
    assert!(
        program.starts_with(p),
        "the snippet's hook command {command:?} does not name a file under $CLAUDE_PROJECT_DIR; this test does not know where to install the binary"
    );
    let target = PathBuf::from(program);
    if target.exists() {
        return;
    }
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::copy(HOOK_BIN, &target)
        .unwrap_or_else(|e| panic!("copy {HOOK_BIN} to {}: {e}", target.display()));
    fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
}

fn load_snippet() -> (Value, bool) {
    let path = Path::new(REPO).join("settings.snippet.json");
    match fs::read_to_string(&path) {
        Ok(text) => (
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display())),
            true,
        ),
        Err(_) => (fallback_snippet(), false),
    }
}

/// A clean environment: nothing from the developer's own Claude Code setup (or from a Claude
/// Code session running this test) leaks in.
fn claude_env<'a>(cmd: &'a mut Command, home: &Path, tmp: &Path) -> &'a mut Command {
    cmd.env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        )
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .env("CLAUDE_CODE_TMPDIR", tmp)
        .env("LANG", "C.UTF-8")
        .env("ANTHROPIC_API_KEY", "test")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
}

// =============================================================================================
// the mock server
// =============================================================================================

struct Killed(Option<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_mock(python: &str, dir: &Path, project: &Path, log: &Path) -> (Killed, u16) {
    let script = Path::new(REPO).join("tests/support/mock_messages_api.py");
    let stderr = fs::File::create(dir.join("mock.stderr")).unwrap();
    let mut child = Command::new(python)
        .arg(&script)
        .arg("--trace-dir")
        .arg(project.join("trace"))
        .arg("--read-target")
        .arg(project.join("README.md"))
        .arg("--timeout")
        .arg(MOCK_LIFETIME_SECS.to_string())
        .arg("--log")
        .arg(log)
        .arg("--exit-on-stdin-eof")
        .stdin(Stdio::piped()) // held open by `Killed`; closing it stops the server
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the mock server with {python:?} ({e}); set ATTENU_PYTHON to a Python 3"));
    let stdout = child.stdout.take().unwrap();
    let guard = Killed(Some(child));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(15)).unwrap_or_default();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| {
        panic!(
            "the mock server did not print its port (got {line:?}); stderr: {}",
            fs::read_to_string(dir.join("mock.stderr")).unwrap_or_default()
        )
    });
    (guard, port)
}

// =============================================================================================
// processes with deadlines
// =============================================================================================

/// Runs to completion with stdout/stderr in files (no pipe a grandchild could hold open).
/// Past the deadline the whole process group is killed and `None` returned.
fn run_to_files(
    cmd: &mut Command,
    deadline: Duration,
    out: &Path,
    err: &Path,
) -> Option<ExitStatus> {
    cmd.stdin(Stdio::null())
        .stdout(fs::File::create(out).unwrap())
        .stderr(fs::File::create(err).unwrap())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() >= deadline {
            // the group we created for it: the child and anything it started (hooks, shells)
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg("--")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Output {
    what: String,
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
}

impl Output {
    fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
    /// `attenu-hook verify` without `--pub`: valid under the key beside the bundle.
    fn valid_key_not_pinned(&self) -> bool {
        self.status.and_then(|s| s.code()) == Some(3)
    }
    fn describe(&self) -> String {
        let status = match self.status {
            Some(s) => s.to_string(),
            None => "killed after its deadline".to_string(),
        };
        format!(
            "[{}: {status}]\nstdout: {}\nstderr: {}",
            self.what,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

fn run_command(cmd: &mut Command, deadline: Duration, scratch: &Path, what: &str) -> Output {
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let out = scratch.join(format!("{what}-{n}.stdout"));
    let err = scratch.join(format!("{what}-{n}.stderr"));
    let status = run_to_files(cmd, deadline, &out, &err);
    Output {
        what: format!("{cmd:?}"),
        status,
        stdout: fs::read_to_string(&out).unwrap_or_default(),
        stderr: fs::read_to_string(&err).unwrap_or_default(),
    }
}

fn tail(s: &str) -> String {
    let n = s.chars().count();
    if n <= 3000 {
        s.to_string()
    } else {
        format!("...{}", s.chars().skip(n - 3000).collect::<String>())
    }
}

fn list_dir(p: &Path) -> Vec<String> {
    fs::read_dir(p)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

// =============================================================================================
// finding claude
// =============================================================================================

/// `claude`: `ATTENU_CLAUDE_BIN`, else on `PATH`, else under `node_modules/.bin`; or the test
/// is skipped (failed under `ATTENU_REQUIRE_LIVE=1`).
fn find_claude() -> PathBuf {
    if let Some(explicit) = std::env::var_os("ATTENU_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&explicit);
        assert!(
            is_executable(&p),
            "ATTENU_CLAUDE_BIN={} is not an executable file",
            p.display()
        );
        return p;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("claude"))
            .find(|p| is_executable(p))
    });
    let local = Path::new(REPO).join("node_modules/.bin/claude");
    if let Some(p) = on_path.or_else(|| is_executable(&local).then_some(local)) {
        return p;
    }
    skip(format!(
        "needs the real Claude Code: nothing about attenu-hook inside Claude Code was tested \
         (set ATTENU_CLAUDE_BIN, or `npm install @anthropic-ai/claude-code@{PINNED_VERSION}` in \
         {REPO}; .ci/run does)"
    ))
}

/// Straight to the process's stderr: unlike `eprintln!`, not captured by the test harness, so
/// a skip or a warning shows in a plain `cargo test` run too.
fn loud(msg: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(msg.as_bytes());
    let _ = err.flush();
}

fn is_executable(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn check_version(claude: &Path, scratch: &Path) {
    let home = scratch.join("version-home");
    fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(claude);
    cmd.arg("--version");
    claude_env(&mut cmd, &home, scratch);
    let out = run_command(&mut cmd, COMMAND_DEADLINE, scratch, "claude-version");
    assert!(out.ok(), "`claude --version` failed: {}", out.describe());
    if !out.stdout.contains(PINNED_VERSION) {
        loud(&format!(
            "live_claude: WARNING: this test is written against Claude Code {PINNED_VERSION}, found {:?}; results may differ\n",
            out.stdout.trim()
        ));
    }
}

// =============================================================================================
// scratch directory
// =============================================================================================

struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let n = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir().join(format!("attenu-live-{}-{n}", std::process::id()));
        fs::create_dir_all(&path).unwrap();
        // canonical, so paths Claude Code reports (cwd, file_path) compare equal to ours
        let path = path.canonicalize().unwrap();
        Scratch { path }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("ATTENU_LIVE_KEEP").is_some() {
            eprintln!(
                "live_claude: scratch directory kept: {}",
                self.path.display()
            );
        } else {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
