//! The scope grammar, subsumption of authorities, and ceilings over an action's context.

use super::*;
use crate::evidence::verify::ceiling_wire::ceiling_from_wire;
use crate::evidence::verify::scope::valid_scope;

#[test]
fn scope_wildcards_cover_only_below_the_dot() {
    assert!(scope_covers("crm.read", "crm.read"));
    assert!(scope_covers("crm.*", "crm.read"));
    assert!(scope_covers("crm.*", "crm.a.b"));
    assert!(scope_covers("mcp.*", "mcp.srv.tool"));
    assert!(!scope_covers("crm.*", "crm"));
    assert!(!scope_covers("crm.*", "crmx.read"));
    assert!(!scope_covers("crm.read", "crm.*"));
    assert!(!scope_covers("crm.read", "crm.readx"));
    assert!(valid_scope("agent.delegate.code-reviewer"));
    assert!(valid_scope("crm.*"));
    for bad in [
        "crm",
        "*",
        "crm.*.read",
        "Crm.read",
        "crm..read",
        "crm.",
        ".crm",
        "1crm.read",
        "crm.read\n",
    ] {
        assert!(!valid_scope(bad), "{bad:?}");
    }
}

#[test]
fn subsumption_compares_scopes_ceilings_and_ttl() {
    let wire = json!({"scopes": ["crm.*", "mail.send"], "ttl": 3600, "constraints": [
        {"key": "max_rows", "max": 100},
        {"key": "region", "type": "allow", "one_of": ["eu", "us"]},
        {"key": "cmd", "type": "deny", "not_one_of": ["rm"]},
        {"key": "path", "type": "prefix", "prefix": "/srv/"},
        {"key": "egress", "rank": "internal"}]});
    let parent = authority(wire.clone());
    // A child with each ceiling narrowed; every case widens it again at one member.
    let narrow = edited(
        &wire,
        &[
            ("/scopes", json!(["crm.read"])),
            ("/ttl", json!(60)),
            ("/constraints/0/max", json!(10)),
            ("/constraints/1/one_of", json!(["eu"])),
            ("/constraints/4/rank", json!("none")),
        ],
    );
    let ok = edited(
        &narrow,
        &[
            ("/constraints/2/not_one_of", json!(["rm", "dd"])),
            ("/constraints/3/prefix", json!("/srv/app/")),
        ],
    );
    assert!(authority(ok).narrower_than(&parent).is_ok());
    assert!(parent.narrower_than(&parent).is_ok());
    let cases = [
        ("/scopes", json!(["crm.*", "pay.x"])),
        ("/constraints/0/max", json!(101)),
        ("/constraints/1/one_of", json!(["eu", "cn"])),
        ("/constraints/2/not_one_of", json!([])),
        ("/constraints/3/prefix", json!("/")),
        ("/constraints/4/rank", json!("any")),
        ("/ttl", json!(7200)),
        ("/ttl", Value::Null),
    ];
    for (i, (member, wider)) in cases.into_iter().enumerate() {
        let c = authority(edited(&narrow, &[(member, wider)]));
        assert!(
            c.narrower_than(&parent).is_err(),
            "case {i} must be wider than its parent"
        );
    }
    // A child that omits a ceiling its parent holds is unbounded there.
    let omitted = authority(json!({"scopes": ["crm.read"], "ttl": 60}));
    assert!(omitted
        .narrower_than(&parent)
        .unwrap_err()
        .to_string()
        .contains("unbounded"));
    // Stricter than the reference: a list bound moved onto another context field is wider.
    let p = authority(
        json!({"scopes": ["a.b"], "constraints": [{"key": "region", "type": "allow", "one_of": ["eu"]}]}),
    );
    let moved = authority(
        json!({"scopes": ["a.b"], "constraints": [{"key": "region", "type": "allow", "one_of": ["eu"], "field": "unused"}]}),
    );
    assert!(moved.narrower_than(&p).is_err());
}

/// `v` with the member at each JSON pointer replaced.
fn edited(v: &Value, edits: &[(&str, Value)]) -> Value {
    let mut v = v.clone();
    for (pointer, new) in edits {
        *v.pointer_mut(pointer).expect("the member exists") = new.clone();
    }
    v
}

#[test]
fn an_unknown_constraint_kind_fails_closed() {
    let quota = json!({"key": "quota", "type": "token_bucket", "rate": 5});
    let a = authority(json!({"scopes": ["fs.read"], "constraints": [quota]}));
    assert!(
        a.permits("fs.read", &Members::new()).is_err(),
        "an unknown constraint denies every action"
    );
    // It subsumes only an identical constraint (the same RFC 8785 bytes).
    let same = authority(
        json!({"scopes": ["fs.read"], "constraints": [{"rate": 5.0, "type": "token_bucket", "key": "quota"}]}),
    );
    let other = authority(
        json!({"scopes": ["fs.read"], "constraints": [{"key": "quota", "type": "token_bucket", "rate": 6}]}),
    );
    assert!(same.narrower_than(&a).is_ok());
    assert!(other.narrower_than(&a).is_err());
    // A known kind carrying a member this verifier does not read is refused, not trimmed.
    for bad in [
        json!({"key": "max_rows", "max": 100, "min": 9999}),
        json!({"key": "max_rows", "type": "max_rows", "max": 1}),
        json!({"key": "region", "type": "max_rows", "max": 1}),
        json!({"key": "max_rows", "max": true}),
        json!({"key": "max_rows", "max": 9007199254740992_u64}),
        json!({"key": "egress", "rank": "everything"}),
        json!({"key": "region", "type": "allow", "one_of": {"eu": 1}}),
        json!({"key": "region", "type": "allow", "one_of": [["eu"]]}),
        json!({"key": 7, "type": "allow", "one_of": []}),
    ] {
        assert!(ceiling_from_wire(&owned(&bad)).is_err(), "{bad}");
    }
    assert!(Authority::from_wire(
        Some(&owned(
            &json!({"scopes": ["fs.read"], "deny_scopes": ["fs.write"]})
        )),
        "granted"
    )
    .is_err());
    assert!(Authority::from_wire(Some(&owned(&json!({"scopes": "fs.read"}))), "granted").is_err());
    assert!(Authority::from_wire(
        Some(&owned(&json!({"scopes": ["fs.read"], "ttl": "60"}))),
        "granted"
    )
    .is_err());
}

#[test]
fn ceilings_bound_the_context_of_an_action() {
    let a = authority(json!({"scopes": ["crm.*"], "constraints": [
        {"key": "max_rows", "max": 100},
        {"key": "max_calls[crm.write]", "type": "max_calls", "max": 2, "applies_to": "crm.write"},
        {"key": "region", "type": "allow", "one_of": ["eu", 1]}]}));
    let ctx = |v: Value| match owned(&v) {
        Json::Object(m) => m,
        _ => unreachable!("an object"),
    };
    assert!(a
        .permits("crm.read", &ctx(json!({"rows": 100, "region": "eu"})))
        .is_ok());
    assert!(a.permits("crm.read", &ctx(json!({"rows": 101}))).is_err());
    assert!(
        a.permits("crm.read", &ctx(json!({"rows": "5"}))).is_err(),
        "a string is no row count"
    );
    assert!(a
        .permits("crm.read", &ctx(json!({"region": "us"})))
        .is_err());
    assert!(
        a.permits("crm.read", &ctx(json!({"region": 1.0}))).is_ok(),
        "1.0 is the member 1"
    );
    assert!(
        a.permits("crm.read", &ctx(json!({"region": true})))
            .is_err(),
        "true is not the member 1"
    );
    assert!(
        a.permits("crm.read", &ctx(json!({"calls[crm.write]": 5})))
            .is_ok(),
        "the limit applies to crm.write only"
    );
    assert!(a
        .permits("crm.write", &ctx(json!({"calls[crm.write]": 5})))
        .is_err());
    assert!(a.permits("mail.send", &Members::new()).is_err());
}
