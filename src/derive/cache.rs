//! A sealed copy of the last derivation, used while the declarations have not changed.
//!
//! Deriving reads every agent file and both settings files and parses their YAML and JSON. In
//! a fresh hook process that is about 0.3 ms, most of it the first run of the parsers' code,
//! and it happens on every call. The roster depends only on those files and on the agents the
//! configuration names, so the hook keeps it in `.attenu/roster.cache` together with:
//!
//! * the **stamp of every input**: each agent file the listing finds (the tree is listed
//!   afresh on every call, so a file added, removed or renamed changes the key) and both
//!   settings files (present or not), as path, device, inode, size, mtime and ctime, plus the
//!   configured agents and this build's version. A write to a file changes its mtime and
//!   ctime, and no user can set a ctime; a file replaced by a rename has another inode;
//! * an **HMAC** with the checkpoint key, so a file this hook did not write is never read as
//!   a roster (it is derived again and the file replaced).
//!
//! The roster is stored in a compact binary form ([`codec`]), not JSON: each distinct scope
//! set once, agents naming theirs by number. A roster of 200 agents that inherit the session
//! pool holds one set of ~200 scopes, where JSON held 200 copies and parsed them every call.
//!
//! The one edit a stamp cannot see is a second write within one timestamp tick of the first
//! that leaves the size unchanged. So a derivation is cached only when every input's mtime and
//! ctime is at least [`SETTLE`] old (git's rule for "racily clean" entries): a later write then
//! gets a later time and a different stamp. Until then every call derives from the files. The
//! inputs are stamped again after they were read, and the roster is cached only if nothing
//! moved in between (a symlink or directory swapped while derivation read through it).

mod codec;

use super::{derive_from, list_agent_files, DeriveError, Roster};
use crate::fs;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The cache file, in the state directory.
pub const CACHE_FILE: &str = "roster.cache";
const HEADER: &str = "attenu-roster v2 ";
/// Sealed before the body, so no other file sealed with the same key reads as a roster.
const SEAL_DOMAIN: &[u8] = b"attenu-hook roster cache v2\n";
/// Bumped whenever derivation would give another roster for the same files, so a cache
/// written by an older build of the same version is not read.
const DERIVATION_RULES: u32 = 7;
/// How old every input must be before its derivation is cached.
pub const SETTLE: Duration = Duration::from_secs(2);
/// A cache file larger than this is not read (a roster of 2,000 agents is far smaller: each
/// distinct scope set is stored once, see [`codec`]).
const MAX_CACHE_BYTES: u64 = 4 << 20;

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

/// What the configuration adds to the files: `[agents]` and `[derive] session_pool`.
pub type Configured<'a> = (&'a BTreeMap<String, Vec<String>>, Option<&'a [String]>);

/// [`derive_cached`], with the key of the inputs it was derived from (`None` when an input
/// could not be stamped), for [`inputs_key`] to compare with later.
pub fn derive_cached_keyed(
    root: &Path,
    configured: Configured<'_>,
    attenu_dir: &Path,
    mac_key: &[u8; 32],
) -> Result<(Roster, Option<String>), DeriveError> {
    derive_cached_at(root, configured, attenu_dir, mac_key, SystemTime::now())
}

/// The key of the project's inputs as they are now: the listing and every input's stamp.
/// Equal to an earlier key when no input was added, removed, replaced or written since, but
/// for a write within one timestamp tick of the earlier stamp that kept the size (see
/// [`SETTLE`]).
pub fn inputs_key(root: &Path, configured: Configured<'_>) -> Option<String> {
    let files = list_agent_files(root).ok()?;
    stamp(root, &files, configured, SystemTime::now()).map(|s| s.key)
}

fn derive_cached_at(
    root: &Path,
    configured: Configured<'_>,
    attenu_dir: &Path,
    mac_key: &[u8; 32],
    now: SystemTime,
) -> Result<(Roster, Option<String>), DeriveError> {
    let (extra_agents, session_pool) = configured;
    let files = list_agent_files(root)?;
    let Some(before) = stamp(root, &files, configured, now) else {
        return derive_from(root, files, extra_agents, session_pool).map(|r| (r, None));
    };
    let path = attenu_dir.join(CACHE_FILE);
    if let Some(roster) = read(&path, mac_key, &before.key) {
        return Ok((roster, Some(before.key)));
    }
    let roster = derive_from(root, files.clone(), extra_agents, session_pool)?;
    if before.settled {
        let after = list_agent_files(root)
            .ok()
            .filter(|again| *again == files)
            .and_then(|_| stamp(root, &files, configured, now));
        if after.is_some_and(|a| a.key == before.key) {
            write(&path, mac_key, &before.key, &roster);
        }
    }
    Ok((roster, Some(before.key)))
}

/// What the inputs are: a key naming them, and whether they are old enough to cache.
struct Stamp {
    key: String,
    settled: bool,
}

/// `None` when an input cannot be inspected (derivation then reads and reports it).
fn stamp(
    root: &Path,
    files: &[PathBuf],
    (extra_agents, session_pool): Configured<'_>,
    now: SystemTime,
) -> Option<Stamp> {
    let settled_before = now.checked_sub(SETTLE)?;
    let mut settled = true;
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
    // `None` (no caching) when an input cannot be stamped, or an agent file the listing found
    // is gone; an absent settings file is stamped as absent.
    let mut of = |path: &Path, may_be_absent: bool| -> Option<()> {
        field(
            path.strip_prefix(root)
                .unwrap_or(path)
                .as_os_str()
                .as_bytes(),
        );
        let m = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if may_be_absent && e.kind() == std::io::ErrorKind::NotFound => {
                field(b"absent");
                return Some(());
            }
            Err(_) => return None,
        };
        for (s, ns) in [(m.mtime(), m.mtime_nsec()), (m.ctime(), m.ctime_nsec())] {
            let at = u64::try_from(s)
                .ok()
                .map(|s| UNIX_EPOCH + Duration::new(s, u32::try_from(ns).unwrap_or(0)));
            if at.is_none_or(|at| at > settled_before) {
                settled = false;
            }
        }
        let mut st = [0u8; 56];
        for (k, v) in [
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime() as u64,
            m.mtime_nsec() as u64,
            m.ctime() as u64,
            m.ctime_nsec() as u64,
        ]
        .into_iter()
        .enumerate()
        {
            st[k * 8..k * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        field(&st);
        Some(())
    };
    for f in files {
        of(f, false)?;
    }
    let claude = root.join(".claude");
    for name in ["settings.json", "settings.local.json"] {
        of(&claude.join(name), true)?;
    }
    let key = crate::ledger::chain::hex(&key.finalize());
    Some(Stamp { key, settled })
}

fn seal(mac_key: &[u8; 32], body: &[u8]) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(mac_key).ok()?;
    mac.update(SEAL_DOMAIN);
    mac.update(body);
    Some(mac)
}

/// The cached roster, if the file is ours (a regular file of this user, never a symlink, with
/// a valid seal) and was derived from exactly the inputs named by `key`.
fn read(path: &Path, mac_key: &[u8; 32], key: &str) -> Option<Roster> {
    let (bytes, _) = fs::read_owned(path, MAX_CACHE_BYTES).ok()??;
    let body = bytes.strip_prefix(HEADER.as_bytes())?;
    let (tag, body) = body.split_at_checked(64)?;
    let body = body.strip_prefix(b"\n")?;
    let tag = crate::ledger::chain::unhex(std::str::from_utf8(tag).ok()?)?;
    seal(mac_key, body)?.verify_slice(&tag).ok()?;
    let (cached_key, roster) = codec::decode(body)?;
    (cached_key == key).then_some(roster)
}

/// Replaces the cache (atomically, so a concurrent reader sees the old file or the new one).
/// Not made durable: a cache lost in a crash is derived again.
fn write(path: &Path, mac_key: &[u8; 32], key: &str, roster: &Roster) {
    let body = codec::encode(key, roster);
    let Some(mac) = seal(mac_key, &body) else {
        return;
    };
    let tag = crate::ledger::chain::hex(&mac.finalize().into_bytes());
    let mut file = Vec::with_capacity(HEADER.len() + 65 + body.len());
    file.extend_from_slice(HEADER.as_bytes());
    file.extend_from_slice(tag.as_bytes());
    file.push(b'\n');
    file.extend_from_slice(&body);
    let _ = fs::write_atomic(path, &file, false);
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    /// A project with one agent, and its state directory.
    fn project() -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!(
            "attenu-roster-cache-{}-{}",
            std::process::id(),
            crate::ledger::chain::hex(&rand_bytes())
        ));
        std::fs::create_dir_all(root.join(".claude/agents")).unwrap();
        std::fs::create_dir_all(root.join(".attenu")).unwrap();
        write_agent(&root, "Read, Grep");
        (root.clone(), root.join(".attenu"))
    }

    fn rand_bytes() -> [u8; 6] {
        let mut b = [0u8; 6];
        getrandom::fill(&mut b).unwrap();
        b
    }

    /// Writes the agent file with `tools`; `age` back-dates its mtime, as a write that
    /// happened that long ago would have left it.
    fn write_agent_aged(root: &Path, tools: &str, age: Duration) {
        let path = root.join(".claude/agents/reviewer.md");
        std::fs::write(
            &path,
            format!("---\nname: reviewer\ndescription: reads\ntools: {tools}\n---\nReview.\n"),
        )
        .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
    }

    fn write_agent(root: &Path, tools: &str) {
        write_agent_aged(root, tools, Duration::from_secs(60));
    }

    fn later() -> SystemTime {
        SystemTime::now() + SETTLE * 2
    }

    /// The cache key of the project's inputs as they are now, once settled.
    fn key_of(root: &Path) -> String {
        let files = list_agent_files(root).unwrap();
        stamp(root, &files, (&BTreeMap::new(), None), later())
            .unwrap()
            .key
    }

    fn derive(root: &Path, attenu: &Path, now: SystemTime) -> Roster {
        derive_cached_at(root, (&BTreeMap::new(), None), attenu, &KEY, now)
            .unwrap()
            .0
    }

    #[test]
    fn a_settled_derivation_is_reused_and_an_edit_is_seen() {
        let (root, attenu) = project();
        let cache = attenu.join(CACHE_FILE);
        // Inputs written just now are not settled: nothing is cached.
        let fresh = derive(&root, &attenu, SystemTime::now());
        assert!(!cache.exists());
        // Once they are, the roster is cached and read back as it was derived.
        assert_eq!(derive(&root, &attenu, later()), fresh);
        assert!(cache.exists());
        let key = key_of(&root);
        assert_eq!(read(&cache, &KEY, &key).as_ref(), Some(&fresh));
        // An edit of the same size is seen: a later write leaves a later time. (Two writes
        // within one timestamp tick could leave the same one; that is why only settled
        // inputs are cached, which `later()` pretends they are here.)
        write_agent_aged(&root, "Glob, Read", Duration::from_secs(30));
        let edited = derive(&root, &attenu, later());
        assert_ne!(
            edited.agents["reviewer"].scopes,
            fresh.agents["reviewer"].scopes
        );
        assert!(edited.agents["reviewer"].scopes.contains("fs.glob"));
        // A new agent file, or settings appearing, change the key too.
        std::fs::write(
            root.join(".claude/agents/second.md"),
            "---\nname: second\ndescription: x\ntools: Read\n---\n",
        )
        .unwrap();
        assert!(derive(&root, &attenu, later())
            .agents
            .contains_key("second"));
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"permissions": {"deny": ["Read"]}}"#,
        )
        .unwrap();
        let denied = derive(&root, &attenu, later());
        assert!(!denied.root.iter().any(|s| s == "fs.read"), "{denied:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_agent_file_gone_between_listing_and_stamping_is_not_cached() {
        let (root, attenu) = project();
        let mut files = list_agent_files(&root).unwrap();
        assert!(stamp(&root, &files, (&BTreeMap::new(), None), later()).is_some());
        files.push(root.join(".claude/agents/vanished.md"));
        assert!(stamp(&root, &files, (&BTreeMap::new(), None), later()).is_none());
        assert!(!attenu.join(CACHE_FILE).exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_cache_this_hook_did_not_seal_is_not_read() {
        let (root, attenu) = project();
        let cache = attenu.join(CACHE_FILE);
        let honest = derive(&root, &attenu, later());
        let key = key_of(&root);
        // A roster changed in place into another well-formed one (its Grep now a scope it
        // never held): only the seal stops it.
        let text = std::fs::read(&cache).unwrap();
        let at = text.windows(7).position(|w| w == b"fs.grep").unwrap();
        let mut widened = text.clone();
        widened[at..at + 7].copy_from_slice(b"fs.hack");
        let body = &widened[HEADER.len() + 65..];
        let (_, forged) = codec::decode(body).expect("still a well-formed body");
        assert!(forged.agents["reviewer"].scopes.contains("fs.hack"));
        std::fs::write(&cache, &widened).unwrap();
        assert_eq!(read(&cache, &KEY, &key), None);
        // Sealed with another key.
        std::fs::write(&cache, &text).unwrap();
        assert!(read(&cache, &KEY, &key).is_some());
        assert_eq!(read(&cache, &[8; 32], &key), None);
        // Derivation goes back to the files and replaces the file.
        std::fs::write(&cache, &widened).unwrap();
        assert_eq!(derive(&root, &attenu, later()), honest);
        assert_eq!(std::fs::read(&cache).unwrap(), text);
        // A symlink in its place is never followed.
        std::fs::remove_file(&cache).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), &cache).unwrap();
        assert_eq!(read(&cache, &KEY, &key), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
