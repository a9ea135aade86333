//! The gate's SQLite file, `.attenu/gate.sqlite` (0600).

use crate::fsutil;
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

pub const FILE: &str = "gate.sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS authorizations (
    id TEXT PRIMARY KEY,
    reviewer TEXT NOT NULL,
    tool TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    uses_left INTEGER NOT NULL CHECK (uses_left >= 0),
    expires_ms INTEGER NOT NULL,
    session_id TEXT,
    agent_type TEXT,
    created_ms INTEGER NOT NULL,
    signed TEXT NOT NULL,
    sig TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    tool_use_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    authorization_id TEXT,
    claimed_ms INTEGER NOT NULL,
    result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS receipts (
    receipt_id TEXT PRIMARY KEY,
    call_id TEXT NOT NULL,
    tool_use_id TEXT,
    session_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    observer TEXT NOT NULL,
    payload_digest TEXT,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS markers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_ms INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    tool_use_id TEXT,
    tool TEXT NOT NULL,
    call_id TEXT,
    cause TEXT NOT NULL,
    resolved_ms INTEGER,
    outcome TEXT,
    evidence TEXT
);
";

/// Opens (creating, 0600) the gate database of a project's `.attenu/`.
pub fn open(attenu_dir: &Path) -> Result<Connection, String> {
    fsutil::ensure_private_dir(attenu_dir)?;
    let path = attenu_dir.join(FILE);
    if !fsutil::check_regular_file(&path)? {
        // Create the file ourselves so it is 0600 from its first byte.
        drop(fsutil::open_rw(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?);
    }
    let conn =
        Connection::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.busy_timeout(Duration::from_secs(3))
        .map_err(|e| e.to_string())?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| {
            format!(
                "{} is not a usable SQLite database ({e}); move it aside",
                path.display()
            )
        })?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| e.to_string())?;
    conn.execute_batch(SCHEMA).map_err(|e| {
        format!(
            "{} is not a usable SQLite database ({e}); move it aside",
            path.display()
        )
    })?;
    for side in ["-wal", "-shm"] {
        let p = attenu_dir.join(format!("{FILE}{side}"));
        if p.exists() {
            let _ = fsutil::make_private(&p);
        }
    }
    Ok(conn)
}
