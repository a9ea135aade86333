//! Claude Code's built-in agents by choice, not by surprise (docs/DERIVATION.md, "Built-in
//! agents"): off by default they hold nothing; `[derive] builtin_agents = true` (which
//! `install --builtin-agents` writes) grants each exactly what Claude Code's own definition
//! gives it; `doctor` and `derive` name the built-ins the sessions used and what they hold.
//! What each built-in may call, off and on, and one at a time, is data:
//! `tests/cases/builtin-agents-*`.

mod common;
use common::operator::doctor;
use common::project_kit::derive_json;
use common::*;
use serde_json::{json, Value};

/// The preset is the declaration on record: each built-in's spawn names it.
#[test]
fn the_preset_is_on_record_as_the_declaration() {
    let p = sample("builtin-on");
    p.config("[derive]\nbuiltin_agents = true\n");
    assert_allowed(&p.read_by("Explore", "/p/a.rs").run());
    let es = p.entries("s1");
    let spawn = es
        .iter()
        .find(|e| e["event"] == "spawn" && e["agent"] == "Explore");
    let declared = spawn.unwrap()["context"]["declared_in"].as_str().unwrap();
    assert!(declared.contains("built-in preset"), "{declared}");
}

/// `doctor`'s line on the built-ins sessions used.
fn builtins_line(p: &TempDir) -> String {
    let out = doctor(p.path());
    let line = out.stdout.lines().find(|l| l.contains("builtins"));
    line.unwrap_or_default().to_string()
}

/// The scopes `derive` says a built-in the sessions used holds, or `Null`.
fn builtin_holds(p: &TempDir, agent: &str) -> Value {
    derive_json(p.dir())["builtins_used"][agent]["holds"].clone()
}

/// The seed's project after Explore's Read and general-purpose's Bash.
fn builtins_used(tag: &str) -> TempDir {
    let p = sample(tag);
    p.read_by("Explore", "/p/a").id("t1").run();
    p.bash_by("general-purpose", "ls").id("t2").run();
    p
}

/// Off, `doctor` warns that the built-ins the sessions used hold nothing, and `derive` says
/// so too.
#[test]
fn doctor_and_derive_name_the_builtins_sessions_used() {
    let p = builtins_used("builtin-used");
    let before = builtins_line(&p);
    assert!(before.starts_with("warn"), "{before}");
    let says = [
        "Explore (",
        "general-purpose (",
        "holds nothing",
        "builtin_agents = true",
    ];
    assert_contains(&before, &says);
    assert_eq!(builtin_holds(&p, "Explore"), Value::Null);
    let records = &derive_json(p.dir())["builtins_used"]["Explore"]["records"];
    assert!(records.as_u64().unwrap() >= 1);
}

/// Turned on with `install --builtin-agents`, in the team's file: `doctor` and `derive` say
/// what each holds; a second time changes nothing.
#[test]
fn install_builtin_agents_turns_the_preset_on_in_the_teams_file() {
    let p = builtins_used("builtin-install");
    let out = cli(&["install", p.dir(), "--builtin-agents"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let team = std::fs::read_to_string(p.path().join(".claude/attenu.toml")).unwrap();
    assert!(team.contains("[derive]\nbuiltin_agents = true"), "{team}");
    let after = builtins_line(&p);
    assert!(after.starts_with("ok"), "{after}");
    assert_contains(
        &after,
        &["Explore (", "holds ", "fs.read", "built-in preset"],
    );
    let held = builtin_holds(&p, "Explore")["scopes"].clone();
    assert!(
        held.as_array().unwrap().contains(&json!("fs.read")),
        "{held}"
    );
    assert!(
        !held.as_array().unwrap().contains(&json!("fs.write")),
        "{held}"
    );
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
    let explore = p.read_by("Explore", "/p/a").run();
    assert_denied_with(&explore, "undeclared-agent");
}

/// The session's root scopes from `derive`, delegations left out.
fn root_scopes(p: &TempDir) -> Vec<String> {
    let d = derive_json(p.dir());
    let all = d["root"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str);
    let scopes = all.filter(|s| !s.starts_with("agent.delegate."));
    scopes.map(String::from).collect()
}

/// The preset's own lists (statusline-setup's Edit, claude-code-guide's WebSearch) are
/// Claude Code's, not the project's: they widen neither the session nor any other agent.
#[test]
fn the_preset_widens_no_one_else() {
    let p = sample("builtin-narrow");
    let before = root_scopes(&p);
    p.config("[derive]\nbuiltin_agents = true\n");
    let after = root_scopes(&p);
    assert_eq!(before, after);
    assert!(!after.iter().any(|s| s == "fs.edit" || s == "net.search"));
    let edit = p
        .subagent("statusline-setup", "Edit")
        .input(json!({"file_path": "/p/x"}));
    assert_denied_with(&edit.run(), "unresolved");
}
