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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

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
}
