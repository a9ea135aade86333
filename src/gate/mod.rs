//! The decision-bound gate: host-signed, one-use authorizations bound to an exact tool and
//! exact arguments, consumed atomically in SQLite, and reconciliation markers for outcomes
//! that could not be recorded.
//!
//! SQLite here is local durability for independent processes on one machine (WAL, busy
//! timeout, `BEGIN IMMEDIATE`); it is not a distributed consensus mechanism.

pub mod authz;
pub mod db;
pub mod receipt;
pub mod reconcile;

use crate::evidence::keys;
use crate::hook::time;
use crate::ledger::store::{Ledger, SessionPaths};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Resolves a reconciliation marker and records the resolution on the ledger as the call's
/// `outcome` (executed → returned, not-executed → raised `not_executed`, unknown → abandoned),
/// carrying the marker id and the evidence reference in its context.
pub fn resolve_marker(
    project: &Path,
    id: i64,
    outcome: &str,
    evidence: &str,
) -> Result<(), String> {
    let attenu = project.join(".attenu");
    let marker = reconcile::open_marker(&attenu, id)?;
    let key = keys::load_or_create(&attenu)?;
    let mut ledger = Ledger::open(
        SessionPaths::new(&attenu, &marker.session_id),
        key.checkpoint_mac_key(),
        Instant::now() + Duration::from_secs(10),
    )
    .map_err(|e| e.to_string())?;
    let pending = marker
        .tool_use_id
        .as_deref()
        .and_then(|t| ledger.state.pending.get(t))
        .cloned();
    let chain = ledger.current().cloned();
    let (Some(pending), Some(chain)) = (pending, chain) else {
        return Err(format!(
            "marker {id}'s call is no longer open on the current chain of session {}; the resolution cannot be bound to it, so nothing was changed",
            marker.session_id
        ));
    };
    let now = time::now_ms();
    let (body_state, error_code) = match outcome {
        "executed" => ("returned", None),
        "not-executed" => ("raised", Some("not_executed")),
        _ => ("abandoned", None),
    };
    let mut entry = json!({
        "event": "outcome",
        "ts": now,
        "chain_id": chain.chain_id,
        "node": pending.node,
        "call_id": pending.call_id,
        "body_state": body_state,
        "duration_ms": 0,
        "context": {
            "session_id": marker.session_id,
            "tool_use_id": marker.tool_use_id,
            "at": time::rfc3339_ms(now),
            "reconciliation": {"marker": id, "outcome": outcome, "evidence": evidence, "cause": marker.cause},
        },
    });
    if let Some(code) = error_code {
        entry["error_code"] = json!(code);
    }
    let serde_json::Value::Object(entry) = entry else {
        unreachable!()
    };
    ledger.append(vec![entry]).map_err(|e| {
        format!("the resolution could not be recorded ({e}); the marker stays open")
    })?;
    reconcile::resolve(&attenu, id, outcome, evidence)?;
    Ok(())
}
