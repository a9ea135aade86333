//! Claude Code's permission rules with arguments, held by the hook. What each call is
//! decided, one line a call, is the case `tests/cases/argument-rules-table/` (an agent's
//! `tools: Bash(git tag:*)`, file rules with each path form, `WebFetch(domain:…)`, MCP names
//! and `Agent(type)`, the settings' `deny` and `ask` rules, what a refusal says, a skill's
//! inline shell): add a line there for a new case. Here: the rules are on the record (the
//! chain's root and spawns) and the bundle verifies in both verifiers; a project without
//! rules is unchanged.

mod common;
use common::decision_kit::assert_has;
use common::harness;
use common::project_kit::derive_json;
use common::*;
use serde_json::json;

/// The agents and the settings of `tests/cases/argument-rules-table/`.
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

fn bash(c: &str) -> serde_json::Value {
    json!({"command": c})
}

/// `derive --json` shows the rules, and the settings' rules.
fn derive_shows_the_rules() {
    let d = derive_json(project("argrules-derive").dir());
    let release = json!(["Bash(git log *)", "Bash(git tag:*)"]);
    assert_has(
        &d,
        json!({"rules": {"agents": {"release": release}}, "agents": {"release": ["exec.bash", "fs.read"]}}),
    );
    let rules = d["rules"]["settings"].as_array().unwrap().iter();
    let settings: Vec<&str> = rules.map(|r| r["rule"].as_str().unwrap()).collect();
    let both = settings.contains(&"Bash(rm *)") && settings.contains(&"mcp__fs__write_file");
    assert!(both, "{settings:?}");
}

/// The chain's root and spawns carry the rules; the bundle of a session that used them
/// verifies in ours and in the reference verifier.
fn the_rules_are_on_the_record_and_the_bundle_verifies() {
    let p = project("argrules-record");
    let call = |agent: &str, command: &str, id: &str| {
        p.subagent(agent, "Bash").input(bash(command)).id(id).run()
    };
    assert_allowed(&call("release", "git tag v1", "a"));
    assert_denied_with(&call("release", "touch x", "b"), "argument-rule-unmatched");
    assert_denied_with(&call("shell", "rm x", "c"), "settings-deny-rule");
    let entries = entries(p.path(), "s1");
    let root = &of_event(&entries, "root")[0];
    assert_eq!(
        root["context"]["settings_rules"][0]["kind"], "deny",
        "{root}"
    );
    let spawn = of_event(&entries, "spawn")
        .into_iter()
        .find(|e| e["agent"] == "release");
    let release = json!({"context": {"rules": {"exec.bash": ["Bash(git log *)", "Bash(git tag:*)"]}}, "granted": {"scopes": ["exec.bash", "fs.read"]}});
    assert_has(spawn.unwrap(), release);
    p.event("s1", "SessionEnd");
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let ours = p.verify_pinned(bundle.to_str().unwrap());
    assert_eq!(ours.code, 0, "{}{}", ours.stdout, ours.stderr);
    let py = harness::need_reference_python();
    let report = reference_verify(&py, &bundle, &p.path().join(".attenu/anchor.pub"));
    assert_eq!(report["ok"], true, "{report}");
}

/// With no rules at all, a project decides as before (the whole tool), and its digest
/// carries no rules.
fn a_project_without_argument_rules_is_unchanged() {
    let p = ProjectBuilder::new("argrules-none")
        .agent("ops", "tools: Bash, Read")
        .build();
    assert_allowed(&p.bash_by("ops", "git tag $(id) && touch x").run());
    let d = derive_json(p.dir());
    assert!(d.get("rules").is_none(), "{d}");
}

fn main() {
    harness::run(tests![
        derive_shows_the_rules,
        the_rules_are_on_the_record_and_the_bundle_verifies,
        a_project_without_argument_rules_is_unchanged
    ]);
}
