//! The version 2 record rules of one entry: what a valid `allow`, `deny` and `outcome`
//! carries, checked in the reference's order. Each check returns the first problem it finds;
//! [`Record::name`] is the failure it is reported as, and its text the reason.

use super::json::{get, is_lower_hex, non_empty_str, present_but_null};
use super::shown::{shown, shown_list, shown_opt};
use super::{FailureName, Obj, Value};
use crate::ledger::fields::field;
use crate::ledger::fields::{
    ALLOW_ONLY_FIELDS, BODY_STATES, CAPTURES, PARAMS_HASH_REASONS, POLICIES,
};

/// A record problem: the failure it is reported as, and (as its text) why.
pub(super) trait Record: std::fmt::Display {
    fn name(&self) -> FailureName;
}

/// A `call_id` that is not 32 lowercase hex characters.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallIdProblem {
    #[error("call_id is null; it must be 32 lowercase hex characters or absent")]
    Null,
    /// The call id as shown, `(absent)` when missing.
    #[error("call_id {0} is missing or not 32 lowercase hex characters")]
    Malformed(String),
}

/// An argument commitment (`authorized_params_hash` or `invoked_params_hash`) or the reason
/// one is missing, malformed.
#[derive(Debug, thiserror::Error)]
pub(super) enum HashProblem {
    #[error("{0} is null; it must be a SHA-256 hex digest or absent")]
    Null(&'static str),
    /// The field, and its value as shown.
    #[error("{0} {1} is not 64 lowercase hex characters")]
    NotHex(&'static str, String),
    #[error("params_hash_reason is null; it must be a known reason or absent")]
    ReasonNull,
    #[error("params_hash_reason {0} is not a known value")]
    UnknownReason(String),
    #[error("params_hash_reason is present alongside {0}; it explains a missing hash")]
    ReasonBesideHash(&'static str),
}

#[derive(Debug, thiserror::Error)]
pub(super) enum AllowProblem {
    #[error(transparent)]
    CallId(#[from] CallIdProblem),
    #[error("capture is null; every v2 allow states what will observe the call")]
    CaptureNull,
    #[error("adapter is null; every v2 allow names the adapter")]
    AdapterNull,
    #[error("capture is missing; every v2 allow states what will observe the call")]
    CaptureMissing,
    #[error("capture {0} is not a known value")]
    UnknownCapture(String),
    #[error("adapter is missing; every v2 allow names the adapter")]
    AdapterMissing,
    #[error("adapter is not an object with module, version and hook_path")]
    AdapterNotAnObject,
    #[error("adapter.{0} must be a non-empty string")]
    AdapterMemberEmpty(&'static str),
    #[error("policy is null; omit it or give a defined value")]
    PolicyNull,
    #[error(
        "policy {0} is not a value the format defines (only \"unlisted\"); it buys no exemption from containment"
    )]
    UnknownPolicy(String),
    #[error(transparent)]
    ParamsHash(#[from] HashProblem),
}

impl Record for AllowProblem {
    fn name(&self) -> FailureName {
        use AllowProblem as P;
        match self {
            P::CallId(_) => FailureName::AllowCallIdInvalid,
            P::CaptureNull | P::CaptureMissing | P::UnknownCapture(_) => {
                FailureName::AllowCaptureInvalid
            }
            P::AdapterNull
            | P::AdapterMissing
            | P::AdapterNotAnObject
            | P::AdapterMemberEmpty(_) => FailureName::AllowAdapterInvalid,
            P::PolicyNull | P::UnknownPolicy(_) => FailureName::AllowPolicyInvalid,
            P::ParamsHash(_) => FailureName::AllowParamsHashInvalid,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(super) enum DenyProblem {
    #[error(transparent)]
    CallId(#[from] CallIdProblem),
    #[error("a deny carries allow-only field(s) {}", shown_list(.0.iter().copied()))]
    AllowOnlyField(Vec<&'static str>),
}

impl Record for DenyProblem {
    fn name(&self) -> FailureName {
        match self {
            DenyProblem::CallId(_) => FailureName::DenyCallIdInvalid,
            DenyProblem::AllowOnlyField(_) => FailureName::DenyCarriesAllowField,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(super) enum OutcomeProblem {
    #[error(transparent)]
    CallId(#[from] CallIdProblem),
    #[error("body_state is null")]
    BodyStateNull,
    #[error("body_state {0} is not a known value")]
    UnknownBodyState(String),
    #[error("error_code is null; it must be a non-empty string or absent")]
    ErrorCodeNull,
    #[error("error_code is required when body_state is raised")]
    ErrorCodeMissing,
    #[error("error_code is present although body_state is not raised")]
    ErrorCodeUnexpected,
    #[error("duration_ms is null")]
    DurationNull,
    #[error("duration_ms {0} is not a non-negative integer")]
    BadDuration(String),
    #[error(transparent)]
    ParamsHash(#[from] HashProblem),
    #[error("receipt is null; it must be an object or absent")]
    ReceiptNull,
    #[error("receipt is not an object with type, ref and digest")]
    ReceiptNotAnObject,
    #[error("receipt.{0} must be a non-empty string")]
    ReceiptMemberEmpty(&'static str),
    #[error("receipt.digest must be a lowercase hex SHA-256 digest")]
    ReceiptDigest,
}

impl Record for OutcomeProblem {
    fn name(&self) -> FailureName {
        match self {
            OutcomeProblem::CallId(_) => FailureName::OutcomeCallIdInvalid,
            _ => FailureName::OutcomeRecordInvalid,
        }
    }
}

fn call_id(e: &Obj) -> Result<(), CallIdProblem> {
    if present_but_null(e, field::CALL_ID) {
        return Err(CallIdProblem::Null);
    }
    match e.get(field::CALL_ID) {
        Some(Value::String(c)) if is_lower_hex(c, 32) => Ok(()),
        other => Err(CallIdProblem::Malformed(shown_opt(other))),
    }
}

fn hash_field(e: &Obj, field: &'static str) -> Result<(), HashProblem> {
    if present_but_null(e, field) {
        return Err(HashProblem::Null(field));
    }
    match e.get(field) {
        None => Ok(()),
        Some(Value::String(h)) if is_lower_hex(h, 64) => Ok(()),
        Some(other) => Err(HashProblem::NotHex(field, shown(other))),
    }
}

fn params_hash_reason(e: &Obj, hash_field: &'static str) -> Result<(), HashProblem> {
    if present_but_null(e, field::PARAMS_HASH_REASON) {
        return Err(HashProblem::ReasonNull);
    }
    let Some(reason) = get(e, field::PARAMS_HASH_REASON) else {
        return Ok(());
    };
    if !reason
        .as_str()
        .is_some_and(|r| PARAMS_HASH_REASONS.contains(&r))
    {
        return Err(HashProblem::UnknownReason(shown(reason)));
    }
    if get(e, hash_field).is_some() {
        return Err(HashProblem::ReasonBesideHash(hash_field));
    }
    Ok(())
}

/// The v2 allow record rules, in the reference's order.
pub(super) fn check_allow(e: &Obj) -> Result<(), AllowProblem> {
    call_id(e)?;
    if present_but_null(e, field::CAPTURE) {
        return Err(AllowProblem::CaptureNull);
    }
    if present_but_null(e, field::ADAPTER) {
        return Err(AllowProblem::AdapterNull);
    }
    match e.get(field::CAPTURE) {
        None => return Err(AllowProblem::CaptureMissing),
        Some(Value::String(c)) if CAPTURES.contains(&c.as_ref()) => {}
        Some(other) => return Err(AllowProblem::UnknownCapture(shown(other))),
    }
    let adapter = match e.get(field::ADAPTER) {
        None => return Err(AllowProblem::AdapterMissing),
        Some(Value::Object(a)) => a,
        Some(_) => return Err(AllowProblem::AdapterNotAnObject),
    };
    for k in ["module", "version", "hook_path"] {
        if !non_empty_str(adapter.get(k)) {
            return Err(AllowProblem::AdapterMemberEmpty(k));
        }
    }
    if present_but_null(e, field::POLICY) {
        return Err(AllowProblem::PolicyNull);
    }
    if e.contains_key(field::POLICY) && !known_policy(e.get(field::POLICY)) {
        return Err(AllowProblem::UnknownPolicy(shown_opt(e.get(field::POLICY))));
    }
    hash_field(e, field::AUTHORIZED_PARAMS_HASH)?;
    params_hash_reason(e, field::AUTHORIZED_PARAMS_HASH)?;
    Ok(())
}

pub(super) fn check_deny(e: &Obj) -> Result<(), DenyProblem> {
    call_id(e)?;
    let leaked: Vec<&str> = ALLOW_ONLY_FIELDS
        .iter()
        .copied()
        .filter(|f| e.contains_key(f))
        .collect();
    if !leaked.is_empty() {
        return Err(DenyProblem::AllowOnlyField(leaked));
    }
    Ok(())
}

pub(super) fn check_outcome(e: &Obj) -> Result<(), OutcomeProblem> {
    call_id(e)?;
    if present_but_null(e, field::BODY_STATE) {
        return Err(OutcomeProblem::BodyStateNull);
    }
    let body_state = e
        .get(field::BODY_STATE)
        .and_then(Value::as_str)
        .filter(|s| BODY_STATES.contains(s));
    let Some(body_state) = body_state else {
        return Err(OutcomeProblem::UnknownBodyState(shown_opt(
            e.get(field::BODY_STATE),
        )));
    };
    if present_but_null(e, field::ERROR_CODE) {
        return Err(OutcomeProblem::ErrorCodeNull);
    }
    if body_state == "raised" {
        if !non_empty_str(e.get(field::ERROR_CODE)) {
            return Err(OutcomeProblem::ErrorCodeMissing);
        }
    } else if e.contains_key(field::ERROR_CODE) {
        return Err(OutcomeProblem::ErrorCodeUnexpected);
    }
    if present_but_null(e, field::DURATION_MS) {
        return Err(OutcomeProblem::DurationNull);
    }
    // `-0` is the integer 0 to the reference (Python reads it as `int`), and its canonical
    // form and hash are those of `0`; serde_json reads it as the float -0.0, which is all that
    // is let through besides the integers (`-0.0` too, whose canonical form is also `0`).
    let duration_ok = match e.get(field::DURATION_MS) {
        Some(Value::Number(n)) => {
            n.is_u64() || n.as_i64().is_some_and(|i| i >= 0) || n.as_f64() == Some(0.0)
        }
        _ => false,
    };
    if !duration_ok {
        return Err(OutcomeProblem::BadDuration(shown_opt(
            e.get(field::DURATION_MS),
        )));
    }
    hash_field(e, field::INVOKED_PARAMS_HASH)?;
    params_hash_reason(e, field::INVOKED_PARAMS_HASH)?;
    receipt(e)
}

fn receipt(e: &Obj) -> Result<(), OutcomeProblem> {
    if present_but_null(e, field::RECEIPT) {
        return Err(OutcomeProblem::ReceiptNull);
    }
    let Some(r) = e.get(field::RECEIPT) else {
        return Ok(());
    };
    let Some(r) = r.as_object() else {
        return Err(OutcomeProblem::ReceiptNotAnObject);
    };
    for k in ["type", "ref"] {
        if !non_empty_str(r.get(k)) {
            return Err(OutcomeProblem::ReceiptMemberEmpty(k));
        }
    }
    if !r
        .get("digest")
        .and_then(Value::as_str)
        .is_some_and(|d| is_lower_hex(d, 64))
    {
        return Err(OutcomeProblem::ReceiptDigest);
    }
    Ok(())
}

/// A `policy` the format defines (only `unlisted`): the allow claims no authority.
pub(super) fn known_policy(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|p| POLICIES.contains(&p))
}
