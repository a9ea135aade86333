//! The page from inputs no honest export writes: every one renders, says INVALID first, and
//! carries no markup from the input.

use super::model::KeyUsed;
use super::{read_input, Page};
use crate::evidence::verify::AnchorKey;
use serde_json::json;

fn page_of(doc: &serde_json::Value) -> String {
    let bytes = serde_json::to_vec(doc).unwrap();
    let input = read_input("<b>in.json", &bytes, &AnchorKey::None, KeyUsed::default()).unwrap();
    Page {
        inputs: vec![input],
    }
    .render()
}

#[test]
fn malformed_bundles_render_as_invalid_without_markup_from_them() {
    let x = "<i>x</i>";
    let entry = |event: &str| {
        json!({"event": event, "node": x, "tool": [x], "scope": {"a": x}, "call_id": x,
               "seq": "nope", "context": {"at": "2026-12-0\u{e9}05:41:22.084Z", "agent_type": x},
               "reasons": [x, {"code": 7, "message": null}], "granted": {"scopes": [x, 3, null]},
               "authority": "none", "parent": x, "agent": x, "body_state": 5})
    };
    // What is not a bundle at all is unusable input (exit 2, no page), as for `verify`.
    for not_a_bundle in [json!({}), json!([]), json!({"v": 2})] {
        let bytes = serde_json::to_vec(&not_a_bundle).unwrap();
        let read = read_input("in.json", &bytes, &AnchorKey::None, KeyUsed::default());
        assert!(read.is_err(), "{not_a_bundle} was read as a bundle");
    }
    let docs = [
        json!({"entries": "none"}),
        json!({"entries": [1, null, "s", [x]]}),
        json!({"v": 2, "chain_id": x, "chain": {"index": x, "of": -1}, "producer": x,
               "anchor": {"kid": x}, "entries": [entry("root"), entry("spawn"), entry("allow"),
               entry("outcome"), entry("outcome"), entry("deny"), entry("done"), entry("allow")]}),
        json!({"entries": [entry("deny"), entry("deny")], "sessions": 3}),
    ];
    for doc in &docs {
        let html = page_of(doc);
        assert!(
            html.contains("<h1 data-verdict>INVALID</h1>"),
            "{doc}: {html}"
        );
        assert!(
            !html.contains("<i>") && !html.contains("<b>"),
            "{doc}: {html}"
        );
    }
}

#[test]
fn an_audit_with_hostile_names_renders_them_as_text() {
    let x = "<script>x</script>";
    let doc = json!({"sessions": [{"project": x, "session": x, "status": "forked", "why": x,
        "chains": [{"chain_id": x, "status": "forked", "why": x, "checkpoints": [], "bundle": null,
                    "findings": [{"status": "forked", "why": "other <b>", "objects": [x]}]}]}],
        "stray": [x]});
    let html = page_of(&doc);
    assert!(
        html.contains("<h1 data-verdict>AUDIT FAILED: 1 of 1 sessions</h1>"),
        "{html}"
    );
    assert!(!html.contains("<script") && !html.contains("<b>"), "{html}");
    assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"), "{html}");
}
