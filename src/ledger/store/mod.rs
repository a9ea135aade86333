//! The per-session ledger file under `.attenu/`, its lock, and its sealed state.
//!
//! Two things were once both called checkpoints and are kept apart here: the **sealed state**
//! (`ledger-<session>.state.json`, `seal.rs`), the hook's private record of what it verified,
//! MACed and never shipped; and the **signed checkpoint**, a C2SP tlog-checkpoint of a chain's
//! Merkle tree signed with the anchor key (`crate::evidence::checkpoint`), which is shipped
//! and which a reviewer checks. The sealed state's file header (`attenu-checkpoint v4`), its
//! member `checkpoint_losses`, the MAC key's derivation label, the ledger field
//! `context.checkpoint_lost` and `verify`'s notice `checkpoint-lost` keep the old word,
//! because they are formats on disk or in output.
//!
//! # Layout
//! `ledger-<session>.jsonl` holds one canonical-JSON entry per line. It is a sequence of
//! chains: each starts with a `root` entry at seq 0 linked to GENESIS, then one entry per
//! decision or outcome, with a declared agent's `spawn` written when it is first seen. A new
//! chain starts when the derivation's digest changes mid-session; its root's
//! `context.previous_chain` names the previous chain's id, head hash and seq, so removing a
//! whole chain from the middle of the file is detected too. Each chain exports as one bundle the reference verifier accepts.
//!
//! # Verifying before every append in O(1)
//! Every append happens under an exclusive lock, and only onto a ledger verified since it was
//! last written. Re-verifying the whole file on every call would make each call's cost grow
//! with the ledger, so after each append the hook writes its sealed state beside the
//! ledger (`ledger-<session>.state.json`): what the verified prefix is (chain heads, byte length,
//! offset of the last line, open calls) and what proves the file has not changed since (its
//! device, inode, length, mtime and ctime), sealed with an HMAC whose key is derived from the
//! project's anchor key. On the next call the sealed state is accepted only when the MAC holds,
//! the file's identity and times are exactly those recorded, and the last line still parses
//! and reproduces the recorded head hash. Any write to the file changes its ctime, which no
//! unprivileged process can set back, so an edit anywhere in the ledger fails the check and the
//! next call re-verifies the whole file from GENESIS (and denies if it does not verify).
//! That re-verify streams the file in chunks parsed on every core, and hashes each line's own
//! bytes when they are the exact canonical form (`line.rs`), so it costs little more than
//! reading and hashing; one that still cannot finish before the hook's deadline keeps a sealed
//! progress mark (`progress.rs`), the call is denied `ledger-reverifying`, and the next call
//! goes on from there, so a big ledger never wedges its session.
//! What this does not cover: someone who can change the system clock or write the raw block
//! device, or who holds the anchor key; the signed anchor of an exported bundle is the
//! stronger commitment, and THREAT-MODEL.md says so.
//!
//! # Torn tails
//! A hook killed in the middle of its single `write` can leave a final line without its
//! newline. No answer was printed for it (the answer comes after fsync), so no decision is
//! lost; the torn bytes are moved to `ledger-<session>.torn-<ms>` and the next entry records
//! the recovery in its `context.recovered_torn_tail`. Anything else that does not verify is
//! never repaired automatically: calls are denied with `ledger-unverifiable`.
//!
//! # Lost sealed state (`checkpoint_lost`)
//! A sealed state missing, unreadable or failing its seal beside a non-empty ledger is never
//! taken for "no state yet": without it nothing shows the file was not cut short (every
//! prefix of a chain verifies). The ledger is re-verified, the broken state file kept aside as
//! `ledger-<session>.state-lost-<ms>`, and the next entry records it in
//! `context.checkpoint_lost` ([`StateLoss`]), which `verify` and `doctor` report. A new
//! session's empty ledger gets a sealed state at once, so that a crash between the first
//! append and its state leaves a stale state file, not a missing one.

mod append;
mod error;
mod line;
mod lock;
mod progress;
mod seal;
mod state;
mod verify;

pub use error::{LedgerIo, Reverifying, StoreError, Unverifiable};
pub use seal::{
    holds_sealed_prefix, read_sealed_state, unseal_state, Found, MAX_SEALED_STATE_BYTES,
};
pub use state::{
    ChainInfo, CheckpointMark, FileStamp, LossCause, Pending, State, StateLoss, CHECKPOINT_LOST,
    MAX_OPEN_CALLS,
};
pub use verify::{scan, ScanError, Verifier};

use crate::fs;
use crate::ledger::chain;
use lock::acquire;
use serde_json::Value;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A file name for a session id that can never leave `.attenu/` and never collides with
/// another id's: ids of `[a-z0-9_-]` (Claude Code's UUIDs) are used as they are; any other id
/// becomes `h.` followed by the first 40 hex of its SHA-256. Plain names have no `.`.
pub fn session_file_name(session_id: &str) -> String {
    let plain = !session_id.is_empty()
        && session_id.len() <= 100
        && session_id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if plain {
        session_id.to_string()
    } else {
        format!("h.{}", &chain::sha256_hex(session_id.as_bytes())[..40])
    }
}

/// Paths of one session's files.
#[derive(Debug, Clone)]
pub struct SessionPaths {
    pub dir: PathBuf,
    pub name: String,
    pub ledger: PathBuf,
    pub state: PathBuf,
}

impl SessionPaths {
    pub fn new(attenu_dir: &Path, session_id: &str) -> Self {
        Self::of_file_name(attenu_dir, &session_file_name(session_id))
    }

    /// The paths of the session whose ledger is `ledger-<name>.jsonl`: `name` is already a
    /// file name ([`session_file_name`]'s output, as listed by `crate::ledger::read::sessions`).
    pub fn of_file_name(attenu_dir: &Path, name: &str) -> Self {
        SessionPaths {
            dir: attenu_dir.to_path_buf(),
            ledger: attenu_dir.join(format!("ledger-{name}.jsonl")),
            state: attenu_dir.join(format!("ledger-{name}.state.json")),
            name: name.to_string(),
        }
    }
}

/// A session ledger, locked for this process until dropped (the `flock` is on the ledger's own
/// open file description, so it goes with `file`).
pub struct Ledger {
    pub paths: SessionPaths,
    file: File,
    pub state: State,
    mac_key: [u8; 32],
    /// A torn tail moved aside during this open, to be recorded in the next entry.
    pub recovered: Option<Value>,
    /// A lost or broken sealed state found beside a non-empty ledger, to be recorded in the
    /// next entry.
    pub lost: Option<StateLoss>,
    /// Whether the sealed state was accepted (false: the whole file was re-verified).
    pub fast_path: bool,
    /// The ledger was empty when opened, so this process may have just created it, and its
    /// name may not be durable yet: the first append also syncs the directory, unless this
    /// process created the file on a file system whose `fdatasync` of it writes its name
    /// (`fs::new_name_durable_with_file`).
    name_unsynced: bool,
    /// This process created the file (and has held it open since).
    created: bool,
    /// When a re-verify from GENESIS stops and keeps its progress (none: it runs to the end).
    work_deadline: Option<Instant>,
}

impl Ledger {
    /// Opens and locks the session ledger, verifying it (fast path via the sealed state).
    pub fn open(
        paths: SessionPaths,
        mac_key: [u8; 32],
        lock_deadline: Instant,
    ) -> Result<Ledger, StoreError> {
        Self::open_within(paths, mac_key, lock_deadline, None)
    }

    /// [`Ledger::open`] for a caller with a deadline: a re-verify from GENESIS still running
    /// at `work_deadline` keeps its progress and fails with [`StoreError::Incomplete`]; the
    /// next open continues it.
    pub fn open_within(
        paths: SessionPaths,
        mac_key: [u8; 32],
        lock_deadline: Instant,
        work_deadline: Option<Instant>,
    ) -> Result<Ledger, StoreError> {
        fs::ensure_private_dir(&paths.dir)?;
        // Before the anchor key or a ledger is written into it (see `fs::GIT_IGNORE_FILE`).
        fs::ensure_git_ignore(&paths.dir);
        // The lock is the ledger itself: nothing ever replaces its inode (a torn tail is cut in
        // place), so every process of the session locks the same file, and a new session
        // creates one file fewer. The open never follows a symlink (nor, being read-write,
        // waits on a FIFO), and the file it opened is what is checked, once the lock is held
        // (see `load`).
        let (file, created) = fs::open_read_append(&paths.ledger).map_err(|e| {
            match fs::refused_open(&paths.ledger, &e) {
                Some(why) => StoreError::Unsafe(why),
                None => StoreError::Io(LedgerIo::Open {
                    path: paths.ledger.clone(),
                    source: e,
                }),
            }
        })?;
        acquire(&file, &paths.ledger, lock_deadline)?;
        let mut ledger = Ledger {
            paths,
            file,
            state: State::default(),
            mac_key,
            recovered: None,
            lost: None,
            fast_path: false,
            name_unsynced: false,
            created,
            work_deadline,
        };
        ledger.load()?;
        ledger.name_unsynced = ledger.state.stamp.len == 0;
        Ok(ledger)
    }

    fn metadata(&self) -> Result<std::fs::Metadata, StoreError> {
        self.file.metadata().map_err(|e| LedgerIo::Stat(e).into())
    }

    fn stamp(&self) -> Result<FileStamp, StoreError> {
        self.metadata().map(|m| FileStamp::of(&m))
    }

    fn load(&mut self) -> Result<(), StoreError> {
        let meta = self.metadata()?;
        fs::check_owned_regular(&self.paths.ledger, &meta)?;
        let stamp = FileStamp::of(&meta);
        let found = self.read_sealed()?;
        if let Found::Sealed(state) = &found {
            if state.stamp == stamp && self.tail_matches(state) {
                let Found::Sealed(state) = found else {
                    unreachable!()
                };
                self.state = *state;
                self.recovered = self.state.unrecorded_recovery.clone();
                self.lost = self.state.unrecorded_loss.clone();
                self.fast_path = true;
                return Ok(());
            }
        }
        // A sealed but outdated state still names a recovery moved aside. If an append
        // recorded it and then died before rewriting the sealed state, it is recorded twice
        // (the same details both times); it is never lost.
        self.full_verify(found)
    }

    /// The chain new entries go to, if any.
    pub fn current(&self) -> Option<&ChainInfo> {
        self.state.chains.last()
    }

    /// The verified file's bytes from `from` to `to` (lines of the current chain, for a
    /// signed checkpoint's entries object).
    pub fn read_range(&self, from: u64, to: u64) -> Result<Vec<u8>, StoreError> {
        if from > to || to > self.state.stamp.len {
            return Err(LedgerIo::OutsideVerified { from, to }.into());
        }
        let mut buf = vec![0u8; (to - from) as usize];
        self.file
            .read_exact_at(&mut buf, from)
            .map_err(LedgerIo::Read)?;
        Ok(buf)
    }

    /// Records that chain `index`'s signed checkpoint at `mark` is queued, in the sealed state.
    pub fn mark_checkpointed(&mut self, index: usize, mark: CheckpointMark) {
        if let Some(chain) = self.state.chains.get_mut(index) {
            chain.checkpointed = Some(mark);
            self.write_sealed();
        }
    }

    /// Reads the raw bytes of the file as verified (for export), up to the verified length.
    pub fn read_verified(&self) -> Result<Vec<u8>, StoreError> {
        let mut buf = vec![0u8; self.state.stamp.len as usize];
        self.file
            .read_exact_at(&mut buf, 0)
            .map_err(LedgerIo::Read)?;
        Ok(buf)
    }
}

/// The length of a ledger's complete lines: all of it, or up to a torn final line (one a
/// crash cut before its newline, which the next hook call moves aside).
pub fn whole_lines_len(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_stay_inside_and_never_collide() {
        assert_eq!(session_file_name("44df19b4-aa"), "44df19b4-aa");
        for hostile in [
            "../../etc/passwd",
            "a/b",
            "",
            ".",
            "..",
            "A",
            "x\u{202e}y",
            "a.b",
        ] {
            let n = session_file_name(hostile);
            assert!(
                !n.contains('/') && !n.is_empty() && n != "." && n != "..",
                "{hostile} -> {n}"
            );
        }
        assert_ne!(session_file_name("a/b"), session_file_name("a_b"));
        assert_ne!(session_file_name("A"), session_file_name("a"));
    }
}
