//! The entries that close what a decision opened: a call's outcome and a node's end.

use super::{CallContext, Entry, Position};
use crate::clock;
use crate::ledger::commitment::{commit, commit_labeled, RawCopy};
use crate::protocol::payload::{Event, Payload};
use serde::Serialize;
use serde_json::Value;

/// How a tool call's body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyState {
    Returned,
    Raised,
    Abandoned,
}

/// The outcome that binds a PostToolUse / PostToolUseFailure to its allowed call.
#[derive(Debug, Serialize)]
pub struct Outcome<'a> {
    ts: u64,
    chain_id: &'a str,
    node: &'a str,
    call_id: &'a str,
    body_state: BodyState,
    duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    invoked_params_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params_hash_reason: Option<&'static str>,
    context: Context<'a>,
}

/// Who recorded the outcome: the hook, from the call's own post hook, or a reviewer who
/// resolved a reconciliation marker.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Context<'a> {
    Call(OutcomeContext<'a>),
    Reconciled(ReconciledContext<'a>),
}

impl Outcome<'_> {
    /// The commitment to the arguments the call ran with.
    pub fn invoked_params_hash(&self) -> Option<&str> {
        self.invoked_params_hash.as_deref()
    }
}

#[derive(Debug, Serialize)]
struct OutcomeContext<'a> {
    #[serde(flatten)]
    call: CallContext<'a>,
    /// Present (possibly `null`, for a result with no RFC 8785 form) when there was a result.
    #[serde(skip_serializing_if = "Option::is_none")]
    result_commitment: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_response: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_response_json: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_commitment: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    side_effects: Option<&'static str>,
}

/// The outcome entry for the call `call_id`, allowed at `at`.
pub fn outcome_entry<'a>(
    p: &'a Payload,
    at: Position<'a>,
    call_id: &'a str,
    body_state: BodyState,
    raw_capture: bool,
    now_ms: u64,
) -> Outcome<'a> {
    let raw = match &p.tool_response {
        Some(resp) if raw_capture => RawCopy::of(resp),
        _ => RawCopy::default(),
    };
    let hash = commit(&p.tool_input, at.salt);
    Outcome {
        ts: now_ms,
        chain_id: at.chain_id,
        node: at.node,
        call_id,
        body_state,
        duration_ms: p.duration_ms.unwrap_or(0),
        error_code: (body_state == BodyState::Raised).then_some("tool_error"),
        params_hash_reason: hash.is_none().then_some("unsupported"),
        invoked_params_hash: hash,
        context: Context::Call(OutcomeContext {
            call: CallContext::of(p, now_ms),
            result_commitment: p
                .tool_response
                .as_ref()
                .map(|r| commit_labeled("tool_response", r, at.salt)),
            tool_response: raw.value,
            tool_response_json: raw.json,
            error_commitment: p
                .error
                .as_ref()
                .map(|e| commit_labeled("error", &Value::from(e.as_str()), at.salt)),
            error: p.error.as_deref().filter(|_| raw_capture),
            side_effects: (p.event == Event::PostToolUseFailure).then_some("uncertain"),
        }),
    }
}

/// A reviewer's resolution of a call whose outcome the hook could not record
/// (`reconcile resolve`): what they found, bound to the still open call.
#[derive(Debug, Clone, Copy)]
pub struct Reconciled<'a> {
    pub session_id: &'a str,
    pub tool_use_id: Option<&'a str>,
    pub marker: i64,
    /// `executed`, `not-executed` or `unknown`, as the reviewer said.
    pub outcome: &'a str,
    pub evidence: &'a str,
    /// Why the marker was opened.
    pub cause: &'a str,
    pub body_state: BodyState,
    pub error_code: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct ReconciledContext<'a> {
    session_id: &'a str,
    /// `null` when the marker has none.
    tool_use_id: Option<&'a str>,
    at: String,
    reconciliation: Reconciliation<'a>,
}

#[derive(Debug, Serialize)]
struct Reconciliation<'a> {
    marker: i64,
    outcome: &'a str,
    evidence: &'a str,
    cause: &'a str,
}

/// The outcome entry recording resolution `r` of the call `call_id` of `node`.
pub fn reconciled_outcome<'a>(
    chain_id: &'a str,
    node: &'a str,
    call_id: &'a str,
    r: Reconciled<'a>,
    now_ms: u64,
) -> Entry<'a> {
    Entry::Outcome(Outcome {
        ts: now_ms,
        chain_id,
        node,
        call_id,
        body_state: r.body_state,
        duration_ms: 0,
        error_code: r.error_code,
        invoked_params_hash: None,
        params_hash_reason: None,
        context: Context::Reconciled(ReconciledContext {
            session_id: r.session_id,
            tool_use_id: r.tool_use_id,
            at: clock::rfc3339_ms(now_ms),
            reconciliation: Reconciliation {
                marker: r.marker,
                outcome: r.outcome,
                evidence: r.evidence,
                cause: r.cause,
            },
        }),
    })
}

/// A node's end: every call it made has finished (written at SessionEnd).
#[derive(Debug, Serialize)]
pub struct Done<'a> {
    ts: u64,
    chain_id: &'a str,
    node: &'a str,
    agent: &'a str,
    context: DoneContext<'a>,
}

#[derive(Debug, Serialize)]
struct DoneContext<'a> {
    session_id: &'a str,
    hook_event: &'static str,
    at: String,
}

/// The `done` entry for `node` (the session root's agent is `session`), at SessionEnd.
pub fn done_entry<'a>(
    chain_id: &'a str,
    node: &'a str,
    agent: &'a str,
    session_id: &'a str,
    now_ms: u64,
) -> Entry<'a> {
    Entry::Done(Done {
        ts: now_ms,
        chain_id,
        node,
        agent: if agent.is_empty() { "session" } else { agent },
        context: DoneContext {
            session_id,
            hook_event: "SessionEnd",
            at: clock::rfc3339_ms(now_ms),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The typed entry is the one `reconcile resolve` wrote with `json!` before it.
    #[test]
    fn a_reconciled_outcome_has_the_members_it_always_had() {
        let r = Reconciled {
            session_id: "s1",
            tool_use_id: None,
            marker: 7,
            outcome: "not-executed",
            evidence: "checked the queue",
            cause: "post-hook-missed",
            body_state: BodyState::Raised,
            error_code: Some("not_executed"),
        };
        let entry = reconciled_outcome("c1", "c1:n0", "call-1", r, 1_000);
        let expected = json!({
            "event": "outcome", "ts": 1_000, "chain_id": "c1", "node": "c1:n0",
            "call_id": "call-1", "body_state": "raised", "duration_ms": 0,
            "error_code": "not_executed",
            "context": {
                "session_id": "s1", "tool_use_id": null, "at": clock::rfc3339_ms(1_000),
                "reconciliation": {"marker": 7, "outcome": "not-executed",
                    "evidence": "checked the queue", "cause": "post-hook-missed"},
            },
        });
        assert_eq!(Value::Object(entry.into_object()), expected);
    }
}
