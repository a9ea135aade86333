//! Reconciliation markers: an outcome that could not be recorded leaves a marker; a person
//! resolves it with what they found, and the resolution goes on the ledger.

use super::db::{self, DbError};
use crate::clock as time;
use rusqlite::params;
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Marker {
    pub id: i64,
    pub created_ms: i64,
    pub session_id: String,
    pub tool_use_id: Option<String>,
    pub tool: String,
    pub call_id: Option<String>,
    pub cause: String,
    pub resolved_ms: Option<i64>,
    pub outcome: Option<String>,
    pub evidence: Option<String>,
    /// Where the resolution is recorded: `ledger`, or why it could not be bound there.
    pub binding: Option<String>,
}

/// Why a marker cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("no reconciliation marker {id}; `attenu-hook reconcile list` shows the open ones")]
    NoMarker { id: i64 },
    #[error("marker {id} is already resolved ({})", .outcome.as_deref().unwrap_or_default())]
    AlreadyResolved { id: i64, outcome: Option<String> },
    #[error("marker {id} was resolved by someone else meanwhile")]
    ResolvedMeanwhile { id: i64 },
}

/// What a new marker records: the call whose outcome could not be recorded, and why.
#[derive(Debug, Clone, Copy)]
pub struct NewMarker<'a> {
    pub session_id: &'a str,
    pub tool_use_id: Option<&'a str>,
    pub tool: &'a str,
    pub call_id: Option<&'a str>,
    pub cause: &'a str,
}

/// Stores a marker; returns its id. Never retries the action itself.
pub fn add_marker(
    attenu_dir: &Path,
    m: NewMarker<'_>,
    busy: std::time::Duration,
) -> Result<i64, DbError> {
    let conn = db::open_waiting(attenu_dir, busy)?;
    conn.execute(
        "INSERT INTO markers (created_ms, session_id, tool_use_id, tool, call_id, cause) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![time::now_ms() as i64, m.session_id, m.tool_use_id, m.tool, m.call_id, m.cause],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Markers, open ones only unless `all`. A project without a gate database has none (and
/// listing them does not create one).
pub fn list(attenu_dir: &Path, all: bool) -> Result<Vec<Marker>, DbError> {
    if !crate::fs::check_regular_file(&attenu_dir.join(db::FILE))? {
        return Ok(Vec::new());
    }
    let conn = db::open(attenu_dir)?;
    let sql = if all {
        "SELECT id, created_ms, session_id, tool_use_id, tool, call_id, cause, resolved_ms, outcome, evidence, binding FROM markers ORDER BY id"
    } else {
        "SELECT id, created_ms, session_id, tool_use_id, tool, call_id, cause, resolved_ms, outcome, evidence, binding FROM markers WHERE resolved_ms IS NULL ORDER BY id"
    };
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        Ok(Marker {
            id: r.get(0)?,
            created_ms: r.get(1)?,
            session_id: r.get(2)?,
            tool_use_id: r.get(3)?,
            tool: r.get(4)?,
            call_id: r.get(5)?,
            cause: r.get(6)?,
            resolved_ms: r.get(7)?,
            outcome: r.get(8)?,
            evidence: r.get(9)?,
            binding: r.get(10)?,
        })
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// One open marker, or an error that says why it cannot be resolved.
pub fn open_marker(attenu_dir: &Path, id: i64) -> Result<Marker, ReconcileError> {
    let marker = list(attenu_dir, true)?
        .into_iter()
        .find(|m| m.id == id)
        .ok_or(ReconcileError::NoMarker { id })?;
    if marker.resolved_ms.is_some() {
        return Err(ReconcileError::AlreadyResolved {
            id,
            outcome: marker.outcome,
        });
    }
    Ok(marker)
}

/// Marks one open marker resolved, noting where the resolution is recorded (`ledger`, or why
/// not); returns the marker as it was before.
pub fn resolve(
    attenu_dir: &Path,
    id: i64,
    outcome: &str,
    evidence: &str,
    binding: &str,
) -> Result<Marker, ReconcileError> {
    let marker = open_marker(attenu_dir, id)?;
    let conn = db::open(attenu_dir)?;
    let n = conn
        .execute(
            "UPDATE markers SET resolved_ms = ?1, outcome = ?2, evidence = ?3, binding = ?4 WHERE id = ?5 AND resolved_ms IS NULL",
            params![time::now_ms() as i64, outcome, evidence, binding, id],
        )
        .map_err(DbError::from)?;
    if n != 1 {
        return Err(ReconcileError::ResolvedMeanwhile { id });
    }
    Ok(marker)
}
