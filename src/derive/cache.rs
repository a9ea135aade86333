//! A sealed copy of the last derivation, used while the declarations have not changed.
//!
//! Deriving reads every agent file and both settings files and parses their YAML and JSON. In
//! a fresh hook process that is about 0.3 ms, most of it the first run of the parsers' code,
//! and it happens on every call. The roster depends only on those files and on the agents the
//! configuration names, so the hook keeps it in `.attenu/roster.cache` together with:
//!
//! * the **stamp of every input**: each agent file the listing finds (the tree is listed
//!   afresh, so a file added, removed or renamed changes the key; or, for a session's pin,
//!   the listing kept with the cache stands for it while no directory it read has changed,
//!   [`listing`]) and both
//!   settings files (present or not), as path, device, inode, size, mtime and ctime, plus the
//!   configured agents and this build's version. A write to a file changes its mtime and
//!   ctime, and no user can set a ctime; a file replaced by a rename has another inode;
//! * an **HMAC** with the state MAC key, so a file this hook did not write is never read as
//!   a roster (it is derived again and the file replaced).
//!
//! The roster is stored in a compact binary form ([`codec`]), not JSON: each distinct scope
//! set once, agents naming theirs by number. A roster of 200 agents that inherit the session
//! pool holds one set of ~200 scopes, where JSON held 200 copies and parsed them every call.
//!
//! The one edit a stamp cannot see is a second write within one timestamp tick of the first
//! that leaves the size unchanged. So a derivation is cached only when every input's mtime and
//! ctime is at least [`SETTLE`] old (git's rule for "racily clean" entries): a later write then
//! gets a later time and a different stamp. Until then every call derives from the files.
//!
//! Beside the roster the cache keeps a **table of agent files** ([`files`], in its own sealed
//! file, [`TABLE_FILE`], so a call whose roster is cached reads and checks only the roster):
//! each file's own stamp and what its frontmatter parsed to. When the roster's key does not match (an edit),
//! a file whose stamp is its entry's and settled takes its parse from the table, and only the
//! others are read: after an edit of one file of 200, one file is read and parsed, not 200.
//! Parsing depends on nothing but the file's text and this build, so the declarations are
//! those a derivation from the files alone gives.
//!
//! Every file read is stamped again after it was read, and the cache is written only if none
//! moved in between (a file, symlink or directory swapped while derivation read through it).
//! Files taken from the table were not read: their entry stands for the stamp they still had.

mod codec;
mod files;
mod listing;
pub mod pin;
pub mod slice;

use super::declarations::{
    list_agent_files_dirs, paths, read_declarations_listed, Listed, Outcome, StatListed,
};
use super::{configure, derive_from, resolve, DeriveError, Roster};
use crate::fs;
use files::StampBytes;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The cache file, in the state directory.
pub const CACHE_FILE: &str = "roster.cache";
/// The table of agent files, read only when the roster's key does not match.
pub const TABLE_FILE: &str = "roster.files";
/// The roster cache's sealed-file format ([`crate::fs::sealed`]); the session's pin has its own
/// (`pin.rs`), so no file sealed with the same key reads as one of the other kind.
const CACHE: Kind = Kind {
    header: "attenu-roster v7 ",
    domain: b"attenu-hook roster cache v7\n",
};

/// A kind of sealed file.
use fs::SealedFormat as Kind;
/// Bumped whenever derivation would give another roster (or digest) for the same files, so a
/// cache written by an older build of the same version is not read.
const DERIVATION_RULES: u32 = 10;
/// How old every input must be before its derivation is cached.
pub const SETTLE: Duration = Duration::from_secs(2);
/// A cache file larger than this is not read (a roster of 2,000 agents is far smaller: each
/// distinct scope set is stored once, see [`codec`]).
const MAX_CACHE_BYTES: u64 = 8 << 20;

/// [`super::derive_project`], reusing the sealed roster in `attenu_dir` while its inputs are
/// unchanged. Reading or writing the cache never fails a derivation: any problem with it
/// means deriving from the files.
pub fn derive_cached(
    root: &Path,
    configured: Configured<'_>,
    attenu_dir: &Path,
    mac_key: &[u8; 32],
) -> Result<Roster, DeriveError> {
    derive_cached_at(root, configured, attenu_dir, mac_key, SystemTime::now()).map(|(r, _)| r)
}

/// A roster in the cache's binary form ([`codec`]): what a session's pin holds, and what is
/// read for one call with [`decode_part_for`].
pub struct Part(Vec<u8>);

/// [`derive_cached`] for a session's pin: the roster's binary form, copied from the cache when
/// it holds the inputs (nothing is decoded or encoded again), else encoded from the derivation.
pub fn derive_cached_part(
    root: &Path,
    configured: Configured<'_>,
    attenu_dir: &Path,
    mac_key: &[u8; 32],
) -> Result<Part, DeriveError> {
    derive_cached_part_at(root, configured, attenu_dir, mac_key, SystemTime::now())
}

fn derive_cached_part_at(
    root: &Path,
    configured: Configured<'_>,
    attenu_dir: &Path,
    mac_key: &[u8; 32],
    now: SystemTime,
) -> Result<Part, DeriveError> {
    let path = attenu_dir.join(CACHE_FILE);
    let cached = read(&path, mac_key);
    // The listing the cache keeps, while no directory it read has changed; else the tree's,
    // and each directory's stamp, to keep it.
    let (listed, dirs) = match cached
        .as_ref()
        .and_then(|c| listing::relist(root, c.listing()?))
    {
        Some(listed) => (listed, None),
        None => list_agent_files_dirs(root).map(|(l, d)| (l, Some(d)))?,
    };
    if let Some(before) = stamp(root, &listed, configured, now) {
        if let Some(part) = cached.as_ref().and_then(|c| c.part(&before.key)) {
            // The same roster from a tree listed anew (a directory changed, no agent file):
            // its listing kept for the next session's first call.
            let kept = match dirs {
                Some(dirs) if before.settled => listing::encode(root, &listed, &dirs, now),
                _ => Vec::new(),
            };
            if !kept.is_empty() {
                write_roster(&path, mac_key, part, &kept);
            }
            return Ok(Part(part.to_vec()));
        }
    }
    // A miss (an edit, or inputs not yet settled): derived as `derive_cached` derives.
    let (roster, key) = derive_cached_at(root, configured, attenu_dir, mac_key, now)?;
    Ok(Part(codec::encode(
        &key.unwrap_or_default(),
        &roster,
        mac_key,
    )))
}

/// The roster of `part`, read for one call by `agent` ([`codec::decode_for`]).
pub fn decode_part_for(part: &Part, agent: Option<&str>) -> Option<Roster> {
    codec::decode_for(&part.0, agent).map(|(_, r)| r)
}

/// What the configuration adds to the files: `[agents]` and `[derive] session_pool`.
pub type Configured<'a> = (&'a BTreeMap<String, Vec<String>>, Option<&'a [String]>);

/// This build, as the table of agent files names it: another build may parse otherwise.
fn build() -> String {
    format!("{DERIVATION_RULES} {}", env!("CARGO_PKG_VERSION"))
}

fn derive_cached_at(
    root: &Path,
    configured: Configured<'_>,
    attenu_dir: &Path,
    mac_key: &[u8; 32],
    now: SystemTime,
) -> Result<(Roster, Option<String>), DeriveError> {
    let (extra_agents, session_pool) = configured;
    let (listed, dirs) = list_agent_files_dirs(root)?;
    let Some(before) = stamp(root, &listed, configured, now) else {
        return derive_from(root, paths(listed), extra_agents, session_pool).map(|r| (r, None));
    };
    let path = attenu_dir.join(CACHE_FILE);
    if let Some(roster) = read(&path, mac_key).and_then(|c| c.roster(&before.key)) {
        return Ok((roster, Some(before.key)));
    }
    let table = attenu_dir.join(TABLE_FILE);
    let mut known = read(&table, mac_key)
        .and_then(|c| c.files())
        .unwrap_or_default();
    let files: Vec<PathBuf> = listed.iter().map(|(f, _)| f.clone()).collect();
    let kept = if before.settled {
        listing::encode(root, &listed, &dirs, now)
    } else {
        Vec::new()
    };
    // An entry stands for its file only while the file has the entry's stamp, settled. Every
    // listed file's metadata is there: `stamp` gave `None` for any that was not.
    let listed = listed
        .into_iter()
        .zip(&before.files)
        .map(|((f, meta), s)| Listed {
            known: known
                .remove(relative(root, &f))
                .filter(|e| s.settled && e.stamp == s.bytes)
                .map(|e| e.parsed),
            path: f,
            meta: meta.ok(),
        });
    let (decl, outcomes) = read_declarations_listed(root, listed, before.settled)?;
    let roster = resolve(configure(decl, extra_agents, session_pool));
    if before.settled && unmoved(root, &files, &outcomes, &before) {
        write(
            &path,
            &table,
            mac_key,
            &before,
            (&roster, &kept),
            (root, &files, &outcomes),
        );
    }
    Ok((roster, Some(before.key)))
}

/// Whether every input read just now still has the stamp it had before it was read: then
/// what was read is what those stamps stand for. A file whose parse came from the table was
/// not read, and its entry stands for the stamp it was matched with.
fn unmoved(root: &Path, files: &[PathBuf], outcomes: &[Outcome], before: &Stamp) -> bool {
    let agents = files
        .iter()
        .zip(outcomes)
        .zip(&before.files)
        .filter(|((_, o), _)| o.read_now)
        .all(|((f, _), s)| std::fs::metadata(f).is_ok_and(|m| stamp_bytes(&m) == s.bytes));
    agents && settings_stamps(root).is_some_and(|now| now == before.settings)
}

/// A file's path from the project's root, as the key and the table name it.
fn relative<'a>(root: &Path, path: &'a Path) -> &'a [u8] {
    super::declarations::relative(root, path)
        .as_os_str()
        .as_bytes()
}

/// What the inputs are: a key naming them, and whether they are old enough to cache.
struct Stamp {
    key: String,
    settled: bool,
    /// Each agent file's, in the listing's order.
    files: Vec<AgentStamp>,
    /// `settings.json`'s and `settings.local.json`'s (`None`: absent).
    settings: [Option<StampBytes>; 2],
}

/// One agent file's stamp.
struct AgentStamp {
    bytes: StampBytes,
    /// Its mtime and ctime are at least [`SETTLE`] old.
    settled: bool,
}

/// The stamp of the file of `m` in the cache's form.
fn stamp_bytes(m: &std::fs::Metadata) -> StampBytes {
    crate::fs::FileStamp::of(m).to_bytes()
}

/// Whether the mtime and ctime of `m` are both at or before `settled_before`.
fn settled(m: &std::fs::Metadata, settled_before: SystemTime) -> bool {
    [(m.mtime(), m.mtime_nsec()), (m.ctime(), m.ctime_nsec())]
        .into_iter()
        .all(|(s, ns)| {
            u64::try_from(s)
                .ok()
                .map(|s| UNIX_EPOCH + Duration::new(s, u32::try_from(ns).unwrap_or(0)))
                .is_some_and(|at| at <= settled_before)
        })
}

/// Both settings files' metadata, `None` in a slot when that file is absent; `None` in all
/// when one cannot be inspected.
fn settings_meta(root: &Path) -> Option<[Option<std::fs::Metadata>; 2]> {
    let claude = root.join(".claude");
    let one = |name: &str| match std::fs::metadata(claude.join(name)) {
        Ok(m) => Some(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
        Err(_) => None,
    };
    Some([one("settings.json")?, one("settings.local.json")?])
}

fn settings_stamps(root: &Path) -> Option<[Option<StampBytes>; 2]> {
    settings_meta(root).map(|m| m.map(|m| m.as_ref().map(stamp_bytes)))
}

/// `None` when an input cannot be inspected (derivation then reads and reports it).
fn stamp(
    root: &Path,
    listed: &[StatListed],
    (extra_agents, session_pool): Configured<'_>,
    now: SystemTime,
) -> Option<Stamp> {
    let settled_before = now.checked_sub(SETTLE)?;
    // Every input goes into the key as its path and stamp, each field length-prefixed or of
    // fixed width, so no two sets of inputs give the same bytes; hashed as they come.
    let mut key = Sha256::new();
    let mut field = |bytes: &[u8]| {
        key.update((bytes.len() as u64).to_le_bytes());
        key.update(bytes);
    };
    let configured = serde_json::to_string(&(extra_agents, session_pool)).ok()?;
    for head in [
        &b"attenu roster inputs v2"[..],
        &DERIVATION_RULES.to_le_bytes(),
        env!("CARGO_PKG_VERSION").as_bytes(),
        configured.as_bytes(),
    ] {
        field(head);
    }
    // `None` (no caching) when an agent file the listing found cannot be stamped or is gone.
    let mut stamps = Vec::with_capacity(listed.len());
    for (f, meta) in listed {
        let meta = meta.as_ref().ok()?;
        let s = AgentStamp {
            bytes: stamp_bytes(meta),
            settled: settled(meta, settled_before),
        };
        field(relative(root, f));
        field(&s.bytes);
        stamps.push(s);
    }
    // An absent settings file is stamped as absent.
    let settings = settings_meta(root)?;
    for (name, m) in ["settings.json", "settings.local.json"]
        .iter()
        .zip(&settings)
    {
        field(Path::new(".claude").join(name).as_os_str().as_bytes());
        match m {
            Some(m) => field(&stamp_bytes(m)),
            None => field(b"absent"),
        }
    }
    let all_settled = stamps.iter().all(|s| s.settled)
        && settings
            .iter()
            .flatten()
            .all(|m| settled(m, settled_before));
    Some(Stamp {
        key: crate::ledger::chain::hex(&key.finalize()),
        settled: all_settled,
        files: stamps,
        settings: settings.map(|m| m.as_ref().map(stamp_bytes)),
    })
}

/// A cache file, its seal verified: after the header, the roster part (its length first),
/// then the table of agent files.
struct Cached {
    bytes: Vec<u8>,
    /// Where the roster part starts and ends.
    roster: std::ops::Range<usize>,
}

impl Cached {
    /// The roster, if it was derived from exactly the inputs named by `key`.
    fn roster(&self, key: &str) -> Option<Roster> {
        let part = &self.bytes[self.roster.clone()];
        if codec::key_of(part)? != key {
            return None;
        }
        codec::decode(part).map(|(_, roster)| roster)
    }

    /// The roster part, if it was derived from exactly the inputs named by `key`.
    fn part(&self, key: &str) -> Option<&[u8]> {
        let part = &self.bytes[self.roster.clone()];
        (codec::key_of(part)? == key).then_some(part)
    }

    /// The listing kept with the roster ([`listing`]; empty when none was kept).
    fn listing(&self) -> Option<&[u8]> {
        codec::Reader {
            rest: &self.bytes[self.roster.end..],
        }
        .bytes()
    }

    /// The table of agent files, if this build wrote it (after the listing).
    fn files(&self) -> Option<HashMap<Vec<u8>, files::Entry>> {
        let mut r = codec::Reader {
            rest: &self.bytes[self.roster.end..],
        };
        r.bytes()?;
        files::decode(r.rest, &build())
    }
}

/// The cache, if the file is ours (a regular file of this user, never a symlink, with a valid
/// seal).
fn read(path: &Path, mac_key: &[u8; 32]) -> Option<Cached> {
    read_kind(&CACHE, path, mac_key)
}

/// A sealed file of `kind` whose roster part starts right after the seal.
fn read_kind(kind: &Kind, path: &Path, mac_key: &[u8; 32]) -> Option<Cached> {
    let (bytes, _) = fs::read_owned(path, MAX_CACHE_BYTES).ok()??;
    let body = kind.open(&bytes, mac_key)?;
    let len = u32::from_le_bytes(body.get(..4)?.try_into().ok()?) as usize;
    let start = bytes.len() - body.len() + 4;
    let end = start.checked_add(len).filter(|&end| end <= bytes.len())?;
    Some(Cached {
        bytes,
        roster: start..end,
    })
}

/// Replaces the cache (a concurrent reader sees the old file, none or the new one, and reads
/// none as derive-from-the-files) with `roster`, derived from the inputs of `before`, and the
/// table with the parse of every agent file that was read or known. Each is a sealed file of
/// the same form: the table's has an empty roster part, the roster's an empty table, so
/// either read in the other's place is a miss. Not made durable: a cache lost in a crash is
/// derived again.
fn write(
    path: &Path,
    table: &Path,
    mac_key: &[u8; 32],
    before: &Stamp,
    (roster, listing): (&Roster, &[u8]),
    (root, files, outcomes): (&Path, &[PathBuf], &[Outcome]),
) {
    let entries: Vec<_> = files
        .iter()
        .zip(outcomes)
        .zip(&before.files)
        .filter_map(|((f, o), s)| Some((relative(root, f), &s.bytes, o.parsed.as_ref()?)))
        .collect();
    let mut body = Vec::with_capacity(64 * files.len() + 4096);
    codec::put_bytes(&mut body, &[]);
    codec::put_bytes(&mut body, &[]);
    files::encode(&mut body, &build(), entries.into_iter());
    let _ = fs::write_expendable(table, &sealed(&CACHE, mac_key, &body));
    let roster_part = codec::encode(&before.key, roster, mac_key);
    write_roster(path, mac_key, &roster_part, listing);
}

/// Replaces the cache with the roster `part` and the `listing` it was derived from.
fn write_roster(path: &Path, mac_key: &[u8; 32], part: &[u8], listing: &[u8]) {
    let mut body = Vec::with_capacity(part.len() + listing.len() + 64);
    codec::put_bytes(&mut body, part);
    codec::put_bytes(&mut body, listing);
    files::encode(&mut body, &build(), std::iter::empty());
    let _ = fs::write_expendable(path, &sealed(&CACHE, mac_key, &body));
}

/// `body` under the header of `kind` and its seal.
fn sealed(kind: &Kind, mac_key: &[u8; 32], body: &[u8]) -> Vec<u8> {
    kind.seal(mac_key, body)
}

#[cfg(test)]
mod slice_diff_tests;
#[cfg(test)]
mod slice_tests;
#[cfg(test)]
mod tests;
