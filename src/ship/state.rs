//! `.attenu/outbox/.state`: what the last drain did, for `doctor`. Written atomically after
//! every drain, so a reader sees the previous drain's state or this one's, never a mix.

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The state after one drain. Times are this machine's, in milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// When the last drain started.
    pub last_attempt_unix_ms: u64,
    /// When the last drain that failed on nothing ended (kept from before when this one failed);
    /// `None` before the first.
    pub last_success_unix_ms: Option<u64>,
    /// Why the last drain left something unshipped, or `None` when it did not.
    pub last_error: Option<String>,
    /// How many objects the last drain shipped (or found shipped already).
    pub shipped: u64,
    /// How many files it left in the outbox.
    pub left: u64,
}

const STATE_FILE: &str = ".state";
/// A state file larger than this is not one a shipper wrote.
const MAX_STATE_BYTES: u64 = 1 << 20;

/// Milliseconds since the epoch of `t` (0 before it).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// The state of `outbox`'s last drain: `Ok(None)` when no drain has run; an error when the
/// file cannot be read or is not one a shipper wrote.
pub fn read(outbox: &Path) -> Result<Option<State>, StateError> {
    let path = outbox.join(STATE_FILE);
    match crate::fs::read_owned(&path, MAX_STATE_BYTES) {
        Ok(None) => Ok(None),
        Ok(Some((bytes, _))) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| StateError::NotAState { path, source }),
        Err(e) => Err(StateError::Unreadable(e)),
    }
}

/// Why the last drain's state cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(transparent)]
    Unreadable(crate::fs::ReadError),
    #[error("{} is not a shipper's state ({source})", .path.display())]
    NotAState {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Replaces `outbox`'s state. Not synced: a state lost in a crash only makes `doctor` report
/// the drain before; the outbox itself is what must not be lost.
pub fn write(outbox: &Path, state: &State) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
    crate::fs::write_atomic(&outbox.join(STATE_FILE), &bytes, false)
}
