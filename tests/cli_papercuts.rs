//! The command line's papercuts a team met in its first hour (issue 41), each pinned: short
//! session ids, read-only commands that create nothing, `derive` as a command, the man pages'
//! examples and exit codes, a wrong key told apart from tampering, and one count of a
//! session's calls. (Bash completion is in operator.rs; `--help` coverage in src/cli/mod.rs.)

mod common;
use common::project_kit::{export_session, report_with, verify_with};
use common::*;
use serde_json::json;
use std::path::PathBuf;

/// A project with two sessions whose ids share their first 9 characters.
fn two_sessions(tag: &str) -> TempDir {
    let p = sample(tag);
    reviewer_read(p.path(), "0b5f1c2e-aaaa-1111", "/x", "t1");
    reviewer_read(p.path(), "0b5f1c2e-bbbb-2222", "/y", "t2");
    p
}

/// Regression: `log` shows `0b5f1c2e-a…`, which `--session` did not accept.
#[test]
fn session_accepts_the_short_id_log_shows() {
    let p = two_sessions("short-ids");
    let log = cli_with(
        &["log", "--project", p.dir()],
        &[("COLUMNS", "200".as_ref())],
    );
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert_contains(&log.stdout, &["0b5f1c2e-a…", "0b5f1c2e-b…"]);
    for short in ["0b5f1c2e-a…", "0b5f1c2e-a", "0b5f1c2e-aa"] {
        let one = cli(&["log", "--project", p.dir(), "--session", short, "--json"]);
        assert_eq!(one.code, 0, "{short}: {}", one.stderr);
        let only_a =
            one.stdout.contains("0b5f1c2e-aaaa-1111") && !one.stdout.contains("0b5f1c2e-bbbb");
        assert!(only_a, "{short}: {}", one.stdout);
        let export = cli(&["export", "--project", p.dir(), "--session", short]);
        assert_eq!(export.code, 0, "{short}: {}", export.stderr);
        assert_contains(&export.stdout, &["bundle-0b5f1c2e-aaaa-1111.json"]);
    }
}

#[test]
fn session_refuses_an_ambiguous_short_id() {
    let p = two_sessions("short-ids-ambiguous");
    let both = cli(&["log", "--project", p.dir(), "--session", "0b5f1c2e"]);
    assert_eq!(both.code, 2, "{both:?}");
    let says = [
        "matches 2 sessions",
        "0b5f1c2e-aaaa-1111",
        "0b5f1c2e-bbbb-2222",
        "log --sessions",
    ];
    assert_contains(&both.stderr, &says);
}

/// The names under `.attenu/`, sorted.
fn state_listing(p: &TempDir) -> Vec<String> {
    let entries = std::fs::read_dir(p.path().join(".attenu")).unwrap();
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Regression: `prove --session <unknown>` created an empty ledger and its state file.
#[test]
fn prove_of_an_unknown_session_creates_nothing() {
    let p = two_sessions("prove-unknown");
    let before = state_listing(&p);
    let out = cli(&[
        "prove",
        "--project",
        p.dir(),
        "--session",
        "nope",
        "--seq",
        "1",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, &["nope"]);
    assert_eq!(state_listing(&p), before, "prove created files");
}

/// `derive` is a command like the others; `--derive` still works.
#[test]
fn derive_is_a_command_and_the_flag_still_works() {
    let p = sample("derive-command");
    let command = cli(&["derive", p.dir(), "--json"]);
    assert_eq!(command.code, 0, "{}", command.stderr);
    let flag = cli(&["--derive", p.dir(), "--json"]);
    assert_eq!(
        (flag.code, &flag.stdout),
        (0, &command.stdout),
        "{}",
        flag.stderr
    );
    assert!(command.stdout.contains("reviewer"), "{}", command.stdout);
    let human = cli(&["derive", p.dir(), "--human"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert_ne!(human.stdout, command.stdout);
}

/// The man pages add what `--help` lacks: examples and exit codes.
#[test]
fn man_pages_add_examples_and_exit_codes_to_the_help() {
    let dir = TempDir::new("man-extra");
    let out = cli(&["man", "--dir", dir.dir()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = |name: &str| std::fs::read_to_string(dir.path().join(format!("{name}.1")));
    for command in ["verify", "log", "install", "audit", "export", "derive"] {
        let page =
            page(&format!("attenu-hook-{command}")).unwrap_or_else(|e| panic!("{command}: {e}"));
        assert!(page.contains(".SH EXAMPLES"), "{command}: no EXAMPLES");
        assert!(
            page.contains(".SH \"EXIT STATUS\""),
            "{command}: no EXIT STATUS"
        );
        let help = cli(&[command, "--help"]);
        assert!(
            !help.stdout.contains("EXAMPLES"),
            "{command}: the help has them already"
        );
    }
    let top = page("attenu-hook").unwrap();
    assert!(top.contains(".SH EXAMPLES") && top.contains(".SH \"EXIT STATUS\""));
}

/// A session's exported bundle, and another project's public key (`keygen`'s), in a
/// directory of its own.
fn bundle_and_another_key(tag: &str) -> (TempDir, PathBuf, TempDir, PathBuf) {
    let p = sample(tag);
    reviewer_read(p.path(), "s1", "/x", "t1");
    let bundle = export_session(&p, "s1");
    let other = TempDir::new(&format!("{tag}-other"));
    let keygen = cli(&[
        "keygen",
        "--out",
        other.path().join("other.key").to_str().unwrap(),
    ]);
    assert_eq!(keygen.code, 0, "{}", keygen.stderr);
    let other_pub = other.path().join("other.pub");
    std::fs::write(&other_pub, keygen.stdout.trim()).unwrap();
    (p, bundle, other, other_pub)
}

/// Regression: a bundle checked against another project's key read as "INVALID … integrity
/// FAILED", like tampering; it now says it was not signed by that key, and names both keys.
#[test]
fn a_wrong_public_key_reads_as_not_signed_by_that_key() {
    let (_p, bundle, _other, other_pub) = bundle_and_another_key("wrong-key");
    let out = verify_with(&bundle, &other_pub);
    assert_eq!(out.code, 1, "{out:?}");
    let says = [
        "this bundle was not signed by that key",
        "its anchor names key attenu-hook-",
    ];
    assert_contains(&out.stdout, &says);
    assert!(!out.stdout.contains("integrity FAILED"), "{}", out.stdout);
}

/// The page says the same on its first screen and in its title, not "INVALID".
#[test]
fn a_wrong_public_keys_report_says_not_signed_by_that_key() {
    let (_p, bundle, other, other_pub) = bundle_and_another_key("wrong-key-page");
    let (out, html) = report_with(&bundle, &other_pub, &other.path().join("page.html"));
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &html,
        &[
            "<title>NOT VERIFIED: not signed by that key",
            "This bundle was not signed by that key: its anchor names key attenu-hook-",
            "not a sign of tampering",
            "not checked: another key signed it",
        ],
    );
    assert!(!html.contains("<title>INVALID"), "{html}");
    assert!(!html.contains(">FAILED<"), "integrity FAILED on the page");
}

/// A bundle really altered, under the right key, still reads as INVALID with integrity
/// FAILED.
#[test]
fn a_tampered_bundle_under_the_right_key_still_fails_integrity() {
    let (p, bundle, other, _) = bundle_and_another_key("wrong-key-tampered");
    let text = std::fs::read_to_string(&bundle).unwrap();
    let task = "\"task\":\"claude-code session\"";
    assert!(text.contains(task));
    std::fs::write(&bundle, text.replacen(task, "\"task\":\"rewritten\"", 1)).unwrap();
    let anchor = p.path().join(".attenu/anchor.pub");
    let out = verify_with(&bundle, &anchor);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        !out.stdout.contains("not signed by that key"),
        "{}",
        out.stdout
    );
    let (out, html) = report_with(&bundle, &anchor, &other.path().join("page.html"));
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&html, &["<title>INVALID", "FAILED"]);
    assert!(!html.contains("not signed by that key"), "{html}");
}

/// Regression: `audit --pub KEY URL` failed, `--pub` taking the URL as a second key. Both
/// orders now mean the same; the documented `audit URL --pub A B` still works.
#[test]
fn audit_takes_the_url_after_the_keys_too() {
    let p = sample("audit-order");
    reviewer_read(p.path(), "s1", "/x", "t1");
    let key = p.path().join(".attenu/anchor.pub");
    let key = key.to_str().unwrap();
    let store = TempDir::new("audit-order-store");
    let url = format!("file://{}", store.path().display());
    let first = cli(&["audit", &url, "--pub", key, key, "--json"]);
    // The empty store's audit fails on its finding (the pinned key has no session there),
    // which shows the URL and the key were both read.
    assert_eq!(first.code, 1, "{first:?}");
    assert_contains(
        &first.stdout,
        &["the store holds no session of the pinned key"],
    );
    for order in [
        vec!["--pub", key, &url],
        vec!["--pub", key, "--pub", key, &url],
    ] {
        let other = cli(&[&["audit"], &order[..], &["--json"]].concat());
        assert_eq!(
            (other.code, &other.stdout),
            (first.code, &first.stdout),
            "{other:?}"
        );
    }
    let none = cli(&["audit", "--pub", key]);
    assert_eq!(none.code, 2);
    assert_contains(&none.stderr, &["pass the store's URL"]);
}

// Regression: `log`, `verify` and `report` counted one session's calls three ways ("12
// calls", "9 actions checked, 1 ungated"). Each now counts calls as `log` does: one per
// decision, allowed or denied.

/// Session s1 of four calls: two allowed Reads, a denied Bash, the main thread's Bash
/// (allowed, would be denied).
fn four_calls(tag: &str) -> TempDir {
    let p = sample(tag);
    reviewer_read(p.path(), "s1", "/x", "t1");
    reviewer_read(p.path(), "s1", "/y", "t2");
    p.bash_by("reviewer", "ls").id("t3").run();
    p.main_thread("Bash")
        .input(json!({"command": "ls"}))
        .id("t4")
        .run();
    p
}

#[test]
fn log_counts_a_sessions_calls_one_per_decision() {
    let p = four_calls("counts-log");
    let log = cli(&["log", "--project", p.dir(), "--sessions", "--json"]);
    assert_eq!(log.code, 0, "{}", log.stderr);
    let tally: serde_json::Value =
        serde_json::from_str(log.stdout.lines().next().unwrap()).unwrap();
    let count = |k: &str| tally[k].as_u64().unwrap();
    let counts = (
        count("calls"),
        count("allow"),
        count("deny"),
        count("would_deny"),
    );
    assert_eq!(counts, (4, 2, 1, 1), "{tally}");
}

#[test]
fn verify_counts_a_sessions_calls_as_log_does() {
    let p = four_calls("counts-verify");
    let bundle = export_session(&p, "s1");
    let verify = verify_with(&bundle, &p.path().join(".attenu/anchor.pub"));
    assert_contains(
        &verify.stdout,
        &["4 calls: 2 allowed, 1 denied, 1 would-deny"],
    );
}

/// The numbers of the report page's calls column, in order.
fn call_numbers(html: &str) -> Vec<&str> {
    let cells = html
        .split("<td data-label=\"call\" title=\"ledger seq ")
        .skip(1);
    cells
        .map(|c| c.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect()
}

#[test]
fn the_report_counts_a_sessions_calls_as_log_does() {
    let p = four_calls("counts-report");
    let bundle = export_session(&p, "s1");
    let anchor = p.path().join(".attenu/anchor.pub");
    let (report, html) = report_with(&bundle, &anchor, &p.path().join("report.html"));
    assert!(report.code == 0 || report.code == 1, "{report:?}");
    assert!(
        html.contains("4 calls: 2 allowed, 1 denied, 1 would-deny"),
        "the report page's counts"
    );
    // The page names tools beside their scopes, and folds delegation into one chip per agent.
    assert!(
        html.contains("<b>Read</b> fs.read"),
        "tool names beside scopes"
    );
    // Calls are numbered 1, 2, 3, 4; the ledger's seq (with its gaps) only in the title.
    assert_eq!(call_numbers(&html), ["1", "2", "3", "4"]);
    for div in html.split("<div class=\"scopes\">").skip(1) {
        let div = div.split("</div>").next().unwrap();
        assert!(div.matches("agent.delegate.").count() <= 1, "{div}");
    }
}

/// Regression: `authorize --session` took the short id `log` shows as a whole id, so the
/// grant was bound to a session named `0b5f1c2e…` that never calls. It is now completed to the
/// recorded session it names; an id not recorded yet is kept as given.
#[test]
fn authorize_completes_the_short_session_id_log_shows() {
    use common::gated::*;
    let (p, key) = gated("authorize-short-id");
    let input = json!({"command": "migrate"});
    assert_denied_with(&ops_bash(&p, &input, "t0"), "gate-authorization-required");
    let out = authorize(p.path(), &key, &input, &["--session", "s…"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stdout, &["bound to:      session s1,"]);
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let later = authorize(p.path(), &key, &input, &["--session", "s-to-come"]);
    assert_eq!(later.code, 0, "{}", later.stderr);
    assert_contains(&later.stdout, &["session s-to-come,"]);
}
