//! Atomic replacement and creation: a temporary file beside the target, written in full,
//! then renamed (or hard-linked) into place, so a reader sees the old file or the new one,
//! never a partial one.

use super::{sync_dir, O_NOFOLLOW};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A temporary name beside `path`, unique to this process and moment.
pub fn temp_beside(path: &Path) -> PathBuf {
    let mut nonce = [0u8; 6];
    let _ = getrandom::fill(&mut nonce);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        crate::ledger::chain::hex(&nonce)
    ))
}

/// Atomically replaces `path` with `bytes` (0600): temporary file, optional fsync, rename.
/// Readers see the old file or the new one, never a partial one.
pub fn write_atomic(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    replace_atomic(path, bytes, durable, None)
}

/// [`write_atomic`], not durable, for a file that may go missing (a cache): the old file is
/// removed just before the rename, so a reader sees the old file, none, or the new one, never
/// a partial one. Renaming over an existing file makes ext4 write the new file's data out
/// first (`auto_da_alloc`, for a replacement that survives a crash): 0.7 ms of a 1 ms write
/// of the roster cache on the bench machine, for durability such a file does not need.
pub fn write_expendable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path);
    let result = (|| {
        create_temp(&tmp)?.write_all(bytes)?;
        // Whatever stops the removal stops the rename too, which then says why.
        let _ = fs::remove_file(path);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// [`write_atomic`] for a file too large to hold: `write` fills the temporary file (0600)
/// through a buffer, then it is fsynced (when `durable`) and renamed into place. On any error
/// the temporary file is removed and `path` is untouched.
pub fn write_atomic_with(
    path: &Path,
    durable: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temp_beside(path);
    let result = (|| {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(O_NOFOLLOW)
            .open(&tmp)?;
        let mut w = io::BufWriter::with_capacity(1 << 20, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        if durable {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, path)?;
        if durable {
            if let Some(parent) = path.parent() {
                let _ = sync_dir(parent);
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// What a replaced file keeps of the one it replaces: its permission bits, owner and group.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    pub mode: u32,
    /// The owner to give the new file where it differs from the creator (which takes root);
    /// failing to is an error, and nothing is replaced. `None` leaves the creator as owner.
    pub uid: Option<u32>,
    /// The group to give it where it differs. Without `uid`, a user can only give it a group
    /// they are in (and their user namespace maps); where that fails, for any reason, the new
    /// file keeps the creator's group and loses the group permission bits, so the old group's
    /// access never passes to another group.
    pub gid: Option<u32>,
}

/// [`write_atomic`], durable, with the mode, owner and group of `keep` set on the temporary
/// file before the rename, so no reader ever sees the new file with other permissions than the
/// old one had.
pub fn replace_keeping(path: &Path, bytes: &[u8], keep: Keep) -> io::Result<()> {
    replace_atomic(path, bytes, true, Some(keep))
}

/// A new temporary file, 0600, never through a link.
fn create_temp(tmp: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(O_NOFOLLOW)
        .open(tmp)
}

fn replace_atomic(path: &Path, bytes: &[u8], durable: bool, keep: Option<Keep>) -> io::Result<()> {
    let tmp = temp_beside(path);
    let result = (|| {
        let mut f = create_temp(&tmp)?;
        if let Some(keep) = keep {
            let now = f.metadata()?;
            let mut mode = keep.mode;
            let want_uid = keep.uid.filter(|u| *u != now.uid());
            let want_gid = keep.gid.filter(|g| *g != now.gid());
            if want_uid.is_some() || want_gid.is_some() {
                match std::os::unix::fs::fchown(&f, want_uid, want_gid) {
                    Ok(()) => {}
                    // Not a group the user is in (EPERM), or not one their user namespace
                    // maps (EINVAL): whatever the reason, dropping the group bits is safe.
                    Err(_) if want_uid.is_none() => mode &= !0o070,
                    Err(e) => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!(
                                "cannot give the new file owner {} and group {} ({e})",
                                keep.uid.map_or("unchanged".into(), |u| u.to_string()),
                                keep.gid.map_or("unchanged".into(), |g| g.to_string()),
                            ),
                        ))
                    }
                }
            }
            // After the chown, which clears set-id bits.
            f.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        f.write_all(bytes)?;
        if durable {
            f.sync_all()?;
        }
        drop(f);
        fs::rename(&tmp, path)?;
        if durable {
            if let Some(parent) = path.parent() {
                let _ = sync_dir(parent);
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates `path` with `bytes` only if it does not exist yet, atomically: concurrent callers
/// agree on one winner and nobody ever reads a half-written file. Returns whether this call
/// created it.
pub fn create_exclusive(path: &Path, bytes: &[u8], mode: u32) -> io::Result<bool> {
    let tmp = temp_beside(path);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(O_NOFOLLOW)
        .open(&tmp)?;
    let result = f
        .write_all(bytes)
        .and_then(|_| f.sync_all())
        .and_then(|_| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match result {
        Ok(()) => {
            if let Some(parent) = path.parent() {
                if let Ok(d) = File::open(parent) {
                    let _ = d.sync_all();
                }
            }
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The new file replaces the old one whole (0600, no temporary left beside it), and a
    /// link in its place is replaced, never written through.
    #[test]
    fn an_expendable_write_replaces_the_file_and_never_follows_a_link() {
        let dir = std::env::temp_dir().join(format!("attenu-expendable-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("roster.cache");
        write_expendable(&path, b"first").unwrap();
        write_expendable(&path, b"second, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let target = dir.join("elsewhere");
        fs::write(&target, b"untouched").unwrap();
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        write_expendable(&path, b"third").unwrap();
        assert!(!fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&path).unwrap(), b"third");
        assert_eq!(fs::read(&target).unwrap(), b"untouched");
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
