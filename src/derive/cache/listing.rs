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
//! n_dirs   (parent name stamp)*   each directory listed and its stamp: the first's name is its
//!                                 path from the project's root (parent all ones), each other's
//!                                 its name in directory number `parent`, listed before it
//! n_files  (dir name)*            each agent file listed, in the listing's order
//! ```
//!
//! Empty (no bytes) when the listing is not kept.

use super::codec::{put_bytes, put_u32, Reader};
use super::files::StampBytes;
use super::{relative, settled, stamp_bytes};
use crate::derive::declarations::{ListedDir, StatListed};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The listing of `files`, whose directories were `dirs`, if every directory could be
/// inspected and is settled at `now`; else nothing (empty).
pub fn encode(root: &Path, files: &[StatListed], dirs: &[ListedDir], now: SystemTime) -> Vec<u8> {
    encoded(root, files, dirs, now).unwrap_or_default()
}

fn encoded(
    root: &Path,
    files: &[StatListed],
    dirs: &[ListedDir],
    now: SystemTime,
) -> Option<Vec<u8>> {
    let settled_before = now.checked_sub(super::SETTLE)?;
    let mut number: HashMap<&Path, u32> = HashMap::with_capacity(dirs.len());
    let mut out = Vec::with_capacity(80 * dirs.len() + 32 * files.len());
    put_u32(&mut out, dirs.len());
    for (i, (dir, meta)) in dirs.iter().enumerate() {
        let m = meta
            .as_ref()
            .ok()
            .filter(|m| m.is_dir() && settled(m, settled_before))?;
        let (parent, name) = match i {
            0 => (NONE, relative(root, dir)),
            _ => (*number.get(dir.parent()?)?, dir.file_name()?.as_bytes()),
        };
        out.extend_from_slice(&parent.to_le_bytes());
        put_bytes(&mut out, name);
        out.extend_from_slice(&stamp_bytes(m));
        number.insert(dir, i as u32);
    }
    put_u32(&mut out, files.len());
    for (f, _) in files {
        out.extend_from_slice(&number.get(f.parent()?)?.to_le_bytes());
        put_bytes(&mut out, f.file_name()?.as_bytes());
    }
    Some(out)
}

/// The parent of the first directory.
const NONE: u32 = u32::MAX;

/// The agent files `listing` holds, each inspected now (by path, following links), if every
/// directory it names still has its stamp; `None` otherwise (the tree is then listed).
pub fn relist(root: &Path, listing: &[u8]) -> Option<Vec<StatListed>> {
    let mut r = Reader { rest: listing };
    let n = r.count(4 + 4 + 56)?;
    if n == 0 {
        return None;
    }
    let mut dirs: Vec<PathBuf> = Vec::with_capacity(n);
    for i in 0..n {
        let parent = r.u32()?;
        let name = OsStr::from_bytes(r.bytes()?);
        let dir = match (i, parent) {
            (0, NONE) => root.join(name),
            (0, _) => return None,
            (_, p) => dirs.get(p as usize)?.join(name),
        };
        let stamp: StampBytes = r.take(56)?.try_into().ok()?;
        let now = std::fs::metadata(&dir).ok()?;
        if !now.is_dir() || stamp_bytes(&now) != stamp {
            return None;
        }
        dirs.push(dir);
    }
    let n = r.count(8)?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        let dir = dirs.get(r.u32()? as usize)?;
        let f = dir.join(OsStr::from_bytes(r.bytes()?));
        let meta = std::fs::metadata(&f);
        files.push((f, meta));
    }
    r.rest.is_empty().then_some(files)
}
