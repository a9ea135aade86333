//! Self-protection: a subagent cannot reach the hook's own files (its state directory, key,
//! settings, agent declarations, binary), and the state files are private and opened without
//! following a link or waiting on a FIFO; a gate on one command-running tool gates them all.
//! What a subagent's calls may touch, its searches and the shell tripwire's forms are data:
//! `tests/cases/self-protection/`, `search-cannot-reach-the-key/`, `shell-tripwire/`. The
//! spellings of paths are in tests/path_reach.rs.

mod common;
use common::project_kit::mode_of;
use common::*;
use serde_json::json;
use std::path::Path;

/// Regression: the hook's files reached through a symlink to the project (beside it, so
/// outside what a case's steps may write).
#[test]
fn the_hooks_files_through_a_link_to_the_project_are_refused() {
    let p = ProjectBuilder::new("selfprot")
        .agent("ops", "tools: Read, Write, Edit, Bash")
        .build();
    let link = format!("{}-link", p.dir());
    std::os::unix::fs::symlink(p.path(), &link).unwrap();
    let settings = json!({"file_path": format!("{link}/.claude/settings.json"), "content": "{}"});
    let write = p.subagent("ops", "Write").input(settings).run();
    let key = p
        .read_by("ops", &format!("{link}/.attenu/anchor.key"))
        .run();
    std::fs::remove_file(&link).unwrap();
    assert_denied_with(&write, "self-protection");
    assert_denied_with(&key, "self-protection");
}

#[test]
fn state_directory_and_secrets_are_private() {
    let p = sample("perms");
    reviewer_read(p.path(), "s1", "/x", "t1");
    assert_eq!(mode_of(&p.path().join(".attenu")), 0o700);
    assert_eq!(mode_of(&p.path().join(".attenu/anchor.key")), 0o600);
    assert_eq!(mode_of(&p.ledger("s1")), 0o600);
}

/// Regression: the configuration was read through a symlink (pointing the hook at a mode
/// from outside `.attenu/`) and a FIFO in its place blocked until the deadline.
#[test]
fn a_symlinked_or_fifo_configuration_is_refused_at_once() {
    let p = sample("cfglink");
    let config = p.path().join(".attenu/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let elsewhere = p.path().join("observe.toml");
    std::fs::write(&elsewhere, "mode = \"observe\"\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &config).unwrap();
    let bash = || p.subagent("reviewer", "Bash").id("t1").run();
    assert_denied_saying_all(&bash(), &["[config-invalid]", "symlink"]);
    std::fs::remove_file(&config).unwrap();
    mkfifo(&config);
    // A FIFO is refused, not waited on.
    assert_denied_with(&bash(), "config-invalid");
}

/// `mkdir .attenu` to write config.toml, or a git checkout, leaves it 0755: the hook makes its
/// own directory private instead of keeping ledgers and keys in a readable one.
#[test]
fn a_state_directory_readable_by_others_is_made_private() {
    use std::os::unix::fs::DirBuilderExt;
    let p = sample("loosedir");
    let attenu = p.path().join(".attenu");
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&attenu)
        .unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    assert_eq!(mode_of(&attenu), 0o700);
}

#[test]
fn a_symlinked_ledger_or_state_directory_is_refused() {
    let p = sample("symlink");
    let elsewhere = TempDir::new("elsewhere");
    std::os::unix::fs::symlink(elsewhere.path(), p.path().join(".attenu")).unwrap();
    let out = reviewer_read(p.path(), "s1", "/x", "t1");
    assert_denied_with(&out, "state-dir-unsafe");
    std::fs::remove_file(p.path().join(".attenu")).unwrap();
    std::fs::create_dir(p.path().join(".attenu")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("target.jsonl"), p.ledger("s1")).unwrap();
    let out = reviewer_read(p.path(), "s1", "/x", "t1");
    assert_denied_with(&out, "state-dir-unsafe");
    assert!(!elsewhere.path().join("target.jsonl").exists());
}

/// Each state file the hook reads is opened without following a link or waiting on a FIFO,
/// and the file it opened is checked: a FIFO, a link or a directory in its place denies at
/// once, with the file named, instead of hanging the call until the deadline.
#[test]
fn a_fifo_link_or_directory_in_place_of_a_state_file_denies_at_once() {
    let p = sample("fifo");
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let attenu = p.path().join(".attenu");
    let (state, key) = (
        attenu.join("ledger-s1.state.json"),
        attenu.join("anchor.key"),
    );
    let ledger = attenu.join("ledger-s1.jsonl");
    let elsewhere = TempDir::new("fifo-elsewhere");
    let target = elsewhere.path().join("f");
    std::fs::write(&target, "{}").unwrap();
    let planted = [
        (&state, "fifo"),
        (&state, "link"),
        (&state, "dir"),
        (&key, "fifo"),
        (&key, "link"),
        (&key, "dir"),
        (&ledger, "fifo"),
        (&ledger, "dir"),
    ];
    for (i, (path, kind)) in planted.into_iter().enumerate() {
        let saved = path.with_extension("saved");
        std::fs::rename(path, &saved).unwrap();
        plant(path, kind, &target);
        let out = reviewer_read(p.path(), "s1", "/y", &format!("u{i}"));
        // A blocked open would end in [deadline-exceeded], which names no file.
        assert_denied_saying(&out, path.file_name().unwrap().to_str().unwrap());
        match kind {
            "dir" => std::fs::remove_dir(path).unwrap(),
            _ => std::fs::remove_file(path).unwrap(),
        }
        std::fs::rename(&saved, path).unwrap();
    }
    assert_allowed(&reviewer_read(p.path(), "s1", "/z", "t2"));
    // The roster cache is only ever a shortcut: a FIFO there is read as no cache, without
    // blocking.
    let cache = attenu.join("roster.cache");
    let _ = std::fs::remove_file(&cache);
    mkfifo(&cache);
    assert_allowed(&reviewer_read(p.path(), "s1", "/w", "t3"));
}

/// A FIFO, a link to `target` or a directory at `path`.
fn plant(path: &Path, kind: &str, target: &Path) {
    match kind {
        "fifo" => mkfifo(path),
        "link" => std::os::unix::fs::symlink(target, path).unwrap(),
        _ => std::fs::create_dir(path).unwrap(),
    }
}

/// `[gate] require = ["exec.bash"]` gates Monitor and PowerShell too: each runs a command as
/// Bash does (derivation already takes them away with a denied Bash).
#[test]
fn a_gate_on_bash_gates_every_tool_that_runs_a_command() {
    let (p, key) = gated_project("reach-gate", "Bash, Monitor, PowerShell, Read");
    let input = json!({"command": "deploy --prod", "description": "d"});
    for tool in ["Bash", "Monitor", "PowerShell"] {
        let by = |call: Call, id: &str| call.input(input.clone()).id(&format!("{tool}{id}")).run();
        let gated = "gate-authorization-required";
        assert_denied_with(&by(p.subagent("ops", tool), "0"), gated);
        assert_denied_with(&by(p.main_thread(tool), "m"), gated);
        let (key, input) = (key.to_str().unwrap(), input.to_string());
        let args = [
            "--tool",
            tool,
            "--reviewer",
            "alice",
            "--key",
            key,
            "--input",
            &input,
        ];
        let out = cli(&[&["authorize", "--project", p.dir()], &args[..]].concat());
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_allowed(&by(p.subagent("ops", tool), "1"));
    }
    // Other scopes are not gated by it.
    assert_allowed(&p.read_by("ops", "README.md").run());
}
