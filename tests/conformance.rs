//! Conformance with the reference: every bundle our binary writes verifies with
//! `attenu_guard.evidence.verify_bundle` from attenu-guard[crypto]==0.21.0, holding only
//! `anchor.pub`; tampered copies are rejected by it and by `attenu-hook verify`.
//! Needs ATTENU_REF_PYTHON (set by .ci/run): without it these tests show as ignored, and fail
//! under ATTENU_REQUIRE_LIVE=1 or CI.

mod common;
use attenu_hook::evidence::verify::{
    verify_bundle, verify_clean_stream, AnchorKey, FailureName, Report,
};
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    harness::run(tests![
        reference_accepts_allows_denies_undeclared_agents_and_outcomes,
        reference_accepts_shadow_mode,
        reference_accepts_every_chain_of_a_mid_session_edit,
        reference_accepts_both_chains_when_a_call_spans_a_mid_session_edit,
        reference_accepts_a_thousand_entry_session,
        reference_accepts_a_ledger_recording_lost_sealed_states,
        both_verifiers_reject_tampered_copies,
        sixteen_processes_exporting_and_appending_at_once_leave_one_key_and_valid_bundles,
        verdicts_match_the_reference_vectors,
        reference_accepts_a_bundle_signed_by_a_certified_key,
        reference_accepts_summaries_presets_and_every_identity_shape,
    ]);
}

fn export(project: &Path, session: &str) -> Vec<PathBuf> {
    let out = cli(&[
        "export",
        "--project",
        project.to_str().unwrap(),
        "--session",
        session,
    ]);
    assert_eq!(out.code, 0, "export failed: {}", out.stderr);
    out.stdout.lines().map(PathBuf::from).collect()
}

/// The reference accepts `bundle` under the project's anchor.pub: its report.
fn assert_reference_alone_accepts(py: &str, project: &Path, bundle: &Path) -> Value {
    let report = reference_verify(py, bundle, &project.join(".attenu/anchor.pub"));
    assert_eq!(
        report["ok"],
        true,
        "reference rejected {}: {report}",
        bundle.display()
    );
    assert_eq!(report["checks"]["anchor"], "verified");
    report
}

fn assert_reference_accepts(py: &str, project: &Path, bundle: &Path) -> Value {
    let report = assert_reference_alone_accepts(py, project, bundle);
    let ours = project.verify_pinned(bundle.to_str().unwrap());
    assert_eq!(
        ours.code, 0,
        "attenu-hook verify disagrees: {}{}",
        ours.stdout, ours.stderr
    );
    report
}

/// The session's export is two bundles (two chains), each accepted by both verifiers.
fn assert_reference_accepts_both_chains(py: &str, project: &Path) {
    let bundles = export(project, "s1");
    assert_eq!(bundles.len(), 2);
    for b in &bundles {
        assert_reference_accepts(py, project, b);
    }
}

/// The seed's five calls, an undeclared agent, the main thread, outcomes for what ran.
fn mixed_session(p: &Path, session: &str) {
    let calls = [
        (Some("reviewer"), "Read", json!({"file_path": "/p/a.py"})),
        (
            Some("reviewer"),
            "Write",
            json!({"file_path": "/p/a.py", "content": "x"}),
        ),
        (Some("reviewer"), "Bash", json!({"command": "ls"})),
        (
            Some("reviewer"),
            "WebFetch",
            json!({"url": "https://example.com"}),
        ),
        (
            Some("researcher"),
            "WebFetch",
            json!({"url": "https://example.com"}),
        ),
        (Some("Explore"), "Grep", json!({"pattern": "x"})),
        (None, "Bash", json!({"command": "make"})),
        (None, "Read", json!({"file_path": "/p/b.py"})),
    ];
    for (i, (agent, tool, input)) in calls.iter().enumerate() {
        let id = format!("toolu_{i}");
        let call = Call::pre(p, *agent, tool)
            .session(session)
            .input(input.clone())
            .id(&id);
        if !call.run().denied() {
            call.post(json!({"ok": true})).run();
        }
    }
    hook(p, &event(session, p, "SubagentStop"));
    hook(p, &event(session, p, "SessionEnd"));
}

fn reference_accepts_allows_denies_undeclared_agents_and_outcomes() {
    let py = need_reference_python();
    let p = sample("conf-mixed");
    mixed_session(p.path(), "s1");
    let bundle = p.path().join(".attenu/bundle-s1.json");
    assert!(bundle.exists(), "SessionEnd exports the bundle");
    let report = assert_reference_accepts(&py, p.path(), &bundle);
    let binding = &report["execution_binding"];
    assert_eq!(binding, "clean", "every call finished: {report}");
    // The main thread's unheld Bash is recorded as ungated.
    assert_eq!(report["ungated"], 1);
}

fn reference_accepts_shadow_mode() {
    let py = need_reference_python();
    let p = sample("conf-shadow");
    write_config(p.path(), "mode = \"shadow\"\n");
    mixed_session(p.path(), "s1");
    let report = assert_reference_accepts(&py, p.path(), &p.path().join(".attenu/bundle-s1.json"));
    assert!(report["ungated"].as_u64().unwrap() >= 4, "{report}");
}

/// Issue 26: a lost or broken sealed state is recorded in an entry's `context.checkpoint_lost`
/// (here on an allow, and on the outcome after a second loss). The reference reads `context`
/// as free-form and accepts the bundle; ours says VALID with a NOTICE and exits 4.
fn reference_accepts_a_ledger_recording_lost_sealed_states() {
    let py = need_reference_python();
    let p = sample("conf-lost");
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "t1"));
    remove_sealed_state(p.path());
    assert_allowed(&reviewer_read(p.path(), "s1", "/b", "t2"));
    std::fs::write(sealed_state_of(p.path()), b"attenu-checkpoint v4 00\n{}").unwrap();
    assert_allowed(&p.read_by("reviewer", "/b").id("t2").post(json!("ok")).run());
    let es = p.entries("s1");
    let causes = es.iter().map(|e| &e["context"]["checkpoint_lost"]["cause"]);
    let lost: Vec<&str> = causes.filter_map(Value::as_str).collect();
    assert_eq!(lost, ["missing", "seal-broken"], "{es:?}");
    let bundles = export(p.path(), "s1");
    assert_reference_alone_accepts(&py, p.path(), &bundles[0]);
    let ours = p.verify_pinned(bundles[0].to_str().unwrap());
    assert_eq!(ours.code, 4, "{}{}", ours.stdout, ours.stderr);
    let notices = ours.stdout.matches("NOTICE checkpoint-lost").count();
    assert_eq!(notices, 2, "{}", ours.stdout);
}

fn reference_accepts_every_chain_of_a_mid_session_edit() {
    let py = need_reference_python();
    let p = sample("conf-edit");
    mixed_session(p.path(), "s1");
    set_agent_tools(p.path(), "reviewer", "Read, Bash");
    // The edit is read when the session is resumed (a running session keeps its pin).
    assert_eq!(p.session_start("s1", "resume").code, 0);
    mixed_session(p.path(), "s1");
    assert_reference_accepts_both_chains(&py, p.path());
}

/// A call allowed on one chain whose outcome arrives after an agent edit (read by a resume)
/// started the next: the
/// outcome cannot be bound to the new chain (it would be an outcome without an allow), so it is
/// not recorded there (Claude stops and a marker is left), and every bundle still verifies.
fn reference_accepts_both_chains_when_a_call_spans_a_mid_session_edit() {
    let py = need_reference_python();
    let p = sample("conf-span");
    let read = |id: &str, path: &str| p.read_by("reviewer", path).id(id);
    assert_allowed(&read("t1", "/p/a").run());
    set_agent_tools(p.path(), "reviewer", "Read, Grep");
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert_allowed(&read("t2", "/p/b").run());
    for (id, path) in [("t1", "/p/a"), ("t2", "/p/b")] {
        let out = read(id, path).post(json!({"ok": true})).run();
        let halted = out.json()["continue"] == false;
        assert_eq!(halted, id == "t1", "{id}: {}", out.stdout);
    }
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    assert_reference_accepts_both_chains(&py, p.path());
}

fn reference_accepts_a_thousand_entry_session() {
    let py = need_reference_python();
    let p = sample("conf-large");
    (0..700).for_each(|i| reviewer_read_or_researcher_bash(&p, i));
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let report = assert_reference_accepts(&py, p.path(), &bundle);
    assert!(report["entries"].as_u64().unwrap() >= 1000, "{report}");
}

/// Call `i` of a long session: the reviewer's Read (even) or the researcher's Bash (odd), and
/// its outcome when it was not denied.
fn reviewer_read_or_researcher_bash(p: &TempDir, i: usize) {
    let (agent, tool) = if i.is_multiple_of(2) {
        ("reviewer", "Read")
    } else {
        ("researcher", "Bash")
    };
    let id = format!("toolu_{i}");
    let input = json!({"file_path": format!("/p/{i}"), "command": "true"});
    let call = p.subagent(agent, tool).input(input).id(&id);
    if !call.run().denied() {
        call.post(json!({"n": i})).run();
    }
}

/// Writes a tampered copy of a bundle and asserts both verifiers reject it.
fn assert_both_reject(py: &str, project: &Path, bundle: &Value, name: &str) {
    let path = project.join(format!("tampered-{name}.json"));
    std::fs::write(&path, serde_json::to_vec(bundle).unwrap()).unwrap();
    let report = reference_verify(py, &path, &project.join(".attenu/anchor.pub"));
    assert_eq!(report["ok"], false, "reference accepted the {name} copy");
    let ours = project.verify_pinned(path.to_str().unwrap());
    assert_eq!(
        ours.code, 1,
        "attenu-hook verify must call the {name} copy invalid (exit 1): {}{}",
        ours.stdout, ours.stderr
    );
}

fn both_verifiers_reject_tampered_copies() {
    let py = need_reference_python();
    let p = sample("conf-tamper");
    mixed_session(p.path(), "s1");
    let original: Value = serde_json::from_slice(&bytes_of(&p.ledger_bundle())).unwrap();
    let entries = |f: &dyn Fn(&mut Vec<Value>)| edited_entries(&original, f);
    // Root, the reviewer's spawn, then its first decision.
    assert_eq!(original["entries"][2]["event"], "allow");
    let changed = entries(&|es| es[2]["tool"] = json!("Bash"));
    assert_both_reject(&py, p.path(), &changed, "field-changed");
    let removed = entries(&|es| drop(es.remove(6)));
    assert_both_reject(&py, p.path(), &removed, "entry-removed");
    let truncated = entries(&|es| es.truncate(es.len() - 3));
    assert_both_reject(&py, p.path(), &truncated, "tail-truncated");
    // Re-signed by someone else's key: internally consistent, but not by the pinned key.
    assert_both_reject(&py, p.path(), &resigned(&original), "re-signed");
}

/// `bundle` with its entries edited by `edit`.
fn edited_entries(bundle: &Value, edit: &dyn Fn(&mut Vec<Value>)) -> Value {
    let mut copy = bundle.clone();
    edit(copy["entries"].as_array_mut().unwrap());
    copy
}

/// `bundle`'s entries in a bundle signed by a key of someone else's.
fn resigned(bundle: &Value) -> Value {
    let other_dir = TempDir::new("otherkey");
    let other = attenu_hook::evidence::keys::generate_to(&other_dir.path().join("k")).unwrap();
    let entries = bundle["entries"].as_array().unwrap().clone();
    attenu_hook::evidence::bundle::build(entries, &other, 1, 1).unwrap()
}

/// Session s1's bundle (`.attenu/bundle-s1.json`).
trait Bundled {
    fn ledger_bundle(&self) -> PathBuf;
}

impl Bundled for TempDir {
    fn ledger_bundle(&self) -> PathBuf {
        self.path().join(".attenu/bundle-s1.json")
    }
}

fn sixteen_processes_exporting_and_appending_at_once_leave_one_key_and_valid_bundles() {
    let p = sample("conf-race");
    // Round one, on a project with no key yet: sixteen first calls race to create it.
    assert!(all_at_once(16, |i| {
        reviewer_read(p.path(), "s1", &format!("/{i}"), &format!("r1-{i}")).is_allow()
    }));
    // One anchor.key and one anchor.pub, no leftovers.
    assert_eq!(anchor_files(p.path()), 2);
    let key_before = bytes_of(&p.path().join(".attenu/anchor.key"));
    // Round two: eight appenders and eight exporters at once.
    assert!(all_at_once(16, |i| append_or_export(&p, i)));
    let key_after = bytes_of(&p.path().join(".attenu/anchor.key"));
    assert_eq!(key_after, key_before, "the key is never replaced");
    let bundles = export(p.path(), "s1");
    let ours = p.verify_pinned(bundles[0].to_str().unwrap());
    assert_eq!(ours.code, 0, "{}", ours.stdout);
    // The root, the reviewer's one spawn, every decision.
    assert_eq!(p.entries("s1").len(), 2 + 16 + 8);
    // Everything above ran; without the reference verifier its check alone is reported missing.
    let py = need_reference_python();
    assert_reference_accepts(&py, p.path(), &bundles[0]);
}

/// How many files in the project's `.attenu/` have names starting `anchor.`.
fn anchor_files(p: &Path) -> usize {
    let dir = std::fs::read_dir(p.join(".attenu")).unwrap().flatten();
    dir.filter(|e| e.file_name().to_string_lossy().starts_with("anchor."))
        .count()
}

/// Racer `i` of round two: a reviewer's read (even) or an export (odd); whether it worked.
fn append_or_export(p: &TempDir, i: usize) -> bool {
    if i.is_multiple_of(2) {
        let read = p.subagent("reviewer", "Read").id(&format!("r2-{i}"));
        read.run().is_allow()
    } else {
        cli(&["export", "--project", p.dir(), "--session", "s1"]).code == 0
    }
}

// =============================================================================================
// The reference's own bundle vectors (attenu-guard 0.21.0, `vectors/bundles/bundle_vectors_v1.json`):
// `attenu-hook verify` reaches the reference's verdict on each. The vectors are read from the
// installed reference package, never copied into this repository.
// =============================================================================================

/// The reference verifier's complete failure list for every case, as (reason, seq, node),
/// from one run of `attenu_guard.evidence.verify_bundle` with each case's own signer.
const REFERENCE_RUN: &str = r#"
import json, sys
from attenu_guard import evidence
from attenu_guard.wire import HS256TestSigner
doc = json.load(open(sys.argv[1]))
out = {}
for case in doc["cases"]:
    s = case["signer"]
    report = evidence.verify_bundle(case["bundle"], HS256TestSigner(bytes.fromhex(s["secret_hex"]), kid=s["kid"]))
    out[case["name"]] = {"ok": report["ok"],
                         "failures": [[d["reason"], d["seq"], d["node"]] for d in report["failure_details"]]}
print(json.dumps(out))
"#;

fn python() -> Option<std::ffi::OsString> {
    std::env::var_os("ATTENU_REF_PYTHON")
}

/// The directory of the installed `attenu_guard` package, or why it cannot be found.
fn reference_package() -> Result<PathBuf, String> {
    let python = python().ok_or("ATTENU_REF_PYTHON is not set")?;
    let out = Command::new(&python)
        .args([
            "-c",
            "import attenu_guard, os; print(os.path.dirname(attenu_guard.__file__))",
        ])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", PathBuf::from(&python).display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} cannot import attenu_guard: {}",
            PathBuf::from(&python).display(),
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn describe(report: &Report) -> String {
    report
        .failures
        .iter()
        .map(|f| {
            format!(
                "  {} (ref {:?}) index={:?} seq={:?} node={:?}: {}",
                f.name, f.reference_reason, f.index, f.seq, f.node, f.detail
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn verdicts_match_the_reference_vectors() {
    let (path, doc) = reference_vectors();
    let cases = doc["cases"].as_array().expect("cases");
    let found = cases.len();
    assert!(found >= 29, "expected at least 29 cases, found {found}");
    let reference = reference_verdicts(&path);
    let problems: Vec<String> = cases
        .iter()
        .flat_map(|c| disagreements(c, &reference))
        .collect();
    let n = problems.len();
    let all = problems.join("\n\n");
    assert!(
        problems.is_empty(),
        "{n} disagreement(s) with the reference:\n{all}"
    );
}

/// The reference's bundle vectors from its installed package (the test is skipped without
/// it): the file's path and its document, of version `bundle_vectors_v1`.
fn reference_vectors() -> (PathBuf, Value) {
    let package = reference_package().unwrap_or_else(|why| {
        skip(format!(
            "needs the reference verifier and its vectors: {why}"
        ))
    });
    let path = package.join("vectors/bundles/bundle_vectors_v1.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "the reference is installed but {} cannot be read: {e}",
            path.display()
        )
    });
    let doc: Value = serde_json::from_str(&text).expect("the vector file is JSON");
    assert_eq!(
        doc["version"], "bundle_vectors_v1",
        "an incompatible vector file"
    );
    (path, doc)
}

/// [`REFERENCE_RUN`] on the vector file at `path`: each case's verdict and failures.
fn reference_verdicts(path: &Path) -> Value {
    let out = Command::new(python().expect("checked above"))
        .arg("-c")
        .arg(REFERENCE_RUN)
        .arg(path)
        .output()
        .expect("the reference python runs");
    assert!(
        out.status.success(),
        "the reference verifier failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reference prints JSON")
}

/// Where `attenu-hook verify` disagrees with the vector `case` or with the reference's own
/// run of it (`reference`, by case name): one line per disagreement.
fn disagreements(case: &Value, reference: &Value) -> Vec<String> {
    let name = case["name"].as_str().expect("name");
    let signer = &case["signer"];
    assert_eq!(
        signer["alg"], "HS256",
        "{name}: only HS256 vectors are known"
    );
    let key = AnchorKey::Hmac(unhex(signer["secret_hex"].as_str().expect("secret_hex")));
    let report = verify_bundle(&case["bundle"], &key);
    let mut problems = streaming_disagrees(name, case, &key, &report);
    let accept = match case["expect"].as_str() {
        Some("accept") => true,
        Some("reject") => false,
        other => panic!("{name}: unknown expect {other:?}"),
    };
    if report.valid != accept {
        problems.push(format!(
            "{name}: expected {}, got valid={}\n{}",
            case["expect"],
            report.valid,
            describe(&report)
        ));
        return problems;
    }
    problems.extend(reasons_not_their_own(name, &report));
    problems.extend(required_failures_missing(name, case, &report));
    problems.extend(failures_differ_from_the_reference(
        name,
        accept,
        &reference[name],
        &report,
    ));
    problems.extend(report_counts_differ(name, case, &report));
    problems.extend(unkeyed_disagrees(name, case, accept));
    problems
}

/// The streaming pass `verify` tries first answers with this same report or not at all.
fn streaming_disagrees(name: &str, case: &Value, key: &AnchorKey, report: &Report) -> Vec<String> {
    let bytes = serde_json::to_vec(&case["bundle"]).expect("JSON");
    let Some(streamed) = verify_clean_stream(bytes.as_slice(), key) else {
        return Vec::new();
    };
    let text = |r: &Report| serde_json::to_string_pretty(r).expect("JSON");
    if text(&streamed) != text(report) {
        return vec![format!("{name}: the streaming pass reports otherwise")];
    }
    Vec::new()
}

/// Failures whose reference reason is not their own name's.
fn reasons_not_their_own(name: &str, report: &Report) -> Vec<String> {
    let wrong = report
        .failures
        .iter()
        .filter(|f| f.reference_reason != f.name.reference_reason());
    wrong
        .map(|f| {
            format!(
                "{name}: failure {} carries a reference reason not its own",
                f.name
            )
        })
        .collect()
}

/// Every required failure is one of ours, mapped to the same reason, at the same position.
fn required_failures_missing(name: &str, case: &Value, report: &Report) -> Vec<String> {
    let mut problems = Vec::new();
    for want in case["expect_failures"].as_array().expect("expect_failures") {
        let reason = want["reason"].as_str().expect("reason");
        let found = report.failures.iter().any(|f| {
            f.reference_reason == Some(reason)
                && want["seq"].as_i64() == f.seq
                && want["node"].as_str() == f.node.as_deref()
        });
        if !found {
            problems.push(format!(
                "{name}: required failure {reason} at seq {} node {} not reported\n{}",
                want["seq"],
                want["node"],
                describe(report)
            ));
        }
    }
    problems
}

/// Beyond the minimal required set: the same failures as the reference reports (`theirs`), as
/// a set of (reason, seq, node), with nothing missing and nothing extra.
fn failures_differ_from_the_reference(
    name: &str,
    accept: bool,
    theirs: &Value,
    report: &Report,
) -> Vec<String> {
    assert_eq!(
        theirs["ok"].as_bool(),
        Some(accept),
        "{name}: the reference disagrees with its own vector"
    );
    let key_of = |reason: &str, seq: Option<i64>, node: Option<&str>| {
        format!("{reason} seq={seq:?} node={node:?}")
    };
    let mut want: Vec<String> = theirs["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| key_of(f[0].as_str().expect("reason"), f[1].as_i64(), f[2].as_str()))
        .collect();
    let mut got: Vec<String> = report
        .failures
        .iter()
        .map(|f| {
            key_of(
                f.reference_reason.unwrap_or("(none)"),
                f.seq,
                f.node.as_deref(),
            )
        })
        .collect();
    for list in [&mut want, &mut got] {
        list.sort();
        list.dedup();
    }
    if want != got {
        return vec![format!(
            "{name}: the reference reports {want:?}\n  we report {got:?}"
        )];
    }
    Vec::new()
}

/// The counts the vector's `expect_report` names, compared with ours.
fn report_counts_differ(name: &str, case: &Value, report: &Report) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(expected) = case.get("expect_report").and_then(Value::as_object) else {
        return problems;
    };
    for (field, value) in expected {
        let ours = match field.as_str() {
            "actions_checked" => report.actions_checked as u64,
            "ungated" => report.ungated as u64,
            "nodes" => report.nodes as u64,
            other => {
                problems.push(format!(
                    "{name}: expect_report field {other} is not compared"
                ));
                continue;
            }
        };
        if value.as_u64() != Some(ours) {
            problems.push(format!(
                "{name}: {field} is {ours}, the vector says {value}"
            ));
        }
    }
    problems
}

/// Without a key the verdict is never valid (our deliberate strictness), and an accepting case
/// fails for that reason alone.
fn unkeyed_disagrees(name: &str, case: &Value, accept: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let unkeyed = verify_bundle(&case["bundle"], &AnchorKey::None);
    if unkeyed.valid
        || !unkeyed
            .failures
            .iter()
            .any(|f| f.name == FailureName::AnchorNotChecked)
    {
        problems.push(format!(
            "{name}: without a key the bundle must be reported anchor-not-checked"
        ));
    }
    if accept && unkeyed.failures.len() != 1 {
        problems.push(format!(
            "{name}: an accepting case without a key must fail on anchor-not-checked alone\n{}",
            describe(&unkeyed)
        ));
    }
    problems
}

/// A runner signing with a key and certificate made by the real `ssh-keygen`: the bundle
/// carries the certificate (`signer`) and the root its identity, and the reference verifier,
/// given the certified key as an anchor.pub, accepts it.
fn reference_accepts_a_bundle_signed_by_a_certified_key() {
    let py = need_reference_python();
    need_tool("ssh-keygen", "-?");
    let keys = TempDir::new("conf-cert-keys");
    let (key, cert) = certified_runner_key(keys.path());
    let p = sample("conf-cert");
    session_signed_with(&p, &key, &cert);
    let bundle_path = p.path().join(".attenu/bundle-s1.json");
    let bundle: Value = serde_json::from_slice(&bytes_of(&bundle_path)).unwrap();
    let certified = attenu_hook::trust::Cert::parse(&std::fs::read_to_string(&cert).unwrap());
    let certified = certified.unwrap();
    assert_eq!(
        bundle["signer"]["certificate"].as_str().unwrap(),
        certified.line
    );
    assert_eq!(bundle["anchor"]["kid"], certified.kid().as_str());
    let identity = &bundle["entries"][0]["context"]["identity"];
    assert_eq!(identity["signer"]["certificate"]["key_id"], "ci-main");
    let anchor_pub = keys.path().join("runner-anchor.pub");
    std::fs::write(&anchor_pub, anchor_pub_of(&certified)).unwrap();
    let report = reference_verify(&py, &bundle_path, &anchor_pub);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["checks"]["anchor"], "verified", "{report}");
}

/// A CA and a runner's key made with `ssh-keygen` in `dir`, the key certified by the CA as
/// `ci-main` for `attenu-hook`: the key's path and its certificate's.
fn certified_runner_key(dir: &Path) -> (PathBuf, PathBuf) {
    let run = |args: &[&str]| {
        let out = Command::new("ssh-keygen").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (ca, key) = (dir.join("ca"), dir.join("runner"));
    for k in [&ca, &key] {
        run(&["-q", "-t", "ed25519", "-N", "", "-f", k.to_str().unwrap()]);
    }
    let public = format!("{}.pub", key.display());
    let ca = ca.to_str().unwrap();
    run(&[
        "-q",
        "-s",
        ca,
        "-I",
        "ci-main",
        "-n",
        "attenu-hook",
        "-V",
        "+1d",
        &public,
    ]);
    (key, dir.join("runner-cert.pub"))
}

/// Session s1 of `p` (a start, a read, a denied Bash, the end) signed with the key file `key`
/// and its certificate `cert`, each event answered with exit 0.
fn session_signed_with(p: &TempDir, key: &Path, cert: &Path) {
    let env = [
        ("ATTENU_SIGNING_KEY_FILE", key.as_os_str()),
        ("ATTENU_SIGNING_CERT_FILE", cert.as_os_str()),
    ];
    for e in [
        session_start("s1", p.path(), "startup"),
        p.read_by("reviewer", "/p/a").id("t1").value(),
        p.bash_by("reviewer", "ls").id("t2").value(),
        event("s1", p.path(), "SessionEnd"),
    ] {
        assert_eq!(hook_env(p.path(), &e, &env).code, 0);
    }
}

/// An anchor.pub holding the certified key.
fn anchor_pub_of(certified: &attenu_hook::trust::Cert) -> String {
    let public_key = attenu_hook::ledger::chain::hex(certified.public.as_bytes());
    json!({"alg": "EdDSA", "kid": certified.kid(), "public_key": public_key}).to_string()
}

/// Issue 39: `context.summary` (`[privacy] record = "summary"`), the built-in preset's spawns,
/// and the identity shapes (an unidentified agent_id, a teammate's empty agent_id, a
/// `--agent` main thread) all in one bundle the reference accepts.
fn reference_accepts_summaries_presets_and_every_identity_shape() {
    let py = need_reference_python();
    let p = sample("conf-identity");
    p.config("[privacy]\nrecord = \"summary\"\n[derive]\nbuiltin_agents = true\n");
    mixed_session(p.path(), "s1");
    every_identity_shape(&p, "s2");
    hook(p.path(), &event("s2", p.path(), "SessionEnd"));
    for session in ["s1", "s2"] {
        let bundle = p.path().join(format!(".attenu/bundle-{session}.json"));
        let text = std::fs::read_to_string(&bundle).unwrap();
        assert!(text.contains("\"summary\""), "{session} has summaries");
        assert!(!text.contains("s3cr3t"));
        assert_reference_accepts(&py, p.path(), &bundle);
    }
}

/// Calls in `session` by an unidentified agent_id, a teammate (empty agent_id), a `--agent`
/// main thread and a built-in agent, each with a secret in its input.
fn every_identity_shape(p: &TempDir, session: &str) {
    let shapes = [
        (Some("a9f31c0d"), None, "Read"),
        (Some(""), Some("reviewer"), "Read"),
        (None, Some("reviewer"), "Bash"),
        (Some("e1"), Some("Explore"), "Read"),
    ];
    for (i, (id, ty, tool)) in shapes.iter().enumerate() {
        let input = json!({"file_path": "/p/a.py", "command": "TOKEN=s3cr3t make"});
        let mut payload = pre(session, p.path(), None, tool, input, &format!("toolu_{i}"));
        if let Some(id) = id {
            payload["agent_id"] = json!(id);
        }
        if let Some(ty) = ty {
            payload["agent_type"] = json!(ty);
        }
        hook(p.path(), &payload);
    }
}
