//! The operator's first ten minutes (issue 28), each as a new user met it: wiring that works
//! in every clone, install's words, the man pages, the README's Commands table, and doctor
//! saying one thing once. (The hook on a terminal, broken agent files and `log` are in
//! operator.rs; gate refusals in gate.rs.)

mod common;
use common::operator::*;
use common::*;
use serde_json::json;

fn main() {
    harness::run(tests![
        install_wiring_works_unchanged_in_a_second_clone_on_another_path,
        install_from_path_wires_the_name_and_replaces_an_old_absolute_path,
        install_warns_when_told_to_wire_a_machine_path_into_shared_settings,
        install_says_tool_calls_only_of_the_events_that_are_tool_calls,
        man_writes_a_page_per_command_that_man_can_print,
        the_readme_commands_table_lists_every_command,
        doctor_reports_an_invalid_configuration_once
    ]);
}

/// PATH without attenu-hook: only the system's directories.
const BARE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Runs `command` as Claude Code runs a hook command: `sh -c`, with `CLAUDE_PROJECT_DIR` the
/// project's root and the event on stdin, from the project directory.
fn run_as_claude_code(
    command: &str,
    project: &std::path::Path,
    path: &str,
    event: &serde_json::Value,
) -> Out {
    use std::io::Write;
    let mut child = std::process::Command::new("sh")
        .args(["-c", command])
        .env("CLAUDE_PROJECT_DIR", project)
        .env("PATH", path)
        .current_dir(project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A command that fails before it reads stdin (a missing hook) may close it first.
    let wrote = child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes());
    if let Err(e) = wrote {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Regression (issue 28): install wrote this machine's absolute path into the shared
/// settings.json, so a teammate's clone (another path) had every call blocked. Now it wires
/// `"$CLAUDE_PROJECT_DIR"/.claude/hooks/attenu-hook.sh` (the snippet's command), a committed
/// launcher, and without attenu-hook on PATH makes `.claude/hooks/attenu-hook` a git-ignored
/// link. A git clone at another path (issue 41): before its developer has the binary, every
/// call is blocked (exit 2) with what to install; after `install` once (which leaves the
/// settings alone), the hook runs.
fn install_wiring_works_unchanged_in_a_second_clone_on_another_path() {
    need_tool("git", "--version");
    let scratch = TempDir::new("clones");
    let a = scratch.path().join("a");
    std::fs::create_dir_all(a.join(".claude/agents")).unwrap();
    std::fs::write(
        a.join(".claude/agents/worker.md"),
        "---\nname: worker\ndescription: w\ntools: Read\n---\n",
    )
    .unwrap();
    let path = std::path::Path::new(BARE_PATH);
    let out = cli_with(&["install", a.to_str().unwrap()], &[("PATH", path)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(
        &out.stdout,
        &[
            "wrote .claude/hooks/attenu-hook.sh",
            "linked .claude/hooks/attenu-hook",
            "each runs `attenu-hook install` once",
        ],
    );
    let text = std::fs::read_to_string(a.join(".claude/settings.json")).unwrap();
    assert!(
        !text.contains(a.to_str().unwrap()) && !text.contains(BIN),
        "settings.json names a path of this machine:\n{text}"
    );
    let snippet: serde_json::Value =
        serde_json::from_str(include_str!("../settings.snippet.json")).unwrap();
    let wired = settings(&a);
    for e in attenu_hook::ops::EVENTS {
        assert_eq!(
            wired["hooks"][e], snippet["hooks"][e],
            "{e}: install and settings.snippet.json differ"
        );
    }
    assert!(
        std::fs::symlink_metadata(a.join(".claude/hooks/attenu-hook"))
            .unwrap()
            .file_type()
            .is_symlink()
    );

    git(&a, &["init", "-q"]);
    git(&a, &["add", "-A"]);
    git(&a, &["commit", "-qm", "wire attenu-hook"]);
    let tracked = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(&a)
        .output()
        .unwrap();
    let tracked = String::from_utf8_lossy(&tracked.stdout).into_owned();
    assert!(
        tracked.contains(".claude/settings.json")
            && !tracked.lines().any(|l| l == ".claude/hooks/attenu-hook"),
        "the link must be git-ignored: {tracked}"
    );
    let staged = std::process::Command::new("git")
        .args(["ls-files", "-s", ".claude/hooks/attenu-hook.sh"])
        .current_dir(&a)
        .output()
        .unwrap();
    let staged = String::from_utf8_lossy(&staged.stdout).into_owned();
    assert!(
        staged.starts_with("100755 "),
        "the launcher must be committed, executable: {staged:?}"
    );
    git(scratch.path(), &["clone", "-q", "a", "b"]);
    std::fs::rename(&a, scratch.path().join("gone")).unwrap();
    let b = scratch.path().join("b");
    let command = wired["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();

    // Before its developer has the binary, the clone's hook is missing: blocked (exit 2 blocks
    // whatever onFailure says), and the message says what to install.
    let call = Call::pre(&b, None, "Read")
        .input(json!({"file_path": "/x"}))
        .value();
    let missing = run_as_claude_code(&command, &b, BARE_PATH, &call);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert_contains(
        &missing.stderr,
        &["attenu-hook is not installed on this machine: npm install -g attenu-hook (or "],
    );
    assert!(!b.join(".attenu").exists(), "nothing ran");
    let before = std::fs::read(b.join(".claude/settings.json")).unwrap();
    let out = cli_with(&["install", b.to_str().unwrap()], &[("PATH", path)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(
        &out.stdout,
        &["nothing changed in it", "linked .claude/hooks/attenu-hook"],
    );
    assert_eq!(
        std::fs::read(b.join(".claude/settings.json")).unwrap(),
        before,
        "settings.json unchanged"
    );
    let out = run_as_claude_code(&command, &b, BARE_PATH, &call);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "{}", "{}", out.stderr);
    let subagent = Call::pre(&b, Some("worker"), "Bash")
        .input(json!({"command": "ls"}))
        .id("t2")
        .value();
    assert_denied_with(
        &run_as_claude_code(&command, &b, BARE_PATH, &subagent),
        "unresolved",
    );
    assert!(
        b.join(".attenu").is_dir(),
        "the hook recorded into the clone's own .attenu/"
    );
}

/// With attenu-hook on PATH (the npm package), install wires the launcher, which runs it from
/// PATH without a link, and an absolute path an older install wrote into settings.json is
/// replaced by it; so is the bare `attenu-hook` an install before the launcher wrote.
fn install_from_path_wires_the_name_and_replaces_an_old_absolute_path() {
    let scratch = TempDir::new("onpath");
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("attenu-hook")).unwrap();
    let path = format!("{}:{BARE_PATH}", bin.display());
    let p = TempDir::new("onpath-project");
    write_settings(
        p.path(),
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"hooks": [handler(BIN)]}]}}),
    );
    let out = cli_with(
        &["install", p.path().to_str().unwrap()],
        &[("PATH", std::path::Path::new(&path))],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(
        &out.stdout,
        &[
            "PreToolUse: set the attenu-hook handler's command to `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/attenu-hook.sh`",
            "a path only this machine has",
            "runs `attenu-hook` from PATH, in every clone",
        ],
    );
    let text = std::fs::read_to_string(p.path().join(".claude/settings.json")).unwrap();
    assert!(!text.contains(BIN), "{text}");
    assert!(
        !p.path().join(".claude/hooks/attenu-hook").exists(),
        "no link is needed with attenu-hook on PATH"
    );
    let call = Call::pre(p.path(), None, "Read")
        .input(json!({"file_path": "/x"}))
        .value();
    let launcher = attenu_hook::ops::LAUNCHER_COMMAND;
    let out = run_as_claude_code(launcher, p.path(), &path, &call);
    assert_eq!((out.code, out.stdout.trim()), (0, "{}"), "{}", out.stderr);
    // The same launcher on a PATH without it: blocked, with what to install.
    let out = run_as_claude_code(launcher, p.path(), BARE_PATH, &call);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, &["npm install -g attenu-hook"]);

    // The bare name an install before the launcher wired becomes the launcher.
    let q = TempDir::new("onpath-bare");
    write_settings(
        q.path(),
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"hooks": [handler("attenu-hook")]}]}}),
    );
    let out = cli_with(
        &["install", q.path().to_str().unwrap()],
        &[("PATH", std::path::Path::new(&path))],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(
        &out.stdout,
        &["(was `attenu-hook`): the launcher tells a teammate"],
    );
    assert_eq!(
        settings(q.path())["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        launcher
    );
}

/// `--command /abs/path` into the shared settings.json is what the operator asked for, but it
/// works on this machine only: install says so, and points to `--local`.
fn install_warns_when_told_to_wire_a_machine_path_into_shared_settings() {
    let p = TempDir::new("machine-path");
    let dir = p.path().to_str().unwrap();
    let out = cli(&["install", dir, "--command", BIN]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stderr, &["exists on this machine only", "--local"]);
    let p = TempDir::new("machine-path-local");
    let out = cli(&[
        "install",
        p.path().to_str().unwrap(),
        "--local",
        "--command",
        BIN,
    ]);
    assert!(
        !out.stderr.contains("exists on this machine only"),
        "{}",
        out.stderr
    );
    // A wrapper wired earlier with --command is the operator's choice: a plain install keeps
    // it, and says again that it works on this machine only.
    let w = TempDir::new("machine-path-wrapper");
    let guard = w.path().join("guard");
    std::os::unix::fs::symlink(BIN, &guard).unwrap();
    let dir = w.path().to_str().unwrap();
    assert_eq!(
        cli(&["install", dir, "--command", guard.to_str().unwrap()]).code,
        0
    );
    let before = std::fs::read(w.path().join(".claude/settings.json")).unwrap();
    let out = cli_with(
        &["install", dir],
        &[("PATH", std::path::Path::new(BARE_PATH))],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(
        &out.stderr,
        &[
            "which --command wired earlier",
            "exists on this machine only",
        ],
    );
    assert_eq!(
        std::fs::read(w.path().join(".claude/settings.json")).unwrap(),
        before
    );
}

/// Regression (issue 28): install said "every tool" for SessionStart, SubagentStart and the
/// other events that are not tool calls.
fn install_says_tool_calls_only_of_the_events_that_are_tool_calls() {
    let p = TempDir::new("install-words");
    let out = cli(&[
        "install",
        p.path().to_str().unwrap(),
        "--command",
        "attenu-hook",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in out.stdout.lines().filter(|l| l.contains(": added")) {
        let tool_event = ["PreToolUse:", "PostToolUse:", "PostToolUseFailure:"]
            .iter()
            .any(|e| line.trim_start().starts_with(e));
        assert_eq!(line.contains("every tool call"), tool_event, "{line}");
    }
    assert_contains(
        &out.stdout,
        &[
            "SessionStart: added the attenu-hook handler (no matcher: every session start)",
            "SubagentStart: added the attenu-hook handler (no matcher: every agent type)",
        ],
    );
}

/// Regression (issue 28): the man page's SUBCOMMANDS named attenu-hook-log(1) and others that
/// nothing wrote, so `man` could not print them. `man --dir DIR` writes them, and the single
/// page says how.
fn man_writes_a_page_per_command_that_man_can_print() {
    let page = cli(&["man"]);
    assert_contains(&page.stdout, &["COMMAND PAGES", "man \\-\\-dir"]);
    let d = TempDir::new("man");
    let man1 = d.path().join("man1");
    let out = cli(&["man", "--dir", man1.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cmd = <attenu_hook::cli::Cli as clap::CommandFactory>::command();
    for sub in cmd
        .get_subcommands()
        .map(|s| s.get_name())
        .filter(|n| *n != "help")
    {
        assert!(
            man1.join(format!("attenu-hook-{sub}.1")).is_file(),
            "no page for {sub}: {:?}",
            std::fs::read_dir(&man1)
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect::<Vec<_>>()
        );
    }
    need_tool("man", "--version");
    let shown = std::process::Command::new("man")
        .arg("attenu-hook-log")
        .env("MANPATH", d.path())
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success(),
        "man attenu-hook-log: {}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert_contains(&text, &["attenu-hook-log", "--summary", "--sessions"]);
}

/// Regression (issue 28): the README's Commands table left out commands the binary has.
fn the_readme_commands_table_lists_every_command() {
    let readme = include_str!("../README.md");
    let table = &readme[readme
        .find("| `attenu-hook` | hook mode")
        .expect("the Commands table")..];
    let table: Vec<&str> = table.lines().take_while(|l| l.starts_with('|')).collect();
    let cmd = <attenu_hook::cli::Cli as clap::CommandFactory>::command();
    for sub in cmd
        .get_subcommands()
        .map(|s| s.get_name())
        .filter(|n| *n != "help")
    {
        let listed = table
            .iter()
            .any(|row| row.contains(&format!("`attenu-hook {sub}")));
        assert!(
            listed,
            "README's Commands table has no row for `attenu-hook {sub}`"
        );
    }
    for flag in ["--sessions", "--summary", "--list"] {
        assert!(
            table.iter().any(|r| r.contains(flag)),
            "README's Commands table does not mention {flag}"
        );
    }
}

/// Regression (issue 28): an invalid .attenu/config.toml failed both `config` and `derive`
/// with the same message. It is reported once; the agent files are still checked.
fn doctor_reports_an_invalid_configuration_once() {
    let p = ProjectBuilder::new("doctor-config-once")
        .agent("reviewer", "description: reviews\ntools: Read")
        .agent_file("broken.md", "---\nname: broken\n")
        .config("mode = \"enforse\"\n")
        .build();
    let out = doctor(p.path());
    assert_eq!(out.code, 1, "{}", out.stdout);
    let mentions = out.stdout.lines().filter(|l| l.contains("enforse")).count();
    assert_eq!(mentions, 1, "the config error once:\n{}", out.stdout);
    let derive = out.stdout.lines().find(|l| l.contains(" derive ")).unwrap();
    assert_contains(
        derive,
        &[
            "broken.md",
            "without the invalid configuration's [agents] and [derive]",
        ],
    );
}
