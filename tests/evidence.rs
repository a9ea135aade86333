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

/// An OPEN line names the call the way a reviewer looks it up: its tool, its agent and Claude
/// Code's tool_use_id; and the output says what "incomplete" binding means.
#[test]
fn open_lines_name_tool_agent_and_tool_use_id() {
    let (p, bundle) = exported_session("open-line");
    let out = p.verify_pinned(&bundle);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let open: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("OPEN "))
        .collect();
    assert!(
        open.iter()
            .any(|l| l.contains("(tool Read, agent reviewer, tool_use_id t2)")),
        "{}",
        out.stdout
    );
    assert!(
        open.iter()
            .any(|l| l.contains("(tool Bash, agent session, tool_use_id t5)")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "NOTE execution binding incomplete: the ledger does not show how everything ended"
        ),
        "{}",
        out.stdout
    );
}

/// The wrong file is unusable input (exit 2) with what to pass instead, never a verdict on a
/// "bundle": the session's ledger, one ledger line, and JSON that is no bundle at all.
#[test]
fn a_ledger_or_other_json_is_unusable_input() {
    let (p, bundle) = exported_session("not-a-bundle");
    let ledger = p.path().join(".attenu/ledger-s1.jsonl");
    let out = p.verify_pinned(ledger.to_str().unwrap());
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("session ledger") && out.stderr.contains("attenu-hook export"),
        "{}",
        out.stderr
    );

    let text = std::fs::read_to_string(&ledger).unwrap();
    let one_line = p.path().join("one-entry.json");
    std::fs::write(&one_line, text.lines().next().unwrap()).unwrap();
    let out = p.verify_pinned(one_line.to_str().unwrap());
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("session ledger"), "{}", out.stderr);

    for (name, doc, kind) in [
        ("array.json", "[1, 2]", "it is an array"),
        (
            "settings.json",
            r#"{"hooks": {}}"#,
            "neither \"entries\" nor \"anchor\"",
        ),
        ("null.json", "null", "it is null"),
    ] {
        let path = p.path().join(name);
        std::fs::write(&path, doc).unwrap();
        let out = p.verify_pinned(path.to_str().unwrap());
        assert_eq!(out.code, 2, "{name}: {}{}", out.stdout, out.stderr);
        assert!(
            out.stderr.contains("not an evidence bundle") && out.stderr.contains(kind),
            "{name}: {}",
            out.stderr
        );
    }
    // A bundle cut short is not JSON: unusable, and not taken for a ledger.
    let bytes = std::fs::read(&bundle).unwrap();
    let short = p.path().join("short.json");
    std::fs::write(&short, &bytes[..bytes.len() / 2]).unwrap();
    let out = p.verify_pinned(short.to_str().unwrap());
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("the bundle is not JSON") && !out.stderr.contains("ledger ("),
        "{}",
        out.stderr
    );
    // A bundle with its entries cut away is still a bundle, and invalid.
    let cut = p.path().join("cut.json");
    std::fs::write(&cut, r#"{"v": 2, "entries": []}"#).unwrap();
    assert_eq!(p.verify_pinned(cut.to_str().unwrap()).code, 1);
}

/// `verify` first tries a streaming pass that answers only for a clean bundle; it must answer
/// with the full verifier's report, byte for byte, and leave every other bundle to it: an
/// exported session, copies of it cut or edited, the saved fuzz inputs and seeds of the bundle
/// target. The command's own `--json` output is the full verifier's report too.
#[test]
fn the_streaming_pass_answers_only_with_the_full_verifiers_report() {
    use attenu_hook::evidence::keys::parse_pinned;
    use attenu_hook::evidence::verify::AnchorKey;
    use attenu_hook::evidence::verify::{verify_bundle_bytes, verify_clean_stream};
    let (p, bundle) = exported_session("streaming");
    let pub_text = std::fs::read_to_string(p.path().join(".attenu/anchor.pub")).unwrap();
    let key = AnchorKey::Pinned(parse_pinned(&pub_text).unwrap());
    let honest = std::fs::read(&bundle).unwrap();
    let text = String::from_utf8(honest.clone()).unwrap();
    let mut inputs = vec![
        honest.clone(),
        text.replacen("\"allow\"", "\"deny\"", 1).into_bytes(),
        text.replacen("\"ok\"", "\"ko\"", 1).into_bytes(),
        text.replacen("\"seq\":1,", "\"seq\":1.0,", 1).into_bytes(),
        text.replacen("{", "{\"envelopes\":[1],", 1).into_bytes(),
        honest[..honest.len() / 2].to_vec(),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["tests/fuzz_regressions/bundle", "fuzz/seeds/bundle"] {
        for f in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            inputs.push(std::fs::read(f.path()).unwrap());
        }
    }
    let mut answered = 0;
    for bytes in &inputs {
        let Some(streamed) = verify_clean_stream(bytes.as_slice(), &key) else {
            continue;
        };
        answered += 1;
        let full = verify_bundle_bytes(bytes, &key).expect("a streamed bundle is readable");
        assert_eq!(
            serde_json::to_string_pretty(&streamed).unwrap(),
            serde_json::to_string_pretty(&full).unwrap()
        );
    }
    assert!(answered >= 1, "the honest export is streamed");
    assert!(verify_clean_stream(honest.as_slice(), &key).is_some());
    let full = verify_bundle_bytes(&honest, &key).unwrap();
    let out = p.verify_pinned_json(&bundle);
    assert_eq!(
        out.stdout,
        format!("{}\n", serde_json::to_string_pretty(&full).unwrap())
    );
}

/// Every command that takes `--pub` reads a key file by one rule: the project's own
/// `anchor.pub` is accepted by `verify`, `report` and `audit` alike, and a copy naming another
/// algorithm or starting with a byte order mark is refused by all three (exit 2, before `audit`
/// reads the store), each saying which file and why.
#[test]
fn verify_report_and_audit_accept_and_refuse_the_same_key_files() {
    let (p, bundle) = exported_session("keyrule");
    let honest = p.path().join(".attenu/anchor.pub");
    let text = std::fs::read_to_string(&honest).unwrap();
    let dir = p.path().join("keys");
    std::fs::create_dir(&dir).unwrap();
    let rs256 = dir.join("rs256.pub");
    std::fs::write(&rs256, text.replace("\"EdDSA\"", "\"RS256\"")).unwrap();
    let bom = dir.join("bom.pub");
    std::fs::write(&bom, format!("\u{feff}{text}")).unwrap();
    let store = p.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let url = format!("file://{}", store.display());
    let page = p.path().join("report.html");
    let run_all = |key: &std::path::Path| {
        let key = key.to_str().unwrap();
        [
            cli(&["verify", &bundle, "--pub", key]),
            cli(&[
                "report",
                &bundle,
                "--pub",
                key,
                "--out",
                page.to_str().unwrap(),
            ]),
            cli(&["audit", &url, "--pub", key]),
        ]
    };
    // The key is accepted by all three; the audit of an empty store then fails on the finding
    // that the pinned key has no session there (issue 38), not on the key file.
    let [verify, report, audit] = run_all(&honest);
    for out in [&verify, &report] {
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    }
    assert_eq!(audit.code, 1, "{}{}", audit.stdout, audit.stderr);
    assert_contains(
        &audit.stdout,
        &["FINDING: the store holds no session of the pinned key"],
    );
    for (key, why) in [(&rs256, "alg is RS256"), (&bom, "byte order mark")] {
        for out in run_all(key) {
            assert_eq!(out.code, 2, "{key:?}: {}{}", out.stdout, out.stderr);
            assert_contains(
                &out.stderr,
                &[&format!("cannot use the key file {}: ", key.display()), why],
            );
        }
    }
}
