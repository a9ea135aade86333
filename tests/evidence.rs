//! Evidence: what `export` writes and `verify` says about it, in words a reviewer and a script
//! can depend on. (Conformance with the reference verifier is in conformance.rs.)

mod common;
use attenu_hook::evidence::verify::FailureName;
use common::*;
use serde_json::{json, Value};

/// A session of the sample project with an allow and its outcome, an allow left open, a deny,
/// an undeclared agent and the main thread, exported: the project and its bundle's path.
fn exported_session(tag: &str) -> (TempDir, String) {
    let p = sample(tag);
    let read = allowed_read(p.path());
    assert_allowed(&read.post(json!({"ok": true})).run());
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/b", "t2"));
    let fetch = p.subagent("reviewer", "WebFetch").id("t3");
    assert_denied_with(
        &fetch.input(json!({"url": "https://x"})).run(),
        "out-of-authority",
    );
    assert_denied_with(
        &p.subagent("Explore", "Grep").id("t4").run(),
        "undeclared-agent",
    );
    assert_allowed(
        &p.main_thread("Bash")
            .input(json!({"command": "ls"}))
            .id("t5")
            .run(),
    );
    let bundles = p.export("s1");
    assert_eq!(bundles.len(), 1, "{bundles:?}");
    let bundle = bundles[0].clone();
    (p, bundle)
}

/// A copy of the bundle at `bundle` with `edit` applied, written beside it: its path.
fn tampered(bundle: &str, name: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut doc: Value = serde_json::from_slice(&std::fs::read(bundle).unwrap()).unwrap();
    edit(&mut doc);
    let path = bundle.replace("bundle-s1.json", &format!("tampered-{name}.json"));
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

/// One command's exit code, stdout and stderr, as a snapshot shows them.
fn transcript(title: &str, out: &Out) -> String {
    format!(
        "$ {title}\nexit {}\n--- stdout\n{}--- stderr\n{}\n",
        out.code, out.stdout, out.stderr
    )
}

/// The verdicts `verify` prints, pinned: valid with the key beside the bundle (exit 3), valid
/// with the pinned key (exit 0), and a copy with an edited entry (exit 1, failure names).
#[test]
fn verify_text_is_pinned() {
    let (p, bundle) = exported_session("verify-text");
    let edited = tampered(&bundle, "edited", |doc| {
        assert_eq!(doc["entries"][2]["event"], "allow", "{}", doc["entries"][2]);
        doc["entries"][2]["tool"] = json!("Bash");
    });
    let mut text = transcript("verify BUNDLE", &cli(&["verify", &bundle]));
    text += &transcript("verify BUNDLE --pub KEY", &p.verify_pinned(&bundle));
    text += &transcript("verify EDITED --pub KEY", &p.verify_pinned(&edited));
    assert_snapshot("verify.txt", &mask(&text, &[(p.dir(), "<project>")]));
}

/// The same verdicts with `--json`, as a script reads them.
#[test]
fn verify_json_is_pinned() {
    let (p, bundle) = exported_session("verify-json");
    let cut = tampered(&bundle, "cut", |doc| {
        let entries = doc["entries"].as_array_mut().unwrap();
        entries.truncate(entries.len() - 2);
    });
    let valid = p.verify_pinned_json(&bundle);
    assert_eq!(valid.code, 0, "{}{}", valid.stdout, valid.stderr);
    let invalid = p.verify_pinned_json(&cut);
    assert_eq!(invalid.code, 1, "{}{}", invalid.stdout, invalid.stderr);
    let mut text = transcript("verify BUNDLE --pub KEY --json", &valid);
    text += &transcript("verify CUT --pub KEY --json", &invalid);
    assert_snapshot("verify-json.txt", &mask(&text, &[(p.dir(), "<project>")]));
}

#[test]
fn every_failure_name_is_stable_kebab_case_and_unique() {
    let mut seen = std::collections::HashSet::new();
    for name in FailureName::ALL {
        let s = name.as_str();
        assert!(
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{s} is not kebab-case"
        );
        assert!(seen.insert(s), "{s} is used twice");
        assert_eq!(FailureName::from_name(s), Some(*name));
    }
}
