//! Business receipts: a host-verified record that a downstream effect (a payment, a refund)
//! really happened, bound to the call that caused it. A tool's own response is never such
//! proof; only the host, having checked with the external system, records a receipt. Receipts
//! live in the gate database, separate from the ledger, and name the call by its `call_id`.

use super::db;
use crate::evidence::keys;
use crate::hook::time;
use crate::ledger::store::{Ledger, SessionPaths};
use rusqlite::params;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The allowed call a receipt is for, found by call_id or tool_use_id in the project's ledgers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundCall {
    pub call_id: String,
    pub tool_use_id: Option<String>,
    pub session_id: String,
    pub tool: String,
}

fn find_call(attenu: &Path, id: &str) -> Result<BoundCall, String> {
    let entries =
        std::fs::read_dir(attenu).map_err(|e| format!("cannot list {}: {e}", attenu.display()))?;
    for f in entries.flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("ledger-") && name.ends_with(".jsonl")) {
            continue;
        }
        let text =
            std::fs::read_to_string(f.path()).map_err(|e| format!("cannot read {name}: {e}"))?;
        for line in text.lines().filter(|l| l.contains(id)) {
            let Ok(e) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
            let call_id = s(e.get("call_id"));
            let tool_use_id = s(e.pointer("/context/tool_use_id"));
            if e["event"] == "allow"
                && (call_id.as_deref() == Some(id) || tool_use_id.as_deref() == Some(id))
            {
                return Ok(BoundCall {
                    call_id: call_id.unwrap_or_default(),
                    tool_use_id,
                    session_id: s(e.pointer("/context/session_id")).unwrap_or_default(),
                    tool: s(e.get("tool")).unwrap_or_default(),
                });
            }
        }
    }
    Err(format!("no allowed call with call_id or tool_use_id '{id}' in {}; a receipt binds to a call the hook allowed", attenu.display()))
}

/// Records a receipt for a call; the call's ledger must verify.
pub fn record(
    project: &Path,
    call: &str,
    receipt_id: &str,
    observer: &str,
    payload: Option<&Value>,
) -> Result<BoundCall, String> {
    let attenu = project.join(".attenu");
    let bound = find_call(&attenu, call)?;
    // The ledger the call is on must verify before anything is bound to it.
    let key = keys::load_or_create(&attenu)?;
    drop(
        Ledger::open(
            SessionPaths::new(&attenu, &bound.session_id),
            key.checkpoint_mac_key(),
            Instant::now() + Duration::from_secs(10),
        )
        .map_err(|e| e.to_string())?,
    );
    let digest = payload.map(crate::gate::authz::input_digest).transpose()?;
    let conn = db::open(&attenu)?;
    conn.execute(
        "INSERT INTO receipts (receipt_id, call_id, tool_use_id, session_id, tool, observer, payload_digest, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![receipt_id, bound.call_id, bound.tool_use_id, bound.session_id, bound.tool, observer, digest, time::now_ms() as i64],
    )
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
            format!("receipt '{receipt_id}' is already recorded; a receipt id is recorded once")
        }
        other => format!("cannot store the receipt: {other}"),
    })?;
    Ok(bound)
}
