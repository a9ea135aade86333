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
        assert!(is_kebab_case(s), "{s} is not kebab-case");
        assert!(seen.insert(s), "{s} is used twice");
        assert_eq!(FailureName::from_name(s), Some(*name));
    }
}

/// Not empty, and only lowercase ASCII letters, digits and `-`.
fn is_kebab_case(s: &str) -> bool {
    let kebab = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    !s.is_empty() && s.bytes().all(kebab)
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
    assert_contains(&open.join("\n"), &[OPEN_READ, OPEN_BASH]);
    assert_contains(&out.stdout, &[INCOMPLETE]);
}

const OPEN_READ: &str = "(tool Read, agent reviewer, tool_use_id t2)";
const OPEN_BASH: &str = "(tool Bash, agent session, tool_use_id t5)";
const INCOMPLETE: &str =
    "NOTE execution binding incomplete: the ledger does not show how everything ended";

/// The wrong file is unusable input (exit 2) with what to pass instead, never a verdict on a
/// "bundle": the session's ledger, and one ledger line.
#[test]
fn a_ledger_or_a_line_of_it_is_unusable_input() {
    let (p, _) = exported_session("not-a-bundle");
    let ledger = p.path().join(".attenu/ledger-s1.jsonl");
    let out = assert_unusable(&p, &ledger, &["session ledger", "attenu-hook export"]);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let text = std::fs::read_to_string(&ledger).unwrap();
    let one_line = p.path().join("one-entry.json");
    std::fs::write(&one_line, text.lines().next().unwrap()).unwrap();
    assert_unusable(&p, &one_line, &["session ledger"]);
}

/// JSON that is no bundle at all is unusable input, saying what it is.
#[test]
fn json_that_is_no_bundle_is_unusable_input() {
    let (p, _) = exported_session("not-a-bundle-json");
    for (name, doc, kind) in NOT_BUNDLES {
        let path = p.path().join(name);
        std::fs::write(&path, doc).unwrap();
        assert_unusable(&p, &path, &["not an evidence bundle", kind]);
    }
}

const NOT_BUNDLES: [(&str, &str, &str); 3] = [
    ("array.json", "[1, 2]", "it is an array"),
    (
        "settings.json",
        r#"{"hooks": {}}"#,
        "neither \"entries\" nor \"anchor\"",
    ),
    ("null.json", "null", "it is null"),
];

/// A bundle cut short is not JSON: unusable, and not taken for a ledger. A bundle with its
/// entries cut away is still a bundle, and invalid.
#[test]
fn a_bundle_cut_short_is_unusable_and_one_without_entries_invalid() {
    let (p, bundle) = exported_session("cut-bundle");
    let bytes = bytes_of(std::path::Path::new(&bundle));
    let short = p.path().join("short.json");
    std::fs::write(&short, &bytes[..bytes.len() / 2]).unwrap();
    let out = assert_unusable(&p, &short, &["the bundle is not JSON"]);
    assert!(!out.stderr.contains("ledger ("), "{}", out.stderr);
    let cut = p.path().join("cut.json");
    std::fs::write(&cut, r#"{"v": 2, "entries": []}"#).unwrap();
    assert_eq!(p.verify_pinned(cut.to_str().unwrap()).code, 1);
}

/// `verify FILE --pub KEY` exits 2 (unusable input) saying each of `texts` on stderr: its
/// answer.
#[track_caller]
fn assert_unusable(p: &TempDir, file: &std::path::Path, texts: &[&str]) -> Out {
    let out = p.verify_pinned(file.to_str().unwrap());
    assert_eq!(out.code, 2, "{file:?}: {}{}", out.stdout, out.stderr);
    assert_contains(&out.stderr, texts);
    out
}

/// `verify` first tries a streaming pass that answers only for a clean bundle; it must answer
/// with the full verifier's report, byte for byte, and leave every other bundle to it: an
/// exported session, copies of it cut or edited, the saved fuzz inputs and seeds of the bundle
/// target. The command's own `--json` output is the full verifier's report too.
#[test]
fn the_streaming_pass_answers_only_with_the_full_verifiers_report() {
    use attenu_hook::evidence::verify::{verify_bundle_bytes, verify_clean_stream};
    let (p, bundle) = exported_session("streaming");
    let key = pinned_key(&p);
    let honest = std::fs::read(&bundle).unwrap();
    let answered = streamed_as_the_full_verifier(&streaming_inputs(&honest), &key);
    assert!(answered >= 1, "the honest export is streamed");
    assert!(verify_clean_stream(honest.as_slice(), &key).is_some());
    let full = verify_bundle_bytes(&honest, &key).unwrap();
    let out = p.verify_pinned_json(&bundle);
    assert_eq!(
        out.stdout,
        format!("{}\n", serde_json::to_string_pretty(&full).unwrap())
    );
}

/// The project's anchor.pub, as `verify --pub` reads it.
fn pinned_key(p: &TempDir) -> attenu_hook::evidence::verify::AnchorKey {
    use attenu_hook::evidence::keys::parse_pinned;
    let pub_text = std::fs::read_to_string(p.path().join(".attenu/anchor.pub")).unwrap();
    attenu_hook::evidence::verify::AnchorKey::Pinned(parse_pinned(&pub_text).unwrap())
}

/// The honest export, copies of it edited or cut, and the saved fuzz inputs and seeds of the
/// bundle target.
fn streaming_inputs(honest: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8(honest.to_vec()).unwrap();
    let mut inputs = vec![
        honest.to_vec(),
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
    inputs
}

/// Each of `inputs` the streaming pass answers for is answered with the full verifier's report
/// to the byte: how many it answered for.
fn streamed_as_the_full_verifier(
    inputs: &[Vec<u8>],
    key: &attenu_hook::evidence::verify::AnchorKey,
) -> usize {
    use attenu_hook::evidence::verify::{verify_bundle_bytes, verify_clean_stream};
    let mut answered = 0;
    for bytes in inputs {
        let Some(streamed) = verify_clean_stream(bytes.as_slice(), key) else {
            continue;
        };
        answered += 1;
        let full = verify_bundle_bytes(bytes, key).expect("a streamed bundle is readable");
        assert_eq!(
            serde_json::to_string_pretty(&streamed).unwrap(),
            serde_json::to_string_pretty(&full).unwrap()
        );
    }
    answered
}

/// Every command that takes `--pub` reads a key file by one rule: the project's own
/// `anchor.pub` is accepted by `verify`, `report` and `audit` alike, and a copy naming another
/// algorithm or starting with a byte order mark is refused by all three (exit 2, before `audit`
/// reads the store), each saying which file and why.
#[test]
fn verify_report_and_audit_accept_and_refuse_the_same_key_files() {
    let (p, bundle) = exported_session("keyrule");
    let honest = p.path().join(".attenu/anchor.pub");
    let (rs256, bom) = refused_copies_of(&honest, &p.path().join("keys"));
    let with_key = KeyRun::new(&p, &bundle);
    // The key is accepted by all three; the audit of an empty store then fails on the finding
    // that the pinned key has no session there (issue 38), not on the key file.
    let [verify, report, audit] = with_key.run_all(&honest);
    for out in [&verify, &report] {
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    }
    assert_eq!(audit.code, 1, "{}{}", audit.stdout, audit.stderr);
    assert_contains(&audit.stdout, &[NO_SESSION]);
    for (key, why) in [(&rs256, "alg is RS256"), (&bom, "byte order mark")] {
        for out in with_key.run_all(key) {
            assert_eq!(out.code, 2, "{key:?}: {}{}", out.stdout, out.stderr);
            let which = format!("cannot use the key file {}: ", key.display());
            assert_contains(&out.stderr, &[&which, why]);
        }
    }
}

const NO_SESSION: &str = "FINDING: the store holds no session of the pinned key";

/// Copies of the key file `honest` in `dir`: one naming RS256 as its algorithm, one starting
/// with a byte order mark.
fn refused_copies_of(
    honest: &std::path::Path,
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let text = std::fs::read_to_string(honest).unwrap();
    std::fs::create_dir(dir).unwrap();
    let rs256 = dir.join("rs256.pub");
    std::fs::write(&rs256, text.replace("\"EdDSA\"", "\"RS256\"")).unwrap();
    let bom = dir.join("bom.pub");
    std::fs::write(&bom, format!("\u{feff}{text}")).unwrap();
    (rs256, bom)
}

/// The three commands that take `--pub`, on one bundle, one store and one page.
struct KeyRun<'a> {
    bundle: &'a str,
    url: String,
    page: std::path::PathBuf,
}

impl KeyRun<'_> {
    /// The project's `bundle`, an empty directory store in the project, a page beside it.
    fn new<'a>(p: &TempDir, bundle: &'a str) -> KeyRun<'a> {
        let store = p.path().join("store");
        std::fs::create_dir(&store).unwrap();
        let url = format!("file://{}", store.display());
        KeyRun {
            bundle,
            url,
            page: p.path().join("report.html"),
        }
    }

    /// `verify`, `report` and `audit`, each with `--pub KEY`.
    fn run_all(&self, key: &std::path::Path) -> [Out; 3] {
        let (key, page) = (key.to_str().unwrap(), self.page.to_str().unwrap());
        [
            cli(&["verify", self.bundle, "--pub", key]),
            cli(&["report", self.bundle, "--pub", key, "--out", page]),
            cli(&["audit", &self.url, "--pub", key]),
        ]
    }
}
