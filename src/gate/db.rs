//! The gate's SQLite file, `.attenu/gate.sqlite` (0600).

use crate::fs;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
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
    sig TEXT NOT NULL,
    field_digests TEXT
);
CREATE TABLE IF NOT EXISTS claims (
    tool_use_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    authorization_id TEXT,
    claimed_ms INTEGER NOT NULL,
    result TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS claims_by_authorization ON claims (authorization_id);
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
    evidence TEXT,
    binding TEXT
);
";

/// `PRAGMA user_version` of the current schema.
const SCHEMA_VERSION: i64 = 3;

/// Columns added after the first schema, for databases created before them.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    // Where a marker's resolution is recorded: "ledger", or why it could not be.
    ("markers", "binding", "TEXT"),
    // The random salt of a receipt's payload commitment.
    ("receipts", "payload_salt", "TEXT"),
    // An authorization's per-field input commitments, which name the fields a refused
    // call's input differs in (`refusal.rs`).
    ("authorizations", "field_digests", "TEXT"),
];

/// Brings a database created by an earlier build to the current schema, once, under SQLite's
/// write lock (so two processes never both add a column).
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let version = |c: &Connection| c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0));
    if version(conn)? >= SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if version(&tx)? < SCHEMA_VERSION {
        for (table, column, decl) in ADDED_COLUMNS {
            let present = tx
                .prepare(&format!(
                    "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
                ))?
                .exists([column])?;
            if !present {
                tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))?;
            }
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()
}

/// How long a command waits for another process's write lock on the database.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(3);

/// Why the gate database could not be opened, set up or queried.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The state directory, the database file or one of its side files is not one the hook
    /// may use.
    #[error(transparent)]
    Unsafe(#[from] fs::FsError),
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is a symlink, which the gate never follows; move it aside (an honest SQLite never makes one)", .path.display())]
    Symlink { path: PathBuf },
    #[error("{} cannot be made private ({source}); run `chmod 600 {}`", .path.display(), .path.display())]
    NotPrivate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// Another process holds the lock; it passes.
    #[error("{} is locked by another process ({source}); it clears when that process ends (`fuser {}` names it)", .path.display(), .path.display())]
    Locked {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{} is not a usable SQLite database ({source}); move it aside", .path.display())]
    Unusable {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// A statement failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Opens (creating, 0600) the gate database of a project's `.attenu/`.
pub fn open(attenu_dir: &Path) -> Result<Connection, DbError> {
    open_waiting(attenu_dir, BUSY_TIMEOUT)
}

/// [`open`], waiting at most `busy` for another process's write lock: the hook passes what is
/// left before its deadline, so a locked database ends in its own answer (a deny, or a stop
/// with a marker) rather than in the watchdog's.
pub fn open_waiting(attenu_dir: &Path, busy: Duration) -> Result<Connection, DbError> {
    fs::ensure_private_dir(attenu_dir)?;
    let path = attenu_dir.join(FILE);
    if !fs::check_regular_file(&path)? {
        // Create the file ourselves so it is 0600 from its first byte.
        match fs::open_rw(&path) {
            Ok(file) => drop(file),
            Err(source) => return Err(DbError::Create { path, source }),
        }
    }
    // A copy restored from a backup, or one made by another tool, may be readable by others.
    // Done before this process opens the database: SQLite's locks are POSIX record locks,
    // which closing any descriptor of the file would release under an open connection.
    // (SQLite creates -wal and -shm with the database file's permissions.)
    for side in ["", "-wal", "-shm"] {
        let p = attenu_dir.join(format!("{FILE}{side}"));
        if !side.is_empty() {
            // SQLite opens these itself, through a symlink, and reports any other kind of
            // file only as a disk I/O error.
            fs::check_regular_file(&p)?;
        }
        if let Err(source) = fs::tighten_file(&p) {
            return Err(
                if matches!(source.raw_os_error(), Some(libc::ELOOP | libc::EMLINK)) {
                    DbError::Symlink { path: p }
                } else {
                    DbError::NotPrivate { path: p, source }
                },
            );
        }
    }
    let mut conn = match Connection::open(&path) {
        Ok(conn) => conn,
        Err(source) => return Err(DbError::Open { path, source }),
    };
    conn.busy_timeout(busy)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| unusable(&path, e))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(SCHEMA)
        .and_then(|()| migrate(&mut conn))
        .map_err(|e| unusable(&path, e))?;
    Ok(conn)
}

/// What to tell the user when the database cannot be set up: a lock held by another process
/// passes; anything else means the file is not one of ours.
fn unusable(path: &Path, source: rusqlite::Error) -> DbError {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    let path = path.to_path_buf();
    if matches!(
        source.sqlite_error_code(),
        Some(DatabaseBusy | DatabaseLocked)
    ) {
        DbError::Locked { path, source }
    } else {
        DbError::Unusable { path, source }
    }
}
