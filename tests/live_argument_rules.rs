//! Live, with the real Claude Code 2.1.332: a subagent declared `tools: Bash(git tag:*)` holds
//! Bash for `git tag` and nothing else.
//!
//! Claude Code offers such a subagent the whole Bash tool (its `tools` drops the arguments),
//! so without the hook every command of the script runs. The scripted model server
//! (`--scenario rules`) has the main thread spawn `release`, which runs, in turn:
//!
//! | call | without the hook | with it |
//! |---|---|---|
//! | `git tag v1-live` | runs (tag v1-live) | runs |
//! | `touch trace/trace-x` | runs (trace-x) | refused, `argument-rule-unmatched`; no trace-x |
//! | `git tag v2-live && touch trace/trace-y` | runs (tag v2-live, trace-y) | refused; neither |
//! | `git tag v3-live` | runs | runs: the agent goes on after a refusal |
//! | `git tag v4-live ~$(touch trace/trace-z)` | runs `touch` (trace-z) | refused, `argument-unprovable` |
//! | `git tag 'a[$(touch trace/trace-w)]'; git tag $[_]` | runs `touch` (trace-w) | refused, `argument-unprovable` |
//!
//! The project is a git repository with one commit, so a tag that exists is a body that ran.
//! The two runs are fresh copies of one project. Skipped loudly without Claude Code (a failure
//! under `ATTENU_REQUIRE_LIVE=1`), as `live_claude.rs` finds it.

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
    harness::run(tests![a_git_tag_rule_holds_for_git_tag_alone]);
}

const RELEASE_MD: &str = "---
name: release
description: Tags releases.
tools: Bash(git tag:*)
---
You tag releases.
";

/// One session of the `rules` scenario in a fresh project; returns the project.
fn run(claude: &Path, scratch: &Path, name: &str, hooked: bool) -> PathBuf {
    let dir = scratch.join(name);
    let (project, home, tmp) = (dir.join("project"), dir.join("home"), dir.join("tmp"));
    for d in [
        &home,
        &tmp,
        &project.join("trace"),
        &project.join(".claude/agents"),
    ] {
        fs::create_dir_all(d).unwrap();
    }
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(project.join(".claude/agents/release.md"), RELEASE_MD).unwrap();
    git(&project, &["init", "-q"]);
    git(
        &project,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    );
    let (mut snippet, _) = load_snippet();
    if hooked {
        for groups in snippet["hooks"].as_object().unwrap().values() {
            install_hook(groups[0]["hooks"][0]["command"].as_str().unwrap(), &project);
        }
    } else {
        snippet.as_object_mut().unwrap().remove("hooks");
    }
    fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_vec_pretty(&snippet).unwrap(),
    )
    .unwrap();
    let python = std::env::var("ATTENU_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let log = dir.join("mock.log");
    let extra = ["--scenario".as_ref(), "rules".as_ref()];
    let (_mock, port) = start_mock_with(&python, &dir, &project, &log, &extra);
    let mut cmd = Command::new(claude);
    cmd.args([
        "-p",
        "ATTENU-MAIN run the script",
        "--output-format",
        "json",
    ])
    .args(["--allowedTools", "Bash", "Agent"]);
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

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| skip(format!("git is needed ({e})")));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tagged(project: &Path, tag: &str) -> bool {
    project.join(".git/refs/tags").join(tag).exists()
}

/// The ledger's decision on `tool_use_id`: its event and reason code.
fn decision(project: &Path, id: &str) -> Option<(String, String)> {
    for f in fs::read_dir(project.join(".attenu")).ok()?.flatten() {
        let name = f.file_name().to_string_lossy().to_string();
        if !(name.starts_with("ledger-") && name.ends_with(".jsonl")) {
            continue;
        }
        for line in fs::read_to_string(f.path()).unwrap().lines() {
            let e: Value = serde_json::from_str(line).unwrap();
            let decided = matches!(e["event"].as_str(), Some("allow" | "deny"));
            if decided && e["context"]["tool_use_id"] == id {
                let code = e["reasons"][0]["code"].as_str().unwrap_or("").to_string();
                return Some((e["event"].as_str().unwrap().to_string(), code));
            }
        }
    }
    None
}

fn a_git_tag_rule_holds_for_git_tag_alone() {
    let claude = find_claude();
    let scratch = Scratch::new();
    check_version(&claude, &scratch.path);
    let context = |what: &str| format!("{what} (scratch {})", scratch.path.display());
    // Without the hook, Claude Code runs every command: the rule's arguments hold nothing.
    let control = run(&claude, &scratch.path, "control", false);
    for tag in ["v1-live", "v2-live", "v3-live"] {
        assert!(
            tagged(&control, tag),
            "{}",
            context(&format!("control: {tag} missing"))
        );
    }
    for file in ["trace-x", "trace-y", "trace-z", "trace-w"] {
        assert!(
            control.join("trace").join(file).exists(),
            "{}",
            context(file)
        );
    }
    // With the hook: `git tag` runs, nothing else does.
    let hooked = run(&claude, &scratch.path, "hooked", true);
    assert!(
        tagged(&hooked, "v1-live") && tagged(&hooked, "v3-live"),
        "{}",
        context("git tag did not run")
    );
    assert!(
        !tagged(&hooked, "v2-live"),
        "{}",
        context("`git tag v2-live && touch` ran")
    );
    for file in ["trace-x", "trace-y", "trace-z", "trace-w"] {
        assert!(
            !hooked.join("trace").join(file).exists(),
            "{}",
            context(&format!("{file} ran"))
        );
    }
    for (id, want) in [
        ("toolu_release_0_0", ("allow", "")),
        ("toolu_release_1_0", ("deny", "argument-rule-unmatched")),
        ("toolu_release_2_0", ("deny", "argument-rule-unmatched")),
        ("toolu_release_3_0", ("allow", "")),
        ("toolu_release_4_0", ("deny", "argument-unprovable")),
        ("toolu_release_5_0", ("deny", "argument-unprovable")),
    ] {
        let got = decision(&hooked, id);
        assert_eq!(
            got,
            Some((want.0.to_string(), want.1.to_string())),
            "{}",
            context(id)
        );
    }
}
