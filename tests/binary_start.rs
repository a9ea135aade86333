//! The binary enters at C's `main` instead of std's (see `src/main.rs`). These hold it to the
//! parts of std's start it has to do itself, with the real binary and real descriptors.

mod common;
use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

fn main() {
    harness::run(tests![
        a_reader_gone_before_the_answer_gets_exit_2_not_a_sigpipe_death,
        a_closed_stdout_is_filled_so_the_ledger_never_takes_its_place,
        a_deny_with_stderr_gone_still_exits_2,
        arguments_reach_the_command_line
    ]);
}

/// Runs `cmd` with piped stdio: `prepare` may close an end first, then `stdin` is written.
fn run(cmd: &mut Command, stdin: &[u8], prepare: impl FnOnce(&mut Child)) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    prepare(&mut child);
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// The reviewer's `Read` of a.md in session s1, as Claude Code sends it.
fn read_payload(project: &Path) -> Vec<u8> {
    let payload = project.read_by("reviewer", "a.md").id("t1").value();
    payload.to_string().into_bytes()
}

fn a_reader_gone_before_the_answer_gets_exit_2_not_a_sigpipe_death() {
    // Claude Code honours exit 2 but a death by signal lets the call run. With SIGPIPE left at
    // its default, writing the answer to a pipe nobody reads kills the process.
    let p = sample("sigpipe");
    let out = run(
        Command::new(BIN).env("CLAUDE_PROJECT_DIR", p.path()),
        &read_payload(p.path()),
        // The read end closes before the hook has its payload, so before it can answer.
        |child| drop(child.stdout.take()),
    );
    assert_eq!(out.status.code(), Some(2), "{:?}", out.status);
}

fn a_closed_stdout_is_filled_so_the_ledger_never_takes_its_place() {
    // A file opened while descriptor 1 is closed becomes stdout, and anything printed while it
    // is open (the deadline watchdog's deny) would be appended to it. So the closed descriptor
    // is filled with /dev/null first; `strace` shows which descriptor the ledger got.
    need_tool("strace", "-V");
    let p = sample("closed-stdout");
    let log = p.path().join("strace.log");
    let out = run(
        Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=openat", "-o"])
            .arg(&log)
            .args(["/bin/sh", "-c", "exec \"$0\" 1>&-", BIN])
            .env("CLAUDE_PROJECT_DIR", p.path()),
        &read_payload(p.path()),
        |_| {},
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(&log).unwrap();
    let fd_of = |needle: &str| {
        trace
            .lines()
            .find(|l| l.contains("openat(") && l.contains(needle))
            .and_then(|l| l.rsplit("= ").next())
            .map(|fd| fd.trim().to_string())
            .unwrap_or_else(|| panic!("no open of {needle}:\n{trace}"))
    };
    assert_eq!(fd_of("\"/dev/null\""), "1", "{trace}");
    assert_ne!(fd_of("ledger-s1.jsonl"), "1", "{trace}");
    let next = reviewer_read(p.path(), "s1", "b.md", "t2");
    assert!(next.is_allow(), "{} {}", next.stdout, next.stderr);
}

fn a_deny_with_stderr_gone_still_exits_2() {
    // An exit-2 answer repeats its reason on stderr. With nobody reading stderr that write
    // fails, and must not turn into a panic (exit 101, or an abort through C's `main`).
    let p = sample("stderr-gone");
    let out = run(
        Command::new(BIN).env("CLAUDE_PROJECT_DIR", p.path()),
        b"not json",
        |child| drop(child.stderr.take()),
    );
    assert_eq!(out.status.code(), Some(2), "{:?}", out.status);
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
}

fn arguments_reach_the_command_line() {
    // std collects the arguments before any `main` (on glibc, from `.init_array`); the binary
    // checks that it did.
    let out = cli(&["--version"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!("attenu-hook {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = cli(&["no-such-command"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_contains(&out.stderr, &["no-such-command"]);
}
