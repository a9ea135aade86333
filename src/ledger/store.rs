//! The per-session ledger file under `.attenu/`, its lock, and its verified checkpoint.
//!
//! # Layout
//! `ledger-<session>.jsonl` holds one canonical-JSON entry per line. It is a sequence of
//! chains: each starts with a `root` entry at seq 0 linked to GENESIS, followed by one `spawn`
//! per declared agent and then one entry per decision or outcome. A new chain starts when the
//! derivation's digest changes mid-session; its root's `context.previous_chain` names the
//! previous chain's id, head hash and seq, so removing a whole chain from the middle of the
//! file is detected too. Each chain exports as one bundle the reference verifier accepts.
//!
//! # Verifying before every append in O(1)
//! Every append happens under an exclusive lock, and only onto a ledger verified since it was
//! last written. Re-verifying the whole file on every call would make each call's cost grow
//! with the ledger, so after each append the hook writes a checkpoint beside the ledger
//! (`ledger-<session>.state.json`): what the verified prefix is (chain heads, byte length,
//! offset of the last line, open calls) and what proves the file has not changed since (its
//! device, inode, length, mtime and ctime), sealed with an HMAC whose key is derived from the
//! project's anchor key. On the next call the checkpoint is accepted only when the MAC holds,
//! the file's identity and times are exactly those recorded, and the last line still parses
//! and reproduces the recorded head hash. Any write to the file changes its ctime, which no
//! unprivileged process can set back, so an edit anywhere in the ledger fails the check and the
//! next call re-verifies the whole file from GENESIS (and denies if it does not verify).
//! What this does not cover: someone who can change the system clock or write the raw block
//! device, or who holds the anchor key; the signed anchor of an exported bundle is the
//! stronger commitment, and THREAT-MODEL.md says so.
//!
//! # Torn tails
//! A hook killed in the middle of its single `write` can leave a final line without its
//! newline. No answer was printed for it (the answer comes after fsync), so no decision is
//! lost; the torn bytes are moved to `ledger-<session>.torn-<ms>` and the next entry records
//! the recovery in its `context.recovered_torn_tail`. Anything else that does not verify is
//! never repaired automatically: calls are denied with `ledger-unverifiable`.

use super::canonical;
use super::chain::{self, GENESIS};
use crate::fs;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Sha256;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why the ledger cannot be used for this call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Unsafe(String),
    #[error("{0}")]
    LockTimeout(String),
    #[error("{0}")]
    Unverifiable(String),
    #[error("{0}")]
    Io(String),
}

/// A file name for a session id that can never leave `.attenu/` and never collides with
/// another id's: ids of `[a-z0-9_-]` (Claude Code's UUIDs) are used as they are; any other id
/// becomes `h.` followed by the first 40 hex of its SHA-256. Plain names have no `.`.
pub fn session_file_name(session_id: &str) -> String {
    let plain = !session_id.is_empty()
        && session_id.len() <= 100
        && session_id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if plain {
        session_id.to_string()
    } else {
        format!("h.{}", &chain::sha256_hex(session_id.as_bytes())[..40])
    }
}

/// Paths of one session's files.
#[derive(Debug, Clone)]
pub struct SessionPaths {
    pub dir: PathBuf,
    pub name: String,
    pub ledger: PathBuf,
    pub state: PathBuf,
}

impl SessionPaths {
    pub fn new(attenu_dir: &Path, session_id: &str) -> Self {
        let name = session_file_name(session_id);
        SessionPaths {
            dir: attenu_dir.to_path_buf(),
            ledger: attenu_dir.join(format!("ledger-{name}.jsonl")),
            state: attenu_dir.join(format!("ledger-{name}.state.json")),
            name,
        }
    }
}

/// One chain (segment) of a session ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainInfo {
    pub chain_id: String,
    pub digest: String,
    /// 1-based position of this chain in the session.
    pub index: u32,
    /// Byte offset of the chain's root line in the file.
    pub start: u64,
    /// Number of entries in the chain.
    pub entries: u64,
    pub head: String,
    pub params_salt: String,
    /// Agent name → node id; the session root is under "".
    pub nodes: BTreeMap<String, String>,
    /// Nodes a `done` entry has finalized.
    #[serde(default)]
    pub finalized: Vec<String>,
}

impl ChainInfo {
    pub fn root_node(&self) -> &str {
        self.nodes.get("").map(String::as_str).unwrap_or("")
    }
}

/// An allowed call still waiting for its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The seq of the allow entry, which orders open calls for the cap below.
    #[serde(default)]
    pub seq: u64,
    pub call_id: String,
    pub node: String,
    pub chain_id: String,
    pub authorized_params_hash: Option<String>,
    pub tool: String,
}

/// Open calls kept per session; see `track_pending`.
pub const MAX_OPEN_CALLS: usize = 256;

/// What identifies the file's exact bytes as last written by us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl FileStamp {
    fn of(m: &std::fs::Metadata) -> Self {
        FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
        }
    }
}

/// The verified state of a session ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct State {
    pub stamp: FileStamp,
    /// Byte offset where the last line starts.
    pub last_line: u64,
    pub chains: Vec<ChainInfo>,
    /// tool_use_id → the open call.
    pub pending: BTreeMap<String, Pending>,
    /// tool_use_id → a call still open when a new chain started (an agent edit mid-call). Its
    /// outcome can be bound to no chain, and must not be lost without a word: the hook stops
    /// Claude and leaves a reconciliation marker when it arrives.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ended: BTreeMap<String, Pending>,
    /// A torn tail moved aside that no entry records yet. Kept in the checkpoint, so a process
    /// that recovers it but appends nothing (a SessionStart on a current chain, a failure
    /// before the append) leaves it for the next append to record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecorded_recovery: Option<Value>,
}

/// The checkpoint file starts with this, then the hex HMAC of the body, a newline, and the
/// body: the state's JSON exactly as it was MACed, so it is serialized once per write and
/// never re-serialized to be checked.
/// v3: the state keeps the calls a new chain ended (`ended`); a v2 checkpoint, which did not,
/// is not read, and the ledger is re-verified once, so the cache never disagrees with a scan.
const CHECKPOINT_MAGIC: &str = "attenu-checkpoint v3 ";

/// Far above any real checkpoint (at most MAX_OPEN_CALLS open calls and the chains' nodes,
/// tens of KB); a larger file is not read and the ledger is re-verified instead.
pub const MAX_CHECKPOINT_BYTES: u64 = 16 << 20;

/// A session ledger, locked for this process until dropped (the `flock` is on the ledger's own
/// open file description, so it goes with `file`).
pub struct Ledger {
    pub paths: SessionPaths,
    file: File,
    pub state: State,
    mac_key: [u8; 32],
    /// A torn tail moved aside during this open, to be recorded in the next entry.
    pub recovered: Option<Value>,
    /// Whether the checkpoint was accepted (false: the whole file was re-verified).
    pub fast_path: bool,
    /// The ledger was empty when opened, so this process may have just created it, and its
    /// name may not be durable yet: the first append also syncs the directory, unless this
    /// process created the file on a file system whose `fdatasync` of it writes its name
    /// (`fs::new_name_durable_with_file`).
    name_unsynced: bool,
    /// This process created the file (and has held it open since).
    created: bool,
}

/// Takes the exclusive lock, waiting at most until `deadline`. The wait is a blocking `flock`
/// on a helper thread, so the process is woken the moment the lock is released (polling left
/// waiters asleep while the lock sat free, and starved some of them under contention). On
/// timeout the helper stays blocked; the process answers with a deny and exits, which drops it.
fn acquire(lock: &File, path: &Path, deadline: Instant) -> Result<(), StoreError> {
    match lock.try_lock() {
        Ok(()) => return Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(StoreError::Io(format!(
                "cannot lock {}: {e}",
                path.display()
            )))
        }
    }
    // A second descriptor of the same open file: flock belongs to the open file description,
    // so the lock taken through it is this process's lock on `lock` too.
    let waiter = lock
        .try_clone()
        .map_err(|e| StoreError::Io(format!("cannot lock {}: {e}", path.display())))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("ledger-lock".into())
        .spawn(move || {
            let _ = tx.send(waiter.lock());
        })
        .map_err(|e| StoreError::Io(format!("cannot wait for the lock: {e}")))?;
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(StoreError::Io(format!("cannot lock {}: {e}", path.display()))),
        Err(_) => Err(StoreError::LockTimeout(format!(
            "another process held {} for too long; if no attenu-hook or Claude Code process is running, look for a stuck process holding it (fuser {})",
            path.display(),
            path.display()
        ))),
    }
}

impl Ledger {
    /// Opens and locks the session ledger, verifying it (fast path via the checkpoint).
    pub fn open(
        paths: SessionPaths,
        mac_key: [u8; 32],
        lock_deadline: Instant,
    ) -> Result<Ledger, StoreError> {
        fs::ensure_private_dir(&paths.dir).map_err(|e| StoreError::Unsafe(e.to_string()))?;
        // The lock is the ledger itself: nothing ever replaces its inode (a torn tail is cut in
        // place), so every process of the session locks the same file, and a new session
        // creates one file fewer. The open never follows a symlink (nor, being read-write,
        // waits on a FIFO), and the file it opened is what is checked, once the lock is held
        // (see `load`).
        let (file, created) = fs::open_read_append(&paths.ledger).map_err(|e| {
            match fs::refused_open(&paths.ledger, &e) {
                Some(why) => StoreError::Unsafe(why.to_string()),
                None => StoreError::Io(format!("cannot open {}: {e}", paths.ledger.display())),
            }
        })?;
        acquire(&file, &paths.ledger, lock_deadline)?;
        let mut ledger = Ledger {
            paths,
            file,
            state: State::default(),
            mac_key,
            recovered: None,
            fast_path: false,
            name_unsynced: false,
            created,
        };
        ledger.load()?;
        ledger.name_unsynced = ledger.state.stamp.len == 0;
        Ok(ledger)
    }

    fn metadata(&self) -> Result<std::fs::Metadata, StoreError> {
        self.file
            .metadata()
            .map_err(|e| StoreError::Io(format!("cannot stat the ledger: {e}")))
    }

    fn stamp(&self) -> Result<FileStamp, StoreError> {
        self.metadata().map(|m| FileStamp::of(&m))
    }

    fn load(&mut self) -> Result<(), StoreError> {
        let meta = self.metadata()?;
        fs::check_owned_regular(&self.paths.ledger, &meta)
            .map_err(|e| StoreError::Unsafe(e.to_string()))?;
        let stamp = FileStamp::of(&meta);
        let checkpoint = self.read_checkpoint()?;
        if let Some(state) = checkpoint.as_ref() {
            if state.stamp == stamp && self.tail_matches(state) {
                self.state = checkpoint.unwrap_or_default();
                self.recovered = self.state.unrecorded_recovery.clone();
                self.fast_path = true;
                return Ok(());
            }
        }
        // A sealed but outdated checkpoint still names a recovery moved aside. If an append
        // recorded it and then died before rewriting the checkpoint, it is recorded twice
        // (the same details both times); it is never lost.
        self.full_verify(checkpoint)
    }

    /// The file still holds, byte for byte up to its hash, the chain a sealed checkpoint
    /// recorded: at least as long, with the checkpoint's last line at the same offset and
    /// hashing to the head it recorded. The ledger is fsynced before its checkpoint is
    /// written, so no crash leaves the file shorter than its checkpoint; a shorter file is
    /// one whose last entries were cut off or that was replaced by an older copy, and every
    /// prefix of a valid chain is itself valid, so a re-verify alone would not notice.
    /// `bytes` is the whole file as read now (no size bound: a full re-verify reads it all).
    fn holds_prefix(&self, prior: &State, bytes: &[u8]) -> Result<(), StoreError> {
        if holds_checkpointed_prefix(prior, bytes) {
            return Ok(());
        }
        Err(StoreError::Unverifiable(format!(
            "{} no longer holds what was verified and appended to it ({} bytes, {} entries then; {} bytes now): entries were removed, or the file was replaced by an older copy. It is kept as evidence and nothing more is appended to it. If you moved the ledger aside on purpose, move its checkpoint {} aside too to start a new ledger for this session",
            self.paths.ledger.display(),
            prior.stamp.len,
            prior.chains.iter().map(|c| c.entries).sum::<u64>(),
            bytes.len(),
            self.paths.state.display(),
        )))
    }

    /// The checkpoint's state, if its seal holds. A checkpoint that cannot be read is as
    /// good as none (the ledger is re-verified and the checkpoint rewritten), but one that is
    /// not a file the hook may use (a symlink, a FIFO, another user's) is refused.
    fn read_checkpoint(&self) -> Result<Option<State>, StoreError> {
        let bytes = match fs::read_owned(&self.paths.state, MAX_CHECKPOINT_BYTES) {
            Ok(Some((bytes, _))) => bytes,
            Ok(None) | Err(fs::ReadError::TooLarge(_) | fs::ReadError::Io(_)) => return Ok(None),
            Err(fs::ReadError::Refused(why)) => return Err(StoreError::Unsafe(why)),
        };
        Ok(unseal_checkpoint(&bytes, &self.mac_key))
    }

    /// The last line still parses and reproduces the head the checkpoint recorded. (A last
    /// line over 16 MiB is not read here; the full re-verify reads it.)
    fn tail_matches(&self, state: &State) -> bool {
        let Some(chain) = state.chains.last() else {
            return state.stamp.len == 0;
        };
        let len = state.stamp.len.saturating_sub(state.last_line);
        if len == 0 || len > 16 << 20 {
            return false;
        }
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, state.last_line).is_ok()
            && line_reproduces(&buf, &chain.head)
    }

    fn write_checkpoint(&self) {
        // Written in place and not fsynced, under the ledger lock: a torn, lost or stale
        // checkpoint fails its MAC or its stamp and only costs one full re-verify.
        let Ok(body) = serde_json::to_vec(&self.state) else {
            return;
        };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.mac_key) else {
            return;
        };
        mac.update(&body);
        let tag = chain::hex(&mac.finalize().into_bytes());
        let mut bytes = Vec::with_capacity(CHECKPOINT_MAGIC.len() + tag.len() + 1 + body.len());
        bytes.extend_from_slice(CHECKPOINT_MAGIC.as_bytes());
        bytes.extend_from_slice(tag.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(&body);
        if let Ok(f) = fs::open_rw(&self.paths.state) {
            if f.write_all_at(&bytes, 0).is_ok() {
                let _ = f.set_len(bytes.len() as u64);
            }
        }
    }

    /// Re-reads and re-verifies the whole file from GENESIS, rebuilding the state. `prior` is
    /// a sealed checkpoint whose stamp no longer matches: the file must still hold its prefix.
    fn full_verify(&mut self, prior: Option<State>) -> Result<(), StoreError> {
        let mut bytes = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| StoreError::Io(e.to_string()))?;
        self.file
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::Io(format!("cannot read the ledger: {e}")))?;
        // Before anything is changed (a torn tail cut): a file that lost what was verified is
        // left exactly as it is found.
        let unrecorded = match prior {
            Some(prior) => {
                self.holds_prefix(&prior, &bytes)?;
                prior.unrecorded_recovery
            }
            None => None,
        };
        let cut = whole_lines_len(&bytes);
        if cut < bytes.len() {
            self.recover_torn_tail(&bytes[cut..], cut as u64)?;
            bytes.truncate(cut);
        }
        self.state = scan(&bytes).map_err(|e| {
            StoreError::Unverifiable(format!(
                "{} does not verify ({e}); it is kept as evidence and nothing more is appended to it. Move it and its checkpoint {} aside (for example with a .broken suffix) to start a new ledger for this session, and keep the old one for review",
                self.paths.ledger.display(),
                self.paths.state.display()
            ))
        })?;
        self.state.stamp = self.stamp()?;
        if self.recovered.is_none() {
            self.recovered = unrecorded;
        }
        self.state.unrecorded_recovery = self.recovered.clone();
        // A new (empty) ledger needs no checkpoint: the append that follows writes it.
        if self.state.stamp.len > 0 || self.recovered.is_some() {
            self.write_checkpoint();
        }
        Ok(())
    }

    fn recover_torn_tail(&mut self, torn: &[u8], cut: u64) -> Result<(), StoreError> {
        let ms = crate::clock::now_ms();
        let aside = self
            .paths
            .dir
            .join(format!("ledger-{}.torn-{ms}", self.paths.name));
        fs::write_atomic(&aside, torn, true)
            .map_err(|e| StoreError::Io(format!("cannot keep the torn tail aside: {e}")))?;
        self.file
            .set_len(cut)
            .map_err(|e| StoreError::Io(format!("cannot truncate the torn tail: {e}")))?;
        self.file
            .sync_all()
            .map_err(|e| StoreError::Io(e.to_string()))?;
        self.recovered = Some(serde_json::json!({
            "bytes": torn.len(),
            "at_offset": cut,
            "sha256": chain::sha256_hex(torn),
            "kept_in": aside.file_name().map(|n| n.to_string_lossy().into_owned()),
        }));
        Ok(())
    }

    /// The chain new entries go to, if any.
    pub fn current(&self) -> Option<&ChainInfo> {
        self.state.chains.last()
    }

    /// Seals `entries` onto the current chain (or, when the first is a `root`, starts a new
    /// chain), appends them with one write, fsyncs, and only then updates the checkpoint.
    /// Each entry must already carry everything but `v`, `c14n`, `seq`, `prev_hash`, `hash`.
    pub fn append(&mut self, mut entries: Vec<Map<String, Value>>) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        if let Some(recovery) = &self.recovered {
            // The first entry written after a torn tail was cut records the cut.
            let context = entries[0]
                .entry("context")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(c) = context {
                c.entry("recovered_torn_tail")
                    .or_insert_with(|| recovery.clone());
            }
        }
        let mut next = self.state.clone();
        next.unrecorded_recovery = None;
        let mut buf = Vec::with_capacity(entries.len() * 700);
        let mut offset = next.stamp.len;
        let mut last_line = next.last_line;
        for mut e in entries {
            let is_root = e.get("event").and_then(Value::as_str) == Some("root");
            if is_root {
                let chain_id = e
                    .get("chain_id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let salt = e
                    .get("params_salt")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let digest = e
                    .get("context")
                    .and_then(|c| c.get("digest"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let index = next.chains.len() as u32 + 1;
                // As in `scan`: a call opened on the chain that ends here can no longer be
                // completed on the new one (its outcome would be an outcome without an allow).
                end_open_calls(&mut next);
                next.chains.push(ChainInfo {
                    chain_id,
                    digest,
                    index,
                    start: offset,
                    entries: 0,
                    head: GENESIS.into(),
                    params_salt: salt,
                    nodes: BTreeMap::new(),
                    finalized: Vec::new(),
                });
            }
            let chain = next
                .chains
                .last_mut()
                .ok_or_else(|| StoreError::Io("an entry was appended before any root".into()))?;
            e.insert("v".into(), Value::from(2));
            e.insert("c14n".into(), Value::from("JCS"));
            e.insert("seq".into(), Value::from(chain.entries));
            let hash = chain::seal(&mut e, &chain.head)
                .map_err(|err| StoreError::Io(format!("entry cannot be canonicalised: {err}")))?;
            let node = e.get("node").and_then(Value::as_str).map(str::to_string);
            match e.get("event").and_then(Value::as_str) {
                Some("root") => {
                    if let Some(n) = node {
                        chain.nodes.insert(String::new(), n);
                    }
                }
                Some("spawn") => {
                    if let (Some(n), Some(agent)) = (node, e.get("agent").and_then(Value::as_str)) {
                        chain.nodes.insert(agent.to_string(), n);
                    }
                }
                Some("done") => chain.finalized.extend(node),
                _ => {}
            }
            track_pending(&mut next.pending, &e, &chain.chain_id);
            chain.head = hash;
            chain.entries += 1;
            let line = canonical::to_vec(&Value::Object(e))
                .map_err(|err| StoreError::Io(err.to_string()))?;
            last_line = offset;
            offset += line.len() as u64 + 1;
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        // POSIX does not promise that a file's fsync makes its new name durable: without a
        // directory fsync, a crash could lose the whole ledger of a session whose first
        // decision had already been answered. Where the file system's own fsync of a file
        // this process created writes its name (ext4, XFS: see the function), that second
        // flush is skipped.
        let sync_dir = self.name_unsynced
            && !(self.created && fs::new_name_durable_with_file(self.state.stamp.dev));
        // One write, so a crash leaves either nothing or a torn final line, never interleaving.
        (&self.file)
            .write_all(&buf)
            .map_err(|e| StoreError::Io(format!("cannot write the ledger: {e}")))?;
        self.file
            .sync_data()
            .map_err(|e| StoreError::Io(format!("cannot fsync the ledger: {e}")))?;
        if sync_dir {
            fs::sync_dir(&self.paths.dir).map_err(|e| {
                StoreError::Io(format!(
                    "cannot fsync {} after creating the ledger: {e}",
                    self.paths.dir.display()
                ))
            })?;
        }
        self.name_unsynced = false;
        next.last_line = last_line;
        next.stamp = self.stamp()?;
        if next.stamp.len != offset {
            return Err(StoreError::Io(
                "the ledger changed size unexpectedly during the append".into(),
            ));
        }
        self.state = next;
        self.recovered = None;
        self.write_checkpoint();
        Ok(())
    }

    /// Reads the raw bytes of the file as verified (for export), up to the verified length.
    pub fn read_verified(&self) -> Result<Vec<u8>, StoreError> {
        let mut buf = vec![0u8; self.state.stamp.len as usize];
        self.file
            .read_exact_at(&mut buf, 0)
            .map_err(|e| StoreError::Io(format!("cannot read the ledger: {e}")))?;
        Ok(buf)
    }
}

/// The length of a ledger's complete lines: all of it, or up to a torn final line (one a
/// crash cut before its newline, which the next hook call moves aside).
pub fn whole_lines_len(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

/// The state a checkpoint file's bytes record, if their seal under `mac_key` holds.
pub fn unseal_checkpoint(bytes: &[u8], mac_key: &[u8; 32]) -> Option<State> {
    let rest = bytes.strip_prefix(CHECKPOINT_MAGIC.as_bytes())?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let (tag, body) = (std::str::from_utf8(&rest[..nl]).ok()?, &rest[nl + 1..]);
    let mut mac = Hmac::<Sha256>::new_from_slice(mac_key).ok()?;
    mac.update(body);
    mac.verify_slice(&chain::unhex(tag)?).ok()?;
    serde_json::from_slice(body).ok()
}

/// `bytes`, a whole ledger file, still holds what the checkpoint `prior` recorded: its last
/// line at the recorded offset, reproducing the recorded head (so, the chain verifying, every
/// entry before it too).
pub fn holds_checkpointed_prefix(prior: &State, bytes: &[u8]) -> bool {
    match prior.chains.last() {
        None => true,
        Some(chain) => usize::try_from(prior.last_line)
            .ok()
            .zip(usize::try_from(prior.stamp.len).ok())
            .and_then(|(a, b)| bytes.get(a..b))
            .is_some_and(|line| line_reproduces(line, &chain.head)),
    }
}

/// `line` (with its newline) is an entry whose own hash is `head` and reproduces it.
fn line_reproduces(line: &[u8], head: &str) -> bool {
    if line.last() != Some(&b'\n') {
        return false;
    }
    let Ok(Value::Object(mut e)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let Some(Value::String(hash)) = e.remove("hash") else {
        return false;
    };
    let prev = e
        .get("prev_hash")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    hash == head && chain::entry_hash(&prev, &e).is_ok_and(|h| h == hash)
}

/// A new chain starts: the calls still open on the one before can no longer be completed.
fn end_open_calls(state: &mut State) {
    let open = std::mem::take(&mut state.pending);
    state.ended.extend(open);
    // Bounded like the open calls: the oldest are forgotten (their outcome, if it ever comes,
    // then finds nothing and is not bound, as for a call from before the hook was wired).
    while state.ended.len() > MAX_OPEN_CALLS {
        forget_oldest(&mut state.ended);
    }
}

/// Drops the call allowed first (the earliest chain, then the lowest seq in it).
fn forget_oldest(calls: &mut BTreeMap<String, Pending>) {
    if let Some(oldest) = calls
        .iter()
        .min_by_key(|(_, p)| (chain_index(&p.chain_id), p.seq))
        .map(|(k, _)| k.clone())
    {
        calls.remove(&oldest);
    }
}

/// The position a chain id ends with (`cc-<session>-<digest>-<k>`).
fn chain_index(chain_id: &str) -> u32 {
    chain_id
        .rsplit('-')
        .next()
        .and_then(|k| k.parse().ok())
        .unwrap_or(0)
}

fn track_pending(pending: &mut BTreeMap<String, Pending>, e: &Map<String, Value>, chain_id: &str) {
    match e.get("event").and_then(Value::as_str) {
        Some("allow") => {
            let (Some(tu), Some(cid)) = (
                e.get("context")
                    .and_then(|c| c.get("tool_use_id"))
                    .and_then(Value::as_str),
                e.get("call_id").and_then(Value::as_str),
            ) else {
                return;
            };
            let seq = e.get("seq").and_then(Value::as_u64).unwrap_or(0);
            if pending.len() >= MAX_OPEN_CALLS {
                // Calls Claude Code never finished (refused after our allow, interrupted) would
                // otherwise grow the checkpoint forever; the oldest is dropped. Its outcome, if it
                // ever arrives, finds no open call and is not bound.
                forget_oldest(pending);
            }
            pending.insert(
                tu.to_string(),
                Pending {
                    seq,
                    call_id: cid.to_string(),
                    node: e
                        .get("node")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    chain_id: chain_id.to_string(),
                    authorized_params_hash: e
                        .get("authorized_params_hash")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    tool: e
                        .get("tool")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                },
            );
        }
        Some("outcome") => {
            if let Some(cid) = e.get("call_id").and_then(Value::as_str) {
                pending.retain(|_, p| p.call_id != cid);
            }
        }
        _ => {}
    }
}

/// Parses and verifies a whole ledger file (without a torn tail), chain by chain.
pub fn scan(bytes: &[u8]) -> Result<State, String> {
    let mut state = State::default();
    let mut offset = 0u64;
    let mut segment: Vec<Value> = Vec::new();
    let mut segment_start = 0u64;
    let finish = |segment: &mut Vec<Value>, start: u64, state: &mut State| -> Result<(), String> {
        if segment.is_empty() {
            return Ok(());
        }
        let head = chain::verify_entries(segment).map_err(|b| {
            format!(
                "chain {} breaks: {b} (line {} of the file)",
                state.chains.len() + 1,
                line_no(state, b.index())
            )
        })?;
        let root = &segment[0];
        let chain_id = root
            .get("chain_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(bad) = segment
            .iter()
            .position(|e| e.get("chain_id").and_then(Value::as_str) != Some(chain_id.as_str()))
        {
            return Err(format!(
                "entry {bad} of chain {chain_id} carries another chain_id"
            ));
        }
        let expected_link = state.chains.last().map(
            |p| serde_json::json!({"chain_id": p.chain_id, "head": p.head, "seq": p.entries - 1}),
        );
        let link = root
            .pointer("/context/previous_chain")
            .cloned()
            .filter(|v| !v.is_null());
        if link != expected_link {
            return Err(format!("chain {chain_id} does not link to the chain before it (a chain was removed or reordered)"));
        }
        let mut info = ChainInfo {
            chain_id: chain_id.clone(),
            digest: root
                .pointer("/context/digest")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            index: state.chains.len() as u32 + 1,
            start,
            entries: segment.len() as u64,
            head,
            params_salt: root
                .get("params_salt")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            nodes: BTreeMap::new(),
            finalized: Vec::new(),
        };
        end_open_calls(state); // only the current chain's calls can still be completed
        for e in segment.iter() {
            let obj = e.as_object().expect("verified entries are objects");
            let node = obj.get("node").and_then(Value::as_str);
            match (obj.get("event").and_then(Value::as_str), node) {
                (Some("root"), Some(n)) => {
                    info.nodes.insert(String::new(), n.to_string());
                }
                (Some("spawn"), Some(n)) => {
                    if let Some(agent) = obj.get("agent").and_then(Value::as_str) {
                        info.nodes.insert(agent.to_string(), n.to_string());
                    }
                }
                (Some("done"), Some(n)) => info.finalized.push(n.to_string()),
                _ => {}
            }
            track_pending(&mut state.pending, obj, &chain_id);
        }
        state.chains.push(info);
        segment.clear();
        Ok(())
    };
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    for (i, (line, value)) in lines.iter().zip(parse_lines(&lines)).enumerate() {
        let value = value.map_err(|e| format!("line {} is not valid JSON ({e})", i + 1))?;
        if value.get("event").and_then(Value::as_str) == Some("root") {
            finish(&mut segment, segment_start, &mut state)?;
            segment_start = offset;
        } else if segment.is_empty() {
            return Err(format!("line {} comes before any root entry", i + 1));
        }
        segment.push(value);
        state.last_line = offset;
        offset += line.len() as u64;
    }
    finish(&mut segment, segment_start, &mut state)?;
    Ok(state)
}

/// Below this many lines one thread is faster than starting others.
const PARALLEL_FROM: usize = 1024;

/// Parses every line, on every core for a long file (a full re-verify of a large ledger must
/// fit in the hook's deadline).
fn parse_lines(lines: &[&[u8]]) -> Vec<Result<Value, serde_json::Error>> {
    crate::par::map(lines, PARALLEL_FROM, |_, l| serde_json::from_slice(l))
}

fn line_no(state: &State, index_in_chain: usize) -> u64 {
    state.chains.iter().map(|c| c.entries).sum::<u64>() + index_in_chain as u64 + 1
}

/// Splits verified ledger bytes into chains of entries (for export), in file order.
pub fn chains_of(bytes: &[u8]) -> Result<Vec<Vec<Value>>, String> {
    let mut out: Vec<Vec<Value>> = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let v: Value = serde_json::from_slice(line)
            .map_err(|e| format!("line {} is not valid JSON ({e})", i + 1))?;
        if v.get("event").and_then(Value::as_str) == Some("root") || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().expect("pushed above").push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_stay_inside_and_never_collide() {
        assert_eq!(session_file_name("44df19b4-aa"), "44df19b4-aa");
        for hostile in [
            "../../etc/passwd",
            "a/b",
            "",
            ".",
            "..",
            "A",
            "x\u{202e}y",
            "a.b",
        ] {
            let n = session_file_name(hostile);
            assert!(
                !n.contains('/') && !n.is_empty() && n != "." && n != "..",
                "{hostile} -> {n}"
            );
        }
        assert_ne!(session_file_name("a/b"), session_file_name("a_b"));
        assert_ne!(session_file_name("A"), session_file_name("a"));
    }
}
