//! The streaming pass against the full verifier: it answers for clean bundles, with the full
//! report, and for nothing else (every other bundle in these tests goes through
//! [`super::verify_bundle`], which holds the same).

use super::*;

fn streamed(bundle: &Value, key: &AnchorKey) -> Option<Report> {
    verify_clean_stream(serde_json::to_vec(bundle).unwrap().as_slice(), key)
}

fn same(a: &Report, b: &Report) -> bool {
    serde_json::to_string_pretty(a).unwrap() == serde_json::to_string_pretty(b).unwrap()
}

#[test]
fn a_clean_bundle_is_answered_by_the_stream_with_the_full_report() {
    let k = key(1);
    let bundle = signed_bundle(tiny_entries(), &k);
    let s = streamed(&bundle, &pinned(&k)).expect("the honest bundle is streamed");
    assert!(s.valid);
    assert!(same(&s, &super::super::verify_bundle(&bundle, &pinned(&k))));
}

#[test]
fn open_calls_and_an_unfinished_node_are_reported_alike() {
    let k = key(1);
    let mut bodies = tiny_entries();
    bodies.remove(3); // the outcome: the call is unaccounted
    bodies.pop(); // the root's done: incomplete
    let mut unobserved = bodies[2].clone();
    unobserved["call_id"] = json!(CID_B.replace('f', "1"));
    unobserved["capture"] = json!("pre_hook_only");
    unobserved["context"] = json!({"rows": 1, "tool_use_id": "toolu_1"});
    bodies.insert(3, unobserved);
    let bundle = signed_bundle(bodies, &k);
    let full = super::super::verify_bundle(&bundle, &pinned(&k));
    match streamed(&bundle, &pinned(&k)) {
        Some(s) => assert!(same(&s, &full)),
        None => assert!(
            !full.valid || full.checks.execution_binding == Binding::Failed,
            "a valid bundle with open calls was not streamed: {full:?}"
        ),
    }
    assert!(full.calls.open.len() == 2, "{:?}", full.calls);
}

/// Values each member of each entry is set to (or removed) before the chain is re-sealed and
/// re-signed: every rule of every check sees a break the hash chain does not hide.
fn replacements() -> Vec<Option<Value>> {
    vec![
        None,
        Some(Value::Null),
        Some(json!(0)),
        Some(json!(2)),
        Some(json!(2.0)),
        Some(json!(-1)),
        Some(json!("")),
        Some(json!("c:n0")),
        Some(json!("c:n1")),
        Some(json!(CID_A)),
        Some(json!(PARAMS)),
        Some(json!(true)),
        Some(json!([])),
        Some(json!({})),
        Some(json!({"scopes": ["fs.*"]})),
    ]
}

#[test]
fn every_single_member_change_gets_the_full_verdict() {
    let k = key(1);
    let honest = signed_bundle(tiny_entries(), &k);
    let mut streamed_count = 0;
    let entries = honest["entries"].as_array().unwrap().clone();
    for (i, e) in entries.iter().enumerate() {
        let mut names: Vec<String> = e.as_object().unwrap().keys().cloned().collect();
        names.extend(
            [
                "policy",
                "parent",
                "capture",
                "invoked_params_hash",
                "pending_at_kill",
            ]
            .map(String::from),
        );
        for name in &names {
            for r in replacements() {
                let mut b = honest.clone();
                let obj = b["entries"][i].as_object_mut().unwrap();
                match &r {
                    None => drop(obj.remove(name)),
                    Some(v) => drop(obj.insert(name.clone(), v.clone())),
                }
                if name != "hash" && name != "prev_hash" {
                    rehash(&mut b);
                }
                let b = resign(b, &k);
                let full = super::super::verify_bundle(&b, &pinned(&k));
                if let Some(s) = streamed(&b, &pinned(&k)) {
                    streamed_count += 1;
                    assert!(
                        same(&s, &full),
                        "entries[{i}].{name} = {r:?}: {s:?}\nvs {full:?}"
                    );
                }
            }
        }
    }
    assert!(streamed_count > 0, "some changes keep the bundle clean");
}

#[test]
fn changes_to_the_bundles_own_members_get_the_full_verdict() {
    let k = key(1);
    let honest = signed_bundle(tiny_entries(), &k);
    for name in [
        "v",
        "chain_id",
        "anchor",
        "entries",
        "envelopes",
        "checkpoint",
        "chain",
        "c14n",
    ] {
        for r in replacements() {
            let mut b = honest.clone();
            match &r {
                None => drop(b.as_object_mut().unwrap().remove(name)),
                Some(v) => b[name] = v.clone(),
            }
            for key in [pinned(&k), AnchorKey::None, pinned(&key(2))] {
                let full = super::super::verify_bundle(&b, &key);
                if let Some(s) = streamed(&b, &key) {
                    assert!(same(&s, &full), "{name} = {r:?}");
                }
            }
        }
    }
}

#[test]
fn a_kill_and_reordered_entries_are_left_to_the_full_verifier() {
    let k = key(1);
    let mut bodies = tiny_entries();
    bodies.insert(
        5,
        json!({"event": "kill", "node": "c:n0", "target": "c:n1", "revoked": ["c:n1"]}),
    );
    let killed = signed_bundle(bodies, &k);
    assert!(streamed(&killed, &pinned(&k)).is_none());
    let mut bodies = tiny_entries();
    bodies.swap(2, 3); // the outcome before its allow
    let swapped = signed_bundle(bodies, &k);
    assert!(streamed(&swapped, &pinned(&k)).is_none());
    assert!(!super::super::verify_bundle(&swapped, &pinned(&k)).valid);
}

#[test]
fn syntax_a_repeated_member_and_trailing_bytes_are_left_to_the_full_verifier() {
    let k = key(1);
    let honest = serde_json::to_string(&signed_bundle(tiny_entries(), &k)).unwrap();
    let dup_top = honest.replacen("{", "{\"v\":2,", 1);
    let dup_entry = honest.replacen("\"event\":", "\"node\":\"x\",\"event\":", 1);
    for bad in [
        dup_top,
        dup_entry,
        format!("{honest} x"),
        format!("\u{feff}{honest}"),
        honest[..honest.len() - 1].to_string(),
    ] {
        assert!(
            verify_clean_stream(bad.as_bytes(), &pinned(&k)).is_none(),
            "{bad:.60}"
        );
    }
    assert!(verify_clean_stream(honest.as_bytes(), &pinned(&k)).is_some());
}

#[test]
fn strings_escapes_and_whitespace_cut_by_refills_are_read_whole() {
    let k = key(1);
    let mut bodies = tiny_entries();
    bodies[2]["context"] = json!({"rows": 3, "tool_use_id": "a\"}]\\\\\"{[ \u{2028} é"});
    let bundle = signed_bundle(bodies, &k);
    let compact = serde_json::to_string(&bundle).unwrap();
    let pretty = serde_json::to_string_pretty(&bundle).unwrap();
    let full = super::super::verify_bundle(&bundle, &pinned(&k));
    assert!(full.valid, "{:?}", full.failures);
    for text in [
        compact,
        pretty,
        format!(" \r\n\t{}\n ", serde_json::to_string(&bundle).unwrap()),
    ] {
        let s = verify_clean_stream(text.as_bytes(), &pinned(&k)).expect("streamed");
        assert!(same(&s, &full));
    }
}

#[test]
fn what_is_not_one_json_object_is_left_to_the_full_verifier() {
    let k = key(1);
    let honest = serde_json::to_string(&signed_bundle(tiny_entries(), &k)).unwrap();
    let bad = [
        honest.replacen("},{", "}{", 1),
        honest.replacen("},{", "},,{", 1),
        honest.replacen("\"entries\":[", "\"entries\":[1,", 1),
        honest.replacen("\"entries\":", "\"entries\" ", 1),
        honest.replacen(",\"entries\"", "\"entries\"", 1),
        format!("{honest}{{}}"),
        format!("[{honest}]"),
        honest.replacen(
            "\"chain_id\":\"c\",\"entries\"",
            "\"chain_id\":\"c\",\"c\\u0068ain_id\":\"c\",\"entries\"",
            1,
        ),
        honest.replace('}', "]"),
        String::new(),
    ];
    for b in bad {
        assert!(
            verify_clean_stream(b.as_bytes(), &pinned(&k)).is_none(),
            "{b:.80}"
        );
    }
}

/// Compact bundles are cut at each `},{` without reading the strings: a `},{` inside a string,
/// between the objects of a nested list, or at the end of what was read so far is found not
/// to end an entry, and the rest is split exactly, with the same report.
#[test]
fn a_cut_that_is_not_between_two_entries_is_found_and_mended() {
    let k = key(1);
    let mut bodies = tiny_entries();
    bodies[2]["context"] =
        json!({"rows": 3, "tool_use_id": "x\"},{\"y", "seen": [{"a": 1}, {"b": [{}, {}]}]});
    bodies[4]["tool"] = json!("},{},{");
    for i in 0..40 {
        let mut read = bodies[2].clone();
        read["call_id"] = json!(format!("{i:032x}"));
        read["capture"] = json!("pre_hook_only");
        read["context"]["tool_use_id"] = json!(format!("}},{{\"{i}\"}},{{"));
        bodies.insert(5, read);
    }
    let bundle = signed_bundle(bodies, &k);
    let full = super::super::verify_bundle(&bundle, &pinned(&k));
    assert!(full.valid, "{:?}", full.failures);
    let pretty = serde_json::to_string_pretty(&bundle).unwrap();
    assert!(
        verify_clean_stream(pretty.as_bytes(), &pinned(&k)).is_some(),
        "pretty {:?} {:?}",
        full.checks,
        full.calls
    );
    let s = streamed(&bundle, &pinned(&k)).expect("streamed");
    assert!(same(&s, &full));
    // A change inside one of those strings still breaks the chain, and the stream says so.
    let text =
        serde_json::to_string(&bundle)
            .unwrap()
            .replacen("},{\\\"7\\\"}", "},{\\\"8\\\"}", 1);
    assert!(verify_clean_stream(text.as_bytes(), &pinned(&k)).is_none());
}
