//! Step (0): a bundle this verifier cannot read at all (not an object, or `entries`,
//! `anchor` or `envelopes` of the wrong type) is reported alone, with nothing else checked.

use super::json::kind;
use super::report::{Counts, Found, Log};
use super::{AnchorKey, CallSummary, Checks, FailureName, Report, Value};
use crate::ledger::fields::field;

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
    let mut log = Log::new(&[]);
    for p in problems {
        log.chain(
            FailureName::InvalidBundle,
            format!("{p}; nothing in it was checked"),
        );
    }
    let found = Found {
        checks: Checks::none(),
        entries: 0,
        counts: Counts::default(),
        calls: CallSummary::default(),
        failures: log.failures,
        notices: Vec::new(),
        recorded: None,
    };
    Report::new(
        key,
        bundle.as_object().and_then(|b| b.get(field::CHAIN_ID)),
        found,
    )
}
