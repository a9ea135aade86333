//! What `doctor` reads of the wiring, as Claude Code would load it: every settings scope,
//! `async`, `if` and disabled hooks, each handler's command, the attenu-hook plugin and its
//! installation, `disableAllHooks` by precedence.

mod common;
use common::operator::*;
use common::*;
use serde_json::{json, Value};

fn main() {
    harness::run(tests![
        doctor_fails_on_async_if_and_disabled_hooks_in_any_scope,
        doctor_resolves_every_handlers_command,
        doctor_counts_the_attenu_hook_plugin_only_where_claude_code_would_load_it,
        doctor_reads_the_one_installation_and_every_hooks_file_claude_code_would_load,
        doctor_reads_disable_all_hooks_by_precedence,
        doctor_expands_home_and_variables_in_commands
    ]);
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
            .contains("every tool call (the plugin attenu-hook@team-tools)")
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
