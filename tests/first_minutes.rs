//! The operator's first ten minutes (issue 28), each as a new user met it: wiring that works
//! in every clone, install's words, the man pages, the README's Commands table, and doctor
//! saying one thing once. (The hook on a terminal and `log` are in operator.rs; broken agent
//! files are the case `broken-agent-file-named`; gate refusals in gate.rs.)

mod common;
use common::operator::*;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn main() {
    harness::run(tests![
        install_without_the_binary_on_path_wires_a_launcher_and_a_link,
        install_wires_exactly_the_snippet,
        install_text_is_pinned,
        the_launcher_is_committed_and_the_link_ignored,
        a_clone_without_the_binary_blocks_with_what_to_install,
        a_clone_runs_the_hook_after_install_once,
        install_from_path_wires_the_launcher_for_an_old_absolute_path,
        the_launcher_runs_the_hook_from_path_or_says_what_to_install,
        install_from_path_replaces_the_bare_name_with_the_launcher,
        install_warns_when_told_to_wire_a_machine_path_into_shared_settings,
        install_keeps_a_wrapper_wired_earlier_and_warns_again,
        install_says_tool_calls_only_of_the_events_that_are_tool_calls,
        man_writes_a_page_per_command,
        man_can_print_a_command_page,
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

/// `install DIR` with `path` as PATH, which must succeed.
#[track_caller]
fn install_on(dir: &Path, path: &str) -> Out {
    let out = cli_with(
        &["install", dir.to_str().unwrap()],
        &[("PATH", Path::new(path))],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// A project `a` under `scratch` with one agent, installed without attenu-hook on PATH, and
/// what install printed.
fn installed_a(scratch: &TempDir) -> (PathBuf, Out) {
    let a = scratch.path().join("a");
    std::fs::create_dir_all(a.join(".claude/agents")).unwrap();
    let worker = "---\nname: worker\ndescription: w\ntools: Read\n---\n";
    std::fs::write(a.join(".claude/agents/worker.md"), worker).unwrap();
    let out = install_on(&a, BARE_PATH);
    (a, out)
}

/// `git OUTPUT-ONLY ARGS` in `dir`: what it printed.
fn git_output(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`installed_a`] committed to git, cloned to `b` at another path, `a` moved away: `b`, and
/// the command settings.json wires for PreToolUse.
fn cloned_b(scratch: &TempDir) -> (PathBuf, String) {
    need_tool("git", "--version");
    let (a, _) = installed_a(scratch);
    git(&a, &["init", "-q"]);
    git(&a, &["add", "-A"]);
    git(&a, &["commit", "-qm", "wire attenu-hook"]);
    git(scratch.path(), &["clone", "-q", "a", "b"]);
    std::fs::rename(&a, scratch.path().join("gone")).unwrap();
    let b = scratch.path().join("b");
    let command = settings(&b)["hooks"]["PreToolUse"][0]["hooks"][0]["command"].clone();
    (b, command.as_str().unwrap().to_string())
}

/// The main thread's Read of `/x` in the project at `dir`, as a payload.
fn main_read(dir: &Path) -> Value {
    Call::pre(dir, None, "Read")
        .input(json!({"file_path": "/x"}))
        .value()
}

// Regression (issue 28): install wrote this machine's absolute path into the shared
// settings.json, so a teammate's clone (another path) had every call blocked. Now it wires
// `"$CLAUDE_PROJECT_DIR"/.claude/hooks/attenu-hook.sh` (the snippet's command), a committed
// launcher, and without attenu-hook on PATH makes `.claude/hooks/attenu-hook` a git-ignored
// link. A git clone at another path (issue 41): before its developer has the binary, every
// call is blocked (exit 2) with what to install; after `install` once (which leaves the
// settings alone), the hook runs.

fn install_without_the_binary_on_path_wires_a_launcher_and_a_link() {
    let scratch = TempDir::new("clones");
    let (a, out) = installed_a(&scratch);
    let says = [
        "wrote .claude/hooks/attenu-hook.sh",
        "linked .claude/hooks/attenu-hook",
        "each runs `attenu-hook install` once",
    ];
    assert_contains(&out.stdout, &says);
    let text = std::fs::read_to_string(a.join(".claude/settings.json")).unwrap();
    let machine = text.contains(a.to_str().unwrap()) || text.contains(BIN);
    assert!(
        !machine,
        "settings.json names a path of this machine:\n{text}"
    );
    let link = std::fs::symlink_metadata(a.join(".claude/hooks/attenu-hook")).unwrap();
    assert!(link.file_type().is_symlink());
}

/// What `install` prints, pinned: a new project wired without attenu-hook on PATH, beside
/// Claude Code 2.1.332 (the launcher, the link, what to run next, Interrupt not wired), then a
/// second run, which changes nothing.
fn install_text_is_pinned() {
    let p = sample("install-text");
    let claude = fake_claude("2.1.332");
    let path = format!("{}:{BARE_PATH}", claude.path().display());
    let mut text = transcript("install PROJECT", &install_on(p.path(), &path));
    text += &transcript("install PROJECT (again)", &install_on(p.path(), &path));
    let masks = [(p.dir(), "<project>"), (BIN, "<bin>")];
    assert_snapshot("install.txt", &mask(&text, &masks));
}

fn install_wires_exactly_the_snippet() {
    let scratch = TempDir::new("clones-snippet");
    let (a, _) = installed_a(&scratch);
    let snippet: Value = serde_json::from_str(include_str!("../settings.snippet.json")).unwrap();
    let wired = settings(&a);
    for e in attenu_hook::ops::EVENTS {
        let same = wired["hooks"][e] == snippet["hooks"][e];
        assert!(same, "{e}: install and settings.snippet.json differ");
    }
}

fn the_launcher_is_committed_and_the_link_ignored() {
    let scratch = TempDir::new("clones-git");
    let (b, _) = cloned_b(&scratch);
    let tracked = git_output(&b, &["ls-files"]);
    let ignored = !tracked.lines().any(|l| l == ".claude/hooks/attenu-hook");
    assert!(
        tracked.contains(".claude/settings.json") && ignored,
        "the link must be git-ignored: {tracked}"
    );
    let staged = git_output(&b, &["ls-files", "-s", ".claude/hooks/attenu-hook.sh"]);
    assert!(
        staged.starts_with("100755 "),
        "the launcher must be committed, executable: {staged:?}"
    );
}

/// Before its developer has the binary, the clone's hook is missing: blocked (exit 2 blocks
/// whatever onFailure says), and the message says what to install.
fn a_clone_without_the_binary_blocks_with_what_to_install() {
    let scratch = TempDir::new("clones-missing");
    let (b, command) = cloned_b(&scratch);
    let missing = run_as_claude_code(&command, &b, BARE_PATH, &main_read(&b));
    assert_eq!(missing.code, 2, "{missing:?}");
    let says = "attenu-hook is not installed on this machine: npm install -g attenu-hook (or ";
    assert_contains(&missing.stderr, &[says]);
    assert!(!b.join(".attenu").exists(), "nothing ran");
}

fn a_clone_runs_the_hook_after_install_once() {
    let scratch = TempDir::new("clones-installed");
    let (b, command) = cloned_b(&scratch);
    let before = std::fs::read(b.join(".claude/settings.json")).unwrap();
    let out = install_on(&b, BARE_PATH);
    assert_contains(
        &out.stdout,
        &["nothing changed in it", "linked .claude/hooks/attenu-hook"],
    );
    let after = std::fs::read(b.join(".claude/settings.json")).unwrap();
    assert_eq!(after, before, "settings.json unchanged");
    let out = run_as_claude_code(&command, &b, BARE_PATH, &main_read(&b));
    assert_eq!((out.code, out.stdout.trim()), (0, "{}"), "{}", out.stderr);
    let bash = Call::pre(&b, Some("worker"), "Bash")
        .input(json!({"command": "ls"}))
        .id("t2");
    let out = run_as_claude_code(&command, &b, BARE_PATH, &bash.value());
    assert_denied_with(&out, "unresolved");
    assert!(
        b.join(".attenu").is_dir(),
        "the hook recorded into the clone's own .attenu/"
    );
}

// With attenu-hook on PATH (the npm package), install wires the launcher, which runs it from
// PATH without a link, and an absolute path an older install wrote into settings.json is
// replaced by it; so is the bare `attenu-hook` an install before the launcher wrote.

/// A PATH with a directory holding attenu-hook (a link to the binary) first, kept alive by
/// the returned directory.
fn path_with_the_binary() -> (TempDir, String) {
    let scratch = TempDir::new("onpath");
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("attenu-hook")).unwrap();
    let path = format!("{}:{BARE_PATH}", bin.display());
    (scratch, path)
}

/// A project whose settings.json wires `command` for PreToolUse.
fn wired_with(tag: &str, command: &str) -> TempDir {
    let p = TempDir::new(tag);
    let s = json!({"hooks": {"PreToolUse": [{"hooks": [handler(command)]}]}});
    write_settings(p.path(), "settings.json", &s);
    p
}

fn install_from_path_wires_the_launcher_for_an_old_absolute_path() {
    let (_bin, path) = path_with_the_binary();
    let p = wired_with("onpath-project", BIN);
    let out = install_on(p.path(), &path);
    assert_contains(&out.stdout, &[
        "PreToolUse: set the attenu-hook handler's command to `\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/attenu-hook.sh`",
        "a path only this machine has",
        "runs `attenu-hook` from PATH, in every clone",
    ]);
    let text = std::fs::read_to_string(p.path().join(".claude/settings.json")).unwrap();
    assert!(!text.contains(BIN), "{text}");
    let link = p.path().join(".claude/hooks/attenu-hook");
    assert!(!link.exists(), "no link is needed with attenu-hook on PATH");
}

/// The launcher runs attenu-hook from PATH; on a PATH without it: blocked, with what to
/// install.
fn the_launcher_runs_the_hook_from_path_or_says_what_to_install() {
    let (_bin, path) = path_with_the_binary();
    let p = wired_with("onpath-launcher", BIN);
    install_on(p.path(), &path);
    let launcher = attenu_hook::ops::LAUNCHER_COMMAND;
    let out = run_as_claude_code(launcher, p.path(), &path, &main_read(p.path()));
    assert_eq!((out.code, out.stdout.trim()), (0, "{}"), "{}", out.stderr);
    let out = run_as_claude_code(launcher, p.path(), BARE_PATH, &main_read(p.path()));
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, &["npm install -g attenu-hook"]);
}

/// The bare name an install before the launcher wired becomes the launcher.
fn install_from_path_replaces_the_bare_name_with_the_launcher() {
    let (_bin, path) = path_with_the_binary();
    let q = wired_with("onpath-bare", "attenu-hook");
    let out = install_on(q.path(), &path);
    assert_contains(
        &out.stdout,
        &["(was `attenu-hook`): the launcher tells a teammate"],
    );
    let command = &settings(q.path())["hooks"]["PreToolUse"][0]["hooks"][0]["command"];
    assert_eq!(command, attenu_hook::ops::LAUNCHER_COMMAND);
}

/// `--command /abs/path` into the shared settings.json is what the operator asked for, but it
/// works on this machine only: install says so, and points to `--local`.
fn install_warns_when_told_to_wire_a_machine_path_into_shared_settings() {
    let p = TempDir::new("machine-path");
    let out = cli(&["install", p.dir(), "--command", BIN]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stderr, &["exists on this machine only", "--local"]);
    let p = TempDir::new("machine-path-local");
    let out = cli(&["install", p.dir(), "--local", "--command", BIN]);
    assert!(
        !out.stderr.contains("exists on this machine only"),
        "{}",
        out.stderr
    );
}

/// A wrapper wired earlier with --command is the operator's choice: a plain install keeps it,
/// and says again that it works on this machine only.
fn install_keeps_a_wrapper_wired_earlier_and_warns_again() {
    let w = TempDir::new("machine-path-wrapper");
    let guard = w.path().join("guard");
    std::os::unix::fs::symlink(BIN, &guard).unwrap();
    assert_eq!(
        cli(&["install", w.dir(), "--command", guard.to_str().unwrap()]).code,
        0
    );
    let before = std::fs::read(w.path().join(".claude/settings.json")).unwrap();
    let out = install_on(w.path(), BARE_PATH);
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

/// The names of the binary's subcommands, `help` left out.
fn subcommands() -> Vec<String> {
    let cmd = <attenu_hook::cli::Cli as clap::CommandFactory>::command();
    let names = cmd.get_subcommands().map(|s| s.get_name().to_string());
    names.filter(|n| n != "help").collect()
}

/// `man --dir DIR/man1`, which must succeed: DIR.
fn man_pages() -> TempDir {
    let d = TempDir::new("man");
    let out = cli(&["man", "--dir", d.path().join("man1").to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    d
}

/// Regression (issue 28): the man page's SUBCOMMANDS named attenu-hook-log(1) and others that
/// nothing wrote, so `man` could not print them. `man --dir DIR` writes them, and the single
/// page says how.
fn man_writes_a_page_per_command() {
    let page = cli(&["man"]);
    assert_contains(&page.stdout, &["COMMAND PAGES", "man \\-\\-dir"]);
    let pages = man_pages();
    let man1 = pages.path().join("man1");
    let written: Vec<_> = std::fs::read_dir(&man1)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    for sub in subcommands() {
        let page = man1.join(format!("attenu-hook-{sub}.1"));
        assert!(page.is_file(), "no page for {sub}: {written:?}");
    }
}

/// `man` prints a page written by `man --dir`.
fn man_can_print_a_command_page() {
    need_tool("man", "--version");
    let d = man_pages();
    let shown = std::process::Command::new("man")
        .arg("attenu-hook-log")
        .env("MANPATH", d.path())
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(shown.status.success(), "man attenu-hook-log: {stderr}");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert_contains(&text, &["attenu-hook-log", "--summary", "--sessions"]);
}

/// Regression (issue 28): the README's Commands table left out commands the binary has.
fn the_readme_commands_table_lists_every_command() {
    let readme = include_str!("../README.md");
    let at = readme
        .find("| `attenu-hook` | hook mode")
        .expect("the Commands table");
    let table: Vec<&str> = readme[at..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .collect();
    for sub in subcommands() {
        let listed = table
            .iter()
            .any(|row| row.contains(&format!("`attenu-hook {sub}")));
        assert!(
            listed,
            "README's Commands table has no row for `attenu-hook {sub}`"
        );
    }
    for flag in ["--sessions", "--summary", "--list"] {
        let named = table.iter().any(|r| r.contains(flag));
        assert!(named, "README's Commands table does not mention {flag}");
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
    assert_contains(
        line_with(&out.stdout, " derive "),
        &[
            "broken.md",
            "without the invalid configuration's [agents] and [derive]",
        ],
    );
}
