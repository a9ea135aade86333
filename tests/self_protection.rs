//! Self-protection: a subagent cannot reach the hook's own files (its state directory, key,
//! settings, agent declarations, binary), and the state files are private and opened without
//! following a link or waiting on a FIFO; a gate on one command-running tool gates them all,
//! and the shell tripwire catches the forms docs/SELF-PROTECTION.md lists. The spellings of
//! paths are in tests/path_reach.rs.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

#[test]
fn subagents_may_not_touch_the_hooks_own_files() {
    let p = project(
        "selfprot",
        &[(
            "ops.md",
            "---\nname: ops\ntools: Read, Write, Edit, Bash\n---\n",
        )],
        None,
    );
    let root = p.path().to_str().unwrap().to_string();
    let link = format!("{root}-link");
    std::os::unix::fs::symlink(p.path(), &link).unwrap();
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": format!("{root}/.attenu/ledger-s1.jsonl"), "content": ""}),
        ),
        (
            "Edit",
            json!({"file_path": format!("{root}/.claude/settings.json")}),
        ),
        (
            "Write",
            json!({"file_path": format!("{root}/.claude/hooks/attenu-hook")}),
        ),
        (
            "Read",
            json!({"file_path": format!("{root}/src/../.attenu/anchor.key")}),
        ),
        ("Bash", json!({"command": "rm -f .attenu/ledger-s1.jsonl"})),
        (
            "Bash",
            json!({"command": "attenu-hook authorize --tool Bash --input '{}' --reviewer alice --key k"}),
        ),
        // Neither needs a reviewer key, so this refusal is all that stands in a subagent's way.
        (
            "Bash",
            json!({"command": "attenu-hook receipt --call toolu_pay1 --receipt-id r1 --observer bank"}),
        ),
        (
            "Bash",
            json!({"command": "attenu-hook reconcile resolve 1 --outcome not-executed --evidence none --unbound"}),
        ),
        (
            "Bash",
            json!({"command": "echo {} > .claude/settings.local.json"}),
        ),
        (
            "Write",
            json!({"file_path": format!("{root}/.claude/agents/ops.md"), "content": "tools: Bash"}),
        ),
        // Regression: the same files reached through a symlink to the project.
        (
            "Write",
            json!({"file_path": format!("{link}/.claude/settings.json"), "content": "{}"}),
        ),
        (
            "Read",
            json!({"file_path": format!("{link}/.attenu/anchor.key")}),
        ),
        (
            "Bash",
            json!({"command": "sed -i s/Read/Bash/ .claude/agents/ops.md"}),
        ),
    ] {
        let out = p.subagent("ops", tool).input(input.clone()).run();
        assert!(
            out.denied() && out.reason().contains("[self-protection]"),
            "{tool} {input}: {}",
            out.stdout
        );
    }
    std::fs::remove_file(&link).unwrap();
    assert_allowed(
        &p.subagent("ops", "Write")
            .input(json!({"file_path": format!("{root}/src/x.rs")}))
            .run(),
    );
    assert_allowed(&p.bash_by("ops", "cargo test").run());
    let declaration = json!({"file_path": format!("{root}/.claude/agents/ops.md")});
    let read = p.subagent("ops", "Read").input(declaration).run();
    assert!(
        read.is_allow(),
        "reading the declarations is harmless: {}",
        read.stdout
    );
}

/// Regression: a subagent's Grep from the project down read `.attenu/anchor.key` (Claude
/// Code's ripgrep searches hidden files), and Monitor's command was not checked at all.
#[test]
fn a_subagents_search_cannot_reach_the_anchor_key() {
    let p = project(
        "grepkey",
        &[(
            "ops.md",
            "---\nname: ops\ntools: Read, Grep, Glob, Monitor\n---\n",
        )],
        None,
    );
    let root = p.path().to_str().unwrap().to_string();
    let grep = |input: Value| p.subagent("ops", "Grep").input(input).run();
    // Without a glob, ripgrep skips what the state directory's ignore file names.
    assert_allowed(&grep(json!({"pattern": "key"})));
    assert_eq!(
        std::fs::read_to_string(p.path().join(".attenu/.ignore")).unwrap(),
        "*\n",
        "the ignore file is in place before the search runs"
    );
    // A glob that matches the key's file name or path brings it back in ripgrep: refused.
    for glob in [
        "*.key",
        "*",
        "**/*",
        "anchor*",
        "*.{py,key}",
        "*.py,*.key",
        "*.py *.key",
        "*/anchor.key",
        "**/anchor.key",
    ] {
        let out = grep(json!({"pattern": "key", "glob": glob}));
        assert!(
            out.denied() && out.reason().contains("[self-protection]"),
            "{glob}: {}",
            out.stdout
        );
    }
    let out = grep(json!({"pattern": "key", "path": format!("{root}/src"), "glob": "**/*.rs"}));
    assert_allowed(&out);
    for glob in ["*.py", "**/*.ts", "src/**/*.rs", "*.{js,ts}"] {
        let out = grep(json!({"pattern": "key", "glob": glob}));
        assert!(out.is_allow(), "{glob}: {}", out.stdout);
    }
    let out = p
        .subagent("ops", "Monitor")
        .input(json!({"command": "tail -f .attenu/anchor.key", "description": "x"}))
        .run();
    assert_denied_with(&out, "self-protection");
}

#[test]
fn state_directory_and_secrets_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let p = sample("perms");
    reviewer_read(p.path(), "s1", "/x", "t1");
    let mode = |rel: &str| {
        std::fs::metadata(p.path().join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(".attenu"), 0o700);
    assert_eq!(mode(".attenu/anchor.key"), 0o600);
    assert_eq!(mode(".attenu/ledger-s1.jsonl"), 0o600);
}

/// Regression: the configuration was read through a symlink (pointing the hook at a mode
/// from outside `.attenu/`) and a FIFO in its place blocked until the deadline.
#[test]
fn a_symlinked_or_fifo_configuration_is_refused_at_once() {
    let p = sample("cfglink");
    let attenu = p.path().join(".attenu");
    std::fs::create_dir_all(&attenu).unwrap();
    let elsewhere = p.path().join("observe.toml");
    std::fs::write(&elsewhere, "mode = \"observe\"\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, attenu.join("config.toml")).unwrap();
    let bash = || p.subagent("reviewer", "Bash").id("t1").run();
    let out = bash();
    assert_denied_saying_all(&out, &["[config-invalid]", "symlink"]);
    std::fs::remove_file(attenu.join("config.toml")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(attenu.join("config.toml"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = bash();
    assert!(
        out.denied() && out.reason().contains("[config-invalid]"),
        "a FIFO is refused, not waited on: {}",
        out.stdout
    );
}

/// `mkdir .attenu` to write config.toml, or a git checkout, leaves it 0755: the hook makes its
/// own directory private instead of keeping ledgers and keys in a readable one.
#[test]
fn a_state_directory_readable_by_others_is_made_private() {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let p = sample("loosedir");
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(p.path().join(".attenu"))
        .unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let mode = std::fs::metadata(p.path().join(".attenu"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
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
    let state = attenu.join("ledger-s1.state.json");
    let key = attenu.join("anchor.key");
    let elsewhere = TempDir::new("fifo-elsewhere");
    let target = elsewhere.path().join("f");
    std::fs::write(&target, "{}").unwrap();
    let ledger = attenu.join("ledger-s1.jsonl");
    let planted: [(&Path, &str); 8] = [
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
        match kind {
            "fifo" => assert!(std::process::Command::new("mkfifo")
                .arg(path)
                .status()
                .unwrap()
                .success()),
            "link" => std::os::unix::fs::symlink(&target, path).unwrap(),
            _ => std::fs::create_dir(path).unwrap(),
        }
        let out = reviewer_read(p.path(), "s1", "/y", &format!("u{i}"));
        let name = path.file_name().unwrap().to_str().unwrap();
        // A blocked open would end in [deadline-exceeded], which names no file.
        assert!(
            out.denied() && out.reason().contains(name),
            "{kind} at {name}: {}",
            out.reason()
        );
        if kind == "dir" {
            std::fs::remove_dir(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
        std::fs::rename(&saved, path).unwrap();
    }
    assert_allowed(&reviewer_read(p.path(), "s1", "/z", "t2"));
    // The roster cache is only ever a shortcut: a FIFO there is read as no cache, without
    // blocking.
    let cache = attenu.join("roster.cache");
    let _ = std::fs::remove_file(&cache);
    assert!(std::process::Command::new("mkfifo")
        .arg(&cache)
        .status()
        .unwrap()
        .success());
    let out = reviewer_read(p.path(), "s1", "/w", "t3");
    assert_allowed(&out);
}

/// `[gate] require = ["exec.bash"]` gates Monitor and PowerShell too: each runs a command as
/// Bash does (derivation already takes them away with a denied Bash).
#[test]
fn a_gate_on_bash_gates_every_tool_that_runs_a_command() {
    let (p, key) = gated_project("reach-gate", "Bash, Monitor, PowerShell, Read");
    for tool in ["Bash", "Monitor", "PowerShell"] {
        let input = json!({"command": "deploy --prod", "description": "d"});
        let out = p
            .subagent("ops", tool)
            .input(input.clone())
            .id(&format!("{tool}0"))
            .run();
        assert_denied_with(&out, "gate-authorization-required");
        let out = p
            .main_thread(tool)
            .input(input.clone())
            .id(&format!("{tool}m"))
            .run();
        assert_denied_with(&out, "gate-authorization-required");
        let input_s = input.to_string();
        let args = [
            "authorize",
            "--project",
            p.path().to_str().unwrap(),
            "--tool",
            tool,
            "--reviewer",
            "alice",
            "--key",
            key.to_str().unwrap(),
            "--input",
            &input_s,
        ];
        let out = cli(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_allowed(
            &p.subagent("ops", tool)
                .input(input)
                .id(&format!("{tool}1"))
                .run(),
        );
    }
    // Other scopes are not gated by it.
    assert_allowed(&p.read_by("ops", "README.md").run());
}

/// The shell forms THREAT-MODEL.md says the tripwire catches, for every tool that runs a
/// command; and ordinary commands it lets through.
#[test]
fn the_shell_tripwire_catches_the_forms_it_claims() {
    let p = ProjectBuilder::new("tripwire")
        .agent("ops", "tools: Bash, Monitor, PowerShell")
        .build();
    let refused = |out: &Out| out.denied() && out.reason().contains("[self-protection]");
    let caught = [
        "cat .attenu/anchor.key",
        "cat .ATTENU/anchor.key",
        "cat .att''enu/anchor.key",
        "cat .att\"enu\"/anchor.key",
        "cat \\.attenu/anchor.key",
        "cat .atten?/anchor.key",
        "cat .a*/anchor.key",
        "cat ./.[a]ttenu/*.key",
        "cat .{x,attenu}/anchor.key",
        "cat .*/anchor.key",
        "cat ./src/..//.attenu/anchor.key",
        "echo {} > .claude//settings.json",
        "echo {} > .claude/./settings.local.json",
        "echo {} > .CLAUDE/Settings.json",
        "cp x .c*/hooks/attenu-hook",
        "rm .claude/*",
        "sed -i s/Read/Bash/ .claude/agents/ops.md",
        "cd .claude && echo {} > settings.json",
        "cd ./.claude/; sed -i s/Read/Bash/ agents/ops.md",
        "pushd ~/.claude && rm -rf plugins",
        "cat ~/.claude/plugins/installed_plugins.json",
        "echo x > /etc/claude-code/managed-settings.json",
        "attenu-\"hook\" auth''orize --tool Bash",
        "ATTENU-HOOK KEYGEN --out k",
        "Get-Content .attenu\\anchor.key",
        "Set-Content .claude\\settings.json '{}'",
        "Get-Content .att`enu\\anchor.key",
        "Remove-Item .CLAUDE\\Agents\\ops.md",
    ];
    for tool in ["Bash", "Monitor", "PowerShell"] {
        for cmd in caught {
            let out = p
                .subagent("ops", tool)
                .input(json!({"command": cmd, "description": "d"}))
                .run();
            assert!(refused(&out), "{tool} {cmd}: {}", out.stdout);
        }
        for cmd in [
            "cargo test",
            "rm -rf *",
            "cat .claude/README.md",
            "cd src && cat settings.json",
        ] {
            let out = p
                .subagent("ops", tool)
                .input(json!({"command": cmd, "description": "d"}))
                .run();
            assert!(out.is_allow(), "{tool} {cmd}: {}", out.stdout);
        }
    }
}
