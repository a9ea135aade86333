//! Live, with the real Claude Code: the events beyond PreToolUse that put the whole attempt on
//! the record.
//!
//! **Claude Code's own refusals.** In auto mode behind a base URL that does not pass its safety
//! check through (the scripted server), Claude Code refuses every action that needs the check
//! and raises PermissionDenied (2.1.332 raises it for the auto-mode classifier only, not for a
//! settings deny rule). The script's five Agent spawns are refused so: the ledger holds each,
//! by its tool_use_id, as refused by Claude Code, and no subagent ran.
//!
//! **A skill's inline shell** (`!`command`` in a SKILL.md), which Claude Code runs as the
//! skill loads and for which PreToolUse never fires, reaches the hook as PreSkillShellCommand,
//! is recorded, and is refused when the hook refuses it. With the real Claude Code 2.1.332
//! (`ATTENU_CLAUDE_BIN`, as `live_claude.rs` finds it) and the scripted Messages API server;
//! `claude -p "/traceit"` loads the skill. Its command is a `touch` of a trace file, so a body
//! that ran leaves the file:
//!
//! | configuration | the shell | ledger |
//! |---|---|---|
//! | defaults (the main thread recorded, not enforced) | runs | `allow`, hook_event PreSkillShellCommand |
//! | `enforce_main_thread = true`, no Bash declared for the session | never runs | `deny` (`unresolved`) |
//!
//! Skipped loudly without Claude Code (a failure under `ATTENU_REQUIRE_LIVE=1`).

mod common;
#[allow(dead_code)]
#[path = "support/live_process.rs"]
mod process;

use common::{harness, skip};
use process::*;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    harness::run(tests![
        claude_codes_own_refusals_are_on_the_ledger,
        a_skills_inline_shell_is_decided_and_recorded
    ]);
}

/// One `claude -p "/traceit"` in a fresh project wired by the snippet, with `config` as
/// `.attenu/config.toml`; returns the project.
fn run(claude: &Path, scratch: &Path, name: &str, config: &str) -> PathBuf {
    let dir = scratch.join(name);
    let (project, home, tmp) = (dir.join("project"), dir.join("home"), dir.join("tmp"));
    for d in [&home, &tmp, &project.join("trace")] {
        fs::create_dir_all(d).unwrap();
    }
    let skill = project.join(".claude/skills/traceit");
    fs::create_dir_all(&skill).unwrap();
    let trace = project.join("trace/trace-skill");
    fs::write(
        skill.join("SKILL.md"),
        format!(
            "---\nname: traceit\ndescription: leaves a trace\n---\nTrace: !`touch {}`\n",
            trace.display()
        ),
    )
    .unwrap();
    let (snippet, _) = load_snippet();
    for groups in snippet["hooks"].as_object().unwrap().values() {
        let command = groups[0]["hooks"][0]["command"].as_str().unwrap();
        install_hook(command, &project);
    }
    fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_vec_pretty(&snippet).unwrap(),
    )
    .unwrap();
    let state = project.join(".attenu");
    fs::create_dir_all(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(state.join("config.toml"), config).unwrap();
    let python = std::env::var("ATTENU_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let (_mock, port) = start_mock(&python, &dir, &project, &dir.join("mock.log"));
    let mut cmd = Command::new(claude);
    cmd.args([
        "-p",
        "/traceit",
        "--output-format",
        "json",
        "--allowedTools",
        "Bash",
        "Read",
    ]);
    claude_env(&mut cmd, &home, &tmp)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .current_dir(&project);
    let out = run_command(&mut cmd, CLAUDE_DEADLINE, &dir, "claude");
    assert!(
        out.status.is_some(),
        "claude did not finish: {}",
        out.describe()
    );
    project
}

/// The ledger's entries, every chain of the session.
fn ledger(project: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for f in fs::read_dir(project.join(".attenu")).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().to_string();
        if name.starts_with("ledger-") && name.ends_with(".jsonl") {
            for line in fs::read_to_string(f.path()).unwrap().lines() {
                out.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    out
}

fn claude_codes_own_refusals_are_on_the_ledger() {
    let claude = find_claude();
    let scratch = Scratch::new();
    check_version(&claude, &scratch.path);
    let (snippet, _) = load_snippet();
    if snippet["hooks"].get("PermissionDenied").is_none() {
        skip("settings.snippet.json does not wire PermissionDenied");
    }
    let dir = scratch.path.join("auto");
    let (project, home, tmp) = (dir.join("project"), dir.join("home"), dir.join("tmp"));
    for d in [&home, &tmp, &project.join("trace")] {
        fs::create_dir_all(d).unwrap();
    }
    for groups in snippet["hooks"].as_object().unwrap().values() {
        install_hook(groups[0]["hooks"][0]["command"].as_str().unwrap(), &project);
    }
    fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_vec_pretty(&snippet).unwrap(),
    )
    .unwrap();
    let python = std::env::var("ATTENU_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let (_mock, port) = start_mock(&python, &dir, &project, &dir.join("mock.log"));
    let mut cmd = Command::new(&claude);
    cmd.args([
        "-p",
        "ATTENU-MAIN run the script",
        "--output-format",
        "json",
    ])
    .args(["--permission-mode", "auto"]);
    claude_env(&mut cmd, &home, &tmp)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .current_dir(&project);
    let out = run_command(&mut cmd, CLAUDE_DEADLINE, &dir, "claude");
    assert!(
        out.status.is_some(),
        "claude did not finish: {}",
        out.describe()
    );
    let denials: Value = serde_json::from_str(&out.stdout).unwrap_or_default();
    let refused_by_claude: Vec<String> = denials["permission_denials"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["tool_use_id"].as_str().map(str::to_string))
        .collect();
    assert!(
        refused_by_claude.len() >= 5,
        "the scripted spawns should be refused by auto mode here: {}",
        out.describe()
    );
    let entries = ledger(&project);
    for id in &refused_by_claude {
        let on_record = entries.iter().any(|e| {
            e["event"] == "deny"
                && e["context"]["refused_by"] == "claude-code"
                && e["context"]["hook_event"] == "PermissionDenied"
                && e["context"]["tool_use_id"] == id.as_str()
        });
        assert!(
            on_record,
            "{id}, refused by Claude Code, is not on the ledger (scratch {})",
            scratch.path.display()
        );
    }
    for key in ["gp", "explore", "worker", "builder"] {
        assert!(
            !project.join(format!("trace/trace-{key}")).exists(),
            "{key} ran although its spawn was refused"
        );
    }
}

/// The ledger's PreSkillShellCommand entries, by event.
fn skill_entries(project: &Path) -> Vec<(String, String)> {
    ledger(project)
        .iter()
        .filter(|e| e["context"]["hook_event"] == "PreSkillShellCommand")
        .map(|e| {
            let code = e["context"]["reason_code"].as_str().unwrap_or("");
            (e["event"].as_str().unwrap().to_string(), code.to_string())
        })
        .collect()
}

fn a_skills_inline_shell_is_decided_and_recorded() {
    let claude = find_claude();
    let scratch = Scratch::new();
    check_version(&claude, &scratch.path);
    let (snippet, _) = load_snippet();
    if snippet["hooks"].get("PreSkillShellCommand").is_none() {
        skip("settings.snippet.json does not wire PreSkillShellCommand");
    }
    // (run, config, the shell ran, the ledger's entries for it)
    let cases: &[(&str, &str, bool, (&str, &str))] = &[
        ("recorded", "", true, ("allow", "")),
        (
            "enforced",
            "enforce_main_thread = true\n",
            false,
            ("deny", "unresolved"),
        ),
    ];
    for (name, config, ran, entry) in cases {
        let project = run(&claude, &scratch.path, name, config);
        assert_eq!(
            project.join("trace/trace-skill").exists(),
            *ran,
            "{name}: the skill's shell {} (scratch {})",
            if *ran { "did not run" } else { "ran" },
            scratch.path.display()
        );
        assert_eq!(
            skill_entries(&project),
            [(entry.0.to_string(), entry.1.to_string())],
            "{name} (scratch {})",
            scratch.path.display()
        );
    }
}
