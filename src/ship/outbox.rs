//! The outbox, `.attenu/outbox/`: the object with key `K` is the file `.attenu/outbox/K`. The
//! writer creates each file as `.tmp-*` and renames it into place, so every regular file whose
//! name does not start with `.` is complete. The walk does not care which kinds of object
//! exist; it refuses (and reports) what it must not follow or trust.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One file waiting to ship.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Its object key: the path below the outbox, `/`-separated.
    pub key: String,
    pub path: PathBuf,
    /// When it was last written (for the backlog's age).
    pub modified: SystemTime,
}

/// Something in the outbox that is not shipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub path: PathBuf,
    pub why: String,
}

/// What the outbox holds.
#[derive(Debug, Default)]
pub struct Scan {
    /// In key order.
    pub pending: Vec<Pending>,
    pub refused: Vec<Refused>,
}

/// The outbox of the project at `project`.
pub fn outbox_dir(project: &Path) -> PathBuf {
    project.join(".attenu").join("outbox")
}

/// Whether `c` may be one component of a key: `[A-Za-z0-9._-]`, not empty, `.` or `..`.
pub fn component_ok(c: &str) -> bool {
    !c.is_empty()
        && c != "."
        && c != ".."
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether `key` is a valid object key: components joined by `/`, each [`component_ok`].
pub fn key_ok(key: &str) -> bool {
    key.split('/').all(component_ok)
}

/// Why the outbox directory cannot be used (the sentence follows its path).
#[derive(Debug, thiserror::Error)]
pub enum OutboxProblem {
    #[error("cannot inspect it: {0}")]
    Inspect(#[source] std::io::Error),
    #[error("it is a symlink, which the shipper never follows; replace it with a directory")]
    Symlink,
    #[error("it is not a directory; move it aside")]
    NotADirectory,
    #[error("it is owned by uid {0}, not this user")]
    NotOwned(u32),
    #[error("cannot lock it: {0}")]
    Lock(#[source] std::io::Error),
}

/// Whether `outbox` exists (`Ok(false)`: nothing was ever queued), and if it does, that it is
/// a real directory of this user's, not a symlink to somewhere else.
pub fn check_dir(outbox: &Path) -> Result<bool, OutboxProblem> {
    let m = match fs::symlink_metadata(outbox) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(OutboxProblem::Inspect(e)),
    };
    if m.file_type().is_symlink() {
        return Err(OutboxProblem::Symlink);
    }
    if !m.is_dir() {
        return Err(OutboxProblem::NotADirectory);
    }
    if crate::fs::current_uid().is_some_and(|u| m.uid() != u) {
        return Err(OutboxProblem::NotOwned(m.uid()));
    }
    Ok(true)
}

/// Walks `outbox` (which must exist). Never follows a symlink, file or directory; a file or
/// directory not owned by this user, or a name outside the key alphabet, is refused.
pub fn scan(outbox: &Path) -> Scan {
    let mut out = Scan::default();
    let uid = crate::fs::current_uid();
    walk(outbox, "", uid, &mut out);
    out.pending.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

fn walk(dir: &Path, key_prefix: &str, uid: Option<u32>, out: &mut Scan) {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.refused.push(Refused {
                path: dir.to_path_buf(),
                why: format!("cannot read the directory: {e}"),
            });
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        // `.tmp-*` (being written), `.lock`, `.state` and their temporary files.
        if name.starts_with('.') {
            continue;
        }
        let refuse = |out: &mut Scan, why: String| {
            out.refused.push(Refused {
                path: path.clone(),
                why,
            })
        };
        let m = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            // Removed meanwhile (another shipper shipped it): nothing to do.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                refuse(out, format!("cannot inspect: {e}"));
                continue;
            }
        };
        if m.file_type().is_symlink() {
            refuse(
                out,
                "is a symlink, which the shipper never follows; move it aside".into(),
            );
        } else if uid.is_some_and(|u| m.uid() != u) {
            refuse(
                out,
                format!("is owned by uid {}, not this user; move it aside", m.uid()),
            );
        } else if !component_ok(&name) {
            refuse(
                out,
                "has a name outside A-Z a-z 0-9 . _ -, so it is no object key; move it aside"
                    .into(),
            );
        } else if m.is_dir() {
            walk(&path, &format!("{key_prefix}{name}/"), uid, out);
        } else if m.is_file() {
            out.pending.push(Pending {
                key: format!("{key_prefix}{name}"),
                path,
                modified: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            });
        } else {
            refuse(
                out,
                "is not a regular file or directory; move it aside".into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_use_the_outbox_alphabet_only() {
        assert!(key_ok("k1/s1/c0/checkpoints/00000000000000000003-ab.note"));
        for bad in ["", "a//b", "../x", "a/./b", "a b", "a/é", "/a"] {
            assert!(!key_ok(bad), "{bad}");
        }
    }
}
