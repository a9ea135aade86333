//! File-system edges, one concern a file:
//!
//! * [`open`](mod@open): opens that never follow a symlink, and reads of this user's regular
//!   files only;
//! * [`atomic`]: atomic replacement and creation (temporary file, fsync, rename);
//! * [`durable`]: directory `fsync` and when a new name is durable without one;
//! * [`reach`](mod@reach): the file a path reaches, links and `/proc` aliases followed;
//! * [`sealed`]: the HMAC-sealed form of the hook's own state files;
//! * [`stamp`]: a file's stamp (device, inode, size, times), to tell it is unchanged;
//! * [`state_dir`]: the private state directory and its search-ignore file.
//!
//! Everything is re-exported here, so callers write `crate::fs::X`.

pub mod atomic;
pub mod durable;
pub mod open;
pub mod reach;
pub mod sealed;
pub mod stamp;
pub mod state_dir;

pub use atomic::{
    create_exclusive, replace_keeping, temp_beside, write_atomic, write_atomic_with,
    write_expendable, Keep,
};
pub use durable::{new_name_durable_with_file, sync_dir};
pub use open::{
    check_owned_regular, check_regular_file, current_uid, open_append, open_owned,
    open_read_append, open_rw, read_owned, refused_open, tighten_file, ReadError,
};
pub use sealed::SealedFormat;
pub use stamp::{FileStamp, StampBytes};
pub use state_dir::{
    ensure_git_ignore, ensure_private_dir, ensure_search_ignore, GIT_IGNORE_FILE, STATE_IGNORE_FILE,
};

use std::io;
use std::path::PathBuf;

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
