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

use crate::clock as time;
use crate::evidence::keys;
use crate::fs;
use crate::ledger::store::{Ledger, SessionPaths, StoreError};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Where a resolution was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// On the ledger, as the call's outcome.
    OnLedger,
    /// An earlier attempt put it on the ledger and then failed to close the marker; closed now.
    AlreadyOnLedger,
    /// In the gate database only (asked for with `--unbound`), for the reason given.
    Unbound(String),
}

/// Resolves a reconciliation marker and records the resolution on the ledger as the call's
/// `outcome` (executed → returned, not-executed → raised `not_executed`, unknown → abandoned),
/// carrying the marker id and the evidence reference in its context.
///
/// When the call is no longer open on a chain that verifies (the ledger was moved aside, an
/// agent edit started a new chain, the marker came from a call the hook never allowed), no
/// entry of the format can carry the resolution. It is then refused, saying why, unless
/// `unbound` asks to close the marker in the gate database only, where it stays marked as
/// not on the ledger.
pub fn resolve_marker(
    project: &Path,
    id: i64,
    outcome: &str,
    evidence: &str,
    unbound: bool,
) -> Result<Resolution, String> {
    let attenu = project.join(".attenu");
    let marker = reconcile::open_marker(&attenu, id)?;
    let why_not = match bind_resolution(&attenu, &marker, outcome, evidence)? {
        Ok(resolution) => {
            reconcile::resolve(&attenu, id, outcome, evidence, "ledger")?;
            return Ok(resolution);
        }
        Err(why_not) => why_not,
    };
    if !unbound {
        return Err(format!(
            "marker {id} cannot be recorded on the ledger: {why_not}. Nothing was changed. To close it in the gate database only, with what you found, run the same command with --unbound"
        ));
    }
    reconcile::resolve(
        &attenu,
        id,
        outcome,
        evidence,
        &format!("unbound: {why_not}"),
    )?;
    Ok(Resolution::Unbound(why_not))
}

/// Appends the resolution as the call's outcome. `Ok(Err(why))` when it cannot be bound to the
/// call; `Err` for a failure worth retrying (the lock, the disk).
fn bind_resolution(
    attenu: &Path,
    marker: &reconcile::Marker,
    outcome: &str,
    evidence: &str,
) -> Result<Result<Resolution, String>, String> {
    let paths = SessionPaths::new(attenu, &marker.session_id);
    if !fs::check_regular_file(&paths.ledger)? {
        return Ok(Err(format!(
            "session {}'s ledger {} does not exist",
            marker.session_id,
            paths.ledger.display()
        )));
    }
    let key = keys::load_or_create(attenu)?;
    let mut ledger = match Ledger::open(
        paths,
        key.checkpoint_mac_key(),
        Instant::now() + Duration::from_secs(10),
    ) {
        Ok(l) => l,
        Err(e @ (StoreError::LockTimeout(_) | StoreError::Io(_))) => {
            return Err(format!("{e}; nothing was changed, try again"))
        }
        Err(e) => return Ok(Err(format!("the session's ledger cannot be used ({e})"))),
    };
    let chain = ledger.current().cloned();
    let pending = marker
        .tool_use_id
        .as_deref()
        .and_then(|t| ledger.state.pending.get(t))
        .filter(|p| chain.as_ref().is_some_and(|c| c.chain_id == p.chain_id))
        .cloned();
    let (Some(pending), Some(chain)) = (pending, chain) else {
        return match recorded_before(&ledger, marker)? {
            Some((o, e)) if o == outcome && e == evidence => Ok(Ok(Resolution::AlreadyOnLedger)),
            // The database must not say something other than the ledger does.
            Some((o, e)) => Err(match reconcile::list(attenu, true)
                .ok()
                .and_then(|all| all.into_iter().find(|m| m.id == marker.id))
                .and_then(|m| m.resolved_ms)
            {
                // Another resolve of the same marker got there first.
                Some(_) => format!(
                    "marker {} was resolved meanwhile, as {o} with evidence {e:?}; nothing was changed",
                    marker.id
                ),
                None => format!(
                    "the ledger already records marker {} resolved as {o} with evidence {e:?} (by an earlier resolve whose database update failed, or by one still finishing); nothing was changed. Run `attenu-hook reconcile list` again in a moment: if the marker is still open, run resolve with exactly that outcome and evidence to close it",
                    marker.id
                ),
            }),
            None => Ok(Err(format!(
                "its call (tool_use_id {}) is not open on the current chain of session {}",
                marker.tool_use_id.as_deref().unwrap_or("none"),
                marker.session_id
            ))),
        };
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
            "reconciliation": {"marker": marker.id, "outcome": outcome, "evidence": evidence, "cause": marker.cause},
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
    Ok(Ok(Resolution::OnLedger))
}

/// The outcome and evidence an earlier `resolve` of this marker appended (and then could not
/// close the marker): an outcome on the verified ledger naming this marker and its call.
fn recorded_before(
    ledger: &Ledger,
    marker: &reconcile::Marker,
) -> Result<Option<(String, String)>, String> {
    let bytes = ledger.read_verified().map_err(|e| e.to_string())?;
    Ok(bytes
        .split(|&b| b == b'\n')
        .filter(|l| l.windows(16).any(|w| w == b"\"reconciliation\""))
        .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .find(|e| {
            e["event"] == "outcome"
                && e.pointer("/context/reconciliation/marker") == Some(&json!(marker.id))
                && e.pointer("/context/tool_use_id") == Some(&json!(marker.tool_use_id))
        })
        .map(|e| {
            let r = &e["context"]["reconciliation"];
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (text("outcome"), text("evidence"))
        }))
}
