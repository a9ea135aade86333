//! The whole attempt on the record: Claude Code's own refusals (`PermissionDenied`) and
//! interruptions (`Interrupt`, 2.1.335) become ledger entries that `log --summary`, `verify`
//! and the reference verifier read; a skill's inline shell (`PreSkillShellCommand`) is decided
//! as a Bash call and refused by exit 2; `install` wires what the installed Claude Code knows,
//! and `doctor` agrees. Payloads are of the shapes Claude Code sends; each is one hook process.

mod common;
use common::harness;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// `ops` holds Bash; `reader` does not.
fn project(tag: &str) -> TempDir {
    ProjectBuilder::new(tag)
        .agent("ops", "tools: Read, Bash")
        .agent("reader", "tools: Read")
        .build()
}

/// A payload of `event` by `agent` (None: the main thread), with `extra` fields.
fn payload(p: &Path, event: &str, agent: Option<&str>, extra: Value) -> Value {
    let mut v = json!({
        "session_id": "s1", "transcript_path": "/home/u/.claude/projects/p/s1.jsonl",
        "cwd": p, "permission_mode": "default", "hook_event_name": event,
    });
    if let Some(a) = agent {
        v["agent_id"] = json!(format!("a-{a}"));
        v["agent_type"] = json!(a);
    }
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn refused_by_claude(entries: &[Value]) -> Vec<&Value> {
    of_event(entries, "deny")
        .into_iter()
        .filter(|e| e["context"]["refused_by"] == "claude-code")
        .collect()
}

fn claude_codes_refusals_are_recorded_on_the_callers_node() {
    let p = project("cc-refused");
    assert_allowed(&p.read_by("ops", "README.md").run());
    let denied = payload(
        p.path(),
        "PermissionDenied",
        Some("ops"),
        json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"},
               "tool_use_id": "toolu_9", "reason": "Permission to use Bash with command rm -rf build has been denied."}),
    );
    let out = hook(p.path(), &denied);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "{}", "never asks for a retry");
    let interrupt = payload(
        p.path(),
        "Interrupt",
        None,
        json!({"source": "user", "reason": "stop"}),
    );
    assert_eq!(hook(p.path(), &interrupt).code, 0);
    // Claude Code types PermissionDenied's `tool_input` as any value (seen in 2.1.332's schema).
    let odd = payload(
        p.path(),
        "PermissionDenied",
        Some("ops"),
        json!({"tool_name": "mcp__x__y", "tool_input": "raw", "tool_use_id": "toolu_8", "reason": "auto mode"}),
    );
    assert_eq!(hook(p.path(), &odd).stdout.trim(), "{}");
    let entries = entries(p.path(), "s1");
    let refused = refused_by_claude(&entries);
    assert_eq!(refused.len(), 3, "{entries:#?}");
    let (bash, stop) = (refused[0], refused[1]);
    assert_eq!(bash["tool"], "Bash");
    assert_eq!(bash["scope"], "exec.bash");
    assert_eq!(bash["reasons"][0]["code"], "refused-by-claude-code");
    assert_eq!(bash["context"]["hook_event"], "PermissionDenied");
    assert_eq!(bash["context"]["agent_type"], "ops");
    let ops_node = of_event(&entries, "spawn")[0]["node"].clone();
    assert_eq!(bash["node"], ops_node, "on the subagent's own node");
    // Claude Code's reason quotes the arguments: committed, never written raw by default.
    let text = serde_json::to_string(&entries).unwrap();
    assert!(!text.contains("rm -rf build"), "{text}");
    assert!(bash["context"]["claude_reason_commitment"].is_string());
    assert_eq!(stop["tool"], "Interrupt");
    assert_eq!(stop["reasons"][0]["code"], "interrupted-by-claude-code");
    assert_eq!(stop["context"]["interrupt_reason"], "stop");
    // log --summary counts the attempt: ops tried two calls, one refused by Claude Code.
    let summary = cli(&["log", "--project", p.dir(), "--summary"]);
    let ops = summary
        .stdout
        .lines()
        .find(|l| l.starts_with("ops"))
        .unwrap();
    let cols: Vec<&str> = ops.split_whitespace().collect();
    assert_eq!(&cols[1..6], ["3", "1", "0", "0", "2"], "{}", summary.stdout);
    assert!(ops.contains("refused-by-claude-code 2"), "{ops}");
    let denied_only = cli(&["log", "--project", p.dir(), "--denied"]);
    assert!(
        denied_only.stdout.contains("refused-by-claude-code"),
        "{}",
        denied_only.stdout
    );
}

/// The bundle with Claude Code's refusals verifies in both verifiers, and `verify` names them.
fn bundles_with_claude_codes_refusals_verify() {
    let p = project("cc-refused-verify");
    assert_allowed(&p.read_by("ops", "README.md").run());
    hook(
        p.path(),
        &payload(
            p.path(),
            "PermissionDenied",
            Some("reader"),
            json!({"tool_name": "Write", "tool_input": {"file_path": "/p/x", "content": "y"},
                   "tool_use_id": "toolu_w", "reason": "denied by rule"}),
        ),
    );
    hook(
        p.path(),
        &payload(
            p.path(),
            "Interrupt",
            None,
            json!({"source": "user", "reason": "permission_denied"}),
        ),
    );
    // An allowed skill shell (no outcome follows) is in the bundle too.
    let skill = payload(
        p.path(),
        "PreSkillShellCommand",
        Some("ops"),
        json!({"tool_name": "Bash", "tool_input": {"command": "git log -1"}, "tool_use_id": "sk1",
               "command_name": "status", "invoked_by": "claude"}),
    );
    assert_eq!(hook(p.path(), &skill).code, 0);
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let ours = p.verify_pinned(bundle.to_str().unwrap());
    assert_eq!(ours.code, 0, "{}{}", ours.stdout, ours.stderr);
    assert!(
        ours.stdout.contains("2 denied (2 refused by Claude Code)"),
        "{}",
        ours.stdout
    );
    let Some(py) = reference_python() else {
        harness::skip("the reference verifier (ATTENU_REF_PYTHON) is needed for the rest");
    };
    let report = reference_verify(&py, &bundle, &p.path().join(".attenu/anchor.pub"));
    assert_eq!(report["ok"], true, "{report}");
}

fn reference_python() -> Option<String> {
    std::env::var("ATTENU_REF_PYTHON")
        .ok()
        .filter(|p| Path::new(p).exists())
}

/// A skill's inline shell: decided as that agent's Bash call with that command, on the record.
fn a_skills_inline_shell_is_decided_like_bash() {
    let p = project("cc-skill-shell");
    // (agent, command, refused with, or allowed)
    let cases: &[(Option<&str>, &str, Option<&str>)] = &[
        (Some("ops"), "git status", None),
        (Some("reader"), "git status", Some("out-of-authority")),
        (
            Some("ops"),
            "cat .attenu/anchor.key",
            Some("self-protection"),
        ),
        (Some("nobody"), "ls", Some("undeclared-agent")),
        (None, "ls", None),
    ];
    for (i, (agent, command, refused)) in cases.iter().enumerate() {
        let v = payload(
            p.path(),
            "PreSkillShellCommand",
            *agent,
            json!({"tool_name": "Bash", "tool_input": {"command": command},
                   "tool_use_id": format!("skill_{i}"), "command_name": "deploy",
                   "command_source": "projectSettings", "invoked_by": "user"}),
        );
        let out = hook(p.path(), &v);
        match refused {
            Some(code) => {
                assert_eq!(
                    out.code, 2,
                    "{agent:?} {command}: exit 2 refuses it: {}",
                    out.stdout
                );
                assert!(
                    out.stderr.contains(&format!("[{code}]")),
                    "{agent:?} {command}: {}",
                    out.stderr
                );
            }
            None => {
                assert_eq!(out.code, 0, "{agent:?} {command}: {}", out.stderr);
                assert_eq!(out.stdout.trim(), "{}", "{agent:?} {command}");
            }
        }
        let entries = entries(p.path(), "s1");
        let last = entries.last().unwrap();
        assert_eq!(
            last["context"]["hook_event"], "PreSkillShellCommand",
            "case {i}"
        );
        assert_eq!(last["tool"], "Bash");
        assert_eq!(
            last["event"],
            if refused.is_some() { "deny" } else { "allow" }
        );
        if refused.is_none() {
            // No PostToolUse follows a skill's shell: no outcome is promised.
            assert_eq!(last["capture"], "pre_hook_only");
        }
    }
}

/// A fake `claude` on PATH that says it is `version`.
fn fake_claude(version: &str) -> TempDir {
    let d = TempDir::new("fake-claude");
    let f = d.path().join("claude");
    std::fs::write(&f, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// `install` wires an event only for a Claude Code that knows it; `doctor` expects the same.
fn install_wires_what_the_installed_claude_code_knows() {
    // (version claude --version prints, or none on PATH; events wired; events not wired)
    let cases: &[(Option<&str>, &[&str], &[&str])] = &[
        (
            Some("2.1.335"),
            &["Interrupt", "PermissionDenied", "PreSkillShellCommand"],
            &[],
        ),
        (
            Some("2.1.332"),
            &["PermissionDenied", "PreSkillShellCommand"],
            &["Interrupt"],
        ),
        (
            Some("2.1.300"),
            &["PreToolUse"],
            &["PermissionDenied", "PreSkillShellCommand", "Interrupt"],
        ),
        (
            None,
            &["PermissionDenied", "PreSkillShellCommand"],
            &["Interrupt"],
        ),
    ];
    for (version, wired, unwired) in cases {
        let p = project("cc-install-version");
        let fake = version.map(fake_claude);
        let path = match &fake {
            Some(d) => format!("{}:/usr/bin:/bin", d.path().display()),
            None => "/usr/bin:/bin".into(),
        };
        let env = [("PATH", Path::new(&path))];
        let out = cli_with(&["install", p.dir(), "--command", BIN], &env);
        assert_eq!(out.code, 0, "{version:?}: {}", out.stderr);
        let settings = operator::settings(p.path());
        for e in *wired {
            assert!(settings["hooks"][e].is_array(), "{version:?} wires {e}");
        }
        for e in *unwired {
            assert!(
                settings["hooks"].get(e).is_none(),
                "{version:?} must not wire {e}"
            );
            assert!(
                out.stdout.contains(&format!("note: {e} is not wired")),
                "{version:?}: {}",
                out.stdout
            );
        }
        let doctor = cli_with(&["doctor", p.dir(), "--command", BIN], &env);
        for e in *wired {
            assert!(
                doctor.stdout.contains(&format!("ok    wired:{e}")),
                "{version:?}: {}",
                doctor.stdout
            );
        }
        for e in *unwired {
            assert!(
                !doctor.stdout.contains(&format!("wired:{e}")),
                "{version:?}: {}",
                doctor.stdout
            );
        }
    }
}

fn main() {
    harness::run(tests![
        claude_codes_refusals_are_recorded_on_the_callers_node,
        bundles_with_claude_codes_refusals_verify,
        a_skills_inline_shell_is_decided_like_bash,
        install_wires_what_the_installed_claude_code_knows,
    ]);
}
