//! File-system edges: the private state directory, files opened without following symlinks,
//! and atomic replacement (temporary file, fsync, rename).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Never follow a symlink at the last component: `open` fails with `ELOOP` instead. From
/// `libc`, so it is right on every architecture (it differs between x86 and aarch64).
const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;

/// Opening a FIFO put in a file's place must not hang the hook (no effect on a regular file).
const O_NONBLOCK: i32 = libc::O_NONBLOCK;

/// Why a path in the state directory is not one the hook may use, or could not be set up.
/// Each message names the path and, where there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("cannot inspect {}: {source}", .path.display())]
    Inspect {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot fsync {}: {source}", .path.display())]
    SyncDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is a symlink; the hook keeps its state only in a real directory. Replace it with a directory", .path.display())]
    DirIsSymlink { path: PathBuf },
    #[error("{} is not a directory; move it aside so the hook can create its state directory", .path.display())]
    NotADirectory { path: PathBuf },
    #[error("{} is owned by uid {owner}, not by this user (uid {uid}); the hook will not use state another user controls", .path.display())]
    DirNotOwned { path: PathBuf, owner: u32, uid: u32 },
    #[error("{} is writable by group or others; run `chmod 700 {}`", .path.display(), .path.display())]
    DirWritableByOthers { path: PathBuf },
    #[error("{} is readable by group or others and cannot be made private ({source}); run `chmod 700 {}`", .path.display(), .path.display())]
    DirNotPrivate {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is a symlink; the hook never follows one in its state directory. Move it aside", .path.display())]
    SymlinkRefused { path: PathBuf },
    #[error("{} is not a regular file; move it aside", .path.display())]
    NotRegular { path: PathBuf },
    #[error("{} is owned by uid {owner}, not this user; move it aside", .path.display())]
    NotOwned { path: PathBuf, owner: u32 },
}

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

/// Creates (0700) or checks the state directory: it must be a real directory, not a symlink,
/// owned by this user, and not writable by group or others.
pub fn ensure_private_dir(dir: &Path) -> Result<(), FsError> {
    let inspect = |source| FsError::Inspect {
        path: dir.to_path_buf(),
        source,
    };
    match fs::symlink_metadata(dir) {
        Ok(m) => check_private_dir(dir, &m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match fs::DirBuilder::new().mode(0o700).create(dir) {
                // Its name must survive a crash with the key and ledgers written into it.
                Ok(()) => {
                    if let Some(parent) = dir.parent() {
                        sync_dir(parent).map_err(|source| FsError::SyncDir {
                            path: parent.to_path_buf(),
                            source,
                        })?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(FsError::Create {
                        path: dir.to_path_buf(),
                        source,
                    })
                }
            }
            let m = fs::symlink_metadata(dir).map_err(inspect)?;
            check_private_dir(dir, &m)
        }
        Err(e) => Err(inspect(e)),
    }
}

fn check_private_dir(dir: &Path, m: &fs::Metadata) -> Result<(), FsError> {
    let path = dir.to_path_buf();
    if m.file_type().is_symlink() {
        return Err(FsError::DirIsSymlink { path });
    }
    if !m.is_dir() {
        return Err(FsError::NotADirectory { path });
    }
    if let Some(uid) = current_uid() {
        if m.uid() != uid {
            return Err(FsError::DirNotOwned {
                path,
                owner: m.uid(),
                uid,
            });
        }
    }
    if m.mode() & 0o022 != 0 {
        return Err(FsError::DirWritableByOthers { path });
    }
    if m.mode() & 0o077 != 0 {
        // Readable by others (a `mkdir .attenu` to write config.toml, a git checkout): this
        // user's own directory is made private, through a descriptor of the directory itself
        // so a swapped-in symlink is never followed.
        let tightened = fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
            .and_then(|d| d.set_permissions(fs::Permissions::from_mode(0o700)));
        if let Err(source) = tightened {
            return Err(FsError::DirNotPrivate { path, source });
        }
    }
    Ok(())
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// What is at the path is not a file the hook may use: a symlink, not a regular file, or
    /// another user's. The message says what to do.
    #[error("{0}")]
    Refused(String),
    /// Larger than the caller's bound.
    #[error("{0}")]
    TooLarge(String),
    /// The system failed to open or read it.
    #[error("{0}")]
    Io(String),
}

impl From<ReadError> for String {
    fn from(e: ReadError) -> String {
        match e {
            ReadError::Refused(m) | ReadError::TooLarge(m) | ReadError::Io(m) => m,
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
                Some(why) => ReadError::Refused(why.to_string()),
                None => ReadError::Io(format!("cannot open {}: {e}", path.display())),
            })
        }
    };
    let m = file
        .metadata()
        .map_err(|e| ReadError::Io(format!("cannot inspect {}: {e}", path.display())))?;
    check_owned_regular(path, &m).map_err(|e| ReadError::Refused(e.to_string()))?;
    Ok(Some((file, m)))
}

/// Reads a file [`open_owned`] accepts, of at most `max` bytes. `Ok(None)` when it does not
/// exist. Returns its bytes and the metadata of the file read.
pub fn read_owned(path: &Path, max: u64) -> Result<Option<(Vec<u8>, fs::Metadata)>, ReadError> {
    use std::io::Read;
    let Some((file, m)) = open_owned(path)? else {
        return Ok(None);
    };
    let too_large =
        || ReadError::TooLarge(format!("{} is larger than {max} bytes", path.display()));
    if m.len() > max {
        return Err(too_large());
    }
    // Sized from the metadata already read, so std does not stat the file again.
    let mut bytes = Vec::with_capacity(m.len() as usize + 1);
    (&file)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Io(format!("cannot read {}: {e}", path.display())))?;
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
/// (see [`new_name_durable_with_file`]).
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

fn replace_atomic(path: &Path, bytes: &[u8], durable: bool, keep: Option<Keep>) -> io::Result<()> {
    let tmp = temp_beside(path);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(O_NOFOLLOW)
            .open(&tmp)?;
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

/// Makes a directory's entries durable: `fsync` of a file writes its data and inode, not the
/// name it was created under. A file system that cannot sync a directory (EINVAL, EBADF,
/// ENOTSUP) has nothing to make durable this way, so that is not an error.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir)?.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(22 | 9 | 95)) => Ok(()),
        other => other,
    }
}

/// Whether the file system on device `dev` (a file's `st_dev`) makes a newly created file's
/// name durable when the file itself is fsynced, so that a directory `fsync` after it would
/// only flush the disk's cache a second time. POSIX does not promise this; two Linux drivers
/// do, and only they answer true, when sysfs shows that one of them holds the device:
///
/// * ext4 (also when it serves an ext2 or ext3 file system). With a journal, `fdatasync`
///   waits for the commit of the inode's `i_datasync_tid`, which creating the inode set to
///   the transaction that also added its directory entry (a later write only moves it
///   forward, and commits are ordered). Without a journal,
///   `ext4_sync_parent` (run by `fdatasync` too) writes the directories of a newly created
///   inode before the cache flush, added for exactly this case (kernel commit 14ece1028b3e,
///   "Make fsync sync new parent directories in no-journal mode", 2010).
/// * XFS. Creating the file is one log transaction that holds the inode and the directory
///   change, and `fsync` forces the log up to the inode's last change.
///
/// On ext4 without a journal this holds for a file this process created and has kept open
/// since: the kernel marks a new inode (`EXT4_STATE_NEWENTRY`) only in memory, so a file
/// created by another process, whose inode may have left the cache since, keeps the directory
/// `fsync` (the caller's part).
///
/// `/sys/dev/block/MAJ:MIN` names the device, and each driver lists the devices it has
/// mounted under `/sys/fs/ext4` or `/sys/fs/xfs`. A block device carries at most one mounted
/// file system, so that entry is the file's own. Anything else answers false, which keeps the
/// directory `fsync`: tmpfs, btrfs and other file systems on an anonymous device, NFS,
/// overlay, FUSE, the legacy ext2 driver, a system without `/sys`.
pub fn new_name_durable_with_file(dev: u64) -> bool {
    let device = format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev as libc::dev_t),
        libc::minor(dev as libc::dev_t)
    );
    let Ok(target) = fs::read_link(device) else {
        return false;
    };
    let Some(name) = target.file_name() else {
        return false;
    };
    ["/sys/fs/ext4", "/sys/fs/xfs"]
        .iter()
        .any(|driver| Path::new(driver).join(name).is_dir())
}

/// An ignore file in the state directory that ripgrep (Claude Code's Grep), `fd` and `ag`
/// honour: a search from the project down skips the anchor key unless a glob names it, which
/// the decision refuses (`glob_reaches_key` in `decide.rs`).
pub const STATE_IGNORE_FILE: &str = ".ignore";

/// Creates [`STATE_IGNORE_FILE`] (`*`) in the state directory unless a regular file is there.
pub fn ensure_search_ignore(dir: &Path) -> Result<(), FsError> {
    let path = dir.join(STATE_IGNORE_FILE);
    if check_regular_file(&path)? {
        return Ok(());
    }
    match create_exclusive(&path, b"*\n", 0o600) {
        Ok(_) => Ok(()),
        Err(source) => Err(FsError::Create { path, source }),
    }
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

    /// Checks `new_name_durable_with_file` against what `/proc/self/mountinfo` says each
    /// mount is: true for every ext4 and XFS mount, false for every file system that is not
    /// ext2, ext3, ext4 or XFS (ext2 and ext3 depend on which driver serves them).
    #[test]
    fn names_are_trusted_to_the_file_fsync_only_on_ext4_and_xfs() {
        // The device number's split must match the kernel's (`/dev/null` is 1:3 everywhere).
        let null = fs::metadata("/dev/null").unwrap().rdev();
        assert_eq!((libc::major(null), libc::minor(null)), (1, 3));
        let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
            eprintln!("SKIPPED: no /proc/self/mountinfo to check the file-system test against");
            return;
        };
        let (mut trusted, mut not_trusted) = (0, 0);
        for line in mountinfo.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let (Some(mount_point), Some(dash)) =
                (fields.get(4), fields.iter().position(|f| *f == "-"))
            else {
                continue;
            };
            let Some(fs_type) = fields.get(dash + 1) else {
                continue;
            };
            // A stat can trigger an automount or hang on a dead network mount: local only.
            let remote = [
                "autofs", "nfs", "cifs", "smb", "fuse", "9p", "ceph", "gluster",
            ];
            if remote.iter().any(|r| fs_type.starts_with(r)) {
                continue;
            }
            // Mount points with spaces come escaped; those are not worth unescaping here.
            let Ok(meta) = fs::metadata(mount_point) else {
                continue;
            };
            if format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev())) != fields[2] {
                continue; // over-mounted, or a file system whose files carry another device
            }
            let got = new_name_durable_with_file(meta.dev());
            match *fs_type {
                // Without sysfs (some sandboxes) nothing can be told apart: nothing is trusted.
                "ext4" | "xfs" if !Path::new("/sys/fs").is_dir() => {
                    assert!(
                        !got,
                        "{fs_type} at {mount_point}: no /sys/fs, so not trusted"
                    );
                    not_trusted += 1;
                }
                "ext4" | "xfs" => {
                    assert!(got, "{fs_type} at {mount_point} should be trusted");
                    trusted += 1;
                }
                "ext2" | "ext3" => {}
                _ => {
                    assert!(
                        !got,
                        "{fs_type} at {mount_point} must keep the directory fsync"
                    );
                    not_trusted += 1;
                }
            }
        }
        eprintln!("checked {trusted} ext4/XFS mounts and {not_trusted} others");
        assert!(
            not_trusted > 0,
            "no mount to check against (/proc at least is one)"
        );
    }

    /// Pins the open flags from `libc`: a wrong `O_NOFOLLOW` (it differs by architecture)
    /// would open through the link, and these would fail on that architecture.
    #[test]
    fn symlinks_are_refused_by_the_open_itself() {
        let dir = std::env::temp_dir().join(format!("attenu-fsutil-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target");
        fs::write(&target, b"{}").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        match open_owned(&link) {
            Err(ReadError::Refused(m)) => assert!(m.contains("is a symlink"), "{m}"),
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
