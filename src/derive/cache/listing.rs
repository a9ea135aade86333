//! The listing of the agent files a cached roster was derived from, kept in the roster cache
//! with the stamp of every directory it read, so that a session's first call need not list
//! the whole tree again: while every directory has the stamp it had (settled) before it was
//! listed, its entries are the ones listed, and only the files are stamped.
//!
//! A directory's mtime and ctime change whenever an entry is added to it, removed or renamed
//! (a file swapped for a directory or a link, a link pointed elsewhere), and its inode when
//! it is itself replaced; directories are inspected by path, following links as the listing
//! does, so a linked directory's own stamp is the one compared. A directory whose mtime or
//! ctime is less than [`super::SETTLE`] old when it is listed is not kept (a later change
//! in the same tick would leave its stamp as it was): the next call lists the tree.
//!
//! Little-endian `u32` counts, as in [`super::codec`]:
//!
//! ```text
//! n_dirs   (path stamp)*     each directory listed, from the project's root, and its stamp
//! n_files  path*             each agent file listed, in the listing's order
//! ```
//!
//! Empty (no bytes) when the listing is not kept.

use super::codec::{put_bytes, put_u32, Reader};
use super::files::FileStamp;
use super::{relative, settled, stamp_bytes};
use crate::derive::declarations::{ListedDir, StatListed};
use std::path::Path;
use std::time::SystemTime;

/// The listing of `files`, whose directories were `dirs`, if every directory could be
/// inspected and is settled at `now`; else nothing (empty).
pub fn encode(root: &Path, files: &[StatListed], dirs: &[ListedDir], now: SystemTime) -> Vec<u8> {
    let Some(settled_before) = now.checked_sub(super::SETTLE) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(96 * dirs.len() + 48 * files.len());
    put_u32(&mut out, dirs.len());
    for (dir, meta) in dirs {
        match meta {
            Ok(m) if m.is_dir() && settled(m, settled_before) => {
                put_bytes(&mut out, relative(root, dir));
                out.extend_from_slice(&stamp_bytes(m));
            }
            _ => return Vec::new(),
        }
    }
    put_u32(&mut out, files.len());
    for (f, _) in files {
        put_bytes(&mut out, relative(root, f));
    }
    out
}

/// The agent files `listing` holds, each inspected now (by path, following links), if every
/// directory it names still has its stamp; `None` otherwise (the tree is then listed).
pub fn relist(root: &Path, listing: &[u8]) -> Option<Vec<StatListed>> {
    use std::os::unix::ffi::OsStrExt;
    let path = |rel: &[u8]| root.join(std::ffi::OsStr::from_bytes(rel));
    let mut r = Reader { rest: listing };
    let n = r.count(4 + 56)?;
    if n == 0 {
        return None;
    }
    for _ in 0..n {
        let dir = path(r.bytes()?);
        let stamp: FileStamp = r.take(56)?.try_into().ok()?;
        let now = std::fs::metadata(&dir).ok()?;
        if !now.is_dir() || stamp_bytes(&now) != stamp {
            return None;
        }
    }
    let n = r.count(4)?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        let f = path(r.bytes()?);
        let meta = std::fs::metadata(&f);
        files.push((f, meta));
    }
    r.rest.is_empty().then_some(files)
}
