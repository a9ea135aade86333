//! A re-verify from GENESIS that runs out of time keeps its progress, so the next call of the
//! session finishes it instead of starting over (a big ledger must never wedge a session).
//!
//! `ledger-<session>.reverify.json` holds the [`Scanner`] (every chain verified so far, the
//! chain being read, the offset reached), what the re-verify will record when it ends (a lost
//! sealed state, a torn tail), and the stamp of the file it read. It is sealed like the
//! sealed state, with the same key, over its magic and body (so neither file's body can pass
//! for the other's), and used only while the ledger's stamp is exactly the one recorded:
//! nothing is appended while a re-verify is unfinished, so any change to the file (an edit
//! anywhere sets its ctime) discards the progress and the re-verify starts over.

use super::state::{FileStamp, StateLoss};
use super::verify::Scanner;
use super::{Ledger, StoreError};
use crate::fs::{self, SealedFormat};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Sealed like the state, over its header and body ([`crate::fs::sealed`]).
const PROGRESS: SealedFormat = SealedFormat {
    header: "attenu-reverify v1 ",
    domain: b"attenu-reverify v1 ",
};

/// Far above a real one, like the sealed state's bound.
const MAX_PROGRESS_BYTES: u64 = 16 << 20;

/// An unfinished re-verify.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Progress {
    /// The ledger as it was read (after a torn tail was cut).
    pub stamp: FileStamp,
    pub scanner: Scanner,
    /// What the finished re-verify records, found when it started.
    #[serde(default)]
    pub lost: Option<StateLoss>,
    #[serde(default)]
    pub recovered: Option<Value>,
}

impl Ledger {
    pub(super) fn progress_path(&self) -> PathBuf {
        self.paths
            .dir
            .join(format!("ledger-{}.reverify.json", self.paths.name))
    }

    /// The sealed progress of a re-verify of exactly this file, if there is one.
    pub(super) fn read_progress(&self, stamp: &FileStamp) -> Result<Option<Progress>, StoreError> {
        let bytes = match fs::read_owned(&self.progress_path(), MAX_PROGRESS_BYTES) {
            Ok(Some((bytes, _))) => bytes,
            Ok(None) | Err(fs::ReadError::TooLarge { .. } | fs::ReadError::Io { .. }) => {
                return Ok(None)
            }
            Err(fs::ReadError::Refused(why)) => return Err(StoreError::Unsafe(why)),
        };
        Ok(unseal(&bytes, &self.mac_key).filter(|p| p.stamp == *stamp))
    }

    /// Keeps `progress` for the next call. Not synced: a lost one only costs the work again.
    pub(super) fn write_progress(&self, progress: &Progress) {
        let Ok(body) = serde_json::to_vec(progress) else {
            return;
        };
        let bytes = PROGRESS.seal(&self.mac_key, &body);
        if let Ok(f) = fs::open_rw(&self.progress_path()) {
            if f.write_all_at(&bytes, 0).is_ok() {
                let _ = f.set_len(bytes.len() as u64);
            }
        }
    }

    /// Once the re-verify has finished and the sealed state is written.
    pub(super) fn remove_progress(&self) {
        let _ = std::fs::remove_file(self.progress_path());
    }
}

fn unseal(bytes: &[u8], key: &[u8; 32]) -> Option<Progress> {
    serde_json::from_slice(PROGRESS.open(bytes, key)?).ok()
}
