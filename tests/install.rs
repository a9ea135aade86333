//! `install`: wiring the hook into the settings a project already has, keeping its files
//! (mode, owner, symlinks), one handler per event, and warning when Claude Code would not run it.

mod common;
use common::operator::*;
use common::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

fn main() {
    harness::run(tests![
        install_keeps_existing_settings_and_hooks_and_is_idempotent,
        install_refuses_to_guess_on_invalid_settings_and_local_writes_the_local_file,
        install_moves_a_handler_out_of_a_matcher_and_strips_async_and_if,
        install_keeps_the_files_mode_and_refuses_a_symlink,
        install_warns_when_claude_code_would_not_run_the_hook,
        install_as_root_keeps_the_files_owner,
        install_by_the_files_owner_works_whatever_its_group,
        install_by_the_files_owner_works_whatever_its_group_in_a_user_namespace,
        install_keeps_one_handler_per_event_and_recognises_its_own_command
    ]);
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

/// Regression: install reported every event wired while a settings file turned all hooks off,
/// so the user learned that nothing ran only from `doctor`, if at all.
fn install_warns_when_claude_code_would_not_run_the_hook() {
    let p = sample("install-disabled");
    let dir = p.path().to_str().unwrap();
    let out = cli(&["install", dir, "--command", BIN]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // (The one warning is that BIN is this machine's path: the settings file is shared.)
    assert!(
        !out.stderr
            .lines()
            .any(|l| l.contains("warning") && !l.contains("exists on this machine only")),
        "{}",
        out.stderr
    );
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
    // (The one warning is that BIN is this machine's path: the settings file is shared.)
    assert!(
        !out.stderr
            .lines()
            .any(|l| l.contains("warning") && !l.contains("exists on this machine only")),
        "{}",
        out.stderr
    );
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
