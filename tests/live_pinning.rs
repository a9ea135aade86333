//! Live: Claude Code loads its agent definitions when a session starts, and so the hook pins
//! each session's roster then (issue 40, docs/DERIVATION.md "The session's roster").
//!
//! `claude -p` runs with the hook wired against the scripted Messages API server
//! (`tests/support/mock_messages_api.py --scenario pin`). The main thread runs one Bash; before
//! the model's next turn the server gives agent `pinned` (`tools: Read`) Write as well and
//! creates agent `newcomer`; the main thread then spawns both. The test pins what the real
//! binary does, and that the hook agrees with it:
//!
//! * `pinned` is offered its old tools only: its requests carry no `Write`, and the Write its
//!   script then asks for never runs (no trace file) and never reaches the hook;
//! * `newcomer` cannot be spawned: its Agent call comes back as an error and no request of it
//!   reaches the server;
//! * the hook's ledger has one chain, whose spawn of `pinned` grants `fs.read` alone.
//!
//! It runs for every Claude Code it finds: 2.1.332 (`ATTENU_CLAUDE_BIN`, `claude` on `PATH`,
//! or `node_modules/.bin/claude`, as `live_claude.rs` finds it) and 2.1.335
//! (`ATTENU_CLAUDE_335_BIN`, else the `@anthropic-ai/claude-agent-sdk-linux-x64@0.3.335`
//! install `.ci/run` makes under `$ATTENU_CI_CACHE/ci-tools/sdk335`). Without the first it is
//! skipped loudly (a failure under `ATTENU_REQUIRE_LIVE=1`); without the second it says so and
//! checks the first (a failure under `ATTENU_REQUIRE_LIVE=1`).

mod common;
#[allow(dead_code)]
#[path = "support/live_process.rs"]
mod process;

use common::{harness, skip};
use process::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    harness::run(tests![claude_code_keeps_the_agents_a_session_started_with]);
}

const SDK_335: &str =
    "ci-tools/sdk335/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude";

const PINNED_MD: &str =
    "---\nname: pinned\ndescription: Reads files.\ntools: Read\n---\nYou read.\n";

/// Claude Code 2.1.335, if installed.
fn find_claude_335() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ATTENU_CLAUDE_335_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("ATTENU_CI_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/attenu-hook-ci"));
    Some(cache.join(SDK_335)).filter(|p| is_executable(p))
}

fn claude_code_keeps_the_agents_a_session_started_with() {
    let mut binaries = vec![find_claude()];
    match find_claude_335() {
        Some(p) => binaries.push(p),
        None if harness::required() => {
            panic!("ATTENU_REQUIRE_LIVE=1, but Claude Code 2.1.335 is not installed ({SDK_335})")
        }
        None => loud("live_pinning: WARNING: Claude Code 2.1.335 not found; checking 2.1.332 only (set ATTENU_CLAUDE_335_BIN)\n"),
    }
    let python = std::env::var("ATTENU_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let scratch = Scratch::new();
    for (i, claude) in binaries.iter().enumerate() {
        let dir = scratch.path.join(format!("run{i}"));
        fs::create_dir_all(&dir).unwrap();
        let version = version_of(claude, &dir);
        eprintln!("live_pinning: {} ({version})", claude.display());
        one_session(claude, &python, &dir, &version);
    }
}

fn version_of(claude: &Path, dir: &Path) -> String {
    let home = dir.join("version-home");
    fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(claude);
    cmd.arg("--version");
    claude_env(&mut cmd, &home, dir);
    let out = run_command(&mut cmd, COMMAND_DEADLINE, dir, "claude-version");
    assert!(out.ok(), "`claude --version` failed: {}", out.describe());
    out.stdout.trim().to_string()
}

/// The mock server's log: one JSON record per request.
fn mock_log(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Sets up the project, wired with the hook, with agent `pinned` (`tools: Read`).
fn project_in(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    fs::create_dir_all(project.join(".claude/agents")).unwrap();
    fs::create_dir_all(project.join("trace")).unwrap();
    fs::write(project.join("README.md"), "# live pinning\n").unwrap();
    fs::write(project.join(".claude/agents/pinned.md"), PINNED_MD).unwrap();
    let (snippet, _) = load_snippet();
    for groups in snippet["hooks"]
        .as_object()
        .expect("snippet hooks")
        .values()
    {
        for g in groups.as_array().into_iter().flatten() {
            for h in g["hooks"].as_array().into_iter().flatten() {
                install_hook(h["command"].as_str().unwrap(), &project);
            }
        }
    }
    fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_vec_pretty(&snippet).unwrap(),
    )
    .unwrap();
    project
}

/// One `claude -p` session of the `pin` scenario in `project`: the mock server's log, and the
/// context a failure prints.
fn run_session(
    claude: &Path,
    python: &str,
    dir: &Path,
    project: &Path,
    n: u32,
) -> (Vec<Value>, String) {
    let (home, tmp) = (dir.join("home"), dir.join("tmp"));
    for d in [&home, &tmp] {
        fs::create_dir_all(d).unwrap();
    }
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o700)).unwrap();
    let log = dir.join(format!("mock-{n}.log"));
    let (mock, port) = start_mock_with(
        python,
        dir,
        project,
        &log,
        &[
            "--scenario".as_ref(),
            "pin".as_ref(),
            "--project".as_ref(),
            project.as_os_str(),
        ],
    );
    let mut cmd = Command::new(claude);
    cmd.args([
        "-p",
        "ATTENU-MAIN run the script",
        "--output-format",
        "json",
    ])
    .args(["--allowedTools", "Bash", "Read", "Write", "Agent"]);
    claude_env(&mut cmd, &home, &tmp)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .current_dir(project);
    let (out, err) = (
        dir.join(format!("claude-{n}.stdout")),
        dir.join(format!("claude-{n}.stderr")),
    );
    let status = run_to_files(&mut cmd, CLAUDE_DEADLINE, &out, &err);
    drop(mock);
    let ctx = format!(
        "stdout: {}\nstderr: {}\nmock log: {}",
        tail(&fs::read_to_string(&out).unwrap_or_default()),
        tail(&fs::read_to_string(&err).unwrap_or_default()),
        log.display()
    );
    assert!(
        status.is_some_and(|s| s.success()),
        "claude -p failed: {ctx}"
    );
    (mock_log(&log), ctx)
}

/// The tools Claude Code offered `pinned` in each of its requests.
fn offered_to_pinned(records: &[Value]) -> Vec<BTreeSet<String>> {
    records
        .iter()
        .filter(|r| r["who"] == "pinned" && r["subagent"] == true)
        .map(|r| {
            r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The hook's ledger of the one session `project` has besides those in `seen`.
fn new_ledger(project: &Path, seen: &mut BTreeSet<PathBuf>) -> Vec<Value> {
    let attenu = project.join(".attenu");
    let ledger = fs::read_dir(&attenu)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ledger-"))
                && p.extension().is_some_and(|x| x == "jsonl")
                && !seen.contains(p)
        })
        .unwrap_or_else(|| panic!("no new ledger under {}", attenu.display()));
    seen.insert(ledger.clone());
    fs::read_to_string(&ledger)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The scopes the ledger's spawn of `pinned` grants.
fn granted_to_pinned(entries: &[Value]) -> Value {
    let roots = entries.iter().filter(|e| e["event"] == "root").count();
    assert_eq!(roots, 1, "one roster, one chain");
    entries
        .iter()
        .find(|e| e["event"] == "spawn" && e["agent"] == "pinned")
        .map(|e| e["granted"]["scopes"].clone())
        .unwrap_or_else(|| panic!("no spawn of pinned: {entries:?}"))
}

fn one_session(claude: &Path, python: &str, dir: &Path, version: &str) {
    let project = project_in(dir);
    let mut ledgers = BTreeSet::new();
    let (records, ctx) = run_session(claude, python, dir, &project, 1);
    let ctx = format!("{version}\n{ctx}");
    let trace = project.join("trace");
    assert!(
        trace.join("trace-edited").exists(),
        "the server never edited the agents: {ctx}"
    );
    assert!(trace.join("trace-main").exists(), "{ctx}");
    // What Claude Code offered `pinned`: its old tools, without the Write the edit gave it.
    let offered = offered_to_pinned(&records);
    assert!(!offered.is_empty(), "`pinned` was never spawned: {ctx}");
    for tools in &offered {
        assert!(tools.contains("Read"), "{tools:?}: {ctx}");
        assert!(
            !tools.contains("Write"),
            "{version} offered `pinned` the Write its file gained mid-session: {tools:?}"
        );
    }
    assert!(
        !trace.join("trace-pinned-write").exists(),
        "{version}: pinned's Write ran"
    );
    // `newcomer`, created mid-session, cannot be spawned at all.
    assert!(
        !records.iter().any(|r| r["who"] == "newcomer"),
        "{version} ran `newcomer`, created mid-session: {ctx}"
    );
    let newcomer_spawn = records
        .iter()
        .flat_map(|r| r["results"].as_array().into_iter().flatten())
        .find(|x| x["tool_use_id"] == "toolu_main_1_1")
        .unwrap_or_else(|| panic!("no result for the newcomer's spawn: {ctx}"));
    assert_eq!(newcomer_spawn["is_error"], true, "{newcomer_spawn}");
    // The hook agrees: its spawn of `pinned` grants what the session started with, and the
    // Write Claude Code refused never reached it.
    let entries = new_ledger(&project, &mut ledgers);
    assert_eq!(
        granted_to_pinned(&entries),
        serde_json::json!(["fs.read"]),
        "{version}"
    );
    assert!(!entries
        .iter()
        .any(|e| e["context"]["agent_type"] == "pinned" && e["tool"] == "Write"));

    // The next session loads the edited files, in Claude Code and in the hook alike.
    let (records, ctx) = run_session(claude, python, dir, &project, 2);
    let offered = offered_to_pinned(&records);
    assert!(
        !offered.is_empty() && offered.iter().all(|t| t.contains("Write")),
        "{version}: the next session offers `pinned` Write: {offered:?}\n{ctx}"
    );
    assert!(
        records.iter().any(|r| r["who"] == "newcomer"),
        "{version}: the next session spawns `newcomer`: {ctx}"
    );
    let entries = new_ledger(&project, &mut ledgers);
    assert_eq!(
        granted_to_pinned(&entries),
        serde_json::json!(["fs.read", "fs.write"]),
        "{version}"
    );
    assert!(
        trace.join("trace-pinned-write").exists(),
        "{version}: {ctx}"
    );
}
