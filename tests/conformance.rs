//! Conformance with the reference: every bundle our binary writes verifies with
//! `attenu_guard.evidence.verify_bundle` from attenu-guard[crypto]==0.21.0, holding only
//! `anchor.pub`; tampered copies are rejected by it and by `attenu-hook verify`.
//! Needs ATTENU_REF_PYTHON (set by .ci/run): without it these tests show as ignored, and fail
//! under ATTENU_REQUIRE_LIVE=1 or CI.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn main() {
    harness::run(tests![
        reference_accepts_allows_denies_undeclared_agents_and_outcomes,
        reference_accepts_shadow_mode,
        reference_accepts_every_chain_of_a_mid_session_edit,
        reference_accepts_both_chains_when_a_call_spans_a_mid_session_edit,
        reference_accepts_a_thousand_entry_session,
        both_verifiers_reject_tampered_copies,
        sixteen_processes_exporting_and_appending_at_once_leave_one_key_and_valid_bundles
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

fn assert_reference_accepts(py: &str, project: &Path, bundle: &Path) -> Value {
    let report = reference_verify(py, bundle, &project.join(".attenu/anchor.pub"));
    assert_eq!(
        report["ok"],
        true,
        "reference rejected {}: {report}",
        bundle.display()
    );
    assert_eq!(report["checks"]["anchor"], "verified");
    let ours = cli(&[
        "verify",
        bundle.to_str().unwrap(),
        "--pub",
        project.join(".attenu/anchor.pub").to_str().unwrap(),
    ]);
    assert_eq!(
        ours.code, 0,
        "attenu-hook verify disagrees: {}{}",
        ours.stdout, ours.stderr
    );
    report
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
        let out = hook(p, &pre(session, p, *agent, tool, input.clone(), &id));
        if !out.denied() {
            hook(
                p,
                &post(
                    session,
                    p,
                    *agent,
                    tool,
                    input.clone(),
                    &id,
                    json!({"ok": true}),
                ),
            );
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
    assert_eq!(
        report["execution_binding"], "clean",
        "every call finished: {report}"
    );
    assert_eq!(
        report["ungated"], 1,
        "the main thread's unheld Bash is recorded as ungated"
    );
}

fn reference_accepts_shadow_mode() {
    let py = need_reference_python();
    let p = sample("conf-shadow");
    write_config(p.path(), "mode = \"shadow\"\n");
    mixed_session(p.path(), "s1");
    let report = assert_reference_accepts(&py, p.path(), &p.path().join(".attenu/bundle-s1.json"));
    assert!(report["ungated"].as_u64().unwrap() >= 4, "{report}");
}

fn reference_accepts_every_chain_of_a_mid_session_edit() {
    let py = need_reference_python();
    let p = sample("conf-edit");
    mixed_session(p.path(), "s1");
    std::fs::write(
        p.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ntools: Read, Bash\n---\n",
    )
    .unwrap();
    mixed_session(p.path(), "s1");
    let bundles = export(p.path(), "s1");
    assert_eq!(bundles.len(), 2);
    for b in &bundles {
        assert_reference_accepts(&py, p.path(), b);
    }
}

/// A call allowed on one chain whose outcome arrives after an agent edit started the next: the
/// outcome cannot be bound to the new chain (it would be an outcome without an allow), so it is
/// not recorded there (Claude stops and a marker is left), and every bundle still verifies.
fn reference_accepts_both_chains_when_a_call_spans_a_mid_session_edit() {
    let py = need_reference_python();
    let p = sample("conf-span");
    let read = |id: &str, path: &str| {
        pre(
            "s1",
            p.path(),
            Some("reviewer"),
            "Read",
            json!({"file_path": path}),
            id,
        )
    };
    assert!(hook(p.path(), &read("t1", "/p/a")).is_allow());
    std::fs::write(
        p.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ntools: Read, Grep\n---\n",
    )
    .unwrap();
    assert!(hook(p.path(), &read("t2", "/p/b")).is_allow());
    for (id, path) in [("t1", "/p/a"), ("t2", "/p/b")] {
        let outcome = post(
            "s1",
            p.path(),
            Some("reviewer"),
            "Read",
            json!({"file_path": path}),
            id,
            json!({"ok": true}),
        );
        let out = hook(p.path(), &outcome);
        let halted = out.json()["continue"] == false;
        assert_eq!(halted, id == "t1", "{id}: {}", out.stdout);
    }
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    let bundles = export(p.path(), "s1");
    assert_eq!(bundles.len(), 2);
    for b in &bundles {
        assert_reference_accepts(&py, p.path(), b);
    }
}

fn reference_accepts_a_thousand_entry_session() {
    let py = need_reference_python();
    let p = sample("conf-large");
    for i in 0..700 {
        let (agent, tool) = if i % 2 == 0 {
            ("reviewer", "Read")
        } else {
            ("researcher", "Bash")
        };
        let id = format!("toolu_{i}");
        let input = json!({"file_path": format!("/p/{i}"), "command": "true"});
        if !hook(
            p.path(),
            &pre("s1", p.path(), Some(agent), tool, input.clone(), &id),
        )
        .denied()
        {
            hook(
                p.path(),
                &post(
                    "s1",
                    p.path(),
                    Some(agent),
                    tool,
                    input,
                    &id,
                    json!({"n": i}),
                ),
            );
        }
    }
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    let bundle = p.path().join(".attenu/bundle-s1.json");
    let report = assert_reference_accepts(&py, p.path(), &bundle);
    assert!(report["entries"].as_u64().unwrap() >= 1000, "{report}");
}

/// Writes a tampered copy of a bundle and asserts both verifiers reject it.
fn assert_both_reject(py: &str, project: &Path, bundle: &Value, name: &str) {
    let path = project.join(format!("tampered-{name}.json"));
    std::fs::write(&path, serde_json::to_vec(bundle).unwrap()).unwrap();
    let report = reference_verify(py, &path, &project.join(".attenu/anchor.pub"));
    assert_eq!(report["ok"], false, "reference accepted the {name} copy");
    let ours = cli(&[
        "verify",
        path.to_str().unwrap(),
        "--pub",
        project.join(".attenu/anchor.pub").to_str().unwrap(),
    ]);
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
    let original: Value =
        serde_json::from_slice(&std::fs::read(p.path().join(".attenu/bundle-s1.json")).unwrap())
            .unwrap();

    let mut changed = original.clone();
    assert_eq!(changed["entries"][3]["event"], "allow");
    changed["entries"][3]["tool"] = json!("Bash");
    assert_both_reject(&py, p.path(), &changed, "field-changed");

    let mut removed = original.clone();
    removed["entries"].as_array_mut().unwrap().remove(6);
    assert_both_reject(&py, p.path(), &removed, "entry-removed");

    let mut truncated = original.clone();
    let n = truncated["entries"].as_array().unwrap().len();
    truncated["entries"].as_array_mut().unwrap().truncate(n - 3);
    assert_both_reject(&py, p.path(), &truncated, "tail-truncated");

    // Re-signed by someone else's key: internally consistent, but not by the pinned key.
    let other_dir = TempDir::new("otherkey");
    let other = attenu_hook::evidence::keys::generate_to(&other_dir.path().join("k")).unwrap();
    let entries = original["entries"].as_array().unwrap().clone();
    let resigned = attenu_hook::evidence::bundle::build(entries, &other, 1, 1).unwrap();
    assert_both_reject(&py, p.path(), &resigned, "re-signed");
}

fn sixteen_processes_exporting_and_appending_at_once_leave_one_key_and_valid_bundles() {
    let p = sample("conf-race");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(16));
    // Round one, on a project with no key yet: sixteen first calls race to create it.
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let dir = p.path().to_path_buf();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                reviewer_read(&dir, "s1", &format!("/{i}"), &format!("r1-{i}")).is_allow()
            })
        })
        .collect();
    assert!(threads.into_iter().all(|t| t.join().unwrap()));
    let key_files: Vec<_> = std::fs::read_dir(p.path().join(".attenu"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("anchor."))
        .collect();
    assert_eq!(
        key_files.len(),
        2,
        "one anchor.key and one anchor.pub, no leftovers"
    );
    let key_before = std::fs::read(p.path().join(".attenu/anchor.key")).unwrap();
    // Round two: eight appenders and eight exporters at once.
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let dir = p.path().to_path_buf();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                if i % 2 == 0 {
                    hook(
                        &dir,
                        &pre(
                            "s1",
                            &dir,
                            Some("reviewer"),
                            "Read",
                            json!({}),
                            &format!("r2-{i}"),
                        ),
                    )
                    .is_allow()
                } else {
                    cli(&[
                        "export",
                        "--project",
                        dir.to_str().unwrap(),
                        "--session",
                        "s1",
                    ])
                    .code
                        == 0
                }
            })
        })
        .collect();
    assert!(threads.into_iter().all(|t| t.join().unwrap()));
    assert_eq!(
        std::fs::read(p.path().join(".attenu/anchor.key")).unwrap(),
        key_before,
        "the key is never replaced"
    );
    let bundles = export(p.path(), "s1");
    let ours = cli(&[
        "verify",
        bundles[0].to_str().unwrap(),
        "--pub",
        p.path().join(".attenu/anchor.pub").to_str().unwrap(),
    ]);
    assert_eq!(ours.code, 0, "{}", ours.stdout);
    assert_eq!(entries(p.path(), "s1").len(), 3 + 16 + 8);
    // Everything above ran; without the reference verifier its check alone is reported missing.
    let py = need_reference_python();
    assert_reference_accepts(&py, p.path(), &bundles[0]);
}
