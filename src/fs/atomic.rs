//! Atomic replacement and creation: a temporary file beside the target, written in full,
//! then renamed (or hard-linked) into place, so a reader sees the old file or the new one,
//! never a partial one. The one exception is [`write_expendable`], for a sealed cache whose
//! readers take a partial file for none.

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

/// [`write_atomic`], not durable, for a file that may go missing and whose readers check what
/// they read (the sealed roster cache): a torn read is a broken seal, which reads as none.
///
/// A file already there that is ours alone (regular, owned by this user, one link, 0600) is
/// overwritten in place: no inode is created or freed and no directory changes, which on ext4
/// was about 1 ms of the call that writes the cache for 200 agents (docs/MEASUREMENTS.md).
/// Anything else at the path is replaced: a temporary file renamed into place, the old one
/// removed just before the rename (renaming over a file makes ext4 write the new file's data
/// out first, `auto_da_alloc`, for durability such a file does not need).
pub fn write_expendable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if overwrite_own(path, bytes)? {
        return Ok(());
    }
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

/// Overwrites `path` with `bytes` if it is a file this user alone holds; false (nothing
/// written) when it is missing or anything else: a link (not followed), another user's, a
/// file with a second name, a FIFO (opened without waiting, then refused), looser modes.
/// Written over from the start, then cut to length: never cut to empty first, which ext4
/// treats as a replacement to flush on close.
fn overwrite_own(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(O_NOFOLLOW | super::O_NONBLOCK)
        .open(path);
    let Ok(file) = file else {
        return Ok(false);
    };
    let m = file.metadata()?;
    let ours = super::open::current_uid().is_some_and(|uid| m.uid() == uid);
    if !m.is_file() || !ours || m.nlink() != 1 || m.mode() & 0o7077 != 0 {
        return Ok(false);
    }
    file.write_all_at(bytes, 0)?;
    file.set_len(bytes.len() as u64)?;
    Ok(true)
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

    /// A file this user alone holds is written over in place (the same inode, cut to the new
    /// length); a second name, looser modes or a FIFO at the path are replaced instead, each
    /// left as it was, and a FIFO without a reader does not make the write wait.
    #[test]
    fn an_expendable_write_overwrites_only_a_file_this_user_alone_holds() {
        let dir = std::env::temp_dir().join(format!("attenu-overwrite-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("roster.cache");
        let ino = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
        write_expendable(&path, b"a long first body").unwrap();
        let first = ino(&path);
        write_expendable(&path, b"short").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"short");
        assert_eq!(ino(&path), first, "overwritten in place");

        let other = dir.join("other-name");
        fs::hard_link(&path, &other).unwrap();
        write_expendable(&path, b"after a hard link").unwrap();
        assert_eq!(
            fs::read(&other).unwrap(),
            b"short",
            "the other name is untouched"
        );
        assert_ne!(ino(&path), first);

        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        write_expendable(&path, b"after 0644").unwrap();
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::read(&path).unwrap(), b"after 0644");

        fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        if made.is_ok_and(|s| s.success()) {
            write_expendable(&path, b"after a fifo").unwrap();
            assert!(fs::symlink_metadata(&path).unwrap().is_file());
            assert_eq!(fs::read(&path).unwrap(), b"after a fifo");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
