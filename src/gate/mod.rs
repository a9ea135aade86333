//! The decision-bound gate: host-signed, one-use authorizations bound to an exact tool and
//! exact arguments, consumed atomically in SQLite, and reconciliation markers for outcomes
//! that could not be recorded.
//!
//! SQLite here is local durability for independent processes on one machine (WAL, busy
//! timeout, `BEGIN IMMEDIATE`); it is not a distributed consensus mechanism.

pub mod authz;
pub mod claim;
pub mod db;
pub mod receipt;
pub mod reconcile;
pub mod refusal;

use crate::clock as time;
use crate::evidence::keys;
use crate::fs;
use crate::ledger::entry::{reconciled_outcome, BodyState, Reconciled};
use crate::ledger::read::{context, reconciliation, EntryView, Event, Verified};
use crate::ledger::store::{Ledger, SessionPaths, StoreError};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where a resolution was recorded.
#[derive(Debug)]
pub enum Resolution {
    /// On the ledger, as the call's outcome.
    OnLedger,
    /// An earlier attempt put it on the ledger and then failed to close the marker; closed now.
    AlreadyOnLedger,
    /// In the gate database only (asked for with `--unbound`), for the reason given.
    Unbound(Unbindable),
}

/// Why a resolution cannot be bound to its call on the ledger: no entry of the format can
/// carry it, so only `--unbound` closes the marker.
#[derive(Debug, thiserror::Error)]
pub enum Unbindable {
    #[error("session {session}'s ledger {} does not exist", .ledger.display())]
    NoLedger { session: String, ledger: PathBuf },
    #[error("the session's ledger cannot be used ({0})")]
    LedgerUnusable(#[source] StoreError),
    #[error("its call (tool_use_id {}) is not open on the current chain of session {session}", .tool_use_id.as_deref().unwrap_or("none"))]
    NotOpen {
        tool_use_id: Option<String>,
        session: String,
    },
}

/// Why a marker was not resolved; nothing was changed, and each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Reconcile(#[from] reconcile::ReconcileError),
    /// The session's ledger file is not one the hook may use.
    #[error(transparent)]
    Unsafe(#[from] fs::FsError),
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    /// The verified ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] StoreError),
    /// The ledger's lock or the disk failed: worth retrying.
    #[error("{0}; nothing was changed, try again")]
    Retry(#[source] StoreError),
    #[error("marker {id} cannot be recorded on the ledger: {why}. Nothing was changed. To close it in the gate database only, with what you found, run the same command with --unbound")]
    NotBindable { id: i64, why: Unbindable },
    /// Another resolve of the same marker got there first.
    #[error("marker {id} was resolved meanwhile, as {outcome} with evidence {evidence:?}; nothing was changed")]
    ResolvedMeanwhile {
        id: i64,
        outcome: String,
        evidence: String,
    },
    #[error("the ledger already records marker {id} resolved as {outcome} with evidence {evidence:?} (by an earlier resolve whose database update failed, or by one still finishing); nothing was changed. Run `attenu-hook reconcile list` again in a moment: if the marker is still open, run resolve with exactly that outcome and evidence to close it")]
    AlreadyRecorded {
        id: i64,
        outcome: String,
        evidence: String,
    },
    #[error("the resolution could not be recorded ({0}); the marker stays open")]
    NotRecorded(#[source] StoreError),
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
) -> Result<Resolution, ResolveError> {
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
        return Err(ResolveError::NotBindable { id, why: why_not });
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
) -> Result<Result<Resolution, Unbindable>, ResolveError> {
    let paths = SessionPaths::new(attenu, &marker.session_id);
    if !fs::check_regular_file(&paths.ledger)? {
        return Ok(Err(Unbindable::NoLedger {
            session: marker.session_id.clone(),
            ledger: paths.ledger,
        }));
    }
    let key = keys::load_or_create(attenu)?;
    let mut ledger = match Ledger::open(
        paths,
        key.state_mac_key(),
        Instant::now() + Duration::from_secs(10),
    ) {
        Ok(l) => l,
        Err(e @ (StoreError::LockTimeout(_) | StoreError::Io(_))) => {
            return Err(ResolveError::Retry(e))
        }
        Err(e) => return Ok(Err(Unbindable::LedgerUnusable(e))),
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
            Some((o, e)) => Err(recorded_otherwise(attenu, marker.id, o, e)),
            None => Ok(Err(Unbindable::NotOpen {
                tool_use_id: marker.tool_use_id.clone(),
                session: marker.session_id.clone(),
            })),
        };
    };
    let (body_state, error_code) = match outcome {
        "executed" => (BodyState::Returned, None),
        "not-executed" => (BodyState::Raised, Some("not_executed")),
        _ => (BodyState::Abandoned, None),
    };
    let resolved = Reconciled {
        session_id: &marker.session_id,
        tool_use_id: marker.tool_use_id.as_deref(),
        marker: marker.id,
        outcome,
        evidence,
        cause: &marker.cause,
        body_state,
        error_code,
    };
    let entry = reconciled_outcome(
        &chain.chain_id,
        &pending.node,
        &pending.call_id,
        resolved,
        time::now_ms(),
    )
    .into_object();
    ledger
        .append(vec![entry])
        .map_err(ResolveError::NotRecorded)?;
    Ok(Ok(Resolution::OnLedger))
}

/// The ledger already records marker `id` resolved otherwise: by another resolve that got
/// there first, or by an earlier one whose database update failed.
fn recorded_otherwise(attenu: &Path, id: i64, outcome: String, evidence: String) -> ResolveError {
    let resolved = reconcile::list(attenu, true)
        .ok()
        .and_then(|all| all.into_iter().find(|m| m.id == id))
        .and_then(|m| m.resolved_ms);
    match resolved {
        // Another resolve of the same marker got there first.
        Some(_) => ResolveError::ResolvedMeanwhile {
            id,
            outcome,
            evidence,
        },
        None => ResolveError::AlreadyRecorded {
            id,
            outcome,
            evidence,
        },
    }
}

/// The outcome and evidence an earlier `resolve` of this marker appended (and then could not
/// close the marker): an outcome on the verified ledger naming this marker and its call.
fn recorded_before(
    ledger: &Ledger,
    marker: &reconcile::Marker,
) -> Result<Option<(String, String)>, StoreError> {
    let verified = Verified::read(ledger)?;
    let reconciliation = format!("\"{}\"", context::RECONCILIATION);
    let found = verified
        .mentioning(reconciliation.as_bytes())
        .find_map(|v| {
            let e = EntryView::of(&v);
            let r = e.context_get(context::RECONCILIATION)?;
            (e.is(Event::Outcome)
                && r.get(reconciliation::MARKER) == Some(&json!(marker.id))
                && e.context_get(context::TOOL_USE_ID) == Some(&json!(marker.tool_use_id)))
            .then(|| {
                let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                (
                    text(reconciliation::OUTCOME),
                    text(reconciliation::EVIDENCE),
                )
            })
        });
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed errors print what the `String` errors they replaced printed.
    #[test]
    fn an_unbindable_resolution_says_how_to_close_it() {
        let why = Unbindable::NotOpen {
            tool_use_id: None,
            session: "s1".into(),
        };
        assert_eq!(
            why.to_string(),
            "its call (tool_use_id none) is not open on the current chain of session s1"
        );
        assert_eq!(
            ResolveError::NotBindable { id: 4, why }.to_string(),
            "marker 4 cannot be recorded on the ledger: its call (tool_use_id none) is not open on the current chain of session s1. Nothing was changed. To close it in the gate database only, with what you found, run the same command with --unbound"
        );
        assert_eq!(
            reconcile::ReconcileError::AlreadyResolved {
                id: 2,
                outcome: None
            }
            .to_string(),
            "marker 2 is already resolved ()"
        );
        assert_eq!(
            ResolveError::ResolvedMeanwhile {
                id: 2,
                outcome: "executed".into(),
                evidence: "ticket \"7\"".into()
            }
            .to_string(),
            r#"marker 2 was resolved meanwhile, as executed with evidence "ticket \"7\""; nothing was changed"#
        );
    }
}
