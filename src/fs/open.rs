//! Opening files without following symlinks, and reading only this user's regular files.
//!
//! Every open here passes `O_NOFOLLOW`, so a symlink put in a file's place is refused by the
//! open itself, with no window between a check and the open; the reads then check the file
//! they opened, not the path.

use super::{FsError, O_NOFOLLOW, O_NONBLOCK};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why opening `path` failed, when the cause is what is at `path` rather than the system:
/// a symlink (refused by `O_NOFOLLOW`) or a directory where a file belongs.
pub fn refused_open(path: &Path, e: &io::Error) -> Option<FsError> {
    match e.raw_os_error() {
        // FreeBSD reports a refused symlink as EMLINK; Linux never returns it from open.
        Some(libc::ELOOP | libc::EMLINK) => Some(FsError::SymlinkRefused {
            path: path.to_path_buf(),
        }),
        Some(libc::EISDIR) => Some(FsError::NotRegular {
            path: path.to_path_buf(),
        }),
        // Another user's file is not ours to open; say so rather than "permission denied".
        Some(libc::EACCES | libc::EPERM) => check_regular_file(path).err(),
        _ => None,
    }
}

/// The effective uid of this process, read from `/proc/self` (no libc needed); `None` where
/// that is unavailable, and then the owner checks are skipped.
pub fn current_uid() -> Option<u32> {
    // Asked before every file the hook touches; the answer cannot change within a process.
    static UID: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *UID.get_or_init(|| fs::metadata("/proc/self").ok().map(|m| m.uid()))
}

/// Checks that `path`, if it exists, is a regular file owned by this user (never a symlink).
pub fn check_regular_file(path: &Path) -> Result<bool, FsError> {
    match fs::symlink_metadata(path) {
        Ok(m) => {
            if m.file_type().is_symlink() {
                return Err(FsError::SymlinkRefused {
                    path: path.to_path_buf(),
                });
            }
            check_owned_regular(path, &m)?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(FsError::Inspect {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// `m` (of `path`) is a regular file owned by this user.
pub fn check_owned_regular(path: &Path, m: &fs::Metadata) -> Result<(), FsError> {
    if !m.is_file() {
        return Err(FsError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    if let Some(uid) = current_uid() {
        if m.uid() != uid {
            return Err(FsError::NotOwned {
                path: path.to_path_buf(),
                owner: m.uid(),
            });
        }
    }
    Ok(())
}

/// Why a state file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// What is at the path is not a file the hook may use: a symlink, not a regular file, or
    /// another user's. The message says what to do.
    #[error(transparent)]
    Refused(FsError),
    /// Larger than the caller's bound.
    #[error("{} is larger than {max} bytes", .path.display())]
    TooLarge { path: PathBuf, max: u64 },
    /// The system failed to open, inspect or read it.
    #[error("cannot {doing} {}: {source}", .path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    pub fn io(doing: &'static str, path: &Path, source: io::Error) -> ReadError {
        ReadError::Io {
            doing,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Opens `path` for reading, never through a symlink and never blocking on a FIFO, and
/// checks the file it opened (so nothing can be swapped in between a check and the open):
/// a regular file owned by this user. `Ok(None)` when there is no such file.
pub fn open_owned(path: &Path) -> Result<Option<(File, fs::Metadata)>, ReadError> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(O_NOFOLLOW | O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(match refused_open(path, &e) {
                Some(why) => ReadError::Refused(why),
                None => ReadError::io("open", path, e),
            })
        }
    };
    let m = file
        .metadata()
        .map_err(|e| ReadError::io("inspect", path, e))?;
    check_owned_regular(path, &m).map_err(ReadError::Refused)?;
    Ok(Some((file, m)))
}

/// Reads a file [`open_owned`] accepts, of at most `max` bytes. `Ok(None)` when it does not
/// exist. Returns its bytes and the metadata of the file read.
pub fn read_owned(path: &Path, max: u64) -> Result<Option<(Vec<u8>, fs::Metadata)>, ReadError> {
    use std::io::Read;
    let Some((file, m)) = open_owned(path)? else {
        return Ok(None);
    };
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        max,
    };
    if m.len() > max {
        return Err(too_large());
    }
    // Sized from the metadata already read, and read into all of it at once: a file of the
    // size it had costs one read and the one that finds its end, whatever that size (std's
    // `read_to_end` reads in growing steps, so a larger file took more system calls).
    let limit = usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX);
    let mut bytes = vec![0u8; (m.len() as usize).saturating_add(1).min(limit)];
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            if bytes.len() >= limit {
                return Err(too_large());
            }
            // The file grew since it was inspected.
            bytes.resize(bytes.len().saturating_mul(2).min(limit), 0);
        }
        match (&file).read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadError::io("read", path, e)),
        }
    }
    bytes.truncate(filled);
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(Some((bytes, m)))
}

/// Opens a private (0600) file for appending, creating it, never through a symlink.
pub fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(O_NOFOLLOW)
        .open(path)
}

/// Opens a private file for reading and writing (creating it), never through a symlink.
pub fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(O_NOFOLLOW)
        .open(path)
}

/// Opens a private file for reading and appending (creating it), never through a symlink.
/// Every write goes to the end of the file, whatever the read position. Also tells whether
/// this call created the file: only then may its name be left to the file's own `fsync`
/// (see [`new_name_durable_with_file`](super::new_name_durable_with_file)).
pub fn open_read_append(path: &Path) -> io::Result<(File, bool)> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .append(true)
        .mode(0o600)
        .custom_flags(O_NOFOLLOW);
    let mut attempts = 0;
    loop {
        match options.open(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => return other.map(|file| (file, false)),
        }
        match options.clone().create_new(true).open(path) {
            Ok(file) => return Ok((file, true)),
            // Another process created it between the two opens (and, rarely, removed it again
            // before the first open of the next round: a few rounds, then the error).
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 3 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Sets 0600 on a file we own (repairing a looser mode left by an older version).
/// Makes an existing file of this user 0600 if it is readable or writable by others, through
/// a descriptor opened without following a symlink. A missing file is left missing.
pub fn tighten_file(path: &Path) -> io::Result<()> {
    // The common case, a private file, costs one lstat.
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Ok(m) if m.is_file() && m.mode() & 0o077 == 0 => return Ok(()),
        _ => {}
    }
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(O_NOFOLLOW | O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let m = f.metadata()?;
    if m.is_file() && m.mode() & 0o077 != 0 {
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the open flags from `libc`: a wrong `O_NOFOLLOW` (it differs by architecture)
    /// would open through the link, and these would fail on that architecture.
    #[test]
    fn symlinks_are_refused_by_the_open_itself() {
        let dir = std::env::temp_dir().join(format!("attenu-fs-open-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target");
        fs::write(&target, b"{}").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        match open_owned(&link) {
            Err(ReadError::Refused(e)) => assert!(e.to_string().contains("is a symlink"), "{e}"),
            other => panic!("a symlink was not refused: {other:?}"),
        }
        let e = open_read_append(&link).unwrap_err();
        assert!(
            refused_open(&link, &e).is_some_and(|m| m.to_string().contains("is a symlink")),
            "{e}"
        );
        let e = open_rw(&link).unwrap_err();
        assert!(refused_open(&link, &e).is_some(), "{e}");
        assert_eq!(fs::read(&target).unwrap(), b"{}");
        assert!(matches!(open_owned(&dir.join("absent")), Ok(None)));
        fs::remove_dir_all(&dir).unwrap();
    }
}
