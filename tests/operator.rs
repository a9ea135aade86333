//! Operator experience: install, doctor, log, completions and the man page.

mod common;
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

fn main() {
    harness::run(tests![
        install_keeps_existing_settings_and_hooks_and_is_idempotent,
        install_refuses_to_guess_on_invalid_settings_and_local_writes_the_local_file,
        doctor_passes_on_an_installed_project,
        doctor_text_is_pinned,
        doctor_fails_when_a_reviewer_key_is_the_projects_anchor_key,
        doctor_only_warns_when_session_start_is_not_wired,
        doctor_fails_with_reasons_on_an_unwired_project,
        doctor_fails_on_unsafe_permissions_and_a_broken_ledger,
        log_output_matches_the_snapshot,
        log_warns_and_fails_on_a_ledger_that_does_not_verify,
        state_commands_find_a_project_without_claude_below_a_home_with_it,
        completions_and_man_page_come_from_the_cli_definition,
        install_moves_a_handler_out_of_a_matcher_and_strips_async_and_if,
        doctor_fails_on_async_if_and_disabled_hooks_in_any_scope,
        doctor_resolves_every_handlers_command,
        install_keeps_the_files_mode_and_refuses_a_symlink,
        doctor_counts_the_attenu_hook_plugin_only_where_claude_code_would_load_it,
        doctor_reads_the_one_installation_and_every_hooks_file_claude_code_would_load,
        install_warns_when_claude_code_would_not_run_the_hook,
        install_as_root_keeps_the_files_owner,
        install_by_the_files_owner_works_whatever_its_group,
        install_by_the_files_owner_works_whatever_its_group_in_a_user_namespace,
        install_and_doctor_find_the_project_root_and_refuse_a_missing_directory,
        doctor_fails_when_attenu_is_not_a_directory_and_output_errors_exit_2,
        declarations_are_looked_up_at_the_nearest_claude_not_a_parents_attenu,
        install_keeps_one_handler_per_event_and_recognises_its_own_command,
        doctor_reads_disable_all_hooks_by_precedence,
        doctor_expands_home_and_variables_in_commands
    ]);
}

fn settings(p: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p.join(".claude/settings.json")).unwrap())
        .unwrap()
}

fn install_keeps_existing_settings_and_hooks_and_is_idempotent() {
    let p = TempDir::new("install");
    std::fs::create_dir_all(p.path().join(".claude")).unwrap();
    let existing = json!({
        "model": "opus",
        "permissions": {"allow": ["Read"], "deny": ["Bash(rm *)"]},
        "env": {"FOO": "bar"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter --strict"}]}],
                  "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]},
    });
    std::fs::write(
        p.path().join(".claude/settings.json"),
        serde_json::to_string_pretty(&existing).unwrap(),
    )
    .unwrap();
    let dir = p.path().to_str().unwrap();
    let first = cli(&["install", dir, "--command", "attenu-hook"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_contains(&first.stdout, &["PreToolUse: added"]);
    let after = settings(p.path());
    for key in ["model", "permissions", "env"] {
        assert_eq!(after[key], existing[key], "{key} kept");
    }
    assert_eq!(after["hooks"]["Stop"], existing["hooks"]["Stop"]);
    assert_eq!(
        after["hooks"]["PreToolUse"][0],
        existing["hooks"]["PreToolUse"][0]
    );
    let ours = &after["hooks"]["PreToolUse"][1];
    assert!(ours.get("matcher").is_none());
    assert_eq!(
        ours["hooks"][0],
        json!({"type": "command", "command": "attenu-hook", "timeout": 10, "onFailure": "block"})
    );
    for e in [
        "SessionStart",
        "PostToolUse",
        "PostToolUseFailure",
        "SubagentStart",
        "SubagentStop",
        "SessionEnd",
    ] {
        assert_eq!(
            after["hooks"][e][0]["hooks"][0]["command"], "attenu-hook",
            "{e}"
        );
    }
    let bytes = std::fs::read(p.path().join(".claude/settings.json")).unwrap();
    let second = cli(&["install", dir, "--command", "attenu-hook"]);
    assert_contains(&second.stdout, &["nothing changed"]);
    assert_eq!(
        std::fs::read(p.path().join(".claude/settings.json")).unwrap(),
        bytes,
        "a second run changes nothing"
    );
}

fn install_refuses_to_guess_on_invalid_settings_and_local_writes_the_local_file() {
    let p = TempDir::new("install-bad");
    std::fs::create_dir_all(p.path().join(".claude")).unwrap();
    std::fs::write(p.path().join(".claude/settings.json"), "{ \"model\": ").unwrap();
    let out = cli(&["install", p.path().to_str().unwrap()]);
    assert_ne!(out.code, 0);
    assert_contains(&out.stderr, &["refusing to guess"]);
    assert_eq!(
        std::fs::read_to_string(p.path().join(".claude/settings.json")).unwrap(),
        "{ \"model\": "
    );
    let out = cli(&["install", p.path().to_str().unwrap(), "--local"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(p.path().join(".claude/settings.local.json").exists());
}

fn doctor(p: &std::path::Path) -> Out {
    cli(&["doctor", p.to_str().unwrap()])
}

fn doctor_passes_on_an_installed_project() {
    let p = sample("doctor-ok");
    assert_eq!(
        cli(&["install", p.path().to_str().unwrap(), "--command", BIN]).code,
        0
    );
    reviewer_read(p.path(), "s1", "/x", "t1");
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&out.stdout, &["ledger:ledger-s1.jsonl", "verifies"]);
}

/// What `doctor` prints, pinned: every check of an installed project with a ledger (exit 0), and
/// an unwired one's failures with what to do (exit 1).
fn doctor_text_is_pinned() {
    let wired = sample("doctor-text-ok");
    assert_eq!(cli(&["install", wired.dir(), "--command", BIN]).code, 0);
    assert_allowed(&reviewer_read(wired.path(), "s1", "/x", "t1"));
    let unwired = sample("doctor-text-unwired");
    let mut text = String::new();
    for (p, code) in [(&wired, 0), (&unwired, 1)] {
        let out = doctor(p.path());
        assert_eq!(out.code, code, "{}{}", out.stdout, out.stderr);
        text += &format!(
            "$ doctor PROJECT\nexit {}\n--- stdout\n{}--- stderr\n{}\n",
            out.code, out.stdout, out.stderr
        );
        text = mask(&text, &[(p.dir(), "<project>"), (BIN, "<bin>")]);
    }
    assert_snapshot("doctor.txt", &text);
}

fn doctor_fails_when_a_reviewer_key_is_the_projects_anchor_key() {
    let p = sample("doctor-anchor-reviewer");
    assert_eq!(
        cli(&["install", p.path().to_str().unwrap(), "--command", BIN]).code,
        0
    );
    reviewer_read(p.path(), "s1", "/x", "t1");
    let anchor: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(p.path().join(".attenu/anchor.pub")).unwrap(),
    )
    .unwrap();
    let public = anchor["public_key"].as_str().unwrap().to_string();
    let other = "0".repeat(63) + "1";
    write_config(
        p.path(),
        format!("[gate]\nrequire = [\"exec.bash\"]\nreviewers = {{ alice = \"{other}\" }}\n"),
    );
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&out.stdout, &["none of them the project's anchor key"]);
    write_config(
        p.path(),
        format!(
            "[gate]\nrequire = [\"exec.bash\"]\nreviewers = {{ alice = \"{other}\", bob = \"{}\" }}\n",
            public.to_uppercase()
        ),
    );
    let out = doctor(p.path());
    assert_ne!(out.code, 0, "{}", out.stdout);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("gate:reviewers"))
        .unwrap_or_else(|| panic!("no reviewer line: {}", out.stdout));
    assert!(
        line.contains("bob") && !line.contains("alice") && line.contains("keygen"),
        "{line}"
    );
}

fn doctor_only_warns_when_session_start_is_not_wired() {
    // Installs from before SessionStart was wired keep enforcing everything: SessionStart
    // only creates the ledger ahead of the first tool call.
    let p = sample("doctor-nostart");
    assert_eq!(
        cli(&["install", p.path().to_str().unwrap(), "--command", BIN]).code,
        0
    );
    let mut s = settings(p.path());
    s["hooks"].as_object_mut().unwrap().remove("SessionStart");
    std::fs::write(p.path().join(".claude/settings.json"), s.to_string()).unwrap();
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("wired:SessionStart"))
        .unwrap_or_else(|| panic!("no SessionStart line: {}", out.stdout));
    assert!(
        !line.contains("FAIL") && line.contains("first tool call"),
        "{line}"
    );
}

fn doctor_fails_with_reasons_on_an_unwired_project() {
    let p = sample("doctor-unwired");
    let out = doctor(p.path());
    assert_eq!(out.code, 1);
    assert_contains(
        &out.stdout,
        &["FAIL  wired:PreToolUse", "run `attenu-hook install`"],
    );
    // A matcher or a missing onFailure is as bad as no wiring.
    let mut s = settings(p.path());
    s["hooks"] = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": BIN, "timeout": 10, "onFailure": "block"}]}]});
    std::fs::write(p.path().join(".claude/settings.json"), s.to_string()).unwrap();
    let out = doctor(p.path());
    assert_contains(&out.stdout, &["matcher 'Bash'"]);
}

fn doctor_fails_on_unsafe_permissions_and_a_broken_ledger() {
    let p = sample("doctor-perms");
    assert_eq!(
        cli(&["install", p.path().to_str().unwrap(), "--command", BIN]).code,
        0
    );
    reviewer_read(p.path(), "s1", "/x", "t1");
    std::fs::set_permissions(
        p.path().join(".attenu/anchor.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = doctor(p.path());
    assert_eq!(out.code, 1);
    assert_contains(&out.stdout, &["FAIL  perm:anchor.key", "chmod 600"]);
    std::fs::set_permissions(
        p.path().join(".attenu/anchor.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let path = p.ledger("s1");
    let original = std::fs::read_to_string(&path).unwrap();
    let text = original.replacen("fs.read", "fs.rea", 1);
    std::fs::write(&path, text).unwrap();
    let out = doctor(p.path());
    assert_contains(&out.stdout, &["FAIL  ledger:ledger-s1.jsonl"]);
    // Cut short: every line left still verifies, but the checkpoint remembers more.
    let lines: Vec<&str> = original.lines().collect();
    std::fs::write(&path, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    let out = doctor(p.path());
    assert!(
        out.stdout.contains("FAIL  ledger:ledger-s1.jsonl")
            && out
                .stdout
                .contains("no longer holds what its checkpoint records"),
        "{}",
        out.stdout
    );
}

/// The log table with times replaced, so it can be compared with the snapshot.
/// `log`'s output, which must succeed, with its times masked.
fn normalised_log(args: &[&str]) -> String {
    let out = cli(args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    mask(&out.stdout, &[])
}

fn log_output_matches_the_snapshot() {
    let p = sample("log");
    let sid = "0b5f1c2e-log-snapshot";
    reviewer_read(p.path(), sid, "/x", "t1");
    p.subagent("reviewer", "Read")
        .session(sid)
        .input(json!({"file_path": "/x"}))
        .id("t1")
        .post(json!({}))
        .run();
    p.subagent("reviewer", "WebFetch")
        .session(sid)
        .input(json!({"url": "https://x"}))
        .id("t2")
        .run();
    p.subagent("Explore", "Grep")
        .session(sid)
        .input(json!({"pattern": "x"}))
        .id("t3")
        .run();
    p.main_thread("Bash")
        .session(sid)
        .input(json!({"command": "ls"}))
        .id("t4")
        .run();
    let dir = p.path().to_str().unwrap();
    let table = normalised_log(&["log", "--project", dir]);
    assert_snapshot("log.txt", &table);
    let denied = normalised_log(&["log", "--project", dir, "--denied"]);
    assert_eq!(denied.lines().count(), 1 + 3, "{denied}");
    let explore = normalised_log(&["log", "--project", dir, "--agent", "Explore", "--json"]);
    let row: Value = serde_json::from_str(explore.lines().next().unwrap()).unwrap();
    assert_eq!(
        (row["agent"].as_str(), row["decision"].as_str()),
        (Some("Explore"), Some("DENY"))
    );
    assert!(
        !table.contains('\u{1b}'),
        "no colour codes when stdout is not a terminal"
    );
}

/// Regression: `log` printed an edited ledger as if it were the record (a denial edited to
/// an allow showed as allowed, exit 0). It still shows what is written, so a person can look,
/// but warns and exits 1. It also finds the project from a subdirectory.
fn log_warns_and_fails_on_a_ledger_that_does_not_verify() {
    let p = sample("log-tamper");
    let dir = p.path().to_str().unwrap();
    assert!(p
        .subagent("reviewer", "WebFetch")
        .input(json!({"url": "https://x"}))
        .id("t1")
        .run()
        .denied());
    let sub = p.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let clean = cli(&["log", "--project", sub.to_str().unwrap()]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    assert_contains(&clean.stdout, &["DENY"]);
    let path = p.ledger("s1");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"event\":\"deny\"", "\"event\":\"allow\"");
    std::fs::write(&path, text).unwrap();
    let out = cli(&["log", "--project", dir]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(&out.stderr, &["WARNING", "does not verify"]);
}

/// Regression: the state commands took the nearest ancestor with `.claude/` for the project,
/// so a project without one of its own, below a home that has `~/.claude` (every Claude Code
/// user's), was looked for in the home directory.
fn state_commands_find_a_project_without_claude_below_a_home_with_it() {
    let home = TempDir::new("home");
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let proj = home.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    assert_allowed(
        &proj
            .main_thread("Read")
            .input(json!({"file_path": "/x"}))
            .id("t1")
            .run(),
    );
    assert!(proj.join(".attenu").is_dir());
    let dir = proj.to_str().unwrap();
    let log = cli(&["log", "--project", dir]);
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert_contains(&log.stdout, &["Read"]);
    let export = cli(&["export", "--project", dir, "--session", "s1"]);
    assert_eq!(export.code, 0, "{}", export.stderr);
    assert_contains(&export.stdout, &["proj/.attenu/bundle-s1.json"]);
    let list = cli(&["reconcile", "list", "--project", dir]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(!home.path().join(".attenu").exists());
}

fn completions_and_man_page_come_from_the_cli_definition() {
    let bash = cli(&["completions", "bash"]);
    assert_eq!(bash.code, 0);
    assert!(bash.stdout.contains("attenu-hook") && bash.stdout.contains("reconcile"));
    let man = cli(&["man"]);
    assert_eq!(man.code, 0);
    assert!(
        man.stdout.contains(".TH attenu-hook") && man.stdout.contains("derive"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
}

/// The hook handler `install` writes, as JSON, for `command`.
fn handler(command: &str) -> Value {
    json!({"type": "command", "command": command, "timeout": 10, "onFailure": "block"})
}

fn write_settings(p: &std::path::Path, file: &str, v: &Value) {
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    std::fs::write(
        p.join(".claude").join(file),
        serde_json::to_string_pretty(v).unwrap(),
    )
    .unwrap();
}

/// Regression: a handler under a matcher, or with `async` or `if`, was taken as wiring, and
/// `install` said nothing changed while Claude Code checked only some calls, or did not wait.
fn install_moves_a_handler_out_of_a_matcher_and_strips_async_and_if() {
    let p = TempDir::new("install-fix");
    let mut pre = handler("attenu-hook");
    pre["timeout"] = json!(5);
    let mut post = handler("attenu-hook");
    post["async"] = json!(true);
    let mut end = handler("attenu-hook");
    end["if"] = json!("Bash(git *)");
    end["async"] = json!(false); // what an absent key means: left alone
    write_settings(
        p.path(),
        "settings.json",
        &json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [pre, {"type": "command", "command": "my-linter"}]}],
            "PostToolUse": [{"hooks": [post]}],
            "SessionEnd": [{"hooks": [end]}],
            // Arguments run the CLI, not the hook: this is not wiring.
            "SubagentStop": [{"hooks": [{"type": "command", "command": "attenu-hook log --denied | notify-send -"}]}],
        }}),
    );
    let dir = p.path().to_str().unwrap();
    let out = cli(&["install", dir, "--command", "attenu-hook"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for said in [
        "PreToolUse: removed the attenu-hook handler from the group with matcher 'Bash'",
        "PreToolUse: added the attenu-hook handler",
        "PostToolUse: removed \"async\": true",
        "SessionEnd: removed \"if\": \"Bash(git *)\"",
        "SubagentStop: added",
    ] {
        assert!(out.stdout.contains(said), "{said}: {}", out.stdout);
    }
    let s = settings(p.path());
    assert_eq!(
        s["hooks"]["PreToolUse"],
        json!([{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]},
               {"hooks": [handler("attenu-hook")]}]),
        "the other handler keeps its matcher; ours moves where it sees every tool"
    );
    assert_eq!(
        s["hooks"]["PostToolUse"][0]["hooks"][0],
        handler("attenu-hook")
    );
    let mut kept = handler("attenu-hook");
    kept["async"] = json!(false);
    assert_eq!(s["hooks"]["SessionEnd"][0]["hooks"][0], kept);
    assert!(
        !out.stdout.contains("removed \"async\": false"),
        "{}",
        out.stdout
    );
    assert_eq!(
        s["hooks"]["SubagentStop"][1]["hooks"][0],
        handler("attenu-hook")
    );
    let again = cli(&["install", dir, "--command", "attenu-hook"]);
    assert_contains(&again.stdout, &["nothing changed"]);
}

/// Regression: `doctor` passed wiring Claude Code does not wait for or does not run at all.
fn doctor_fails_on_async_if_and_disabled_hooks_in_any_scope() {
    let p = sample("doctor-async");
    let dir = p.path().to_str().unwrap();
    assert_eq!(cli(&["install", dir, "--command", BIN]).code, 0);
    assert_eq!(doctor(p.path()).code, 0, "{}", doctor(p.path()).stdout);
    let installed = settings(p.path());
    for (key, value, said) in [
        ("async", json!(true), "runs it in the background"),
        ("if", json!("Bash(git *)"), "only for the calls that match"),
    ] {
        let mut s = installed.clone();
        s["hooks"]["PreToolUse"][0]["hooks"][0][key] = value;
        write_settings(p.path(), "settings.json", &s);
        let out = doctor(p.path());
        assert_eq!(out.code, 1, "{key}: {}", out.stdout);
        assert!(
            out.stdout.contains("FAIL  wired:PreToolUse") && out.stdout.contains(said),
            "{key}: {}",
            out.stdout
        );
    }
    write_settings(p.path(), "settings.json", &installed);
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"disableAllHooks": true}),
    );
    let out = doctor(p.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(&out.stdout, &["FAIL  hooks-enabled", "settings.local.json"]);
    std::fs::remove_file(p.path().join(".claude/settings.local.json")).unwrap();
    // The user's own settings are read too (CLAUDE_CONFIG_DIR, else ~/.claude).
    let user = TempDir::new("doctor-user");
    std::fs::write(
        user.path().join("settings.json"),
        r#"{"disableAllHooks": true}"#,
    )
    .unwrap();
    let out = cli_with(&["doctor", dir], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(&out.stdout, &["FAIL  hooks-enabled"]);
    // And wiring kept in the user's settings counts, so the project file need not hold it.
    std::fs::write(user.path().join("settings.json"), installed.to_string()).unwrap();
    let mut bare = installed.clone();
    bare.as_object_mut().unwrap().remove("hooks");
    write_settings(p.path(), "settings.json", &bare);
    let out = cli_with(&["doctor", dir], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&out.stdout, &["(user settings)"]);
}

/// Regression: only the first handler's command was resolved, so a typo in another event's
/// command passed.
fn doctor_resolves_every_handlers_command() {
    let p = sample("doctor-cmds");
    let dir = p.path().to_str().unwrap();
    assert_eq!(cli(&["install", dir, "--command", BIN]).code, 0);
    let mut s = settings(p.path());
    s["hooks"]["SessionEnd"][0]["hooks"][0]["command"] = json!("/nonexistent/bin/attenu-hook");
    write_settings(p.path(), "settings.json", &s);
    let out = doctor(p.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("FAIL  command")
            && out
                .stdout
                .contains("`/nonexistent/bin/attenu-hook` does not resolve"),
        "{}",
        out.stdout
    );
    // An explicit --command replaces it; without one, install keeps commands as they are.
    let out = cli(&["install", dir, "--command", BIN]);
    assert!(
        out.stdout
            .contains("SessionEnd: set the attenu-hook handler's command"),
        "{}",
        out.stdout
    );
    assert_eq!(doctor(p.path()).code, 0);
}

/// Regression: install made a private settings file 0644 and replaced a symlinked one.
fn install_keeps_the_files_mode_and_refuses_a_symlink() {
    let p = TempDir::new("install-mode");
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"env": {"TOKEN": "secret"}}),
    );
    let local = p.path().join(".claude/settings.local.json");
    std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dir = p.path().to_str().unwrap();
    let out = cli(&["install", dir, "--local", "--command", "attenu-hook"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mode = std::fs::metadata(&local).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a private settings file stays private");

    let q = TempDir::new("install-link");
    std::fs::create_dir_all(q.path().join(".claude")).unwrap();
    let target = q.path().join("dotfiles-settings.json");
    std::fs::write(&target, "{}").unwrap();
    let link = q.path().join(".claude/settings.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = cli(&["install", q.path().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["symbolic link"]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
}

/// Regression: doctor did not read plugins, so a project wired by the attenu-hook plugin alone
/// failed as unwired, and one wired by the plugin and by `install` passed although every call
/// was recorded twice. Review: a plugin `enabledPlugins` names but Claude Code never installed
/// (or installed without its binary) loads nothing, or blocks every call.
fn doctor_counts_the_attenu_hook_plugin_only_where_claude_code_would_load_it() {
    let p = sample("doctor-plugin");
    let config = TempDir::new("doctor-plugin-config");
    let plugin_root = config.path().join("cache/team-tools/attenu-hook/0.1.0");
    std::fs::create_dir_all(plugin_root.join("bin")).unwrap();
    std::fs::create_dir_all(config.path().join("plugins")).unwrap();
    let registry = json!({"version": 2, "plugins": {"attenu-hook@team-tools": [
        {"scope": "user", "installPath": plugin_root, "version": "0.1.0"}
    ]}});
    std::fs::write(
        config.path().join("plugins/installed_plugins.json"),
        registry.to_string(),
    )
    .unwrap();
    let enable = |local: bool| {
        write_settings(
            p.path(),
            "settings.local.json",
            &json!({"enabledPlugins": {"attenu-hook@team-tools": local, "other@team-tools": true}}),
        )
    };
    let doctor_in = |config: &std::path::Path| {
        cli_with(
            &["doctor", p.path().to_str().unwrap()],
            &[("CLAUDE_CONFIG_DIR", config)],
        )
    };
    enable(true);

    // Installed, but without a hooks file: Claude Code loads no hook from it.
    let out = doctor_in(config.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(
        &out.stdout,
        &[
            "so Claude Code loads no hook from it",
            "no attenu-hook handler for PreToolUse",
        ],
    );

    // Its hooks, but not its binary: every call would be blocked.
    std::fs::create_dir_all(plugin_root.join("hooks")).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/hooks/hooks.json"),
        plugin_root.join("hooks/hooks.json"),
    )
    .unwrap();
    let out = doctor_in(config.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("(the plugin attenu-hook@team-tools) does not resolve to an executable"),
        "{}",
        out.stdout
    );

    std::os::unix::fs::symlink(BIN, plugin_root.join("bin/attenu-hook")).unwrap();
    let out = doctor_in(config.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("every tool (the plugin attenu-hook@team-tools)")
            && out
                .stdout
                .contains("bin/attenu-hook (the plugin attenu-hook@team-tools)"),
        "{}",
        out.stdout
    );

    // Named in `enabledPlugins`, never installed: nothing runs.
    let empty = TempDir::new("doctor-plugin-none");
    let out = doctor_in(empty.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("lists no installation of it for this project")
            && out.stdout.contains("no attenu-hook handler for PreToolUse"),
        "{}",
        out.stdout
    );

    // Turned off in the more specific file: not wired at all.
    let mut project = settings(p.path());
    project["enabledPlugins"] = json!({"attenu-hook@team-tools": true});
    write_settings(p.path(), "settings.json", &project);
    enable(false);
    let out = doctor_in(config.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(&out.stdout, &["no attenu-hook handler for PreToolUse"]);

    // On and installed: install refuses to wire it a second time, also when another key that
    // is on names a plugin never installed.
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"enabledPlugins": {"attenu-hook@elsewhere": true, "attenu-hook@team-tools": true}}),
    );
    let before = std::fs::read(p.path().join(".claude/settings.json")).unwrap();
    let out = cli_with(
        &["install", p.path().to_str().unwrap(), "--command", BIN],
        &[("CLAUDE_CONFIG_DIR", config.path())],
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("already wires the hook for every event"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(p.path().join(".claude/settings.json")).unwrap(),
        before
    );

    // Wired by hand beside it, even with the plugin's own command text: double wiring, and
    // in a settings file `${CLAUDE_PLUGIN_ROOT}` is not set, so that command runs nothing.
    for command in [BIN, "\"${CLAUDE_PLUGIN_ROOT}\"/bin/attenu-hook"] {
        let mut wired = settings(p.path());
        wired["hooks"] = json!({"PreToolUse": [{"hooks": [{"type": "command", "command": command, "timeout": 10, "onFailure": "block"}]}]});
        write_settings(p.path(), "settings.json", &wired);
        let out = doctor_in(config.path());
        assert_eq!(out.code, 1, "{}", out.stdout);
        assert!(
            out.stdout.contains("wired 2 times for PreToolUse")
                && out.stdout.contains("one is the attenu-hook plugin's"),
            "{command}: {}",
            out.stdout
        );
    }
    let out = doctor_in(config.path());
    assert!(
        out.stdout.lines().any(|l| l.starts_with("FAIL  command")
            && l.contains("`\"${CLAUDE_PLUGIN_ROOT}\"/bin/attenu-hook` does not resolve")),
        "the settings file's copy of the plugin's command is checked: {}",
        out.stdout
    );
}

/// Review: doctor read the manifest's `hooks` as a replacement for `hooks/hooks.json`, which
/// Claude Code always loads, and counted every registry entry for a key, while Claude Code
/// loads the one installation that applies to the project. Second review: a manifest Claude
/// Code rejects, a hooks path outside the plugin, an unreadable registry record and a linked
/// git worktree were all read otherwise than Claude Code reads them.
fn doctor_reads_the_one_installation_and_every_hooks_file_claude_code_would_load() {
    let p = sample("doctor-plugin-files");
    let other = sample("doctor-plugin-other");
    let config = TempDir::new("doctor-plugin-files-config");
    std::fs::create_dir_all(config.path().join("plugins")).unwrap();
    // An installed copy of the plugin as packaged: its binary, hooks/hooks.json and manifest.
    let installed = |name: &str| {
        let root = config.path().join("cache/m/attenu-hook").join(name);
        for d in ["bin", "hooks", ".claude-plugin"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::os::unix::fs::symlink(BIN, root.join("bin/attenu-hook")).unwrap();
        for f in ["hooks/hooks.json", ".claude-plugin/plugin.json"] {
            std::fs::copy(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(f),
                root.join(f),
            )
            .unwrap();
        }
        root
    };
    let plugin_root = installed("0.1.0");
    let user_root = installed("0.1.0-user");
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"enabledPlugins": {"attenu-hook@m": true}}),
    );
    let registry = |entries: Value| {
        std::fs::write(
            config.path().join("plugins/installed_plugins.json"),
            json!({"version": 2, "plugins": {"attenu-hook@m": entries}}).to_string(),
        )
        .unwrap()
    };
    let manifest = |hooks: Option<Value>| {
        let mut m: Value =
            serde_json::from_str(include_str!("../.claude-plugin/plugin.json")).unwrap();
        if let Some(h) = hooks {
            m["hooks"] = h;
        }
        std::fs::write(
            plugin_root.join(".claude-plugin/plugin.json"),
            m.to_string(),
        )
        .unwrap();
    };
    let doctor = || {
        cli_with(
            &["doctor", p.path().to_str().unwrap()],
            &[("CLAUDE_CONFIG_DIR", config.path())],
        )
    };
    let project_entry = |dir: &std::path::Path, root: &std::path::Path| json!({"scope": "project", "projectPath": dir, "installPath": root});
    let loads_nothing = |out: &Out, why: &str| {
        assert_eq!(out.code, 1, "{why}: {}", out.stdout);
        assert!(
            out.stdout.contains(why)
                && out.stdout.contains("no attenu-hook handler for PreToolUse"),
            "{why}: {}",
            out.stdout
        );
    };

    // Installed for another project only: Claude Code loads nothing here.
    registry(json!([project_entry(other.path(), &plugin_root)]));
    loads_nothing(&doctor(), "lists no installation of it for this project");

    // Installed for this project and for the user, in two directories: Claude Code loads the
    // first that applies, once (two would be two commands, "wired 2 times").
    registry(json!([
        project_entry(other.path(), &user_root),
        project_entry(p.path(), &plugin_root),
        {"scope": "user", "installPath": user_root}
    ]));
    let out = doctor();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains(&format!("runs {}", plugin_root.display()))
            && !out.stdout.contains("0.1.0-user"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("WARN  plugin"), "{}", out.stdout);

    // One record Claude Code's registry schema rejects, under this plugin or another, and it
    // reads no plugin at all; a key that is no plugin id is set aside, not fatal.
    registry(json!([{"installPath": plugin_root}]));
    loads_nothing(&doctor(), "that Claude Code cannot read");
    let with_other = |key: &str| {
        std::fs::write(
            config.path().join("plugins/installed_plugins.json"),
            json!({"version": 2, "plugins": {
                "attenu-hook@m": [project_entry(p.path(), &plugin_root)],
                key: [{"x": 1}],
            }})
            .to_string(),
        )
        .unwrap()
    };
    with_other("other@m");
    loads_nothing(&doctor(), "has a record under other@m");
    with_other("not a plugin id@m");
    assert_eq!(doctor().code, 0);

    // A linked worktree of the checkout the plugin was installed for counts as that checkout.
    let main = TempDir::new("doctor-plugin-main-checkout");
    let git_dir = main.path().join(".git/worktrees/wt");
    std::fs::create_dir_all(&git_dir).unwrap();
    std::fs::write(git_dir.join("commondir"), "../..\n").unwrap();
    std::fs::write(
        p.path().join(".git"),
        format!("gitdir: {}\n", git_dir.display()),
    )
    .unwrap();
    registry(json!([project_entry(main.path(), &plugin_root)]));
    // Without the worktree's link back from the git directory, Claude Code does not map it.
    loads_nothing(&doctor(), "lists no installation of it for this project");
    std::fs::write(
        git_dir.join("gitdir"),
        format!("{}\n", p.path().join(".git").display()),
    )
    .unwrap();
    let out = doctor();
    assert_eq!(out.code, 0, "{}", out.stdout);
    std::fs::remove_file(p.path().join(".git")).unwrap();
    registry(json!([project_entry(p.path(), &plugin_root)]));

    // Naming hooks/hooks.json again in the manifest: loaded once, nothing to report.
    manifest(Some(json!("./hooks/hooks.json")));
    let out = doctor();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.stdout.contains("WARN  plugin"), "{}", out.stdout);

    // A manifest's own hooks file and inline hooks add to hooks/hooks.json. (Claude Code runs
    // one command once, so the second handler spells it differently.)
    let handler = json!([{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/bin/attenu-hook", "timeout": 10, "onFailure": "block"}]}]);
    std::fs::write(
        plugin_root.join("extra.json"),
        json!({"hooks": {"PreToolUse": handler}}).to_string(),
    )
    .unwrap();
    for hooks in [json!("./extra.json"), json!([{"PostToolUse": handler}])] {
        manifest(Some(hooks.clone()));
        let out = doctor();
        assert_eq!(out.code, 1, "{hooks}: {}", out.stdout);
        assert!(
            out.stdout.contains("wired 2 times for "),
            "{hooks}: {}",
            out.stdout
        );
    }

    // A manifest naming a file that is not there: Claude Code skips it and loads the rest.
    manifest(Some(json!("./missing.json")));
    let out = doctor();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("missing.json")
            && out
                .stdout
                .contains("so Claude Code may not load all of its hooks"),
        "{}",
        out.stdout
    );

    // A manifest that starts with a byte-order mark is read as Claude Code reads it.
    let packaged = include_str!("../.claude-plugin/plugin.json");
    std::fs::write(
        plugin_root.join(".claude-plugin/plugin.json"),
        format!("\u{feff}{packaged}"),
    )
    .unwrap();
    assert_eq!(doctor().code, 0);

    // A manifest Claude Code rejects loads nothing, hooks/hooks.json included: a path not of
    // the form `./….json`, or a manifest that is not JSON.
    manifest(Some(json!("hooks/hooks.json")));
    loads_nothing(&doctor(), "Claude Code rejects the manifest");
    std::fs::write(plugin_root.join(".claude-plugin/plugin.json"), "{bad").unwrap();
    loads_nothing(&doctor(), "is not valid JSON");

    // A hooks file outside the plugin's directory is not loaded.
    std::fs::write(
        config.path().join("cache/m/attenu-hook/outside.json"),
        std::fs::read(plugin_root.join("hooks/hooks.json")).unwrap(),
    )
    .unwrap();
    std::fs::remove_file(plugin_root.join("hooks/hooks.json")).unwrap();
    manifest(Some(json!("./../outside.json")));
    loads_nothing(&doctor(), "outside the plugin's directory");
}

/// Regression: install reported every event wired while a settings file turned all hooks off,
/// so the user learned that nothing ran only from `doctor`, if at all.
fn install_warns_when_claude_code_would_not_run_the_hook() {
    let p = sample("install-disabled");
    let dir = p.path().to_str().unwrap();
    let out = cli(&["install", dir, "--command", BIN]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    // Nor for a wrapper whose name is not attenu-hook's: it is the command just wired.
    let w = sample("install-wrapper");
    let wrapper = w.path().join("guard.sh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {BIN}\n")).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = cli(&[
        "install",
        w.path().to_str().unwrap(),
        "--command",
        wrapper.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    // The next step it prints recognises the wrapper too.
    let next = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("next: `"))
        .and_then(|l| l.strip_suffix('`'))
        .expect("a next step");
    assert!(next.contains("--command"), "{next}");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(next.replacen("attenu-hook", BIN, 1))
        .env(
            "CLAUDE_CONFIG_DIR",
            "/nonexistent/attenu-test-claude-config",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("no attenu-hook handler"), "{stdout}");
    assert!(stdout.contains("ok    wired:PreToolUse"), "{stdout}");

    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"disableAllHooks": true}),
    );
    // Both when it changes the file and when there is nothing left to change.
    for said in ["updated", "nothing changed"] {
        let out = cli(&["install", dir, "--local", "--command", BIN]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(said), "{}", out.stdout);
        assert!(
            out.stderr.contains("warning: the hook is wired, but")
                && out
                    .stderr
                    .contains("settings.local.json sets \"disableAllHooks\": true"),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

/// Regression: `sudo attenu-hook install` replaced a user's settings file with one owned by
/// root, which the user could then no longer edit.
fn install_as_root_keeps_the_files_owner() {
    use std::os::unix::fs::MetadataExt;
    need_root();
    let p = TempDir::new("install-owner");
    write_settings(p.path(), "settings.json", &json!({"model": "opus"}));
    let path = p.path().join(".claude/settings.json");
    std::os::unix::fs::chown(&path, Some(4321), Some(4322)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = cli(&["install", p.path().to_str().unwrap(), "--command", BIN]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!((m.uid(), m.gid()), (4321, 4322), "the user still owns it");
    assert_eq!(m.permissions().mode() & 0o7777, 0o640);
    assert!(settings(p.path())["hooks"]["PreToolUse"].is_array());
    assert_eq!(settings(p.path())["model"], "opus");

    // Root in another user's project would write into directories that user controls (a
    // symlink swapped in could redirect it): refused, and nothing is created.
    let q = TempDir::new("install-owner-other");
    std::os::unix::fs::chown(q.path(), Some(4321), Some(4322)).unwrap();
    let out = cli(&["install", q.path().to_str().unwrap(), "--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["belongs to uid 4321", "sudo -u '#4321'"]);
    assert!(!q.path().join(".claude").exists());
    let r = TempDir::new("install-owner-claude-link");
    std::os::unix::fs::symlink(q.path(), r.path().join(".claude")).unwrap();
    let out = cli(&["install", r.path().to_str().unwrap(), "--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["is a symbolic link"]);

    // Review: a group-writable project was called "writable by others", with advice that did
    // not apply to a root-owned one; a project inside another user's directory was accepted.
    let g = TempDir::new("install-owner-group-writable");
    std::fs::set_permissions(g.path(), std::fs::Permissions::from_mode(0o775)).unwrap();
    let out = cli(&["install", g.path().to_str().unwrap(), "--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(
        &out.stderr,
        &["is writable by its group, and", "chmod go-w"],
    );
    let home = TempDir::new("install-owner-users-home");
    let inside = home.path().join("project");
    std::fs::create_dir(&inside).unwrap();
    std::os::unix::fs::chown(home.path(), Some(4321), Some(4322)).unwrap();
    let out = cli(&["install", inside.to_str().unwrap(), "--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("a directory above the project, belongs to uid 4321"),
        "{}",
        out.stderr
    );
    assert!(!inside.join(".claude").exists());
}

/// Regression: keeping the owner made install fail for a user who owns the settings file
/// when its group is one they are not in (as after `sudo cp` and `sudo chown user`). Review:
/// in a user namespace where that group is not mapped, `fchown` fails with EINVAL rather than
/// EPERM, and install failed again.
fn install_by_the_files_owner_works_whatever_its_group() {
    // A group the user is in is kept with its bits; one they are not in cannot be, and then
    // its bits go rather than pass to the user's own group.
    install_as_uid_4321(false, &[(4400, (4400, 0o660)), (0, (4321, 0o600))]);
}

/// The same in a user namespace that maps only uid and gid 4321: a group it does not map
/// cannot be kept either.
fn install_by_the_files_owner_works_whatever_its_group_in_a_user_namespace() {
    install_as_uid_4321(true, &[(4400, (4321, 0o600))]);
}

/// Runs `install` as uid 4321 in group 4400 (in a user namespace when `namespaced`) on a
/// settings file owned by 4321 with each case's group, and checks the (gid, mode) it is left
/// with.
fn install_as_uid_4321(namespaced: bool, cases: &[(u32, (u32, u32))]) {
    use std::os::unix::fs::MetadataExt;
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    let unshare = std::path::Path::new("/usr/bin/unshare");
    need_root();
    if !setpriv.exists() {
        skip("needs /usr/bin/setpriv (CI has it)");
    }
    let as_user = |namespaced: bool, args: &[&std::ffi::OsStr]| {
        let mut c = std::process::Command::new(setpriv);
        c.args(["--reuid=4321", "--regid=4321", "--groups=4400"]);
        if namespaced {
            c.arg(unshare).arg("--map-current-user");
        }
        c.arg(BIN)
            .args(args)
            .env(
                "CLAUDE_CONFIG_DIR",
                "/nonexistent/attenu-test-claude-config",
            )
            .output()
            .unwrap()
    };
    if !as_user(false, &["--version".as_ref()]).status.success() {
        skip(format!(
            "uid 4321 cannot run {BIN} (a directory above it is private)"
        ));
    }
    if namespaced && !(unshare.exists() && as_user(true, &["--version".as_ref()]).status.success())
    {
        skip("this machine does not let uid 4321 create a user namespace with /usr/bin/unshare");
    }
    for &(group, kept) in cases {
        let p = TempDir::new("install-user-group");
        write_settings(p.path(), "settings.json", &json!({"model": "opus"}));
        let path = p.path().join(".claude/settings.json");
        for d in [p.path(), &p.path().join(".claude")] {
            std::os::unix::fs::chown(d, Some(4321), Some(4321)).unwrap();
        }
        std::os::unix::fs::chown(&path, Some(4321), Some(group)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660)).unwrap();
        let out = as_user(
            namespaced,
            &[
                "install".as_ref(),
                p.path().as_os_str(),
                "--command".as_ref(),
                BIN.as_ref(),
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "namespaced {namespaced}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.uid(), 4321);
        assert_eq!(
            (m.gid(), m.permissions().mode() & 0o777),
            kept,
            "group {group}, namespaced {namespaced}"
        );
        assert!(settings(p.path())["hooks"]["PreToolUse"].is_array());
    }
}

/// Regression: install wrote a nested `.claude/` when run from a subdirectory, and created
/// whatever path it was given; doctor on a missing directory listed wiring failures.
fn install_and_doctor_find_the_project_root_and_refuse_a_missing_directory() {
    let p = sample("install-root");
    let sub = p.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = cli(&["install", sub.to_str().unwrap(), "--command", BIN]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!sub.join(".claude").exists() && !p.path().join("src/.claude").exists());
    assert!(settings(p.path())["hooks"]["PreToolUse"].is_array());
    let out = doctor(&sub);
    assert_eq!(out.code, 0, "{}", out.stdout);

    let missing = p.path().join("src/typo/proj");
    for cmd in ["install", "doctor"] {
        let out = cli(&[cmd, missing.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{cmd}: {}", out.stdout);
        assert!(
            out.stderr.contains("is not a directory"),
            "{cmd}: {}",
            out.stderr
        );
    }
    assert!(!p.path().join("src/typo").exists());
}

fn doctor_fails_when_attenu_is_not_a_directory_and_output_errors_exit_2() {
    let p = sample("doctor-file");
    let dir = p.path().to_str().unwrap();
    assert_eq!(cli(&["install", dir, "--command", BIN]).code, 0);
    std::fs::write(p.path().join(".attenu"), "").unwrap();
    let out = doctor(p.path());
    assert_contains(&out.stdout, &["FAIL  perm:.attenu", "not a directory"]);
    // Output that cannot be written ends the command with exit 2, not a panic (101).
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = std::process::Command::new(BIN)
        .args(["doctor", dir])
        .env(
            "CLAUDE_CONFIG_DIR",
            "/nonexistent/attenu-test-claude-config",
        )
        .stdout(full)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}

/// Regression: a `.attenu/` in a parent directory (left by a session started there) took
/// `install`, `doctor` and `--derive` away from the project's own `.claude/`.
fn declarations_are_looked_up_at_the_nearest_claude_not_a_parents_attenu() {
    let parent = TempDir::new("parent-attenu");
    std::fs::create_dir_all(parent.path().join(".attenu")).unwrap();
    let repo = parent.path().join("repo");
    std::fs::create_dir_all(repo.join(".claude/agents")).unwrap();
    std::fs::write(
        repo.join(".claude/agents/solo.md"),
        "---\nname: solo\ndescription: d\ntools: Read\n---\n",
    )
    .unwrap();
    let dir = repo.to_str().unwrap();
    assert_eq!(cli(&["install", dir, "--command", BIN]).code, 0);
    assert!(repo.join(".claude/settings.json").is_file());
    assert!(!parent.path().join(".claude").exists());
    let derived = cli(&["--derive", dir, "--json"]);
    assert_contains(&derived.stdout, &["solo"]);
    let out = doctor(&repo);
    assert!(
        out.stdout.starts_with(&format!(
            "project {}",
            std::fs::canonicalize(&repo).unwrap().display()
        )),
        "{}",
        out.stdout
    );
}

/// Regression: wiring written with `--command` for a renamed copy or a link was not recognised
/// by `doctor` or a later `install`, which added a second handler; and a second handler of ours
/// (another command, or under a matcher) was left in place, so every call ran the hook twice.
fn install_keeps_one_handler_per_event_and_recognises_its_own_command() {
    let p = sample("install-one");
    let dir = p.path().to_str().unwrap();
    let bin = TempDir::new("renamed");
    let link = bin.path().join("guard");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let link_s = link.to_str().unwrap();
    assert_eq!(cli(&["install", dir, "--command", link_s]).code, 0);
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let again = cli(&["install", dir]);
    assert_contains(&again.stdout, &["nothing changed"]);

    // A second handler of ours under a matcher, async: removed, not left to run twice.
    let mut s = settings(p.path());
    s["hooks"]["PreToolUse"].as_array_mut().unwrap().push(json!(
        {"matcher": "Bash", "hooks": [{"type": "command", "command": BIN, "async": true}]}
    ));
    write_settings(p.path(), "settings.json", &s);
    let out = cli(&["install", dir, "--command", link_s]);
    assert!(
        out.stdout.contains(
            "PreToolUse: removed the attenu-hook handler from the group with matcher 'Bash'"
        ),
        "{}",
        out.stdout
    );
    assert_eq!(
        settings(p.path())["hooks"]["PreToolUse"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Two scopes wiring two commands: doctor says so.
    let user = TempDir::new("doctor-two");
    let mut user_settings = json!({"hooks": {}});
    user_settings["hooks"]["PreToolUse"] = json!([{"hooks": [handler(BIN)]}]);
    std::fs::write(user.path().join("settings.json"), user_settings.to_string()).unwrap();
    let out = cli_with(&["doctor", dir], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("attenu-hook is wired 2 times for PreToolUse"),
        "{}",
        out.stdout
    );
}

/// `disableAllHooks` as Claude Code applies it: the most specific scope that sets it decides,
/// and outside managed settings it leaves managed hooks running.
fn doctor_reads_disable_all_hooks_by_precedence() {
    let p = sample("doctor-precedence");
    let dir = p.path().to_str().unwrap();
    assert_eq!(cli(&["install", dir, "--command", BIN]).code, 0);
    let user = TempDir::new("doctor-prec-user");
    std::fs::write(
        user.path().join("settings.json"),
        r#"{"disableAllHooks": true}"#,
    )
    .unwrap();
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"disableAllHooks": false}),
    );
    let out = cli_with(&["doctor", dir], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_eq!(
        out.code, 0,
        "the local false overrides the user's true: {}",
        out.stdout
    );
    std::fs::remove_file(p.path().join(".claude/settings.local.json")).unwrap();
    let out = cli_with(&["doctor", dir], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_eq!(out.code, 1, "{}", out.stdout);
}

/// Regression: a command spelt with `$HOME` or `~` was reported as not resolving although the
/// shell Claude Code runs it with expands it.
fn doctor_expands_home_and_variables_in_commands() {
    let p = sample("doctor-expand");
    let home = TempDir::new("doctor-home");
    std::fs::create_dir_all(home.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(BIN, home.path().join("bin/attenu-hook")).unwrap();
    let dir = p.path().to_str().unwrap();
    for command in [
        "$HOME/bin/attenu-hook",
        "${HOME}/bin/attenu-hook",
        "~/bin/attenu-hook",
    ] {
        let out = cli_with(
            &["install", dir, "--command", command],
            &[("HOME", home.path())],
        );
        assert_eq!(out.code, 0, "{command}: {}", out.stderr);
        let out = cli_with(&["doctor", dir], &[("HOME", home.path())]);
        assert_eq!(out.code, 0, "{command}: {}", out.stdout);
        assert!(
            out.stdout.contains(&format!("`{command}` runs")),
            "{}",
            out.stdout
        );
    }
}
