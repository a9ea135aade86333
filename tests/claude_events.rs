//! The whole attempt on the record: Claude Code's own refusals (`PermissionDenied`) and
//! interruptions (`Interrupt`, 2.1.335) become ledger entries that `log --summary`, `verify`
//! and the reference verifier read; a skill's inline shell (`PreSkillShellCommand`) is decided
//! as a Bash call and refused by exit 2; `install` wires what the installed Claude Code knows,
//! and `doctor` agrees. Payloads are of the shapes Claude Code sends; each is one hook process.

mod common;
use common::decision_kit::assert_has;
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

/// A PermissionDenied of `tool` with `input` by `agent`, as `id`, with Claude Code's `reason`.
fn permission_denied(
    p: &Path,
    agent: &str,
    tool: &str,
    input: Value,
    id: &str,
    reason: &str,
) -> Value {
    let fields =
        json!({"tool_name": tool, "tool_input": input, "tool_use_id": id, "reason": reason});
    payload(p, "PermissionDenied", Some(agent), fields)
}

/// The main thread's Interrupt, with `reason`.
fn interrupt(p: &Path, reason: &str) -> Value {
    payload(
        p,
        "Interrupt",
        None,
        json!({"source": "user", "reason": reason}),
    )
}

/// [`project`] after ops's allowed Read, a refused `rm -rf build` by ops, an Interrupt, and a
/// refusal with a `tool_input` that is no object (Claude Code types it as any value, seen in
/// 2.1.332's schema); each answered `{}`, never asking for a retry.
fn refused_three_times(tag: &str) -> TempDir {
    let p = project(tag);
    assert_allowed(&p.read_by("ops", "README.md").run());
    let why = "Permission to use Bash with command rm -rf build has been denied.";
    let rm = json!({"command": "rm -rf build"});
    for v in [
        permission_denied(p.path(), "ops", "Bash", rm, "toolu_9", why),
        interrupt(p.path(), "stop"),
        permission_denied(
            p.path(),
            "ops",
            "mcp__x__y",
            json!("raw"),
            "toolu_8",
            "auto mode",
        ),
    ] {
        let out = hook(p.path(), &v);
        assert_eq!(
            (out.code, out.stdout.trim()),
            (0, "{}"),
            "never asks for a retry: {}",
            out.stderr
        );
    }
    p
}

fn claude_codes_refusals_are_recorded_on_the_callers_node() {
    let p = refused_three_times("cc-refused");
    let entries = entries(p.path(), "s1");
    let refused = refused_by_claude(&entries);
    assert_eq!(refused.len(), 3, "{entries:#?}");
    let ops_node = of_event(&entries, "spawn")[0]["node"].clone();
    let bash = json!({"tool": "Bash", "scope": "exec.bash", "node": ops_node, "context": {"hook_event": "PermissionDenied", "agent_type": "ops"}});
    assert_has(refused[0], bash);
    assert_eq!(refused[0]["reasons"][0]["code"], "refused-by-claude-code");
    assert_eq!(
        refused[1]["reasons"][0]["code"],
        "interrupted-by-claude-code"
    );
    assert_has(
        refused[1],
        json!({"tool": "Interrupt", "context": {"interrupt_reason": "stop"}}),
    );
    // Claude Code's reason quotes the arguments: committed, never written raw by default.
    let text = serde_json::to_string(&entries).unwrap();
    assert!(!text.contains("rm -rf build"), "{text}");
    assert!(refused[0]["context"]["claude_reason_commitment"].is_string());
}

/// `log --summary` counts the attempt: ops tried two calls, one refused by Claude Code; `log
/// --denied` lists the refusals.
fn log_counts_claude_codes_refusals() {
    let p = refused_three_times("cc-refused-log");
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
    assert_contains(&denied_only.stdout, &["refused-by-claude-code"]);
}

/// The bundle with Claude Code's refusals verifies in both verifiers, and `verify` names them.
fn bundles_with_claude_codes_refusals_verify() {
    let p = project("cc-refused-verify");
    assert_allowed(&p.read_by("ops", "README.md").run());
    let write = json!({"file_path": "/p/x", "content": "y"});
    hook(
        p.path(),
        &permission_denied(
            p.path(),
            "reader",
            "Write",
            write,
            "toolu_w",
            "denied by rule",
        ),
    );
    hook(p.path(), &interrupt(p.path(), "permission_denied"));
    // An allowed skill shell (no outcome follows) is in the bundle too.
    assert_eq!(
        hook(
            p.path(),
            &skill_shell(p.path(), Some("ops"), "git log -1", "sk1")
        )
        .code,
        0
    );
    p.event("s1", "SessionEnd");
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let ours = p.verify_pinned(bundle.to_str().unwrap());
    assert_eq!(ours.code, 0, "{}{}", ours.stdout, ours.stderr);
    assert_contains(&ours.stdout, &["2 denied (2 refused by Claude Code)"]);
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

/// A skill's inline shell (PreSkillShellCommand) running `command` for `agent`, as `id`.
fn skill_shell(p: &Path, agent: Option<&str>, command: &str, id: &str) -> Value {
    let fields = json!({"tool_name": "Bash", "tool_input": {"command": command},
        "tool_use_id": id, "command_name": "deploy",
        "command_source": "projectSettings", "invoked_by": "user"});
    payload(p, "PreSkillShellCommand", agent, fields)
}

/// (agent, command, refused with, or allowed) for [`project`].
const SKILL_SHELLS: &[(Option<&str>, &str, Option<&str>)] = &[
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

/// The skill shell was refused by exit 2 with `[code]` on stderr, or allowed with `{}`.
#[track_caller]
fn assert_skill_answer(out: &Out, refused: Option<&str>, what: &str) {
    match refused {
        Some(code) => {
            assert_eq!(out.code, 2, "{what}: exit 2 refuses it: {}", out.stdout);
            assert!(
                out.stderr.contains(&format!("[{code}]")),
                "{what}: {}",
                out.stderr
            );
        }
        None => assert_eq!(
            (out.code, out.stdout.trim()),
            (0, "{}"),
            "{what}: {}",
            out.stderr
        ),
    }
}

/// A skill's inline shell: decided as that agent's Bash call with that command, on the record.
fn a_skills_inline_shell_is_decided_like_bash() {
    let p = project("cc-skill-shell");
    for (i, (agent, command, refused)) in SKILL_SHELLS.iter().enumerate() {
        let out = hook(
            p.path(),
            &skill_shell(p.path(), *agent, command, &format!("skill_{i}")),
        );
        assert_skill_answer(&out, *refused, &format!("{agent:?} {command}"));
        let last = entries(p.path(), "s1").pop().unwrap();
        let event = if refused.is_some() { "deny" } else { "allow" };
        let recorded = json!({"event": event, "tool": "Bash", "context": {"hook_event": "PreSkillShellCommand"}});
        assert_has(&last, recorded);
        if refused.is_none() {
            // No PostToolUse follows a skill's shell: no outcome is promised.
            assert_eq!(last["capture"], "pre_hook_only");
        }
    }
}

/// (version claude --version prints, or none on PATH; events wired; events not wired)
type Knows = (
    Option<&'static str>,
    &'static [&'static str],
    &'static [&'static str],
);
const KNOWS: &[Knows] = &[
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

/// `install` wires an event only for a Claude Code that knows it; `doctor` expects the same.
fn install_wires_what_the_installed_claude_code_knows() {
    for (version, wired, unwired) in KNOWS {
        let p = project("cc-install-version");
        let fake = version.map(operator::fake_claude);
        let path = match &fake {
            Some(d) => format!("{}:/usr/bin:/bin", d.path().display()),
            None => "/usr/bin:/bin".into(),
        };
        let env = [("PATH", Path::new(&path))];
        let out = cli_with(&["install", p.dir(), "--command", BIN], &env);
        assert_eq!(out.code, 0, "{version:?}: {}", out.stderr);
        let settings = operator::settings(p.path());
        let doctor = cli_with(&["doctor", p.dir(), "--command", BIN], &env).stdout;
        for e in *wired {
            assert!(settings["hooks"][e].is_array(), "{version:?} wires {e}");
            assert!(
                doctor.contains(&format!("ok    wired:{e}")),
                "{version:?}: {doctor}"
            );
        }
        for e in *unwired {
            assert!(
                settings["hooks"].get(e).is_none(),
                "{version:?} must not wire {e}"
            );
            let noted = out.stdout.contains(&format!("note: {e} is not wired"));
            assert!(noted, "{version:?}: {}", out.stdout);
            assert!(
                !doctor.contains(&format!("wired:{e}")),
                "{version:?}: {doctor}"
            );
        }
    }
}

fn main() {
    harness::run(tests![
        claude_codes_refusals_are_recorded_on_the_callers_node,
        log_counts_claude_codes_refusals,
        bundles_with_claude_codes_refusals_verify,
        a_skills_inline_shell_is_decided_like_bash,
        install_wires_what_the_installed_claude_code_knows,
    ]);
}
