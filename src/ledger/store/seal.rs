//! The sealed state beside each ledger (`ledger-<session>.state.json`; not the signed C2SP
//! checkpoint of `crate::evidence::checkpoint`): what was verified, sealed with an HMAC
//! ([`crate::fs::sealed`]), so the next call need not re-verify the file (see the module doc of
//! [`super`]).

use super::state::{LossCause, State};
use super::{Ledger, StoreError, Unverifiable};
use crate::fs::{self, SealedFormat};
use crate::ledger::chain;
use crate::ledger::fields::field;
use serde_json::Value;
use std::os::unix::fs::FileExt;

/// The sealed state file: the header, the hex HMAC of the body, a newline, and the body (the
/// state's JSON exactly as it was MACed, so it is serialized once per write and never
/// re-serialized to be checked). The header still says "checkpoint": it is a format on disk.
/// v4: each chain keeps its Merkle tree's frontier (`tree`); an older file, which did not, is
/// not read, and the ledger is re-verified once, so the cache never disagrees with a scan.
const SEALED_STATE: SealedFormat = SealedFormat {
    header: "attenu-checkpoint v4 ",
    domain: b"",
};

/// Far above any real sealed state (at most MAX_OPEN_CALLS open calls and the chains' nodes,
/// tens of KB); a larger file is not read and the ledger is re-verified instead.
pub const MAX_SEALED_STATE_BYTES: u64 = 16 << 20;

impl Ledger {
    /// The file still holds, byte for byte up to its hash, the chain a sealed state
    /// recorded: at least as long, with the state's last line at the same offset and
    /// hashing to the head it recorded. The ledger is fsynced before its sealed state is
    /// written, so no crash leaves the file shorter than its sealed state; a shorter file is
    /// one whose last entries were cut off or that was replaced by an older copy, and every
    /// prefix of a valid chain is itself valid, so a re-verify alone would not notice.
    /// `len` is the file's length now; only the recorded last line is read.
    pub(super) fn holds_prefix(&self, prior: &State, len: u64) -> Result<(), StoreError> {
        let holds = match prior.chains.last() {
            None => true,
            Some(chain) => {
                let (from, to) = (prior.last_line, prior.stamp.len);
                let mut line = vec![0u8; to.saturating_sub(from).min(len) as usize];
                from < to
                    && to <= len
                    && self.file.read_exact_at(&mut line, from).is_ok()
                    && line_reproduces(&line, &chain.head)
            }
        };
        if holds {
            return Ok(());
        }
        Err(Unverifiable::Shrunk {
            ledger: self.paths.ledger.clone(),
            state: self.paths.state.clone(),
            then_bytes: prior.stamp.len,
            then_entries: prior.chains.iter().map(|c| c.entries).sum::<u64>(),
            now_bytes: len,
        }
        .into())
    }

    /// The sealed state, as found. One that cannot vouch for the ledger (missing, unreadable,
    /// its seal broken) makes the ledger re-verified, and is recorded on it when the ledger is
    /// not empty (see `full_verify`); one that is not a file the hook may use (a symlink, a
    /// FIFO, another user's) is refused.
    pub(super) fn read_sealed(&self) -> Result<Found, StoreError> {
        match read_sealed_state(&self.paths.state, &self.mac_key) {
            Err(fs::ReadError::Refused(why)) => Err(StoreError::Unsafe(why)),
            Err(_) => Ok(Found::Lost(LossCause::Unreadable, None)),
            Ok(found) => Ok(found),
        }
    }

    /// The last line still parses and reproduces the head the sealed state recorded. (A last
    /// line over 16 MiB is not read here; the full re-verify reads it.)
    pub(super) fn tail_matches(&self, state: &State) -> bool {
        let Some(chain) = state.chains.last() else {
            return state.stamp.len == 0;
        };
        let len = state.stamp.len.saturating_sub(state.last_line);
        if len == 0 || len > 16 << 20 {
            return false;
        }
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, state.last_line).is_ok()
            && line_reproduces(&buf, &chain.head)
    }

    pub(super) fn write_sealed(&self) {
        // Replaced atomically (a process killed mid-write must not leave a torn sealed state,
        // which would read as a broken seal, recorded as tampering or damage), under the
        // ledger lock, not fsynced: a stale sealed state fails its stamp and costs one re-verify.
        let Ok(body) = serde_json::to_vec(&self.state) else {
            return;
        };
        let bytes = SEALED_STATE.seal(&self.mac_key, &body);
        // One temporary name per session, safe under the lock: a process killed between the
        // write and the rename leaves a file the next writer truncates, not litter.
        let mut tmp = self.paths.state.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp);
        let Ok(f) = fs::open_rw(&tmp) else {
            return;
        };
        if f.set_len(0).is_ok() && f.write_all_at(&bytes, 0).is_ok() {
            let _ = std::fs::rename(&tmp, &self.paths.state);
        }
    }
}

/// What is at a ledger's sealed state path.
#[derive(Debug)]
pub enum Found {
    /// A current sealed state whose seal holds.
    Sealed(Box<State>),
    /// Nothing: a new session, or a sealed state deleted.
    Absent,
    /// A sealed state of an earlier version whose seal holds: read by no one, not a loss.
    Outdated,
    /// A sealed state that cannot be read or whose seal fails, with its bytes when they were read.
    Lost(LossCause, Option<Vec<u8>>),
}

/// Reads and unseals the sealed state at `path` (never through a symlink).
pub fn read_sealed_state(
    path: &std::path::Path,
    mac_key: &[u8; 32],
) -> Result<Found, fs::ReadError> {
    let bytes = match fs::read_owned(path, MAX_SEALED_STATE_BYTES) {
        Ok(Some((bytes, _))) => bytes,
        Ok(None) => return Ok(Found::Absent),
        Err(fs::ReadError::TooLarge { .. }) => return Ok(Found::Lost(LossCause::Unreadable, None)),
        Err(e) => return Err(e),
    };
    if let Some(state) = unseal_state(&bytes, mac_key) {
        return Ok(Found::Sealed(Box::new(state)));
    }
    if sealed_by_an_earlier_version(&bytes, mac_key) {
        return Ok(Found::Outdated);
    }
    Ok(Found::Lost(LossCause::SealBroken, Some(bytes)))
}

/// `bytes` are a sealed state of another `attenu-checkpoint vN` whose MAC under `mac_key` holds
/// (an upgrade: its ledger is re-verified once, and that is no sign of tampering).
fn sealed_by_an_earlier_version(bytes: &[u8], mac_key: &[u8; 32]) -> bool {
    let Some(rest) = bytes.strip_prefix(b"attenu-checkpoint v") else {
        return false;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let Some(rest) = rest[digits..].strip_prefix(b" ") else {
        return false;
    };
    digits > 0 && SEALED_STATE.open_after_header(rest, mac_key).is_some()
}

/// The state a state file's bytes record, if their seal under `mac_key` holds.
pub fn unseal_state(bytes: &[u8], mac_key: &[u8; 32]) -> Option<State> {
    serde_json::from_slice(SEALED_STATE.open(bytes, mac_key)?).ok()
}

/// `bytes`, a whole ledger file, still holds what the sealed state `prior` recorded: its last
/// line at the recorded offset, reproducing the recorded head (so, the chain verifying, every
/// entry before it too).
pub fn holds_sealed_prefix(prior: &State, bytes: &[u8]) -> bool {
    match prior.chains.last() {
        None => true,
        Some(chain) => usize::try_from(prior.last_line)
            .ok()
            .zip(usize::try_from(prior.stamp.len).ok())
            .and_then(|(a, b)| bytes.get(a..b))
            .is_some_and(|line| line_reproduces(line, &chain.head)),
    }
}

/// `line` (with its newline) is an entry whose own hash is `head` and reproduces it.
fn line_reproduces(line: &[u8], head: &str) -> bool {
    if line.last() != Some(&b'\n') {
        return false;
    }
    let Ok(Value::Object(mut e)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let Some(Value::String(hash)) = e.remove(field::HASH) else {
        return false;
    };
    let prev = e
        .get(field::PREV_HASH)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    hash == head && chain::entry_hash(&prev, &e).is_ok_and(|h| h == hash)
}
