//! The command line's papercuts a team met in its first hour (issue 41), each pinned: short
//! session ids, read-only commands that create nothing, `derive` as a command, the man pages'
//! examples and exit codes, a wrong key told apart from tampering, and one count of a
//! session's calls. (Bash completion is in operator.rs; `--help` coverage in src/cli/mod.rs.)

mod common;
use common::*;
use serde_json::json;

/// A project with two sessions whose ids share their first 9 characters.
fn two_sessions(tag: &str) -> TempDir {
    let p = sample(tag);
    reviewer_read(p.path(), "0b5f1c2e-aaaa-1111", "/x", "t1");
    reviewer_read(p.path(), "0b5f1c2e-bbbb-2222", "/y", "t2");
    p
}

/// Regression: `log` shows `0b5f1c2e-a…`, which `--session` did not accept.
#[test]
fn session_accepts_the_short_id_log_shows_and_refuses_an_ambiguous_one() {
    let p = two_sessions("short-ids");
    let dir = p.path().to_str().unwrap();
    let log = cli_with(&["log", "--project", dir], &[("COLUMNS", "200".as_ref())]);
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert_contains(&log.stdout, &["0b5f1c2e-a…", "0b5f1c2e-b…"]);
    for short in ["0b5f1c2e-a…", "0b5f1c2e-a", "0b5f1c2e-aa"] {
        let one = cli(&["log", "--project", dir, "--session", short, "--json"]);
        assert_eq!(one.code, 0, "{short}: {}", one.stderr);
        assert!(
            one.stdout.contains("0b5f1c2e-aaaa-1111") && !one.stdout.contains("0b5f1c2e-bbbb"),
            "{short}: {}",
            one.stdout
        );
        let export = cli(&["export", "--project", dir, "--session", short]);
        assert_eq!(export.code, 0, "{short}: {}", export.stderr);
        assert_contains(&export.stdout, &["bundle-0b5f1c2e-aaaa-1111.json"]);
    }
    let both = cli(&["log", "--project", dir, "--session", "0b5f1c2e"]);
    assert_eq!(both.code, 2, "{both:?}");
    assert_contains(
        &both.stderr,
        &[
            "matches 2 sessions",
            "0b5f1c2e-aaaa-1111",
            "0b5f1c2e-bbbb-2222",
            "log --sessions",
        ],
    );
}

/// Regression: `prove --session <unknown>` created an empty ledger and its state file.
#[test]
fn prove_of_an_unknown_session_creates_nothing() {
    let p = two_sessions("prove-unknown");
    let dir = p.path().to_str().unwrap();
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(p.path().join(".attenu"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let out = cli(&["prove", "--project", dir, "--session", "nope", "--seq", "1"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_contains(&out.stderr, &["nope"]);
    assert_eq!(listing(), before, "prove created files");
}

/// `derive` is a command like the others; `--derive` still works.
#[test]
fn derive_is_a_command_and_the_flag_still_works() {
    let p = sample("derive-command");
    let dir = p.path().to_str().unwrap();
    let command = cli(&["derive", dir, "--json"]);
    assert_eq!(command.code, 0, "{}", command.stderr);
    let flag = cli(&["--derive", dir, "--json"]);
    assert_eq!(flag.code, 0, "{}", flag.stderr);
    assert_eq!(command.stdout, flag.stdout);
    assert!(command.stdout.contains("reviewer"), "{}", command.stdout);
    let human = cli(&["derive", dir, "--human"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert_ne!(human.stdout, command.stdout);
}

/// The man pages add what `--help` lacks: examples and exit codes.
#[test]
fn man_pages_add_examples_and_exit_codes_to_the_help() {
    let dir = TempDir::new("man-extra");
    let out = cli(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for command in ["verify", "log", "install", "audit", "export", "derive"] {
        let page = std::fs::read_to_string(dir.path().join(format!("attenu-hook-{command}.1")))
            .unwrap_or_else(|e| panic!("{command}: {e}"));
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
    let top = std::fs::read_to_string(dir.path().join("attenu-hook.1")).unwrap();
    assert!(top.contains(".SH EXAMPLES") && top.contains(".SH \"EXIT STATUS\""));
    let _ = json!({});
}

/// Regression: a bundle checked against another project's key read as "INVALID … integrity
/// FAILED", like tampering; it now says it was not signed by that key, and names both keys.
/// A bundle really altered still reads as INVALID with integrity FAILED.
#[test]
fn a_wrong_public_key_reads_as_not_signed_by_that_key() {
    let p = sample("wrong-key");
    reviewer_read(p.path(), "s1", "/x", "t1");
    let dir = p.path().to_str().unwrap();
    let export = cli(&["export", "--project", dir, "--session", "s1"]);
    assert_eq!(export.code, 0, "{}", export.stderr);
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let other = TempDir::new("wrong-key-other");
    let key = other.path().join("other.key");
    let keygen = cli(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(keygen.code, 0, "{}", keygen.stderr);
    let other_pub = other.path().join("other.pub");
    std::fs::write(&other_pub, keygen.stdout.trim()).unwrap();
    let out = cli(&[
        "verify",
        bundle.to_str().unwrap(),
        "--pub",
        other_pub.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(
        &out.stdout,
        &[
            "this bundle was not signed by that key",
            "its anchor names key attenu-hook-",
        ],
    );
    assert!(!out.stdout.contains("integrity FAILED"), "{}", out.stdout);
    // The page says the same on its first screen and in its title, not "INVALID".
    let page = other.path().join("page.html");
    let report = |key: &std::path::Path| {
        let out = cli(&[
            "report",
            bundle.to_str().unwrap(),
            "--pub",
            key.to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ]);
        assert_eq!(out.code, 1, "{out:?}");
        std::fs::read_to_string(&page).unwrap()
    };
    let html = report(&other_pub);
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

    // Tampered under the right key: still the integrity failure.
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.contains("\"task\":\"claude-code session\""));
    std::fs::write(
        &bundle,
        text.replacen(
            "\"task\":\"claude-code session\"",
            "\"task\":\"rewritten\"",
            1,
        ),
    )
    .unwrap();
    let anchor = p.path().join(".attenu/anchor.pub");
    let out = cli(&[
        "verify",
        bundle.to_str().unwrap(),
        "--pub",
        anchor.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        !out.stdout.contains("not signed by that key"),
        "{}",
        out.stdout
    );
    let html = report(&anchor);
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
    let second = cli(&["audit", "--pub", key, &url, "--json"]);
    let third = cli(&["audit", "--pub", key, "--pub", key, &url, "--json"]);
    // The empty store's audit fails on its finding (the pinned key has no session there),
    // which shows the URL and the key were both read.
    assert_eq!(first.code, 1, "{first:?}");
    assert!(
        first
            .stdout
            .contains("the store holds no session of the pinned key"),
        "{first:?}"
    );
    for other in [&second, &third] {
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

/// Regression: `log`, `verify` and `report` counted one session's calls three ways ("12
/// calls", "9 actions checked, 1 ungated"). Each now counts calls as `log` does: one per
/// decision, allowed or denied.
#[test]
fn log_verify_and_report_count_a_sessions_calls_the_same_way() {
    let p = sample("counts");
    let dir = p.path().to_str().unwrap();
    reviewer_read(p.path(), "s1", "/x", "t1");
    reviewer_read(p.path(), "s1", "/y", "t2");
    p.bash_by("reviewer", "ls").session("s1").id("t3").run();
    p.main_thread("Bash")
        .session("s1")
        .input(json!({"command": "ls"}))
        .id("t4")
        .run();
    let log = cli(&["log", "--project", dir, "--sessions", "--json"]);
    assert_eq!(log.code, 0, "{}", log.stderr);
    let tally: serde_json::Value =
        serde_json::from_str(log.stdout.lines().next().unwrap()).unwrap();
    let (calls, allow, deny) = (
        tally["calls"].as_u64().unwrap(),
        tally["allow"].as_u64().unwrap(),
        tally["deny"].as_u64().unwrap(),
    );
    assert_eq!(
        (calls, allow, deny, tally["would_deny"].as_u64().unwrap()),
        (4, 2, 1, 1),
        "{tally}"
    );
    assert_eq!(
        cli(&["export", "--project", dir, "--session", "s1"]).code,
        0
    );
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let anchor = p.path().join(".attenu/anchor.pub");
    let verify = cli(&[
        "verify",
        bundle.to_str().unwrap(),
        "--pub",
        anchor.to_str().unwrap(),
    ]);
    assert_contains(
        &verify.stdout,
        &["4 calls: 2 allowed, 1 denied, 1 would-deny"],
    );
    let page = p.path().join("report.html");
    let report = cli(&[
        "report",
        bundle.to_str().unwrap(),
        "--pub",
        anchor.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    assert!(report.code == 0 || report.code == 1, "{report:?}");
    let html = std::fs::read_to_string(&page).unwrap();
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
    let numbers: Vec<&str> = html
        .split("<td data-label=\"call\" title=\"ledger seq ")
        .skip(1)
        .map(|c| c.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect();
    assert_eq!(numbers, ["1", "2", "3", "4"]);
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
