//! `[privacy] record`: by default no part of a call's arguments reaches the disk (only their
//! salted commitment); with `record = "summary"` the command or path is kept with its secrets
//! redacted, on the chain, and `log` and the report page show it. Through the real binary.

mod common;
use common::project_kit::{report_with, verify_with};
use common::*;
use serde_json::json;
use std::path::Path;

/// The secrets in [`COMMAND`], each of a shape the redaction knows.
const SECRETS: &[&str] = &[
    "SeKr1tBearerValue",
    "hunter2pass",
    "VALUE_OF_THE_KEY",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "0123456789abcdef0123456789abcdef",
];

/// A command of the kind an agent runs, carrying every one of [`SECRETS`], and one harmless
/// word that only the command has (`UniqueWordOfTheCommand`).
const COMMAND: &str = "curl -H 'Authorization: Bearer SeKr1tBearerValue' https://bob:hunter2pass@api.example.com/UniqueWordOfTheCommand && DEPLOY_KEY=VALUE_OF_THE_KEY gh auth login --with-token ghp_abcdefghijklmnopqrstuvwxyz0123456789 && aws --id AKIAIOSFODNN7EXAMPLE --digest 0123456789abcdef0123456789abcdef";

/// One session: the ops agent's Bash running [`COMMAND`], its outcome, a Read, then the
/// session's end (which exports the bundle).
fn session(p: &Path) {
    let call = Call::pre(p, Some("ops"), "Bash")
        .input(json!({"command": COMMAND, "description": "deploy"}))
        .id("t1");
    assert!(call.run().is_allow());
    call.post(json!({"stdout": "ok", "stderr": "", "interrupted": false}))
        .run();
    let read = Call::pre(p, Some("ops"), "Read")
        .input(json!({"file_path": "/p/src/main.rs"}))
        .id("t2");
    assert!(read.run().is_allow());
    hook(p, &event("s1", p, "SessionEnd"));
}

fn ops(tag: &str, config: &str) -> TempDir {
    ProjectBuilder::new(tag)
        .agent("ops", "description: ops\ntools: Bash, Read")
        .config(config)
        .build()
}

/// Every file under `.attenu/`, as bytes, with its path.
fn state_files(p: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = p.join(".attenu");
    walk(&dir, |_| false)
        .into_iter()
        .filter(|(_, is_dir)| !is_dir)
        .map(|(f, _)| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// [`session`] in a project with `record = "summary"`.
fn summarised(tag: &str) -> TempDir {
    let p = ops(tag, "[privacy]\nrecord = \"summary\"\n");
    session(p.path());
    p
}

#[test]
fn a_summary_never_puts_a_secret_on_disk() {
    let p = summarised("record-summary");
    let files = state_files(p.path());
    assert!(files.len() > 3, "{files:?}");
    for (f, bytes) in &files {
        for secret in SECRETS {
            assert!(!holds(bytes, secret), "{secret} is in {}", f.display());
        }
    }
}

#[test]
fn a_summary_keeps_the_command_and_the_path() {
    let p = summarised("record-summary-kept");
    let es = p.entries("s1");
    let allows = of_event(&es, "allow");
    let summary = allows[0]["context"]["summary"].as_str().unwrap();
    let kept = summary.starts_with("curl -H 'Authorization: ")
        && summary.contains("https://***@api.example.com/UniqueWordOfTheCommand")
        && summary.contains("DEPLOY_KEY=***");
    assert!(kept, "{summary}");
    assert!(summary.chars().count() <= 200, "{summary}");
    assert_eq!(allows[1]["context"]["summary"], "/p/src/main.rs");
}

/// Covered by the chain: the exported bundle verifies; and `log` shows the summaries, where a
/// reviewer reads the call.
#[test]
fn a_summary_is_on_the_chain_and_in_log() {
    let p = summarised("record-summary-log");
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let v = verify_with(&bundle, &p.path().join(".attenu/anchor.pub"));
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    let log = cli(&["log", "--project", p.dir()]);
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert_contains(&log.stdout, &["$ curl -H", "$ /p/src/main.rs"]);
}

/// The report page shows the summary, and no secret.
#[test]
fn a_summary_is_on_the_report_page_without_its_secrets() {
    let p = summarised("record-summary-page");
    let (bundle, key) = (
        p.path().join(".attenu/bundle-s1.json"),
        p.path().join(".attenu/anchor.pub"),
    );
    let (out, html) = report_with(&bundle, &key, &p.path().join("report.html"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = html.contains("data-summary>curl -H &#39;Authorization: ")
        || html.contains("data-summary>curl -H &#x27;Authorization: ");
    assert!(shown, "the page shows the summary");
    for secret in SECRETS {
        assert!(!html.contains(secret), "{secret} is on the page");
    }
}

/// A summary that would be altered after the fact breaks the chain like any other member.
#[test]
fn an_edited_summary_fails_verification() {
    let p = summarised("record-tamper");
    let ledger = p.ledger("s1");
    let text = std::fs::read_to_string(&ledger).unwrap();
    let edited = text.replacen("UniqueWordOfTheCommand", "SomethingElseEntirely", 1);
    assert_ne!(text, edited);
    std::fs::write(&ledger, edited).unwrap();
    let log = cli(&["log", "--project", p.dir()]);
    let said = format!("{}{}", log.stdout, log.stderr);
    assert!(said.contains("does not verify"), "{said}");
}

#[test]
fn by_default_nothing_of_the_command_reaches_the_disk() {
    for config in ["", "[privacy]\nrecord = \"commitment\"\n"] {
        let p = ops("record-default", config);
        session(p.path());
        for (f, bytes) in state_files(p.path()) {
            let words = ["UniqueWordOfTheCommand", "curl", "/p/src/main.rs"];
            for word in SECRETS.iter().chain(&words) {
                assert!(!holds(&bytes, word), "{word} is in {}", f.display());
            }
        }
        let es = p.entries("s1");
        assert!(es.iter().all(|e| e["context"].get("summary").is_none()));
    }
}

#[test]
fn a_misspelt_record_value_is_an_error_not_a_silent_default() {
    for bad in [
        "record = \"summaries\"",
        "record = true",
        "recrod = \"summary\"",
    ] {
        let p = ops("record-typo", &format!("[privacy]\n{bad}\n"));
        assert_denied_with(&p.read_by("ops", "/p/a").run(), "config-invalid");
    }
}
