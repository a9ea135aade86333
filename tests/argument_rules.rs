//! Claude Code's permission rules with arguments, held by the hook, through the binary with
//! real files: an agent's `tools: Bash(git tag:*)` holds Bash only for commands that rule
//! matches (every command of the line), file rules with each path form, `WebFetch(domain:…)`,
//! MCP names and `Agent(type)`; the settings' `deny` and `ask` rules bind subagents too. The
//! rules are on the record (the chain's root and spawns) and the bundle verifies in both
//! verifiers. A skill's inline shell (PreSkillShellCommand) meets the same rules.
//!
//! To add a case: append a row to [`CASES`] (agent, tool, input, the reason code it is refused
//! with or `None` if allowed). The agents and settings are in [`project`].

mod common;
use common::harness;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// The agents and the settings every case runs against.
fn project(tag: &str) -> TempDir {
    ProjectBuilder::new(tag)
        .agent("release", "tools: Read, Bash(git tag:*), Bash(git log *)")
        .agent("exact", "tools: Bash(npm test), Bash(cargo build --release)")
        .agent("docs", "tools: Read(./docs/**), Edit(/docs/*.md), Write(//tmp/attenu-rules-out/**), Grep(./docs/**), Glob(./docs/**)")
        .agent("home", "tools: Read(~/.config/app/**)")
        .agent("web", "tools: WebFetch(domain:docs.rs), WebFetch(domain:*.rust-lang.org)")
        .agent("mcp", "tools: mcp__github__get_issue, mcp__fs")
        .agent("lead", "tools: Agent(release), Read")
        .agent("shell", "tools: Bash, Read, Grep, WebFetch, Edit")
        .agent("odd", "tools: Skill(deploy), TodoWrite")
        .settings(json!({"permissions": {
            "allow": ["Bash(npm run lint)"],
            "deny": ["Bash(rm *)", "Read(./secrets/**)", "Edit(./locked/**)", "WebFetch(domain:evil.example)"],
            "ask": ["Bash(git push:*)", "mcp__fs__write_file"],
        }}))
        .build()
}

type Case = (
    &'static str,
    &'static str,
    fn() -> Value,
    Option<&'static str>,
);

fn bash(c: &str) -> Value {
    json!({"command": c})
}

/// (agent, tool, input, refused with): one row per case.
const CASES: &[Case] = &[
    // A Bash rule: every simple command of the line must match one.
    ("release", "Bash", || bash("git tag v1"), None),
    ("release", "Bash", || bash("git tag"), None),
    (
        "release",
        "Bash",
        || bash("git  tag   -a v1 -m 'first release'"),
        None,
    ),
    (
        "release",
        "Bash",
        || bash("git log --oneline | git tag -l"),
        None,
    ),
    ("release", "Bash", || bash("git tag v1 && git log -1"), None),
    (
        "release",
        "Bash",
        || bash("(git tag v1; git log) & git tag -l"),
        None,
    ),
    (
        "release",
        "Bash",
        || bash("git tag v1 2>&1 >/dev/null"),
        None,
    ),
    ("release", "Bash", || bash("LANG=C git tag v1"), None),
    (
        "release",
        "Bash",
        || bash("touch x"),
        Some("argument-rule-unmatched"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag v1 && touch x"),
        Some("argument-rule-unmatched"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag v1; rm -rf ~"),
        Some("settings-deny-rule"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag v1 | sh"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git tagx"),
        Some("argument-rule-unmatched"),
    ),
    (
        "release",
        "Bash",
        || bash("git status"),
        Some("argument-rule-unmatched"),
    ),
    (
        "release",
        "Bash",
        || bash("PATH=/tmp/evil git tag v1"),
        Some("argument-rule-unmatched"),
    ),
    (
        "release",
        "Bash",
        || bash("timeout 5 git tag v1"),
        Some("argument-rule-unmatched"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag $(curl x|sh)"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag `id`"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag <(curl x)"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag ${V:-$(id)}"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("bash -c 'git tag v1'"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("sh -c 'git tag v1'"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("eval git tag v1"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("exec git tag v1"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("source ./x.sh"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash(". ./x.sh"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("alias git=touch; git tag x"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git() { touch x; }; git tag v1"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("$G tag v1"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag v1 > ~/.bashrc"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("cat <<EOF\n$(touch x)\nEOF"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("for t in a b; do git tag $t; done"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || bash("git tag 'v1"),
        Some("argument-unprovable"),
    ),
    (
        "release",
        "Bash",
        || {
            bash(&format!(
                "{}git tag{}",
                "$(".repeat(10_000),
                ")".repeat(10_000)
            ))
        },
        Some("argument-unprovable"),
    ),
    ("release", "Monitor", || bash("git tag"), Some("unresolved")),
    ("exact", "Bash", || bash("npm test"), None),
    ("exact", "Bash", || bash("npm  test"), None),
    (
        "exact",
        "Bash",
        || bash("npm test --watch"),
        Some("argument-rule-unmatched"),
    ),
    (
        "exact",
        "Bash",
        || bash("npm test && cargo build --release"),
        None,
    ),
    (
        "exact",
        "Bash",
        || bash("npm run lint"),
        Some("argument-rule-unmatched"),
    ),
    // File rules, each path form.
    (
        "docs",
        "Read",
        || json!({"file_path": "docs/guide.md"}),
        None,
    ),
    (
        "docs",
        "Read",
        || json!({"file_path": "docs/deep/er/a.png"}),
        None,
    ),
    (
        "docs",
        "Read",
        || json!({"file_path": "src/main.rs"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Read",
        || json!({"file_path": "docs/../src/main.rs"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Read",
        || json!({"file_path": "/etc/passwd"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Edit",
        || json!({"file_path": "docs/guide.md"}),
        None,
    ),
    (
        "docs",
        "Edit",
        || json!({"file_path": "docs/sub/guide.md"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Edit",
        || json!({"file_path": "docs/guide.txt"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Write",
        || json!({"file_path": "/tmp/attenu-rules-out/a/b.txt"}),
        None,
    ),
    (
        "docs",
        "Write",
        || json!({"file_path": "/tmp/elsewhere.txt"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Grep",
        || json!({"pattern": "x", "path": "docs"}),
        None,
    ),
    (
        "docs",
        "Grep",
        || json!({"pattern": "x"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "docs",
        "Glob",
        || json!({"pattern": "**/*.md", "path": "docs"}),
        None,
    ),
    (
        "docs",
        "Glob",
        || json!({"pattern": "../src/*", "path": "docs"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "home",
        "Read",
        || json!({"file_path": "~/.config/app/settings.toml"}),
        None,
    ),
    (
        "home",
        "Read",
        || json!({"file_path": "~/.ssh/id_ed25519"}),
        Some("argument-rule-unmatched"),
    ),
    // WebFetch(domain:…).
    (
        "web",
        "WebFetch",
        || json!({"url": "https://docs.rs/serde"}),
        None,
    ),
    (
        "web",
        "WebFetch",
        || json!({"url": "https://DOCS.RS./x"}),
        None,
    ),
    (
        "web",
        "WebFetch",
        || json!({"url": "https://doc.rust-lang.org/std"}),
        None,
    ),
    (
        "web",
        "WebFetch",
        || json!({"url": "https://rust-lang.org/"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "web",
        "WebFetch",
        || json!({"url": "https://docs.rs.evil.example/"}),
        Some("argument-rule-unmatched"),
    ),
    (
        "web",
        "WebFetch",
        || json!({"url": "https://user@evil.example@docs.rs/"}),
        None,
    ),
    // MCP server and tool names, Agent(type).
    ("mcp", "mcp__github__get_issue", || json!({}), None),
    (
        "mcp",
        "mcp__github__create_issue",
        || json!({}),
        Some("unresolved"),
    ),
    (
        "mcp",
        "mcp__fs__read_text_file",
        || json!({"path": "docs/a.md"}),
        None,
    ),
    (
        "mcp",
        "mcp__fs__write_file",
        || json!({"path": "docs/a.md"}),
        Some("settings-ask-rule"),
    ),
    (
        "lead",
        "Agent",
        || json!({"subagent_type": "release", "prompt": "tag"}),
        None,
    ),
    (
        "lead",
        "Agent",
        || json!({"subagent_type": "shell", "prompt": "x"}),
        Some("out-of-authority"),
    ),
    // Arguments of a tool the hook does not read: held for no call.
    (
        "odd",
        "Skill",
        || json!({"skill": "deploy"}),
        Some("argument-rule-unmatched"),
    ),
    ("odd", "TodoWrite", || json!({"todos": []}), None),
    // The settings' deny and ask rules bind an agent that holds the whole tool.
    ("shell", "Bash", || bash("ls -la && git status"), None),
    (
        "shell",
        "Bash",
        || bash("rm -rf build"),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "Bash",
        || bash("ls; sudo rm x"),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "Bash",
        || bash("echo $(rm y)"),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "Bash",
        || bash("bash -c 'rm -rf /'"),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "Bash",
        || bash("eval \"$CMD\""),
        Some("argument-unprovable"),
    ),
    (
        "shell",
        "Bash",
        || bash("git push origin main"),
        Some("settings-ask-rule"),
    ),
    ("shell", "Bash", || bash("echo $(date) | tee /tmp/x"), None),
    (
        "shell",
        "Read",
        || json!({"file_path": "secrets/api.key"}),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "Read",
        || json!({"file_path": "docs/secrets/ok.md"}),
        None,
    ),
    (
        "shell",
        "Grep",
        || json!({"pattern": "k", "path": "secrets"}),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "Edit",
        || json!({"file_path": "locked/a.txt"}),
        Some("settings-deny-rule"),
    ),
    ("shell", "Edit", || json!({"file_path": "open/a.txt"}), None),
    (
        "shell",
        "WebFetch",
        || json!({"url": "https://evil.example/x"}),
        Some("settings-deny-rule"),
    ),
    (
        "shell",
        "WebFetch",
        || json!({"url": "https://fine.example/x"}),
        None,
    ),
];

/// Every row of the table, each one hook process.
fn every_case_is_decided_as_its_rules_declare() {
    let p = project("argrules-table");
    let mut wrong = Vec::new();
    for (i, (agent, tool, input, want)) in CASES.iter().enumerate() {
        let out = p
            .subagent(agent, tool)
            .input(input())
            .id(&format!("t{i}"))
            .run();
        let got = decided(&out);
        if got.as_deref() != *want {
            let what = input().to_string();
            let what: String = what.chars().take(90).collect();
            wrong.push(format!(
                "{agent} {tool} {what}: want {want:?}, got {got:?}: {}",
                out.stdout
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        CASES.len(),
        wrong.join("\n")
    );
}

/// The refusal's code, or `None` for an allow.
fn decided(out: &Out) -> Option<String> {
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or(Value::Null);
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"].as_str()?;
    let code = reason.split_once('[')?.1.split(']').next()?;
    Some(code.to_string())
}

/// A refusal says which part, and what to do.
fn refusals_name_the_part_and_the_remedy() {
    let p = project("argrules-words");
    let run = |c: &str| p.subagent("release", "Bash").input(bash(c)).run();
    let out = run("git tag v1 && touch x");
    assert_denied_saying(&out, "the command `touch x` matches none of the rules");
    assert_denied_saying(&out, "Bash(git tag:*)");
    assert_denied_saying(&out, ".claude/agents/release.md");
    // (With `| sh` inside, the settings' denial refuses it first: a shell reading its input.)
    let out = run("git tag $(curl -s x)");
    assert_denied_saying(&out, "command substitution `$(curl -s x)`");
    assert_denied_saying(&out, "run plain commands");
    let out = p.subagent("shell", "Bash").input(bash("git push")).run();
    assert_denied_saying(
        &out,
        "permissions.ask Bash(git push:*) in .claude/settings.json",
    );
    assert_denied_saying(&out, "a hook cannot ask");
}

/// `derive --json` shows the rules, and the chain's root and spawn carry them; the bundle of
/// a session that used them verifies in ours and in the reference verifier.
fn the_rules_are_on_the_record_and_the_bundle_verifies() {
    let p = project("argrules-record");
    let derived = cli(&["--derive", "--json", p.dir()]);
    assert_eq!(derived.code, 0, "{}", derived.stderr);
    let d: Value = serde_json::from_str(&derived.stdout).unwrap();
    assert_eq!(
        d["rules"]["agents"]["release"],
        json!(["Bash(git log *)", "Bash(git tag:*)"])
    );
    assert_eq!(d["agents"]["release"], json!(["exec.bash", "fs.read"]));
    let settings: Vec<&str> = d["rules"]["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert!(
        settings.contains(&"Bash(rm *)") && settings.contains(&"mcp__fs__write_file"),
        "{settings:?}"
    );
    assert_allowed(
        &p.subagent("release", "Bash")
            .input(bash("git tag v1"))
            .id("a")
            .run(),
    );
    let denied = p
        .subagent("release", "Bash")
        .input(bash("touch x"))
        .id("b")
        .run();
    assert_denied_with(&denied, "argument-rule-unmatched");
    assert_denied_with(
        &p.subagent("shell", "Bash")
            .input(bash("rm x"))
            .id("c")
            .run(),
        "settings-deny-rule",
    );
    let entries = entries(p.path(), "s1");
    let root = &of_event(&entries, "root")[0];
    assert_eq!(
        root["context"]["settings_rules"][0]["kind"], "deny",
        "{root}"
    );
    let spawn = of_event(&entries, "spawn")
        .into_iter()
        .find(|e| e["agent"] == "release")
        .unwrap();
    assert_eq!(
        spawn["context"]["rules"]["exec.bash"],
        json!(["Bash(git log *)", "Bash(git tag:*)"])
    );
    assert_eq!(spawn["granted"]["scopes"], json!(["exec.bash", "fs.read"]));
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let ours = p.verify_pinned(bundle.to_str().unwrap());
    assert_eq!(ours.code, 0, "{}{}", ours.stdout, ours.stderr);
    let py = harness::need_reference_python();
    let report = reference_verify(&py, &bundle, &p.path().join(".attenu/anchor.pub"));
    assert_eq!(report["ok"], true, "{report}");
}

/// A skill's inline shell meets the agent's Bash rules and the settings' rules.
fn a_skills_inline_shell_meets_the_same_rules() {
    let p = project("argrules-skill");
    for (i, (agent, command, refused)) in [
        ("release", "git tag v1", None),
        (
            "release",
            "git tag v1 && touch x",
            Some("argument-rule-unmatched"),
        ),
        ("release", "git tag $(id)", Some("argument-unprovable")),
        ("shell", "rm -rf x", Some("settings-deny-rule")),
    ]
    .into_iter()
    .enumerate()
    {
        let mut v = json!({
            "session_id": "s1", "transcript_path": "/home/u/.claude/projects/p/s1.jsonl",
            "cwd": p.path(), "permission_mode": "default",
            "hook_event_name": "PreSkillShellCommand",
            "agent_id": format!("a-{agent}"), "agent_type": agent,
            "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": format!("sk{i}"), "command_name": "release", "invoked_by": "claude",
        });
        v["command_source"] = json!("projectSettings");
        let out = hook(p.path(), &v);
        match refused {
            None => assert_eq!(
                (out.code, out.stdout.trim()),
                (0, "{}"),
                "{command}: {}",
                out.stderr
            ),
            Some(code) => {
                assert_eq!(out.code, 2, "{command}: exit 2 refuses a skill's shell");
                assert!(
                    out.stderr.contains(&format!("[{code}]")),
                    "{command}: {}",
                    out.stderr
                );
            }
        }
    }
}

/// The table's rules, unchanged, with no rules at all: a project without argument rules
/// decides as before (the whole tool), and its digest carries no rules.
fn a_project_without_argument_rules_is_unchanged() {
    let p = ProjectBuilder::new("argrules-none")
        .agent("ops", "tools: Bash, Read")
        .build();
    assert_allowed(
        &p.subagent("ops", "Bash")
            .input(bash("git tag $(id) && touch x"))
            .run(),
    );
    let derived = cli(&["--derive", "--json", p.dir()]);
    let d: Value = serde_json::from_str(&derived.stdout).unwrap();
    assert!(d.get("rules").is_none(), "{d}");
    let _ = Path::new(p.dir());
}

fn main() {
    harness::run(tests![
        every_case_is_decided_as_its_rules_declare,
        refusals_name_the_part_and_the_remedy,
        the_rules_are_on_the_record_and_the_bundle_verifies,
        a_skills_inline_shell_meets_the_same_rules,
        a_project_without_argument_rules_is_unchanged,
    ]);
}
