//! Claude Code's built-in agents by choice, not by surprise (docs/DERIVATION.md, "Built-in
//! agents"): off by default they hold nothing; `[derive] builtin_agents = true` (which
//! `install --builtin-agents` writes) grants each exactly what Claude Code's own definition
//! gives it; `doctor` and `derive` name the built-ins the sessions used and what they hold.
//! Through the real binary.

mod common;
use common::*;
use serde_json::{json, Value};

/// (agent, tool, input, allowed with the preset on), in [`project`]: its session holds Read,
/// Grep, Glob, Bash, WebFetch, WebSearch and Edit, and no Write. A built-in holds what Claude
/// Code gives it within what the session holds, like every agent.
const CASES: &[(&str, &str, &str, bool)] = &[
    ("Explore", "Read", r#"{"file_path": "/p/a.rs"}"#, true),
    ("Explore", "Grep", r#"{"pattern": "x"}"#, true),
    ("Explore", "Bash", r#"{"command": "npm run lint"}"#, true),
    // Claude Code's read-only agents may not edit, write or spawn.
    (
        "Explore",
        "Write",
        r#"{"file_path": "/p/a.rs", "content": "x"}"#,
        false,
    ),
    ("Explore", "Edit", r#"{"file_path": "/p/a.rs"}"#, false),
    ("Plan", "Read", r#"{"file_path": "/p/a.rs"}"#, true),
    ("Plan", "Agent", r#"{"subagent_type": "reviewer"}"#, false),
    (
        "general-purpose",
        "Bash",
        r#"{"command": "npm run lint"}"#,
        true,
    ),
    (
        "general-purpose",
        "WebFetch",
        r#"{"url": "https://docs.rs"}"#,
        true,
    ),
    // It inherits the session's tools, and the session holds no Write.
    (
        "general-purpose",
        "Write",
        r#"{"file_path": "/p/a.rs", "content": "x"}"#,
        false,
    ),
    (
        "statusline-setup",
        "Edit",
        r#"{"file_path": "/p/statusline.sh"}"#,
        true,
    ),
    ("statusline-setup", "Grep", r#"{"pattern": "x"}"#, false),
    ("statusline-setup", "Bash", r#"{"command": "ls"}"#, false),
    (
        "claude-code-guide",
        "WebSearch",
        r#"{"query": "hooks"}"#,
        true,
    ),
    ("claude-code-guide", "Bash", r#"{"command": "ls"}"#, false),
    // A built-in is still held by self-protection.
    (
        "Explore",
        "Read",
        r#"{"file_path": "$P/.attenu/anchor.key"}"#,
        false,
    ),
];

fn project(tag: &str, config: &str) -> TempDir {
    ProjectBuilder::new(tag)
        .agent("reviewer", "description: reviews\ntools: Read, Grep, Glob")
        .settings(json!({"permissions": {"allow": ["Read", "Grep", "Glob", "Bash", "WebFetch", "WebSearch", "Edit"]}}))
        .config(config)
        .build()
}

fn input(p: &std::path::Path, text: &str) -> Value {
    serde_json::from_str(&text.replace("$P", p.to_str().unwrap())).unwrap()
}

#[test]
fn off_by_default_every_builtin_holds_nothing() {
    let p = project("builtin-off", "");
    for (i, (agent, tool, text, _)) in CASES.iter().enumerate() {
        let out = p
            .subagent(agent, tool)
            .input(input(p.path(), text))
            .id(&format!("t{i}"))
            .run();
        assert_denied_with(&out, "undeclared-agent");
        // Said where it happens, with what turns the preset on.
        assert!(
            out.reason().contains("builtin_agents = true"),
            "{}",
            out.reason()
        );
    }
    let mut start = event("s1", p.path(), "SubagentStart");
    start["agent_id"] = json!("a1");
    start["agent_type"] = json!("Explore");
    let out = hook(p.path(), &start);
    assert!(
        out.stdout.contains("install --builtin-agents"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_preset_grants_what_claude_code_gives_each_builtin() {
    let p = project("builtin-on", "[derive]\nbuiltin_agents = true\n");
    for (i, (agent, tool, text, allowed)) in CASES.iter().enumerate() {
        let out = p
            .subagent(agent, tool)
            .input(input(p.path(), text))
            .id(&format!("t{i}"))
            .run();
        assert_eq!(out.is_allow(), *allowed, "{agent} {tool}: {}", out.stdout);
    }
    // The preset is the declaration on record: each built-in's spawn names it.
    let es = p.entries("s1");
    let spawn = es
        .iter()
        .find(|e| e["event"] == "spawn" && e["agent"] == "Explore")
        .unwrap();
    assert!(
        spawn["context"]["declared_in"]
            .as_str()
            .unwrap()
            .contains("built-in preset"),
        "{spawn}"
    );
}

#[test]
fn one_builtin_at_a_time_and_the_projects_own_declaration_wins() {
    let p = ProjectBuilder::new("builtin-one")
        .agent("Plan", "description: ours\ntools: Read")
        .settings(json!({"permissions": {"allow": ["Read", "Grep"]}}))
        .config("[agents]\nExplore = [\"claude-code-builtin\"]\nPlan = [\"claude-code-builtin\"]\nmine = [\"claude-code-builtin\"]\n")
        .build();
    let run = |agent: &str, tool: &str, id: &str| {
        p.subagent(agent, tool)
            .input(json!({"pattern": "x", "file_path": "/p/a"}))
            .id(id)
            .run()
    };
    assert!(run("Explore", "Grep", "t1").is_allow());
    // The project's `Plan` (tools: Read) is the one that applies, not the preset.
    assert!(run("Plan", "Read", "t2").is_allow());
    assert!(run("Plan", "Grep", "t3").denied());
    // Not a built-in: it holds nothing, and derivation says why.
    assert!(run("mine", "Read", "t4").denied());
    assert_denied_with(&run("general-purpose", "Read", "t5"), "undeclared-agent");
    let d = cli(&["derive", p.dir(), "--json"]);
    assert!(
        d.stdout
            .contains("'mine' is not one of Claude Code's built-in agents"),
        "{}",
        d.stdout
    );
}

#[test]
fn doctor_and_derive_name_the_builtins_sessions_used() {
    let p = sample("builtin-used");
    p.subagent("Explore", "Read")
        .input(json!({"file_path": "/p/a"}))
        .id("t1")
        .run();
    p.subagent("general-purpose", "Bash")
        .input(json!({"command": "ls"}))
        .id("t2")
        .run();
    let line = |out: &Out| {
        out.stdout
            .lines()
            .find(|l| l.contains("builtins"))
            .unwrap_or_default()
            .to_string()
    };
    let doc = operator::doctor(p.path());
    let before = line(&doc);
    assert!(before.starts_with("warn"), "{}", doc.stdout);
    assert_contains(
        &before,
        &[
            "Explore (",
            "general-purpose (",
            "holds nothing",
            "builtin_agents = true",
        ],
    );
    let d = cli(&["derive", p.dir(), "--json"]);
    let j: Value = serde_json::from_str(&d.stdout).unwrap();
    assert_eq!(j["builtins_used"]["Explore"]["holds"], Value::Null, "{j}");
    assert!(j["builtins_used"]["Explore"]["records"].as_u64().unwrap() >= 1);
    // Turned on with `install --builtin-agents`, in the team's file.
    let out = cli(&["install", p.dir(), "--builtin-agents"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let team = std::fs::read_to_string(p.path().join(".claude/attenu.toml")).unwrap();
    assert!(team.contains("[derive]\nbuiltin_agents = true"), "{team}");
    let after = line(&operator::doctor(p.path()));
    assert!(after.starts_with("ok"), "{after}");
    assert_contains(
        &after,
        &["Explore (", "holds ", "fs.read", "built-in preset"],
    );
    let d = cli(&["derive", p.dir(), "--json"]);
    let j: Value = serde_json::from_str(&d.stdout).unwrap();
    let held = &j["builtins_used"]["Explore"]["holds"]["scopes"];
    assert!(
        held.as_array().unwrap().iter().any(|s| s == "fs.read"),
        "{j}"
    );
    assert!(
        !held.as_array().unwrap().iter().any(|s| s == "fs.write"),
        "{j}"
    );
    // A second time changes nothing.
    let again = cli(&["install", p.dir(), "--builtin-agents"]);
    assert!(again.stdout.contains("already set in"), "{}", again.stdout);
}

#[test]
fn install_offers_the_preset_without_setting_it() {
    let p = sample("builtin-offer");
    let out = cli(&["install", p.dir()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("install --builtin-agents"),
        "{}",
        out.stdout
    );
    assert!(!p.path().join(".claude/attenu.toml").exists());
    assert_denied_with(
        &p.subagent("Explore", "Read")
            .input(json!({"file_path": "/p/a"}))
            .run(),
        "undeclared-agent",
    );
}

/// The preset's own lists (statusline-setup's Edit, claude-code-guide's WebSearch) are
/// Claude Code's, not the project's: they widen neither the session nor any other agent.
#[test]
fn the_preset_widens_no_one_else() {
    let p = sample("builtin-narrow");
    let before: Value = serde_json::from_str(&cli(&["derive", p.dir(), "--json"]).stdout).unwrap();
    p.config("[derive]\nbuiltin_agents = true\n");
    let after: Value = serde_json::from_str(&cli(&["derive", p.dir(), "--json"]).stdout).unwrap();
    let root = |j: &Value| -> Vec<String> {
        j["root"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|s| !s.starts_with("agent.delegate."))
            .map(String::from)
            .collect()
    };
    assert_eq!(root(&before), root(&after));
    assert!(!root(&after)
        .iter()
        .any(|s| s == "fs.edit" || s == "net.search"));
    assert_denied_with(
        &p.subagent("statusline-setup", "Edit")
            .input(json!({"file_path": "/p/x"}))
            .run(),
        "unresolved",
    );
}
