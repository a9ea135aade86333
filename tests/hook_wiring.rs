//! What `doctor` reads of the wiring, as Claude Code would load it: every settings scope,
//! `async`, `if` and disabled hooks, each handler's command, the attenu-hook plugin and its
//! installation (`tests/common/wiring_kit.rs`), `disableAllHooks` by precedence.

mod common;
use common::operator::*;
use common::project_kit::install_bin;
use common::wiring_kit::*;
use common::*;
use serde_json::{json, Value};

fn main() {
    harness::run(tests![
        doctor_fails_on_async_and_if_handlers,
        doctor_fails_on_hooks_disabled_in_the_local_settings,
        doctor_fails_on_hooks_disabled_in_the_users_settings,
        doctor_counts_wiring_kept_in_the_users_settings,
        doctor_resolves_every_handlers_command,
        a_plugin_installed_without_its_hooks_file_loads_nothing,
        a_plugin_installed_without_its_binary_would_block_every_call,
        a_plugin_installed_whole_wires_the_project,
        a_plugin_never_installed_loads_nothing,
        a_plugin_turned_off_in_the_more_specific_file_is_not_wired,
        install_refuses_to_wire_a_project_the_plugin_wires,
        a_handler_beside_the_plugin_is_double_wiring,
        the_plugins_command_in_a_settings_file_runs_nothing,
        a_plugin_installed_for_another_project_only_loads_nothing,
        of_two_installations_claude_code_loads_the_first_that_applies,
        a_registry_record_claude_code_rejects_loads_no_plugin,
        a_key_that_is_no_plugin_id_is_set_aside,
        a_linked_worktree_counts_as_the_checkout_it_belongs_to,
        a_manifest_naming_hooks_json_again_loads_it_once,
        a_manifests_own_hooks_add_to_hooks_json,
        a_manifests_missing_hooks_file_is_skipped,
        a_manifest_with_a_byte_order_mark_is_read,
        a_manifest_claude_code_rejects_loads_nothing,
        a_hooks_file_outside_the_plugin_is_not_loaded,
        doctor_reads_disable_all_hooks_by_precedence,
        doctor_expands_home_and_variables_in_commands
    ]);
}

/// The seed's sample project installed with the binary under test, and its settings.
fn installed(tag: &str) -> (TempDir, Value) {
    let p = sample(tag);
    install_bin(p.dir());
    assert_eq!(doctor(p.path()).code, 0, "{}", doctor(p.path()).stdout);
    let settings = settings(p.path());
    (p, settings)
}

/// A Claude Code configuration directory whose user settings are `settings`.
fn user_settings(settings: &str) -> TempDir {
    let user = TempDir::new("doctor-user");
    std::fs::write(user.path().join("settings.json"), settings).unwrap();
    user
}

/// Regression: `doctor` passed wiring Claude Code does not wait for or does not run at all.
fn doctor_fails_on_async_and_if_handlers() {
    let (p, installed) = installed("doctor-async");
    for (key, value, said) in [
        ("async", json!(true), "runs it in the background"),
        ("if", json!("Bash(git *)"), "only for the calls that match"),
    ] {
        let mut s = installed.clone();
        s["hooks"]["PreToolUse"][0]["hooks"][0][key] = value;
        write_settings(p.path(), "settings.json", &s);
        assert_fails_saying(&doctor(p.path()), &["FAIL  wired:PreToolUse", said]);
    }
}

fn doctor_fails_on_hooks_disabled_in_the_local_settings() {
    let (p, _) = installed("doctor-disabled");
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"disableAllHooks": true}),
    );
    let out = doctor(p.path());
    assert_fails_saying(&out, &["FAIL  hooks-enabled", "settings.local.json"]);
}

/// The user's own settings are read too (CLAUDE_CONFIG_DIR, else ~/.claude).
fn doctor_fails_on_hooks_disabled_in_the_users_settings() {
    let (p, _) = installed("doctor-user-disabled");
    let user = user_settings(r#"{"disableAllHooks": true}"#);
    let out = cli_with(&["doctor", p.dir()], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_fails_saying(&out, &["FAIL  hooks-enabled"]);
}

/// Wiring kept in the user's settings counts, so the project file need not hold it.
fn doctor_counts_wiring_kept_in_the_users_settings() {
    let (p, installed) = installed("doctor-user-wired");
    let user = user_settings(&installed.to_string());
    let mut bare = installed.clone();
    bare.as_object_mut().unwrap().remove("hooks");
    write_settings(p.path(), "settings.json", &bare);
    let out = cli_with(&["doctor", p.dir()], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_passes(&out);
    assert_contains(&out.stdout, &["(user settings)"]);
}

/// Regression: only the first handler's command was resolved, so a typo in another event's
/// command passed.
fn doctor_resolves_every_handlers_command() {
    let (p, mut s) = installed("doctor-cmds");
    s["hooks"]["SessionEnd"][0]["hooks"][0]["command"] = json!("/nonexistent/bin/attenu-hook");
    write_settings(p.path(), "settings.json", &s);
    let says = [
        "FAIL  command",
        "`/nonexistent/bin/attenu-hook` does not resolve",
    ];
    assert_fails_saying(&doctor(p.path()), &says);
    // An explicit --command replaces it; without one, install keeps commands as they are.
    let out = cli(&["install", p.dir(), "--command", BIN]);
    assert_contains(
        &out.stdout,
        &["SessionEnd: set the attenu-hook handler's command"],
    );
    assert_eq!(doctor(p.path()).code, 0);
}

// Regression: doctor did not read plugins, so a project wired by the attenu-hook plugin alone
// failed as unwired, and one wired by the plugin and by `install` passed although every call
// was recorded twice. Review: a plugin `enabledPlugins` names but Claude Code never installed
// (or installed without its binary) loads nothing, or blocks every call.

/// `attenu-hook@team-tools` enabled beside another plugin, installed for the user with
/// `parts` of it (see [`Plugin::installed`]).
fn team_tools(tag: &str, parts: &[&str]) -> Plugin {
    let plugin = Plugin::new(tag, "team-tools");
    plugin.enable(&json!({"attenu-hook@team-tools": true, "other@team-tools": true}));
    let root = plugin.installed("0.1.0", parts);
    let user = json!([{"scope": "user", "installPath": root, "version": "0.1.0"}]);
    plugin.registry(user, json!({}));
    plugin
}

fn a_plugin_installed_without_its_hooks_file_loads_nothing() {
    let out = team_tools("plugin-nohooks", &[]).doctor();
    assert_loads_nothing(&out, "so Claude Code loads no hook from it");
}

fn a_plugin_installed_without_its_binary_would_block_every_call() {
    let out = team_tools("plugin-nobin", &["hooks"]).doctor();
    let says = "(the plugin attenu-hook@team-tools) does not resolve to an executable";
    assert_fails_saying(&out, &[says]);
}

fn a_plugin_installed_whole_wires_the_project() {
    let out = team_tools("plugin-whole", &["hooks", "bin"]).doctor();
    assert_passes(&out);
    let says = [
        "every tool call (the plugin attenu-hook@team-tools)",
        "bin/attenu-hook (the plugin attenu-hook@team-tools)",
    ];
    assert_contains(&out.stdout, &says);
}

/// Named in `enabledPlugins`, never installed: nothing runs.
fn a_plugin_never_installed_loads_nothing() {
    let plugin = team_tools("plugin-none", &["hooks", "bin"]);
    let empty = TempDir::new("doctor-plugin-none");
    let out = plugin.doctor_in(empty.path());
    assert_loads_nothing(&out, "lists no installation of it for this project");
}

/// [`team_tools`] whole, enabled in the project's settings.json too.
fn team_tools_in_the_project(tag: &str) -> Plugin {
    let plugin = team_tools(tag, &["hooks", "bin"]);
    let mut project = settings(plugin.project.path());
    project["enabledPlugins"] = json!({"attenu-hook@team-tools": true});
    write_settings(plugin.project.path(), "settings.json", &project);
    plugin
}

/// Turned off in the more specific file: not wired at all.
fn a_plugin_turned_off_in_the_more_specific_file_is_not_wired() {
    let plugin = team_tools_in_the_project("plugin-off");
    plugin.enable(&json!({"attenu-hook@team-tools": false, "other@team-tools": true}));
    assert_fails_saying(&plugin.doctor(), &["no attenu-hook handler for PreToolUse"]);
}

/// On and installed: install refuses to wire it a second time, also when another key that is
/// on names a plugin never installed.
fn install_refuses_to_wire_a_project_the_plugin_wires() {
    let plugin = team_tools_in_the_project("plugin-install");
    plugin.enable(&json!({"attenu-hook@elsewhere": true, "attenu-hook@team-tools": true}));
    let file = plugin.project.path().join(".claude/settings.json");
    let before = std::fs::read(&file).unwrap();
    let config = [("CLAUDE_CONFIG_DIR", plugin.config.path())];
    let out = cli_with(
        &["install", plugin.project.dir(), "--command", BIN],
        &config,
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["already wires the hook for every event"]);
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

/// [`team_tools_in_the_project`] with a handler running `command` wired by hand beside it.
fn wired_beside_the_plugin(tag: &str, command: &str) -> Out {
    let plugin = team_tools_in_the_project(tag);
    plugin.enable(&json!({"attenu-hook@elsewhere": true, "attenu-hook@team-tools": true}));
    let mut wired = settings(plugin.project.path());
    wired["hooks"] = json!({"PreToolUse": [{"hooks": [handler(command)]}]});
    write_settings(plugin.project.path(), "settings.json", &wired);
    plugin.doctor()
}

/// Wired by hand beside it: double wiring.
fn a_handler_beside_the_plugin_is_double_wiring() {
    let out = wired_beside_the_plugin("plugin-double", BIN);
    let says = [
        "wired 2 times for PreToolUse",
        "one is the attenu-hook plugin's",
    ];
    assert_fails_saying(&out, &says);
}

/// The plugin's own command text in a settings file: double wiring too, and there
/// `${CLAUDE_PLUGIN_ROOT}` is not set, so that command runs nothing.
fn the_plugins_command_in_a_settings_file_runs_nothing() {
    let command = "\"${CLAUDE_PLUGIN_ROOT}\"/bin/attenu-hook";
    let out = wired_beside_the_plugin("plugin-root-cmd", command);
    let says = [
        "wired 2 times for PreToolUse",
        "one is the attenu-hook plugin's",
    ];
    assert_fails_saying(&out, &says);
    let unresolved = format!("`{command}` does not resolve");
    let checked = out
        .stdout
        .lines()
        .any(|l| l.starts_with("FAIL  command") && l.contains(&unresolved));
    assert!(
        checked,
        "the settings file's copy of the plugin's command is checked: {}",
        out.stdout
    );
}

// Review: doctor read the manifest's `hooks` as a replacement for `hooks/hooks.json`, which
// Claude Code always loads, and counted every registry entry for a key, while Claude Code
// loads the one installation that applies to the project. Second review: a manifest Claude
// Code rejects, a hooks path outside the plugin, an unreadable registry record and a linked
// git worktree were all read otherwise than Claude Code reads them.

/// `attenu-hook@m` enabled, installed whole as 0.1.0 (not yet in the registry).
fn plugin_m(tag: &str) -> (Plugin, std::path::PathBuf) {
    let plugin = Plugin::new(tag, "m");
    let root = plugin.installed("0.1.0", &["bin", "hooks", "manifest"]);
    (plugin, root)
}

/// [`plugin_m`] installed for this project.
fn plugin_m_here(tag: &str) -> (Plugin, std::path::PathBuf) {
    let (plugin, root) = plugin_m(tag);
    let here = Plugin::for_project(plugin.project.path(), &root);
    plugin.registry(json!([here]), json!({}));
    (plugin, root)
}

fn a_plugin_installed_for_another_project_only_loads_nothing() {
    let (plugin, root) = plugin_m("plugin-other-project");
    let other = sample("doctor-plugin-other");
    plugin.registry(json!([Plugin::for_project(other.path(), &root)]), json!({}));
    assert_loads_nothing(
        &plugin.doctor(),
        "lists no installation of it for this project",
    );
}

/// Installed for this project and for the user, in two directories: Claude Code loads the
/// first that applies, once (two would be two commands, "wired 2 times").
fn of_two_installations_claude_code_loads_the_first_that_applies() {
    let (plugin, root) = plugin_m("plugin-two");
    let user_root = plugin.installed("0.1.0-user", &["bin", "hooks", "manifest"]);
    let other = sample("doctor-plugin-other");
    let entries = json!([
        Plugin::for_project(other.path(), &user_root),
        Plugin::for_project(plugin.project.path(), &root),
        {"scope": "user", "installPath": user_root}
    ]);
    plugin.registry(entries, json!({}));
    let out = plugin.doctor();
    assert_passes(&out);
    assert_contains(&out.stdout, &[&format!("runs {}", root.display())]);
    assert!(
        !out.stdout.contains("0.1.0-user") && !out.stdout.contains("WARN  plugin"),
        "{}",
        out.stdout
    );
}

/// One record Claude Code's registry schema rejects, under this plugin or another, and it
/// reads no plugin at all.
fn a_registry_record_claude_code_rejects_loads_no_plugin() {
    let (plugin, root) = plugin_m("plugin-bad-record");
    plugin.registry(json!([{"installPath": root}]), json!({}));
    assert_loads_nothing(&plugin.doctor(), "that Claude Code cannot read");
    let here = Plugin::for_project(plugin.project.path(), &root);
    plugin.registry(json!([here]), json!({"other@m": [{"x": 1}]}));
    assert_loads_nothing(&plugin.doctor(), "has a record under other@m");
}

/// A registry key that is no plugin id is set aside, not fatal.
fn a_key_that_is_no_plugin_id_is_set_aside() {
    let (plugin, root) = plugin_m("plugin-odd-key");
    let here = Plugin::for_project(plugin.project.path(), &root);
    plugin.registry(json!([here]), json!({"not a plugin id@m": [{"x": 1}]}));
    assert_eq!(plugin.doctor().code, 0);
}

/// A linked worktree of the checkout the plugin was installed for counts as that checkout,
/// once the git directory links back to it (without that, Claude Code does not map it).
fn a_linked_worktree_counts_as_the_checkout_it_belongs_to() {
    let (plugin, root) = plugin_m("plugin-worktree");
    let main = TempDir::new("doctor-plugin-main-checkout");
    let git_dir = main.path().join(".git/worktrees/wt");
    std::fs::create_dir_all(&git_dir).unwrap();
    std::fs::write(git_dir.join("commondir"), "../..\n").unwrap();
    let dot_git = plugin.project.path().join(".git");
    std::fs::write(&dot_git, format!("gitdir: {}\n", git_dir.display())).unwrap();
    plugin.registry(json!([Plugin::for_project(main.path(), &root)]), json!({}));
    assert_loads_nothing(
        &plugin.doctor(),
        "lists no installation of it for this project",
    );
    std::fs::write(git_dir.join("gitdir"), format!("{}\n", dot_git.display())).unwrap();
    assert_passes(&plugin.doctor());
}

/// Naming hooks/hooks.json again in the manifest: loaded once, nothing to report.
fn a_manifest_naming_hooks_json_again_loads_it_once() {
    let (plugin, root) = plugin_m_here("plugin-manifest-again");
    plugin.manifest(&root, Some(json!("./hooks/hooks.json")));
    let out = plugin.doctor();
    assert_passes(&out);
    assert!(!out.stdout.contains("WARN  plugin"), "{}", out.stdout);
}

/// A manifest's own hooks file and inline hooks add to hooks/hooks.json. (Claude Code runs
/// one command once, so the second handler spells it differently.)
fn a_manifests_own_hooks_add_to_hooks_json() {
    let (plugin, root) = plugin_m_here("plugin-manifest-more");
    let handler = json!([{"hooks": [handler("${CLAUDE_PLUGIN_ROOT}/bin/attenu-hook")]}]);
    let extra = json!({"hooks": {"PreToolUse": handler}});
    std::fs::write(root.join("extra.json"), extra.to_string()).unwrap();
    for hooks in [json!("./extra.json"), json!([{"PostToolUse": handler}])] {
        plugin.manifest(&root, Some(hooks.clone()));
        assert_fails_saying(&plugin.doctor(), &["wired 2 times for "]);
    }
}

/// A manifest naming a file that is not there: Claude Code skips it and loads the rest.
fn a_manifests_missing_hooks_file_is_skipped() {
    let (plugin, root) = plugin_m_here("plugin-manifest-missing");
    plugin.manifest(&root, Some(json!("./missing.json")));
    let out = plugin.doctor();
    assert_passes(&out);
    let says = [
        "missing.json",
        "so Claude Code may not load all of its hooks",
    ];
    assert_contains(&out.stdout, &says);
}

/// A manifest that starts with a byte-order mark is read as Claude Code reads it.
fn a_manifest_with_a_byte_order_mark_is_read() {
    let (plugin, root) = plugin_m_here("plugin-manifest-bom");
    let packaged = include_str!("../.claude-plugin/plugin.json");
    let manifest = root.join(".claude-plugin/plugin.json");
    std::fs::write(manifest, format!("\u{feff}{packaged}")).unwrap();
    assert_eq!(plugin.doctor().code, 0);
}

/// A manifest Claude Code rejects loads nothing, hooks/hooks.json included: a path not of the
/// form `./….json`, or a manifest that is not JSON.
fn a_manifest_claude_code_rejects_loads_nothing() {
    let (plugin, root) = plugin_m_here("plugin-manifest-rejected");
    plugin.manifest(&root, Some(json!("hooks/hooks.json")));
    assert_loads_nothing(&plugin.doctor(), "Claude Code rejects the manifest");
    std::fs::write(root.join(".claude-plugin/plugin.json"), "{bad").unwrap();
    assert_loads_nothing(&plugin.doctor(), "is not valid JSON");
}

/// A hooks file outside the plugin's directory is not loaded.
fn a_hooks_file_outside_the_plugin_is_not_loaded() {
    let (plugin, root) = plugin_m_here("plugin-outside");
    let outside = root.parent().unwrap().join("outside.json");
    std::fs::rename(root.join("hooks/hooks.json"), outside).unwrap();
    plugin.manifest(&root, Some(json!("./../outside.json")));
    assert_loads_nothing(&plugin.doctor(), "outside the plugin's directory");
}

/// `disableAllHooks` as Claude Code applies it: the most specific scope that sets it decides,
/// and outside managed settings it leaves managed hooks running.
fn doctor_reads_disable_all_hooks_by_precedence() {
    let (p, _) = installed("doctor-precedence");
    let user = user_settings(r#"{"disableAllHooks": true}"#);
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"disableAllHooks": false}),
    );
    let doctor = || cli_with(&["doctor", p.dir()], &[("CLAUDE_CONFIG_DIR", user.path())]);
    let out = doctor();
    assert_eq!(
        out.code, 0,
        "the local false overrides the user's true: {}",
        out.stdout
    );
    std::fs::remove_file(p.path().join(".claude/settings.local.json")).unwrap();
    assert_eq!(doctor().code, 1, "{}", doctor().stdout);
}

/// Regression: a command spelt with `$HOME` or `~` was reported as not resolving although the
/// shell Claude Code runs it with expands it.
fn doctor_expands_home_and_variables_in_commands() {
    let p = sample("doctor-expand");
    let home = TempDir::new("doctor-home");
    std::fs::create_dir_all(home.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(BIN, home.path().join("bin/attenu-hook")).unwrap();
    let env = [("HOME", home.path())];
    for command in [
        "$HOME/bin/attenu-hook",
        "${HOME}/bin/attenu-hook",
        "~/bin/attenu-hook",
    ] {
        let out = cli_with(&["install", p.dir(), "--command", command], &env);
        assert_eq!(out.code, 0, "{command}: {}", out.stderr);
        let out = cli_with(&["doctor", p.dir()], &env);
        assert_passes(&out);
        assert_contains(&out.stdout, &[&format!("`{command}` runs")]);
    }
}
