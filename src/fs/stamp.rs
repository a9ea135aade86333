//! A file's stamp: what identifies its exact bytes as last seen (device, inode, size, mtime and
//! ctime). The ledger's sealed state keeps it as JSON members (docs/FORMATS.md); the roster
//! cache keys a file by its 56-byte form ([`FileStamp::to_bytes`]).

use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;

/// A file's device, inode, size, and modification and change times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

/// The stamp as seven little-endian `u64`s: device, inode, size, then mtime and ctime each as
/// seconds and nanoseconds (the roster cache's form).
pub type StampBytes = [u8; 56];

const NS: i128 = 1_000_000_000;

impl FileStamp {
    /// The stamp of the file `m` describes.
    pub fn of(m: &std::fs::Metadata) -> Self {
        FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime() as i128 * NS + m.mtime_nsec() as i128,
            ctime_ns: m.ctime() as i128 * NS + m.ctime_nsec() as i128,
        }
    }

    /// Whether `other` is a stamp of the same file (device and inode), whatever its size and
    /// times now.
    pub fn same_file(&self, other: &FileStamp) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// Its 56-byte form ([`StampBytes`]).
    pub fn to_bytes(&self) -> StampBytes {
        let secs = |ns: i128| ns.div_euclid(NS) as i64 as u64;
        let nanos = |ns: i128| ns.rem_euclid(NS) as u64;
        let mut out = [0u8; 56];
        let words = [
            self.dev,
            self.ino,
            self.len,
            secs(self.mtime_ns),
            nanos(self.mtime_ns),
            secs(self.ctime_ns),
            nanos(self.ctime_ns),
        ];
        for (k, w) in words.into_iter().enumerate() {
            out[k * 8..k * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes are the metadata's own words, as the roster cache wrote them before the two
    /// stamps were one type (a cache written then still reads).
    #[test]
    fn the_bytes_are_the_metadatas_words() {
        let m = std::fs::metadata(std::env::current_exe().unwrap()).unwrap();
        let words = [
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime() as u64,
            m.mtime_nsec() as u64,
            m.ctime() as u64,
            m.ctime_nsec() as u64,
        ];
        let bytes = FileStamp::of(&m).to_bytes();
        for (k, w) in words.into_iter().enumerate() {
            assert_eq!(bytes[k * 8..k * 8 + 8], w.to_le_bytes(), "word {k}");
        }
    }

    /// A time before 1970 keeps its seconds and nanoseconds apart.
    #[test]
    fn a_time_before_the_epoch_splits_as_the_kernel_gives_it() {
        let s = FileStamp {
            mtime_ns: -NS - 1,
            ..FileStamp::default()
        };
        let bytes = s.to_bytes();
        assert_eq!(bytes[24..32], (-2i64 as u64).to_le_bytes());
        assert_eq!(bytes[32..40], 999_999_999u64.to_le_bytes());
    }
}
