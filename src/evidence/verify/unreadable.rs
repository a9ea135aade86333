//! Step (0): a bundle this verifier cannot read at all (not an object, or `entries`,
//! `anchor` or `envelopes` of the wrong type) is reported alone, with nothing else checked.

use super::json::kind;
use super::{AnchorKey, CallSummary, Checks, Failure, FailureName, Json, Report, Value};

/// The members of a bundle this verifier cannot read at all.
pub(super) fn problems(bundle: &Value) -> Vec<String> {
    let Some(b) = bundle.as_object() else {
        return vec![format!(
            "the bundle is {}, not an object",
            kind(Some(bundle))
        )];
    };
    let mut out = Vec::new();
    for (member, want, ok) in [
        (
            "entries",
            "an array",
            b.get("entries").is_none_or(|v| v.is_null() || v.is_array()),
        ),
        (
            "anchor",
            "an object",
            b.get("anchor").is_none_or(|v| v.is_null() || v.is_object()),
        ),
        (
            "envelopes",
            "an array",
            b.get("envelopes")
                .is_none_or(|v| v.is_null() || v.is_array()),
        ),
    ] {
        if !ok {
            out.push(format!(
                "the bundle's {member} is {}, not {want}",
                kind(b.get(member))
            ));
        }
    }
    out
}

pub(super) fn report(bundle: &Value, key: &AnchorKey, problems: Vec<String>) -> Report {
    let failures = problems
        .into_iter()
        .map(|p| Failure {
            name: FailureName::InvalidBundle,
            reference_reason: FailureName::InvalidBundle.reference_reason(),
            index: None,
            seq: None,
            node: None,
            call_id: None,
            detail: format!("{p}; nothing in it was checked"),
        })
        .collect();
    Report {
        valid: false,
        checks: Checks {
            integrity: false,
            monotonicity: false,
            containment: false,
            execution_binding: "not applicable",
            anchor: "not-checked",
            version: false,
            chain_id: false,
            root: false,
            ledger_fields: false,
            checkpoint: "not-checked",
        },
        key: key.label(),
        chain_id: bundle
            .as_object()
            .and_then(|b| b.get("chain_id"))
            .map_or(serde_json::Value::Null, Json::to_value),
        entries: 0,
        nodes: 0,
        actions_checked: 0,
        ungated: 0,
        denied: 0,
        refused_by_claude_code: 0,
        calls: CallSummary {
            params_coverage: "none",
            ..CallSummary::default()
        },
        failures,
        notices: Vec::new(),
        recorded: None,
        certificate: None,
    }
}
