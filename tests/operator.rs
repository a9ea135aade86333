//! Operator experience: `doctor`'s checks, `log`, completions and the man page, and how the
//! commands find the project (`doctor` and `log` text pinned).

mod common;
use common::operator::*;
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

fn main() {
    harness::run(tests![
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
        install_and_doctor_find_the_project_root_and_refuse_a_missing_directory,
        doctor_fails_when_attenu_is_not_a_directory_and_output_errors_exit_2,
        declarations_are_looked_up_at_the_nearest_claude_not_a_parents_attenu,
        hook_mode_on_a_terminal_says_so_at_once_and_blocks,
        a_broken_agent_file_is_named_with_its_error_in_the_deny,
        log_fits_the_terminal_lists_sessions_and_summarises,
        log_without_state_says_what_is_missing
    ]);
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
    normalised_log_at(args, "")
}

/// [`normalised_log`] with `COLUMNS` set to `columns` ("": unset, as in a pipe).
fn normalised_log_at(args: &[&str], columns: &str) -> String {
    let out = cli_with(args, &[("COLUMNS", std::path::Path::new(columns))]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    mask(&out.stdout, &[])
}

/// The project `log`'s snapshots are of: one session of a reviewer, Explore and the main thread.
fn log_project(tag: &str) -> TempDir {
    let p = sample(tag);
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
    p
}

fn log_output_matches_the_snapshot() {
    let p = log_project("log");
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
    // Regression (issue 41): a subcommand's flags never completed. Through a real bash: the
    // script sourced, then `attenu-hook log --s<TAB>`.
    let script = TempDir::new("completions");
    let file = script.path().join("attenu-hook.bash");
    std::fs::write(&file, &bash.stdout).unwrap();
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            r#"source "$1"; COMP_WORDS=(attenu-hook log --s); COMP_CWORD=2; _attenu__hook attenu-hook --s log; echo "${COMPREPLY[*]}""#,
            "bash",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let offered = String::from_utf8_lossy(&out.stdout);
    assert!(
        ["--session", "--sessions", "--summary"]
            .iter()
            .all(|f| offered.split_whitespace().any(|o| o == *f)),
        "`attenu-hook log --s<TAB>` offered {offered:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let man = cli(&["man"]);
    assert_eq!(man.code, 0);
    assert!(
        man.stdout.contains(".TH attenu-hook") && man.stdout.contains("derive"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
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

/// Regression (issue 28): `attenu-hook` run by hand, stdin a terminal, waited out its 8 s
/// deadline and then denied with `deadline-exceeded`. It now says at once what hook mode reads
/// and what to run instead, and still answers with a block Claude Code honours (exit 2).
/// `script` (util-linux) gives the hook a terminal on stdin.
fn hook_mode_on_a_terminal_says_so_at_once_and_blocks() {
    need_tool("script", "--version");
    let p = sample("tty");
    let transcript = p.path().join("typescript");
    // `-e`: script exits with the hook's status. The terminal never sends anything, so a hook
    // that read it would wait out its deadline and say `deadline-exceeded` instead.
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", BIN])
        .arg(&transcript)
        .current_dir(p.path())
        .env("CLAUDE_PROJECT_DIR", p.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let seen = std::fs::read_to_string(&transcript).unwrap_or_default()
        + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{seen}");
    assert_contains(
        &seen,
        &[
            "stdin is a terminal",
            "one Claude Code event",
            "attenu-hook doctor",
            "--derive",
            "attenu-hook log",
            "--help",
            "[payload-invalid]",
        ],
    );
    assert!(!seen.contains("deadline-exceeded"), "{seen}");
}

/// Regression (issue 28): an agent file too broken to yield a name declared nothing, and its
/// agent's calls were denied as `undeclared-agent`, naming neither the file nor the error.
fn a_broken_agent_file_is_named_with_its_error_in_the_deny() {
    let p = ProjectBuilder::new("broken-agent")
        .agent("reviewer", "description: reviews\ntools: Read")
        .agent_file("fixer.md", "---\nname: fixer\ndescription: fixes\n")
        .agent_file("tabbed.md", "---\n\tname: tabbed\ndescription: x\n---\n")
        .build();
    let out = p.read_by("fixer", "/x").run();
    assert_denied_saying_all(
        &out,
        &[
            "[agent-declaration-invalid]",
            ".claude/agents/fixer.md",
            "not closed by `---`",
        ],
    );
    let out = p.read_by("tabbed", "/x").id("t2").run();
    assert_denied_saying_all(
        &out,
        &[
            "[agent-declaration-invalid]",
            ".claude/agents/tabbed.md",
            "not valid YAML",
        ],
    );
    // SubagentStart tells the user the same, when the agent starts.
    let mut start = event("s1", p.path(), "SubagentStart");
    start["agent_type"] = json!("fixer");
    start["agent_id"] = json!("a-fixer");
    let out = hook(p.path(), &start);
    assert_contains(
        &out.stdout,
        &[".claude/agents/fixer.md is broken", "not closed by `---`"],
    );
    // A type no file is named for: still undeclared, and told which files are broken.
    let out = p.read_by("Explore", "/x").id("t3").run();
    assert_denied_saying_all(
        &out,
        &[
            "[undeclared-agent]",
            ".claude/agents/fixer.md (the frontmatter block is not closed",
            ".claude/agents/tabbed.md (",
        ],
    );
    // A project whose agent files are sound says nothing of broken files.
    let q = ProjectBuilder::new("sound-agents")
        .agent("reviewer", "description: reviews\ntools: Read")
        .build();
    let out = q.read_by("Explore", "/x").run();
    assert_denied_with(&out, "undeclared-agent");
    assert!(!out.stdout.contains("broken"), "{}", out.stdout);
}

/// Regression (issue 28): `log` wrapped every row past 100 columns, with a 36-column session
/// field even for `s1`, and had no overview. With `COLUMNS` it fits the width, the reason
/// wrapping under its column; `--sessions` lists the sessions, `--summary` tallies each agent.
fn log_fits_the_terminal_lists_sessions_and_summarises() {
    let p = log_project("log-width");
    reviewer_read(p.path(), "s1", "/y", "t9");
    let dir = p.path().to_str().unwrap();
    let narrow = normalised_log_at(
        &[
            "log",
            "--project",
            dir,
            "--session",
            "0b5f1c2e-log-snapshot",
        ],
        "100",
    );
    assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
    assert_snapshot("log-100-columns.txt", &narrow);
    let all = normalised_log(&["log", "--project", dir]);
    assert!(
        all.lines().any(|l| l.contains("  s1  ")),
        "s1 is shown whole, in a narrow column: {all}"
    );
    assert_snapshot(
        "log-summary.txt",
        &normalised_log(&["log", "--project", dir, "--summary"]),
    );
    assert_snapshot(
        "log-sessions.txt",
        &normalised_log(&["log", "--project", dir, "--sessions"]),
    );
    let json = normalised_log(&["log", "--project", dir, "--summary", "--json"]);
    let reviewer: Value = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["key"] == "reviewer")
        .unwrap();
    assert_eq!(
        (reviewer["calls"].as_u64(), reviewer["deny"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(reviewer["deny_reasons"]["out-of-authority"], 1);
    let sessions = normalised_log(&["log", "--project", dir, "--sessions", "--json"]);
    assert_eq!(sessions.lines().count(), 2, "{sessions}");
}

/// Regression (issue 28): `log` in a project the hook has not run in printed a raw OS error.
fn log_without_state_says_what_is_missing() {
    let p = sample("log-no-state");
    let out = cli(&["log", "--project", p.path().to_str().unwrap()]);
    assert_ne!(out.code, 0);
    assert_contains(
        &out.stderr,
        &[
            "has no .attenu/ directory",
            "recorded nothing here yet",
            "attenu-hook doctor",
        ],
    );
    assert!(!out.stderr.contains("os error"), "{}", out.stderr);
}
