//! Durability: what makes a written file's name survive a crash.

use std::fs::{self, File};
use std::io;
use std::path::Path;

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
