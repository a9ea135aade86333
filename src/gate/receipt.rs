//! Business receipts: a host-verified record that a downstream effect (a payment, a refund)
//! really happened, bound to the call that caused it. A tool's own response is never such
//! proof; only the host, having checked with the external system, records a receipt. Receipts
//! live in the gate database, separate from the ledger, and name the call by its `call_id`.

use super::db::{self, DbError};
use crate::clock as time;
use crate::evidence::keys;
use crate::fs;
use crate::ledger::read::{self, EntryView, Event};
use crate::ledger::store::{Ledger, SessionPaths, StoreError};
use rusqlite::params;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why no receipt was recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    #[error("cannot list {}: {source}", .dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A session's ledger file is not one the hook may use.
    #[error(transparent)]
    Unsafe(#[from] fs::FsError),
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    /// A session's ledger could not be opened or read under its lock.
    #[error(transparent)]
    Ledger(#[from] StoreError),
    #[error("no allowed call with call_id or tool_use_id '{call}' on a verified ledger in {}; a receipt binds to a call the hook allowed", .dir.display())]
    NoCall { call: String, dir: PathBuf },
    /// No randomness for the payload's salt.
    #[error("{0}")]
    Randomness(#[from] crate::random::NoRandomness),
    #[error("the receipt's payload has no canonical (RFC 8785) form")]
    PayloadNotCanonical,
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("receipt '{receipt_id}' is already recorded; a receipt id is recorded once")]
    Duplicate { receipt_id: String },
    #[error("cannot store the receipt: {0}")]
    Store(#[source] rusqlite::Error),
}

/// The allowed call a receipt is for, found by call_id or tool_use_id in the project's ledgers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundCall {
    pub call_id: String,
    pub tool_use_id: Option<String>,
    pub session_id: String,
    pub tool: String,
}

/// The allowed call `id` names in a ledger's bytes.
fn find_in(text: &[u8], id: &str) -> Option<BoundCall> {
    if id.is_empty() {
        return None;
    }
    read::mentioning(text, id.as_bytes()).find_map(|v| {
        let e = EntryView::of(&v);
        let own = |v: Option<&str>| v.map(str::to_string);
        let (call_id, tool_use_id) = (own(e.call_id()), own(e.tool_use_id()));
        (e.is(Event::Allow)
            && (call_id.as_deref() == Some(id) || tool_use_id.as_deref() == Some(id)))
        .then(|| BoundCall {
            call_id: call_id.unwrap_or_default(),
            tool_use_id,
            session_id: own(e.session_id()).unwrap_or_default(),
            tool: own(e.tool()).unwrap_or_default(),
        })
    })
}

/// The sessions whose ledger files name the call: only leads, each confirmed on that
/// session's verified ledger (a line in some file proves nothing).
fn candidate_sessions(attenu: &Path, id: &str) -> Result<Vec<String>, ReceiptError> {
    let files = read::sessions(attenu).map_err(|source| ReceiptError::List {
        dir: attenu.to_path_buf(),
        source,
    })?;
    let mut sessions = Vec::new();
    for f in files {
        let Ok(Some(ledger)) = read::read_unlocked(&f.paths.ledger) else {
            continue;
        };
        if let Some(call) = find_in(ledger.bytes(), id) {
            if !sessions.contains(&call.session_id) {
                sessions.push(call.session_id);
            }
        }
    }
    Ok(sessions)
}

/// The call on its session's verified ledger, read under the ledger's lock.
fn confirm(attenu: &Path, session: &str, id: &str) -> Result<Option<BoundCall>, ReceiptError> {
    let paths = SessionPaths::new(attenu, session);
    if !fs::check_regular_file(&paths.ledger)? {
        return Ok(None);
    }
    let key = keys::load_or_create(attenu)?;
    let ledger = Ledger::open(
        paths,
        key.state_mac_key(),
        Instant::now() + Duration::from_secs(10),
    )?;
    let verified = read::Verified::read(&ledger)?;
    Ok(find_in(verified.bytes(), id).filter(|b| b.session_id == session))
}

/// Records a receipt for a call, found on its session's verified ledger.
pub fn record(
    project: &Path,
    call: &str,
    receipt_id: &str,
    observer: &str,
    payload: Option<&Value>,
) -> Result<BoundCall, ReceiptError> {
    let attenu = project.join(".attenu");
    let mut bound = None;
    for session in candidate_sessions(&attenu, call)? {
        if let Some(b) = confirm(&attenu, &session, call)? {
            bound = Some(b);
            break;
        }
    }
    let bound = bound.ok_or_else(|| ReceiptError::NoCall {
        call: call.to_string(),
        dir: attenu.clone(),
    })?;
    // A salted commitment, like every argument on the ledger: a bare digest of a small
    // payload ({"amount": 10}) could be found again by trying candidates.
    let salt = crate::random::random_hex(16)?;
    let digest = payload
        .map(|p| {
            crate::ledger::commitment::commit(p, &salt).ok_or(ReceiptError::PayloadNotCanonical)
        })
        .transpose()?;
    let conn = db::open(&attenu)?;
    conn.execute(
        "INSERT INTO receipts (receipt_id, call_id, tool_use_id, session_id, tool, observer, payload_digest, payload_salt, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![receipt_id, bound.call_id, bound.tool_use_id, bound.session_id, bound.tool, observer, digest, digest.as_ref().map(|_| salt), time::now_ms() as i64],
    )
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
            ReceiptError::Duplicate { receipt_id: receipt_id.to_string() }
        }
        other => ReceiptError::Store(other),
    })?;
    Ok(bound)
}
