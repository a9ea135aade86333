//! Whole bundles: honest, tampered, re-signed, keyless, and malformed.

use super::*;
use std::path::Path;

#[test]
fn an_honest_bundle_verifies_with_the_pinned_key() {
    let k = key(1);
    let bundle = signed_bundle(tiny_entries(), &k);
    let r = verify_bundle(&bundle, &pinned(&k));
    assert!(r.valid, "{:?}", r.failures);
    assert_eq!(
        (r.key, r.checks.anchor, r.checks.execution_binding),
        (KeyTrust::Pinned, AnchorStatus::Verified, Binding::Clean)
    );
    assert_eq!(
        (
            r.entries,
            r.nodes,
            r.actions_checked,
            r.ungated,
            r.calls.observed
        ),
        (7, 2, 1, 0, 1)
    );
    assert!(render_text(&r, None)
        .lines()
        .last()
        .unwrap()
        .starts_with("VALID:"));
}

#[test]
fn a_tampered_entry_is_found_at_its_position() {
    let k = key(1);
    let mut bundle = signed_bundle(tiny_entries(), &k);
    bundle["entries"][2]["scope"] = json!("exec.bash");
    let r = verify_bundle(&bundle, &pinned(&k));
    assert!(!r.valid);
    let f = r
        .failures
        .iter()
        .find(|f| f.name == FailureName::HashMismatch)
        .expect("hash-mismatch");
    assert_eq!(
        (f.index, f.seq, f.node.as_deref()),
        (Some(2), Some(2), Some("c:n1"))
    );
    assert!(names(&r).contains(&"anchor-over-broken-chain"));
    assert!(
        names(&r).contains(&"not-contained"),
        "the edited allow is also outside the node's authority"
    );
    assert!(!r.checks.integrity);
    let text = render_text(&r, None);
    assert!(
        text.contains("FAIL hash-mismatch (entry 2, seq 2, node c:n1)"),
        "{text}"
    );
    assert!(text.lines().last().unwrap().starts_with("INVALID"));
}

#[test]
fn a_rewritten_and_resigned_bundle_fails_under_the_pinned_key_and_says_so_when_not_pinned() {
    let (honest, attacker) = (key(1), key(2));
    let mut bundle = signed_bundle(tiny_entries(), &honest);
    // The attacker strips the refusal, re-hashes the chain and re-signs the anchor.
    bundle["entries"].as_array_mut().unwrap().remove(4);
    bundle["entries"][4]["seq"] = json!(4);
    bundle["entries"][5]["seq"] = json!(5);
    rehash(&mut bundle);
    let forged = resign(bundle, &attacker);

    let r = verify_bundle(&forged, &pinned(&honest));
    assert!(!r.valid);
    assert_eq!(names(&r), vec!["anchor-signature-invalid"]);
    assert_eq!(r.checks.anchor, AnchorStatus::Failed);

    // The same bundle under the key the attacker left beside it: consistent, and the
    // report says plainly that the key was not pinned.
    let r = verify_bundle(
        &forged,
        &AnchorKey::FromBundleSide(attacker.verifying_key()),
    );
    assert!(r.valid, "{:?}", r.failures);
    assert_eq!(r.key, KeyTrust::BundleSide);
    let text = render_text(&r, Some(Path::new("/x/anchor.pub")));
    assert!(text.contains("key NOT pinned"), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("VALID (key NOT pinned)"),
        "{text}"
    );

    // The original anchor over the rewritten chain: its head no longer matches.
    let mut stale = forged.clone();
    stale["anchor"] = signed_bundle(tiny_entries(), &honest)["anchor"].clone();
    let r = verify_bundle(&stale, &pinned(&honest));
    assert_eq!(names(&r), vec!["anchor-head-mismatch"]);
}

#[test]
fn without_a_key_the_verdict_is_invalid() {
    let k = key(1);
    let bundle = signed_bundle(tiny_entries(), &k);
    let r = verify_bundle(&bundle, &AnchorKey::None);
    assert!(!r.valid);
    assert_eq!(names(&r), vec!["anchor-not-checked"]);
    assert_eq!(
        (r.key, r.checks.anchor),
        (KeyTrust::None, AnchorStatus::NotChecked)
    );
    let mut stripped = bundle.clone();
    stripped.as_object_mut().unwrap().remove("anchor");
    assert_eq!(
        names(&verify_bundle(&stripped, &pinned(&k))),
        vec!["anchor-missing"]
    );
}

#[test]
fn the_anchor_signing_input_leaves_out_kid_sig_and_verified() {
    let a = json!({"v": 2, "c14n": "JCS", "chain_id": "c", "seq": 1, "head": "ab", "ts": 0, "kid": "k", "sig": "00", "verified": true});
    let bytes = anchor_signing_input(a.as_object().unwrap()).unwrap();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        r#"{"c14n":"JCS","chain_id":"c","head":"ab","seq":1,"ts":0,"v":2}"#
    );
}

#[test]
fn execution_binding_reports_open_calls_and_binding_failures() {
    let k = key(1);
    let mut bodies = tiny_entries();
    bodies.remove(3); // the outcome: the call promised an observation and none arrived
    let r = verify_bundle(&signed_bundle(bodies, &k), &pinned(&k));
    assert!(
        r.valid,
        "an unaccounted call is reported, as the reference does, not failed"
    );
    assert_eq!(
        (r.checks.execution_binding, r.calls.unaccounted),
        (Binding::Failed, 1)
    );
    assert_eq!(r.calls.open[0].call_id, CID_A);
    // The verdict line must not read "VALID ... execution binding failed" unexplained.
    let text = render_text(&r, None);
    assert!(
        text.contains("execution binding failed for 1 unaccounted call(s), listed as OPEN above"),
        "{text}"
    );

    let mut bodies = tiny_entries();
    bodies[3]["invoked_params_hash"] = json!(PARAMS.replace('a', "b"));
    bodies[4]["capture"] = json!("wrapper_sync");
    bodies[2].as_object_mut().unwrap().remove("adapter");
    let r = verify_bundle(&signed_bundle(bodies, &k), &pinned(&k));
    assert_eq!(
        names(&r),
        vec![
            "allow-adapter-invalid",
            "deny-carries-allow-field",
            "outcome-without-allow"
        ]
    );

    let mut bodies = tiny_entries();
    bodies[3]["invoked_params_hash"] = json!(PARAMS.replace('a', "b"));
    bodies[4]["call_id"] = json!(CID_A);
    let r = verify_bundle(&signed_bundle(bodies, &k), &pinned(&k));
    assert_eq!(names(&r), vec!["duplicate-call-id", "params-mismatch"]);
}

#[test]
fn on_a_long_chain_binding_runs_beside_the_other_checks_and_counts_only_when_versions_hold() {
    let k = key(1);
    let mut bodies = tiny_entries();
    bodies[4]["capture"] = json!("wrapper_sync"); // deny-carries-allow-field
    let done = bodies.pop().unwrap();
    bodies.extend((0..PARALLEL_FROM).map(|_| json!({"event": "done", "node": "c:n1"})));
    bodies.push(done);
    let r = verify_bundle(&signed_bundle(bodies.clone(), &k), &pinned(&k));
    assert_eq!(names(&r), vec!["deny-carries-allow-field"]);
    assert_eq!(r.failures[0].index, Some(4));
    assert_eq!(r.checks.execution_binding, Binding::Failed);

    // An entry of another version: binding is not applicable and its findings are dropped.
    let mut bundle = signed_bundle(bodies, &k);
    bundle["entries"][PARALLEL_FROM]["v"] = json!(1);
    rehash(&mut bundle);
    let r = verify_bundle(&resign(bundle, &k), &pinned(&k));
    assert_eq!(names(&r), vec!["mixed-entry-versions"]);
    assert_eq!(r.checks.execution_binding, Binding::NotApplicable);
}

#[test]
fn shape_problems_are_failures_never_panics() {
    let k = pinned(&key(1));
    for (bundle, expect) in [
        (json!([]), "invalid-bundle"),
        (json!({"entries": "x"}), "invalid-bundle"),
        (json!({"v": 3, "entries": []}), "unsupported-version"),
        (
            json!({"v": 2, "entries": [1, null, {"event": 5}]}),
            "invalid-ledger-entry",
        ),
        (
            json!({"v": 2, "entries": [{"event": "spawn", "node": ["x"], "parent": {}}]}),
            "unreadable-grant",
        ),
        (
            json!({"v": 2, "entries": [], "envelopes": [{}]}),
            "envelopes-not-verified",
        ),
    ] {
        let r = verify_bundle(&bundle, &k);
        assert!(
            !r.valid && names(&r).contains(&expect),
            "{bundle}: {:?}",
            names(&r)
        );
    }
    let r = verify_bundle(
        &json!({"v": true, "entries": [{"event": "root", "node": "a\nOK"}]}),
        &k,
    );
    for f in &r.failures {
        assert!(!f.detail.contains('\n'), "{}", f.detail);
    }
    assert!(!render_text(&r, None).contains("\nOK"));
}

#[test]
fn a_duration_written_minus_zero_is_the_zero_its_canonical_form_is() {
    let mut bodies = tiny_entries();
    // serde_json reads `-0` as the float -0.0; `json!(-0)` would be the integer 0.
    bodies[3]["duration_ms"] = serde_json::from_str("-0").unwrap();
    assert!(bodies[3]["duration_ms"].is_f64());
    let b = signed_bundle(bodies, &key(1));
    let r = verify_bundle(&b, &AnchorKey::Pinned(key(1).verifying_key()));
    assert!(r.valid, "{:?}", r.failures);
    let mut bodies = tiny_entries();
    bodies[3]["duration_ms"] = json!(-1);
    let b = signed_bundle(bodies, &key(1));
    let r = verify_bundle(&b, &AnchorKey::Pinned(key(1).verifying_key()));
    assert!(!r.valid);
}

#[test]
fn the_chain_position_is_checked_against_what_the_entries_hash() {
    let k = key(1);
    let b = signed_bundle(tiny_entries(), &k);
    let pinned = AnchorKey::Pinned(k.verifying_key());
    let mut moved = b.clone();
    moved["chain"] =
        json!({"index": 1, "of": 1, "previous_chain": {"chain_id": "x", "head": "y", "seq": 3}});
    let r = verify_bundle(&moved, &pinned);
    assert!(
        r.failures
            .iter()
            .any(|f| f.name == FailureName::ChainPositionMismatch),
        "{:?}",
        r.failures
    );
    let mut honest = b;
    honest["chain"] = json!({"index": 1, "of": 1, "previous_chain": null});
    assert!(verify_bundle(&honest, &pinned).valid);
}

#[test]
fn a_bundles_checkpoint_must_be_its_own_chains_signed_tree() {
    use crate::evidence::checkpoint;
    let k = key(1);
    let anchor_key = crate::evidence::keys::AnchorKey {
        signing: k.clone(),
        kid: "attenu-local-1".into(),
    };
    let mut b = signed_bundle(tiny_entries(), &k);
    let entries = b["entries"].as_array().unwrap().clone();
    let tree = checkpoint::tree_of(&entries).unwrap();
    let pinned = AnchorKey::Pinned(k.verifying_key());
    b["checkpoint"] = json!(checkpoint::sign(&anchor_key, "c", tree.size(), &tree.root()).unwrap());
    let r = verify_bundle(&b, &pinned);
    assert!(
        r.valid && r.checks.checkpoint == CheckpointStatus::Verified,
        "{:?}",
        r.failures
    );
    // Of a shorter prefix, of another chain, or signed by another key: refused.
    let short = checkpoint::tree_of(&entries[..3]).unwrap();
    let other = crate::evidence::keys::AnchorKey {
        signing: key(2),
        kid: "attenu-local-1".into(),
    };
    for wrong in [
        checkpoint::sign(&anchor_key, "c", short.size(), &short.root()).unwrap(),
        checkpoint::sign(&anchor_key, "d", tree.size(), &tree.root()).unwrap(),
        checkpoint::sign(&other, "c", tree.size(), &tree.root()).unwrap(),
        "not a note".to_string(),
    ] {
        let mut bad = b.clone();
        bad["checkpoint"] = json!(wrong);
        let r = verify_bundle(&bad, &pinned);
        assert!(
            !r.valid && r.checks.checkpoint == CheckpointStatus::Failed,
            "{wrong}"
        );
        assert!(r
            .failures
            .iter()
            .any(|f| f.name == FailureName::CheckpointInvalid));
    }
}
