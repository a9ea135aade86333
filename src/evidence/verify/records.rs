//! The version 2 record rules of one entry: what a valid `allow`, `deny` and `outcome`
//! carries, checked in the reference's order. Each rule names the first problem it finds.

use super::json::{get, is_lower_hex, non_empty_str, present_but_null};
use super::shown::{shown, shown_list, shown_opt};
use super::vocab::{ALLOW_ONLY_FIELDS, BODY_STATES, CAPTURES, PARAMS_HASH_REASONS, POLICIES};
use super::{FailureName, Obj, Value};

pub(super) fn call_id_problem(e: &Obj) -> Option<String> {
    if present_but_null(e, "call_id") {
        return Some("call_id is null; it must be 32 lowercase hex characters or absent".into());
    }
    match e.get("call_id") {
        Some(Value::String(c)) if is_lower_hex(c, 32) => None,
        other => Some(format!(
            "call_id {} is missing or not 32 lowercase hex characters",
            shown_opt(other)
        )),
    }
}

pub(super) fn hash_field_problem(e: &Obj, field: &str) -> Option<String> {
    if present_but_null(e, field) {
        return Some(format!(
            "{field} is null; it must be a SHA-256 hex digest or absent"
        ));
    }
    match e.get(field) {
        None => None,
        Some(Value::String(h)) if is_lower_hex(h, 64) => None,
        Some(other) => Some(format!(
            "{field} {} is not 64 lowercase hex characters",
            shown(other)
        )),
    }
}

pub(super) fn params_hash_reason_problem(e: &Obj, hash_field: &str) -> Option<String> {
    if present_but_null(e, "params_hash_reason") {
        return Some("params_hash_reason is null; it must be a known reason or absent".into());
    }
    let reason = get(e, "params_hash_reason")?;
    if !reason
        .as_str()
        .is_some_and(|r| PARAMS_HASH_REASONS.contains(&r))
    {
        return Some(format!(
            "params_hash_reason {} is not a known value",
            shown(reason)
        ));
    }
    if get(e, hash_field).is_some() {
        return Some(format!(
            "params_hash_reason is present alongside {hash_field}; it explains a missing hash"
        ));
    }
    None
}

/// The v2 allow record rules, in the reference's order.
pub(super) fn allow_problem(e: &Obj) -> Option<(FailureName, String)> {
    if let Some(p) = call_id_problem(e) {
        return Some((FailureName::AllowCallIdInvalid, p));
    }
    if present_but_null(e, "capture") {
        return Some((
            FailureName::AllowCaptureInvalid,
            "capture is null; every v2 allow states what will observe the call".into(),
        ));
    }
    if present_but_null(e, "adapter") {
        return Some((
            FailureName::AllowAdapterInvalid,
            "adapter is null; every v2 allow names the adapter".into(),
        ));
    }
    match e.get("capture") {
        None => {
            return Some((
                FailureName::AllowCaptureInvalid,
                "capture is missing; every v2 allow states what will observe the call".into(),
            ))
        }
        Some(Value::String(c)) if CAPTURES.contains(&c.as_ref()) => {}
        Some(other) => {
            return Some((
                FailureName::AllowCaptureInvalid,
                format!("capture {} is not a known value", shown(other)),
            ))
        }
    }
    let adapter = match e.get("adapter") {
        None => {
            return Some((
                FailureName::AllowAdapterInvalid,
                "adapter is missing; every v2 allow names the adapter".into(),
            ))
        }
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Some((
                FailureName::AllowAdapterInvalid,
                "adapter is not an object with module, version and hook_path".into(),
            ))
        }
    };
    for k in ["module", "version", "hook_path"] {
        if !non_empty_str(adapter.get(k)) {
            return Some((
                FailureName::AllowAdapterInvalid,
                format!("adapter.{k} must be a non-empty string"),
            ));
        }
    }
    if present_but_null(e, "policy") {
        return Some((
            FailureName::AllowPolicyInvalid,
            "policy is null; omit it or give a defined value".into(),
        ));
    }
    if e.contains_key("policy") && !known_policy(e.get("policy")) {
        return Some((
            FailureName::AllowPolicyInvalid,
            format!(
                "policy {} is not a value the format defines (only \"unlisted\"); it buys no exemption from containment",
                shown_opt(e.get("policy"))
            ),
        ));
    }
    if let Some(p) = hash_field_problem(e, "authorized_params_hash") {
        return Some((FailureName::AllowParamsHashInvalid, p));
    }
    params_hash_reason_problem(e, "authorized_params_hash")
        .map(|p| (FailureName::AllowParamsHashInvalid, p))
}

pub(super) fn deny_problem(e: &Obj) -> Option<(FailureName, String)> {
    if let Some(p) = call_id_problem(e) {
        return Some((FailureName::DenyCallIdInvalid, p));
    }
    let leaked: Vec<&str> = ALLOW_ONLY_FIELDS
        .iter()
        .copied()
        .filter(|f| e.contains_key(f))
        .collect();
    if !leaked.is_empty() {
        return Some((
            FailureName::DenyCarriesAllowField,
            format!("a deny carries allow-only field(s) {}", shown_list(leaked)),
        ));
    }
    None
}

pub(super) fn outcome_problem(e: &Obj) -> Option<(FailureName, String)> {
    if let Some(p) = call_id_problem(e) {
        return Some((FailureName::OutcomeCallIdInvalid, p));
    }
    let bad = |s: String| Some((FailureName::OutcomeRecordInvalid, s));
    if present_but_null(e, "body_state") {
        return bad("body_state is null".into());
    }
    let body_state = e
        .get("body_state")
        .and_then(Value::as_str)
        .filter(|s| BODY_STATES.contains(s));
    let Some(body_state) = body_state else {
        return bad(format!(
            "body_state {} is not a known value",
            shown_opt(e.get("body_state"))
        ));
    };
    if present_but_null(e, "error_code") {
        return bad("error_code is null; it must be a non-empty string or absent".into());
    }
    if body_state == "raised" {
        if !non_empty_str(e.get("error_code")) {
            return bad("error_code is required when body_state is raised".into());
        }
    } else if e.contains_key("error_code") {
        return bad("error_code is present although body_state is not raised".into());
    }
    if present_but_null(e, "duration_ms") {
        return bad("duration_ms is null".into());
    }
    let duration_ok = match e.get("duration_ms") {
        Some(Value::Number(n)) => n.is_u64() || n.as_i64().is_some_and(|i| i >= 0),
        _ => false,
    };
    if !duration_ok {
        return bad(format!(
            "duration_ms {} is not a non-negative integer",
            shown_opt(e.get("duration_ms"))
        ));
    }
    if let Some(p) = hash_field_problem(e, "invoked_params_hash") {
        return bad(p);
    }
    if let Some(p) = params_hash_reason_problem(e, "invoked_params_hash") {
        return bad(p);
    }
    if present_but_null(e, "receipt") {
        return bad("receipt is null; it must be an object or absent".into());
    }
    if let Some(r) = e.get("receipt") {
        let Some(r) = r.as_object() else {
            return bad("receipt is not an object with type, ref and digest".into());
        };
        for k in ["type", "ref"] {
            if !non_empty_str(r.get(k)) {
                return bad(format!("receipt.{k} must be a non-empty string"));
            }
        }
        if !r
            .get("digest")
            .and_then(Value::as_str)
            .is_some_and(|d| is_lower_hex(d, 64))
        {
            return bad("receipt.digest must be a lowercase hex SHA-256 digest".into());
        }
    }
    None
}

/// A `policy` the format defines (only `unlisted`): the allow claims no authority.
pub(super) fn known_policy(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|p| POLICIES.contains(&p))
}
