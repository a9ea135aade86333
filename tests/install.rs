//! `install`: wiring the hook into the settings a project already has, keeping its files
//! (mode, owner, symlinks), one handler per event, and warning when Claude Code would not run it.

mod common;
use common::operator::*;
use common::project_kit::{mode_of, set_mode};
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

fn main() {
    harness::run(tests![
        install_keeps_existing_settings_and_hooks,
        install_wires_every_event_with_a_blocking_handler,
        a_second_install_changes_nothing,
        the_link_note_names_what_the_settings_run,
        install_refuses_to_guess_on_invalid_settings_and_local_writes_the_local_file,
        install_moves_a_handler_out_of_a_matcher_and_strips_async_and_if,
        install_leaves_other_handlers_and_async_false_alone,
        install_keeps_a_private_settings_files_mode,
        install_refuses_a_symlinked_settings_file,
        install_warns_only_that_the_command_is_a_machine_path,
        install_recognises_a_wrapper_it_was_told_to_wire,
        install_warns_when_hooks_are_disabled,
        install_as_root_keeps_the_files_owner,
        install_as_root_refuses_another_users_project,
        install_as_root_refuses_a_group_writable_project_or_one_in_another_users_directory,
        install_by_the_files_owner_works_whatever_its_group,
        install_by_the_files_owner_works_whatever_its_group_in_a_user_namespace,
        install_recognises_its_own_command_by_another_name,
        install_removes_a_second_handler_of_its_own,
        doctor_says_when_two_scopes_wire_two_commands
    ]);
}

/// `install DIR ARGS...`.
fn install(dir: &str, args: &[&str]) -> Out {
    cli(&[&["install", dir], args].concat())
}

/// `install DIR ARGS...`, which must succeed.
#[track_caller]
fn installs(dir: &str, args: &[&str]) -> Out {
    let out = install(dir, args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// The note on the per-developer link names what the settings run: the committed launcher,
/// or the link itself when told to wire that (as installs before the launcher did).
fn the_link_note_names_what_the_settings_run() {
    let p = with_settings("install-link-note", "settings.json", &existing());
    let first = installs(p.dir(), &[]);
    assert_contains(
        &first.stdout,
        &["runs .claude/hooks/attenu-hook.sh in every clone"],
    );
    let link = "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/attenu-hook";
    let again = installs(p.dir(), &["--command", link]);
    assert_contains(
        &again.stdout,
        &["runs the link .claude/hooks/attenu-hook in every clone"],
    );
    assert!(
        !again.stdout.contains(".sh in every clone"),
        "{}",
        again.stdout
    );
}

/// A project whose `.claude/FILE` holds `settings`.
fn with_settings(tag: &str, file: &str, settings: &Value) -> TempDir {
    let p = TempDir::new(tag);
    write_settings(p.path(), file, settings);
    p
}

/// Settings a project had before the hook: a model, permissions, environment and two hooks.
fn existing() -> Value {
    json!({
        "model": "opus",
        "permissions": {"allow": ["Read"], "deny": ["Bash(rm *)"]},
        "env": {"FOO": "bar"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter --strict"}]}],
                  "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]},
    })
}

fn install_keeps_existing_settings_and_hooks() {
    let p = with_settings("install", "settings.json", &existing());
    let first = installs(p.dir(), &["--command", "attenu-hook"]);
    assert_contains(&first.stdout, &["PreToolUse: added"]);
    let after = settings(p.path());
    for key in ["model", "permissions", "env"] {
        assert_eq!(after[key], existing()[key], "{key} kept");
    }
    assert_eq!(after["hooks"]["Stop"], existing()["hooks"]["Stop"]);
    assert_eq!(
        after["hooks"]["PreToolUse"][0],
        existing()["hooks"]["PreToolUse"][0]
    );
}

fn install_wires_every_event_with_a_blocking_handler() {
    let p = with_settings("install-events", "settings.json", &existing());
    installs(p.dir(), &["--command", "attenu-hook"]);
    let after = settings(p.path());
    let ours = &after["hooks"]["PreToolUse"][1];
    assert!(ours.get("matcher").is_none());
    assert_eq!(ours["hooks"][0], handler("attenu-hook"));
    let events = [
        "SessionStart",
        "PostToolUse",
        "PostToolUseFailure",
        "SubagentStart",
        "SubagentStop",
        "SessionEnd",
    ];
    for e in events {
        assert_eq!(
            after["hooks"][e][0]["hooks"][0]["command"], "attenu-hook",
            "{e}"
        );
    }
}

fn a_second_install_changes_nothing() {
    let p = with_settings("install-again", "settings.json", &existing());
    installs(p.dir(), &["--command", "attenu-hook"]);
    let bytes = std::fs::read(p.path().join(".claude/settings.json")).unwrap();
    let second = install(p.dir(), &["--command", "attenu-hook"]);
    assert_contains(&second.stdout, &["nothing changed"]);
    let now = std::fs::read(p.path().join(".claude/settings.json")).unwrap();
    assert_eq!(now, bytes, "a second run changes nothing");
}

fn install_refuses_to_guess_on_invalid_settings_and_local_writes_the_local_file() {
    let p = TempDir::new("install-bad");
    std::fs::create_dir_all(p.path().join(".claude")).unwrap();
    std::fs::write(p.path().join(".claude/settings.json"), "{ \"model\": ").unwrap();
    let out = install(p.dir(), &[]);
    assert_ne!(out.code, 0);
    assert_contains(&out.stderr, &["refusing to guess"]);
    let kept = std::fs::read_to_string(p.path().join(".claude/settings.json")).unwrap();
    assert_eq!(kept, "{ \"model\": ");
    installs(p.dir(), &["--local"]);
    assert!(p.path().join(".claude/settings.local.json").exists());
}

/// Settings where our handler sits under a matcher, with `async`, with `if` (and `async:
/// false`), and a command with arguments (which runs the CLI, not the hook: not wiring).
fn misplaced_handlers() -> Value {
    let with = |key: &str, value: Value| {
        let mut h = handler("attenu-hook");
        h[key] = value;
        h
    };
    let mut end = with("if", json!("Bash(git *)"));
    end["async"] = json!(false); // what an absent key means: left alone
    json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [with("timeout", json!(5)), {"type": "command", "command": "my-linter"}]}],
        "PostToolUse": [{"hooks": [with("async", json!(true))]}],
        "SessionEnd": [{"hooks": [end]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "attenu-hook log --denied | notify-send -"}]}],
    }})
}

/// Regression: a handler under a matcher, or with `async` or `if`, was taken as wiring, and
/// `install` said nothing changed while Claude Code checked only some calls, or did not wait.
fn install_moves_a_handler_out_of_a_matcher_and_strips_async_and_if() {
    let p = with_settings("install-fix", "settings.json", &misplaced_handlers());
    let out = installs(p.dir(), &["--command", "attenu-hook"]);
    assert_contains(
        &out.stdout,
        &[
            "PreToolUse: removed the attenu-hook handler from the group with matcher 'Bash'",
            "PreToolUse: added the attenu-hook handler",
            "PostToolUse: removed \"async\": true",
            "SessionEnd: removed \"if\": \"Bash(git *)\"",
            "SubagentStop: added",
        ],
    );
    let again = install(p.dir(), &["--command", "attenu-hook"]);
    assert_contains(&again.stdout, &["nothing changed"]);
}

fn install_leaves_other_handlers_and_async_false_alone() {
    let p = with_settings("install-fix-kept", "settings.json", &misplaced_handlers());
    let out = installs(p.dir(), &["--command", "attenu-hook"]);
    let s = settings(p.path());
    let pre = json!([{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter"}]}, {"hooks": [handler("attenu-hook")]}]);
    assert_eq!(
        s["hooks"]["PreToolUse"], pre,
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
}

/// Regression: install made a private settings file 0644.
fn install_keeps_a_private_settings_files_mode() {
    let p = with_settings(
        "install-mode",
        "settings.local.json",
        &json!({"env": {"TOKEN": "secret"}}),
    );
    let local = p.path().join(".claude/settings.local.json");
    set_mode(&local, 0o600);
    installs(p.dir(), &["--local", "--command", "attenu-hook"]);
    assert_eq!(
        mode_of(&local),
        0o600,
        "a private settings file stays private"
    );
}

/// Regression: install replaced a symlinked settings file.
fn install_refuses_a_symlinked_settings_file() {
    let q = TempDir::new("install-link");
    std::fs::create_dir_all(q.path().join(".claude")).unwrap();
    let target = q.path().join("dotfiles-settings.json");
    std::fs::write(&target, "{}").unwrap();
    let link = q.path().join(".claude/settings.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = install(q.dir(), &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["symbolic link"]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
}

/// No warning on stderr but that the command is this machine's path (the settings file is
/// shared).
#[track_caller]
fn assert_only_the_machine_path_warning(stderr: &str) {
    let other = |l: &str| l.contains("warning") && !l.contains("exists on this machine only");
    assert!(!stderr.lines().any(other), "{stderr}");
}

/// Regression: install reported every event wired while a settings file turned all hooks off,
/// so the user learned that nothing ran only from `doctor`, if at all. Without that, the one
/// warning is that BIN is this machine's path.
fn install_warns_only_that_the_command_is_a_machine_path() {
    let p = sample("install-disabled");
    let out = installs(p.dir(), &["--command", BIN]);
    assert_only_the_machine_path_warning(&out.stderr);
}

/// The command of install's `next: `...`` line.
fn next_step(stdout: &str) -> &str {
    let next = stdout.lines().find_map(|l| l.strip_prefix("next: `"));
    next.and_then(|l| l.strip_suffix('`')).expect("a next step")
}

/// What `next` printed, run by `sh` with attenu-hook the binary under test.
fn run_next_step(next: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(next.replacen("attenu-hook", BIN, 1))
        .env(
            "CLAUDE_CONFIG_DIR",
            "/nonexistent/attenu-test-claude-config",
        )
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Nor a warning for a wrapper whose name is not attenu-hook's: it is the command just wired,
/// and the next step install prints recognises it too.
fn install_recognises_a_wrapper_it_was_told_to_wire() {
    let w = sample("install-wrapper");
    let wrapper = w.path().join("guard.sh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {BIN}\n")).unwrap();
    set_mode(&wrapper, 0o755);
    let out = installs(w.dir(), &["--command", wrapper.to_str().unwrap()]);
    assert_only_the_machine_path_warning(&out.stderr);
    let next = next_step(&out.stdout);
    assert!(next.contains("--command"), "{next}");
    let stdout = run_next_step(next);
    assert!(!stdout.contains("no attenu-hook handler"), "{stdout}");
    assert!(stdout.contains("ok    wired:PreToolUse"), "{stdout}");
}

/// With all hooks disabled in a settings file, install warns, both when it changes the file
/// and when there is nothing left to change.
fn install_warns_when_hooks_are_disabled() {
    let p = sample("install-disabled-local");
    installs(p.dir(), &["--command", BIN]);
    write_settings(
        p.path(),
        "settings.local.json",
        &json!({"disableAllHooks": true}),
    );
    for said in ["updated", "nothing changed"] {
        let out = installs(p.dir(), &["--local", "--command", BIN]);
        assert!(out.stdout.contains(said), "{}", out.stdout);
        let warned = [
            "warning: the hook is wired, but",
            "settings.local.json sets \"disableAllHooks\": true",
        ];
        assert_contains(&out.stderr, &warned);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

/// Regression: `sudo attenu-hook install` replaced a user's settings file with one owned by
/// root, which the user could then no longer edit.
fn install_as_root_keeps_the_files_owner() {
    use std::os::unix::fs::MetadataExt;
    need_root();
    let p = with_settings("install-owner", "settings.json", &json!({"model": "opus"}));
    let path = p.path().join(".claude/settings.json");
    std::os::unix::fs::chown(&path, Some(4321), Some(4322)).unwrap();
    set_mode(&path, 0o640);
    installs(p.dir(), &["--command", BIN]);
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!((m.uid(), m.gid()), (4321, 4322), "the user still owns it");
    assert_eq!(m.permissions().mode() & 0o7777, 0o640);
    assert!(settings(p.path())["hooks"]["PreToolUse"].is_array());
    assert_eq!(settings(p.path())["model"], "opus");
}

/// Root in another user's project would write into directories that user controls (a
/// symlink swapped in could redirect it): refused, and nothing is created.
fn install_as_root_refuses_another_users_project() {
    need_root();
    let q = TempDir::new("install-owner-other");
    std::os::unix::fs::chown(q.path(), Some(4321), Some(4322)).unwrap();
    let out = install(q.dir(), &["--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["belongs to uid 4321", "sudo -u '#4321'"]);
    assert!(!q.path().join(".claude").exists());
    let r = TempDir::new("install-owner-claude-link");
    std::os::unix::fs::symlink(q.path(), r.path().join(".claude")).unwrap();
    let out = install(r.dir(), &["--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["is a symbolic link"]);
}

/// Review: a group-writable project was called "writable by others", with advice that did
/// not apply to a root-owned one; a project inside another user's directory was accepted.
fn install_as_root_refuses_a_group_writable_project_or_one_in_another_users_directory() {
    need_root();
    let g = TempDir::new("install-owner-group-writable");
    set_mode(g.path(), 0o775);
    let out = install(g.dir(), &["--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(
        &out.stderr,
        &["is writable by its group, and", "chmod go-w"],
    );
    let home = TempDir::new("install-owner-users-home");
    let inside = home.path().join("project");
    std::fs::create_dir(&inside).unwrap();
    std::os::unix::fs::chown(home.path(), Some(4321), Some(4322)).unwrap();
    let out = install(inside.to_str().unwrap(), &["--command", BIN]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(
        &out.stderr,
        &["a directory above the project, belongs to uid 4321"],
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

/// The seed's sample project wired with `--command` naming a link to the binary (a renamed
/// copy), and that link.
fn wired_by_another_name(tag: &str) -> (TempDir, TempDir, String) {
    let p = sample(tag);
    let bin = TempDir::new("renamed");
    let link = bin.path().join("guard");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let link = link.to_str().unwrap().to_string();
    assert_eq!(install(p.dir(), &["--command", &link]).code, 0);
    (p, bin, link)
}

/// Regression: wiring written with `--command` for a renamed copy or a link was not recognised
/// by `doctor` or a later `install`, which added a second handler.
fn install_recognises_its_own_command_by_another_name() {
    let (p, _bin, _) = wired_by_another_name("install-one");
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&install(p.dir(), &[]).stdout, &["nothing changed"]);
}

/// Regression: a second handler of ours (another command, under a matcher, async) was left in
/// place, so every call ran the hook twice.
fn install_removes_a_second_handler_of_its_own() {
    let (p, _bin, link) = wired_by_another_name("install-second");
    let mut s = settings(p.path());
    let second =
        json!({"matcher": "Bash", "hooks": [{"type": "command", "command": BIN, "async": true}]});
    s["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(second);
    write_settings(p.path(), "settings.json", &s);
    let out = install(p.dir(), &["--command", &link]);
    let said = "PreToolUse: removed the attenu-hook handler from the group with matcher 'Bash'";
    assert_contains(&out.stdout, &[said]);
    assert_eq!(
        settings(p.path())["hooks"]["PreToolUse"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// Two scopes wiring two commands: doctor says so.
fn doctor_says_when_two_scopes_wire_two_commands() {
    let (p, _bin, _) = wired_by_another_name("install-two-scopes");
    let user = TempDir::new("doctor-two");
    let user_settings = json!({"hooks": {"PreToolUse": [{"hooks": [handler(BIN)]}]}});
    std::fs::write(user.path().join("settings.json"), user_settings.to_string()).unwrap();
    let out = cli_with(&["doctor", p.dir()], &[("CLAUDE_CONFIG_DIR", user.path())]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(
        &out.stdout,
        &["attenu-hook is wired 2 times for PreToolUse"],
    );
}
