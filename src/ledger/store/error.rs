//! Why a ledger cannot be used for a call. Each kind of [`StoreError`] is one reason code in
//! hook mode (`hook::context::store_reason`), and each message names the file and says what to
//! do or what happens next.

use super::ScanError;
use crate::fs::FsError;
use crate::json::canonical::CanonicalError;
use std::io;
use std::path::PathBuf;

/// Why the ledger cannot be used for this call.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `.attenu/` or a ledger file is not one the hook may use: a symlink, not a regular file,
    /// another user's.
    #[error(transparent)]
    Unsafe(#[from] FsError),
    /// Another process held the ledger's lock past the deadline.
    #[error(
        "another process held {} for too long; if no attenu-hook or Claude Code process is running, look for a stuck process holding it (fuser {})",
        .0.display(), .0.display()
    )]
    LockTimeout(PathBuf),
    #[error(transparent)]
    Unverifiable(#[from] Unverifiable),
    #[error(transparent)]
    Io(#[from] LedgerIo),
    /// A re-verify from GENESIS ran out of time; its progress is kept for the next call.
    #[error(transparent)]
    Incomplete(#[from] Reverifying),
}

/// A ledger that does not hold a valid chain: kept as evidence, never appended to.
#[derive(Debug, thiserror::Error)]
pub enum Unverifiable {
    #[error(
        "{} does not verify ({why}); it is kept as evidence and nothing more is appended to it. Move it and its state file {} aside (for example with a .broken suffix) to start a new ledger for this session, and keep the old one for review",
        .ledger.display(), .state.display()
    )]
    Broken {
        ledger: PathBuf,
        state: PathBuf,
        why: ScanError,
    },
    /// Shorter than its sealed state says it was: entries cut off, or an older copy.
    #[error(
        "{} no longer holds what was verified and appended to it ({then_bytes} bytes, {then_entries} entries then; {now_bytes} bytes now): entries were removed, or the file was replaced by an older copy. It is kept as evidence and nothing more is appended to it. If you moved the ledger aside on purpose, move its state file {} aside too to start a new ledger for this session",
        .ledger.display(), .state.display()
    )]
    Shrunk {
        ledger: PathBuf,
        state: PathBuf,
        then_bytes: u64,
        then_entries: u64,
        now_bytes: u64,
    },
}

/// A re-verify from GENESIS that this call's deadline stopped part way.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is being re-verified from GENESIS because its sealed state could not vouch for it: {done_mb} of {total_mb} MB done ({entries} entries) when this call ran out of time. Nothing was recorded for this call; the next call continues where this one stopped",
    .ledger.display()
)]
pub struct Reverifying {
    pub ledger: PathBuf,
    pub done_mb: u64,
    pub total_mb: u64,
    pub entries: u64,
}

/// What failed while reading, locking or writing the ledger.
#[derive(Debug, thiserror::Error)]
pub enum LedgerIo {
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot lock {}: {source}", .path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot wait for the lock: {0}")]
    WaitForLock(#[source] io::Error),
    #[error("cannot stat the ledger: {0}")]
    Stat(#[source] io::Error),
    #[error("cannot read the ledger: {0}")]
    Read(#[source] io::Error),
    #[error("bytes {from}..{to} are outside the verified ledger")]
    OutsideVerified { from: u64, to: u64 },
    #[error("cannot write the ledger: {0}")]
    Write(#[source] io::Error),
    #[error("cannot fsync the ledger: {0}")]
    Fsync(#[source] io::Error),
    #[error("cannot fsync {} after creating the ledger: {source}", .dir.display())]
    FsyncDir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the ledger changed size unexpectedly during the append")]
    ChangedSize,
    #[error("an entry was appended before any root")]
    NoRoot,
    #[error("entry cannot be canonicalised: {0}")]
    Canonical(#[from] CanonicalError),
    #[error("the entry's hash cannot join the chain's tree: {0}")]
    Tree(#[source] ScanError),
    #[error("cannot keep the broken sealed state aside: {0}")]
    KeepLostState(#[source] io::Error),
    #[error("cannot keep the torn tail aside: {0}")]
    KeepTornTail(#[source] io::Error),
    #[error("cannot truncate the torn tail: {0}")]
    TruncateTornTail(#[source] io::Error),
    #[error("cannot fsync the ledger after cutting its torn tail: {0}")]
    FsyncTornTail(#[source] io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_names_the_file_and_what_to_do() {
        let ledger = PathBuf::from("/p/.attenu/ledger-s.jsonl");
        let timeout = StoreError::LockTimeout(ledger.clone()).to_string();
        assert!(
            timeout.contains("fuser /p/.attenu/ledger-s.jsonl"),
            "{timeout}"
        );
        let shrunk = StoreError::from(Unverifiable::Shrunk {
            ledger: ledger.clone(),
            state: "/p/.attenu/ledger-s.state.json".into(),
            then_bytes: 10,
            then_entries: 2,
            now_bytes: 5,
        })
        .to_string();
        assert!(
            shrunk.contains("(10 bytes, 2 entries then; 5 bytes now)"),
            "{shrunk}"
        );
        assert!(shrunk.contains("move its state file /p/.attenu/ledger-s.state.json aside"));
        let busy = StoreError::from(Reverifying {
            ledger,
            done_mb: 3,
            total_mb: 9,
            entries: 70,
        })
        .to_string();
        assert!(busy.contains("3 of 9 MB done (70 entries)"), "{busy}");
        let symlink = StoreError::from(FsError::SymlinkRefused {
            path: "/p/.attenu".into(),
        });
        assert!(matches!(symlink, StoreError::Unsafe(_)));
    }
}
