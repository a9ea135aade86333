//! Operator experience: `doctor`'s checks, `log`, completions and the man page, and how the
//! commands find the project (`doctor` and `log` text pinned).

mod common;
use common::operator::*;
use common::project_kit::*;
use common::*;
use serde_json::{json, Value};

fn main() {
    harness::run(tests![
        doctor_passes_on_an_installed_project,
        doctor_text_is_pinned,
        doctor_passes_reviewer_keys_other_than_the_anchor_key,
        doctor_fails_when_a_reviewer_key_is_the_projects_anchor_key,
        doctor_only_warns_when_session_start_is_not_wired,
        doctor_fails_with_reasons_on_an_unwired_project,
        doctor_fails_on_unsafe_permissions_and_a_broken_ledger,
        log_output_matches_the_snapshot,
        log_warns_and_fails_on_a_ledger_that_does_not_verify,
        log_output_that_cannot_be_written_exits_2,
        log_refuses_a_ledger_replaced_between_its_passes,
        state_commands_find_a_project_without_claude_below_a_home_with_it,
        completions_and_man_page_come_from_the_cli_definition,
        a_subcommands_flags_complete,
        install_and_doctor_find_the_project_root_from_a_subdirectory,
        install_and_doctor_refuse_a_missing_directory,
        doctor_fails_when_attenu_is_not_a_directory,
        output_that_cannot_be_written_exits_2,
        declarations_are_looked_up_at_the_nearest_claude_not_a_parents_attenu,
        hook_mode_on_a_terminal_says_so_at_once_and_blocks,
        log_fits_the_terminal,
        log_lists_sessions_and_summarises,
        log_without_state_says_what_is_missing
    ]);
}

fn doctor_passes_on_an_installed_project() {
    let out = doctor(installed_sample("doctor-ok").path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&out.stdout, &["ledger:ledger-s1.jsonl", "verifies"]);
}

/// What `doctor` prints, pinned: every check of an installed project with a ledger (exit 0), and
/// an unwired one's failures with what to do (exit 1).
fn doctor_text_is_pinned() {
    let (wired, unwired) = (
        installed_sample("doctor-text-ok"),
        sample("doctor-text-unwired"),
    );
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

/// `[gate] reviewers` with these `name = "key"` pairs.
fn reviewers(pairs: &str) -> String {
    format!("[gate]\nrequire = [\"exec.bash\"]\nreviewers = {{ {pairs} }}\n")
}

/// The project's anchor key, in upper case.
fn anchor_key_upper(p: &TempDir) -> String {
    let text = std::fs::read_to_string(p.path().join(".attenu/anchor.pub")).unwrap();
    let anchor: Value = serde_json::from_str(&text).unwrap();
    anchor["public_key"].as_str().unwrap().to_uppercase()
}

/// A reviewer key of its own passes `doctor`, which says none is the anchor key.
fn doctor_passes_reviewer_keys_other_than_the_anchor_key() {
    let p = installed_sample("doctor-reviewer-other");
    let other = "0".repeat(63) + "1";
    write_config(p.path(), reviewers(&format!("alice = \"{other}\"")));
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&out.stdout, &["none of them the project's anchor key"]);
}

/// The project's own anchor key (any case) as a reviewer's fails `doctor`, naming that
/// reviewer alone and `keygen`.
fn doctor_fails_when_a_reviewer_key_is_the_projects_anchor_key() {
    let p = installed_sample("doctor-anchor-reviewer");
    let (other, public) = ("0".repeat(63) + "1", anchor_key_upper(&p));
    write_config(
        p.path(),
        reviewers(&format!("alice = \"{other}\", bob = \"{public}\"")),
    );
    let out = doctor(p.path());
    assert_ne!(out.code, 0, "{}", out.stdout);
    let line = line_with(&out.stdout, "gate:reviewers");
    assert!(
        line.contains("bob") && !line.contains("alice") && line.contains("keygen"),
        "{line}"
    );
}

/// Installs from before SessionStart was wired keep enforcing everything: SessionStart only
/// creates the ledger ahead of the first tool call.
fn doctor_only_warns_when_session_start_is_not_wired() {
    let p = sample("doctor-nostart");
    install_bin(p.dir());
    let mut s = settings(p.path());
    s["hooks"].as_object_mut().unwrap().remove("SessionStart");
    write_settings(p.path(), "settings.json", &s);
    let out = doctor(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    let line = line_with(&out.stdout, "wired:SessionStart");
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
    write_settings(p.path(), "settings.json", &s);
    assert_contains(&doctor(p.path()).stdout, &["matcher 'Bash'"]);
}

fn doctor_fails_on_unsafe_permissions_and_a_broken_ledger() {
    let p = installed_sample("doctor-perms");
    let key = p.path().join(".attenu/anchor.key");
    set_mode(&key, 0o644);
    let out = doctor(p.path());
    assert_eq!(out.code, 1);
    assert_contains(&out.stdout, &["FAIL  perm:anchor.key", "chmod 600"]);
    set_mode(&key, 0o600);
    let original = std::fs::read_to_string(p.ledger("s1")).unwrap();
    std::fs::write(p.ledger("s1"), original.replacen("fs.read", "fs.rea", 1)).unwrap();
    assert_contains(&doctor(p.path()).stdout, &["FAIL  ledger:ledger-s1.jsonl"]);
    // Cut short: every line left still verifies, but the sealed state remembers more.
    let lines: Vec<&str> = original.lines().collect();
    std::fs::write(p.ledger("s1"), lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    let says = [
        "FAIL  ledger:ledger-s1.jsonl",
        "no longer holds what its sealed state records",
    ];
    assert_contains(&doctor(p.path()).stdout, &says);
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
    let call = |c: Call, input: Value, id: &str| c.session(sid).input(input).id(id);
    reviewer_read(p.path(), sid, "/x", "t1");
    call(
        p.subagent("reviewer", "Read"),
        json!({"file_path": "/x"}),
        "t1",
    )
    .post(json!({}))
    .run();
    call(
        p.subagent("reviewer", "WebFetch"),
        json!({"url": "https://x"}),
        "t2",
    )
    .run();
    call(p.subagent("Explore", "Grep"), json!({"pattern": "x"}), "t3").run();
    call(p.main_thread("Bash"), json!({"command": "ls"}), "t4").run();
    p
}

fn log_output_matches_the_snapshot() {
    let p = log_project("log");
    let table = normalised_log(&["log", "--project", p.dir()]);
    assert_snapshot("log.txt", &table);
    let denied = normalised_log(&["log", "--project", p.dir(), "--denied"]);
    assert_eq!(denied.lines().count(), 1 + 3, "{denied}");
    let explore = normalised_log(&["log", "--project", p.dir(), "--agent", "Explore", "--json"]);
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
    assert!(p
        .subagent("reviewer", "WebFetch")
        .input(json!({"url": "https://x"}))
        .run()
        .denied());
    let sub = p.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let clean = cli(&["log", "--project", sub.to_str().unwrap()]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    assert_contains(&clean.stdout, &["DENY"]);
    let text = std::fs::read_to_string(p.ledger("s1")).unwrap();
    std::fs::write(
        p.ledger("s1"),
        text.replace("\"event\":\"deny\"", "\"event\":\"allow\""),
    )
    .unwrap();
    let out = cli(&["log", "--project", p.dir()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_contains(&out.stderr, &["WARNING", "does not verify"]);
}

/// Regression: `log` streamed its rows and then ignored a failed write, exiting 0 with its
/// output lost (`> /dev/full`, a full disk).
fn log_output_that_cannot_be_written_exits_2() {
    let p = two_logged_sessions("log-full");
    let full = dev_full();
    for more in [&[][..], &["--json"], &["--summary"]] {
        let out = std::process::Command::new(BIN)
            .args([&["log", "--project", p.dir()][..], more].concat())
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{more:?}: {stderr}");
        assert_contains(&stderr, &["cannot write the output"]);
    }
}

/// The table reads each ledger twice (to measure its columns, then to print). A ledger
/// replaced between the two passes is refused, never shown unverified; a row of a session the
/// first pass never saw made it panic. The interleaving is forced by the test-only pause.
fn log_refuses_a_ledger_replaced_between_its_passes() {
    need_test_faults();
    let p = two_logged_sessions("log-replaced");
    let handshake = p.path().join("handshake-log");
    std::fs::create_dir(&handshake).unwrap();
    let log = std::process::Command::new(BIN)
        .args(["log", "--project", p.dir()])
        .env("ATTENU_TEST_PAUSE_BETWEEN_LOG_PASSES", &handshake)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while !handshake.join("derived").exists() {
        assert!(
            waited.elapsed().as_secs() < 10,
            "log never reached the pause"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let text = std::fs::read_to_string(p.ledger("s1")).unwrap();
    let other = p.path().join(".attenu/replacement");
    std::fs::write(&other, text.replace("\"s1\"", "\"zz-never-read\"")).unwrap();
    std::fs::rename(&other, p.ledger("s1")).unwrap();
    std::fs::write(handshake.join("go"), b"").unwrap();
    let out = log.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert_contains(
        &stderr,
        &["ledger-s1.jsonl was replaced or removed while log read it"],
    );
    assert!(!stdout.contains("zz-never-read"), "{stdout}");
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
            .run(),
    );
    assert!(proj.join(".attenu").is_dir());
    let run = |args: &[&str]| {
        let out = cli(&[args, &["--project", proj.to_str().unwrap()]].concat());
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        out.stdout
    };
    assert_contains(&run(&["log"]), &["Read"]);
    let bundles = run(&["export", "--session", "s1"]);
    assert_contains(&bundles, &["proj/.attenu/bundle-s1.json"]);
    run(&["reconcile", "list"]);
    assert!(!home.path().join(".attenu").exists());
}

fn completions_and_man_page_come_from_the_cli_definition() {
    let bash = cli(&["completions", "bash"]);
    assert_eq!(bash.code, 0);
    assert!(bash.stdout.contains("attenu-hook") && bash.stdout.contains("reconcile"));
    let man = cli(&["man"]);
    assert_eq!(man.code, 0);
    let head = &man.stdout[..200.min(man.stdout.len())];
    assert!(
        man.stdout.contains(".TH attenu-hook") && man.stdout.contains("derive"),
        "{head}"
    );
}

/// What bash offers for `attenu-hook log --s<TAB>` with the completion script sourced.
fn bash_completes_log_dash_s() -> (String, String) {
    let script = TempDir::new("completions");
    let file = script.path().join("attenu-hook.bash");
    std::fs::write(&file, cli(&["completions", "bash"]).stdout).unwrap();
    let line = r#"source "$1"; COMP_WORDS=(attenu-hook log --s); COMP_CWORD=2; _attenu__hook attenu-hook --s log; echo "${COMPREPLY[*]}""#;
    let out = std::process::Command::new("bash")
        .args(["-c", line, "bash"])
        .arg(&file)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr))
}

/// Regression (issue 41): a subcommand's flags never completed. Through a real bash.
fn a_subcommands_flags_complete() {
    let (offered, stderr) = bash_completes_log_dash_s();
    let offers = |f: &str| offered.split_whitespace().any(|o| o == f);
    let all = ["--session", "--sessions", "--summary"]
        .iter()
        .all(|f| offers(f));
    assert!(
        all,
        "`attenu-hook log --s<TAB>` offered {offered:?} {stderr}"
    );
}

/// Regression: install wrote a nested `.claude/` when run from a subdirectory.
fn install_and_doctor_find_the_project_root_from_a_subdirectory() {
    let p = sample("install-root");
    let sub = p.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    install_bin(sub.to_str().unwrap());
    assert!(!sub.join(".claude").exists() && !p.path().join("src/.claude").exists());
    assert!(settings(p.path())["hooks"]["PreToolUse"].is_array());
    let out = doctor(&sub);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

/// Regression: install created whatever path it was given; doctor on a missing directory
/// listed wiring failures.
fn install_and_doctor_refuse_a_missing_directory() {
    let p = sample("install-missing");
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

fn doctor_fails_when_attenu_is_not_a_directory() {
    let p = sample("doctor-file");
    install_bin(p.dir());
    std::fs::write(p.path().join(".attenu"), "").unwrap();
    let out = doctor(p.path());
    assert_contains(&out.stdout, &["FAIL  perm:.attenu", "not a directory"]);
}

/// `/dev/full`, to write to: every write fails with "no space left".
fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

/// Output that cannot be written ends the command with exit 2, not a panic (101).
fn output_that_cannot_be_written_exits_2() {
    let p = installed_sample("doctor-full");
    let full = dev_full();
    let status = std::process::Command::new(BIN)
        .args(["doctor", p.dir()])
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
    let solo = "---\nname: solo\ndescription: d\ntools: Read\n---\n";
    std::fs::write(repo.join(".claude/agents/solo.md"), solo).unwrap();
    install_bin(repo.to_str().unwrap());
    assert!(repo.join(".claude/settings.json").is_file());
    assert!(!parent.path().join(".claude").exists());
    let derived = cli(&["--derive", repo.to_str().unwrap(), "--json"]);
    assert_contains(&derived.stdout, &["solo"]);
    let out = doctor(&repo);
    let head = format!(
        "project {}",
        std::fs::canonicalize(&repo).unwrap().display()
    );
    assert!(out.stdout.starts_with(&head), "{}", out.stdout);
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
    let typed = std::fs::read_to_string(&transcript).unwrap_or_default();
    let seen = typed + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{seen}");
    let says = [
        "stdin is a terminal",
        "one Claude Code event",
        "attenu-hook doctor",
        "--derive",
        "attenu-hook log",
        "--help",
        "[payload-invalid]",
    ];
    assert_contains(&seen, &says);
    assert!(!seen.contains("deadline-exceeded"), "{seen}");
}

/// [`log_project`] with a second session, s1.
fn two_logged_sessions(tag: &str) -> TempDir {
    let p = log_project(tag);
    reviewer_read(p.path(), "s1", "/y", "t9");
    p
}

/// Regression (issue 28): `log` wrapped every row past 100 columns, with a 36-column session
/// field even for `s1`. With `COLUMNS` it fits the width, the reason wrapping under its
/// column, and `s1` is shown whole in a narrow column.
fn log_fits_the_terminal() {
    let p = two_logged_sessions("log-width");
    let session = [
        "log",
        "--project",
        p.dir(),
        "--session",
        "0b5f1c2e-log-snapshot",
    ];
    let narrow = normalised_log_at(&session, "100");
    assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
    assert_snapshot("log-100-columns.txt", &narrow);
    let all = normalised_log(&["log", "--project", p.dir()]);
    let whole = all.lines().any(|l| l.contains("  s1  "));
    assert!(whole, "s1 is shown whole, in a narrow column: {all}");
}

/// Regression (issue 28): `log` had no overview: `--sessions` lists the sessions, `--summary`
/// tallies each agent.
fn log_lists_sessions_and_summarises() {
    let p = two_logged_sessions("log-overview");
    let log = |more: &[&str]| normalised_log(&[&["log", "--project", p.dir()], more].concat());
    assert_snapshot("log-summary.txt", &log(&["--summary"]));
    assert_snapshot("log-sessions.txt", &log(&["--sessions"]));
    let json = log(&["--summary", "--json"]);
    let rows = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let reviewer = rows.into_iter().find(|v| v["key"] == "reviewer").unwrap();
    let tally = (reviewer["calls"].as_u64(), reviewer["deny"].as_u64());
    assert_eq!(tally, (Some(3), Some(1)));
    assert_eq!(reviewer["deny_reasons"]["out-of-authority"], 1);
    let sessions = log(&["--sessions", "--json"]);
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
