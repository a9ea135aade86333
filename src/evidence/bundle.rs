//! Export: each chain of a session ledger becomes one signed evidence bundle in the
//! attenu-guard bundle format (`{v, c14n, chain_id, entries, anchor, ...}`), which the
//! reference `verify_bundle` accepts with only `anchor.pub`.
//!
//! A session whose agent files changed mid-session has several chains. Each is its own bundle,
//! because a bundle holds exactly one root: chain 1 is `bundle-<session>.json`, chain k ≥ 2 is
//! `bundle-<session>.chain<k>.json`, and every bundle names its position and its predecessor
//! (`chain.index`, `chain.of`, and the root's `context.previous_chain`), so a reviewer sees the
//! order and a missing bundle in the middle.
//!
//! Bundles are written atomically (temporary file, fsync, rename) under the ledger lock, so
//! concurrent exporters each write a complete bundle and the last rename wins.

use super::checkpoint;
use super::keys::{self, AnchorKey};
use super::verify::anchor_signing_input;
use crate::clock as time;
use crate::fs;
use crate::json::canonical::CanonicalError;
use crate::ledger::chain::{self, hex};
use crate::ledger::fields::field;
use crate::ledger::read;
use crate::ledger::store::{Ledger, SessionPaths, StoreError};
use crate::trust::Signer;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why nothing (or not every bundle) was exported; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("chain does not verify ({0}); nothing was exported")]
    ChainUnverified(#[source] chain::ChainBreak),
    /// The anchor has no canonical form to sign.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    #[error(transparent)]
    Serialize(#[from] serde_json::Error),
    /// The ledger could not be opened or read under its lock.
    #[error(transparent)]
    Ledger(#[from] StoreError),
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    #[error(transparent)]
    Signer(#[from] crate::trust::SignerError),
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
    /// The verified state and the file disagree: never signed.
    #[error("{}: {what} differs from its sealed state, so nothing was exported. The ledger is untouched; this is a bug, please report it. Removing {} makes the next export re-verify the whole file from GENESIS", .ledger.display(), .state.display())]
    Disagree {
        ledger: PathBuf,
        state: PathBuf,
        what: &'static str,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} has no .attenu/ directory; no hook call has been recorded there yet", .project.display())]
    NoStateDir { project: PathBuf },
    #[error("no ledger for session '{session}' in {}; `attenu-hook log --project {}` lists the sessions", .dir.display(), .project.display())]
    NoLedger {
        session: String,
        dir: PathBuf,
        project: PathBuf,
    },
    #[error("cannot list {}: {source}", .dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no session ledgers in {}", .dir.display())]
    NoSessions { dir: PathBuf },
}

/// One bundle written.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub chain_id: String,
    pub entries: usize,
    /// The root of the chain's tree, which the bundle's `checkpoint` signs.
    pub root: crate::tlog::Hash,
}

/// Builds and signs the bundle for one chain, verifying it first.
pub fn build(
    entries: Vec<Value>,
    key: &AnchorKey,
    index: usize,
    of: usize,
) -> Result<Value, ExportError> {
    let head_hash = chain::verify_entries(&entries).map_err(ExportError::ChainUnverified)?;
    let first = entries.first().map(read::EntryView::of);
    let chain_id = first
        .and_then(|e| e.chain_id())
        .unwrap_or("chain")
        .to_string();
    let previous = first
        .and_then(|e| e.previous_chain())
        .cloned()
        .unwrap_or(Value::Null);
    let anchor = sign_anchor(&chain_id, entries.len(), &head_hash, key)?;
    let tree = checkpoint::tree_of(&entries)?;
    let signed = checkpoint::sign(key, &chain_id, tree.size(), &tree.root())?;
    let mut bundle = envelope(&chain_id, anchor, index, of, previous, &signed);
    // Moved in, not through `json!`, which would copy every entry.
    bundle["entries"] = Value::Array(entries);
    Ok(bundle)
}

/// The signed anchor over a chain of `len` entries ending at `head`.
fn sign_anchor(
    chain_id: &str,
    len: usize,
    head: &str,
    key: &AnchorKey,
) -> Result<Map<String, Value>, ExportError> {
    let mut anchor = Map::new();
    anchor.insert(field::V.into(), json!(2));
    anchor.insert(field::C14N.into(), json!("JCS"));
    anchor.insert(field::CHAIN_ID.into(), json!(chain_id));
    anchor.insert(field::SEQ.into(), json!(len as i64 - 1));
    anchor.insert(
        "head".into(),
        json!(if len == 0 { "GENESIS" } else { head }),
    );
    anchor.insert(field::TS.into(), json!(time::now_ms()));
    let sig = key.sign(&anchor_signing_input(&anchor)?);
    anchor.insert("kid".into(), json!(key.kid));
    anchor.insert("sig".into(), json!(hex(&sig)));
    anchor.insert("verified".into(), json!(true));
    Ok(anchor)
}

/// Everything of a bundle but its entries.
fn envelope(
    chain_id: &str,
    anchor: Map<String, Value>,
    index: usize,
    of: usize,
    previous: Value,
    signed_checkpoint: &str,
) -> Value {
    json!({
        (field::V): 2,
        (field::C14N): "JCS",
        (field::CHAIN_ID): chain_id,
        "anchor": Value::Object(anchor),
        "chain": {"index": index, "of": of, "previous_chain": previous},
        "checkpoint": signed_checkpoint,
        "producer": {"name": "attenu-hook", "version": env!("CARGO_PKG_VERSION")},
        "note": "offline-verifiable: `attenu-hook verify BUNDLE --pub anchor.pub`, or attenu_guard.evidence.verify_bundle(bundle, signer) with the key in anchor.pub",
    })
}

/// The file name of chain `index` (1-based) of a session's bundles, beside `base`.
pub fn bundle_path(base: &Path, index: usize) -> PathBuf {
    if index <= 1 {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = base
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    base.with_file_name(format!("{stem}.chain{index}{ext}"))
}

/// Export reads the ledger this many bytes at a time: it holds one chunk, never the file.
const CHUNK: u64 = 4 << 20;

/// Exports every chain of a locked, verified ledger.
///
/// The ledger was verified when it was opened, under the lock export still holds: from GENESIS,
/// or through the sealed state that proves the file is byte for byte the one verified
/// (see `ledger::store`). The chains' heads, lengths and offsets come from that verified
/// state, so export neither parses nor re-hashes the entries: it signs what the hook itself
/// would append to, and copies the lines, which are already canonical JSON, byte for byte,
/// a chunk at a time straight into the bundle file (only the root line is parsed).
pub fn export_locked(
    ledger: &Ledger,
    signer: &Signer,
    out: Option<&Path>,
) -> Result<Vec<Written>, ExportError> {
    let key = &signer.key;
    let chains = &ledger.state.chains;
    let file_len = ledger.state.stamp.len;
    let base = out.map(Path::to_path_buf).unwrap_or_else(|| {
        ledger
            .paths
            .dir
            .join(format!("bundle-{}.json", ledger.paths.name))
    });
    let of = chains.len();
    let mut written = Vec::with_capacity(of);
    for (i, info) in chains.iter().enumerate() {
        let end = chains.get(i + 1).map_or(file_len, |c| c.start);
        if info.start >= end || end > file_len {
            return Err(disagree(&ledger.paths, "a chain's offsets"));
        }
        // The root line names the chain and, after the first, the chain before it.
        let root = read::entry(&first_line(ledger, info.start, end)?)
            .ok_or_else(|| disagree(&ledger.paths, "a chain's root"))?;
        let root = read::EntryView::of(&root);
        if root.chain_id() != Some(info.chain_id.as_str()) {
            return Err(disagree(&ledger.paths, "a chain's id"));
        }
        let previous = root.previous_chain().cloned().unwrap_or(Value::Null);
        let anchor = sign_anchor(&info.chain_id, info.entries as usize, &info.head, key)?;
        // The verified state's tree: export re-hashes nothing.
        let tree_root = info.tree.root();
        let signed = checkpoint::sign(key, &info.chain_id, info.tree.size(), &tree_root)?;
        let mut envelope = envelope(&info.chain_id, anchor, i + 1, of, previous, &signed);
        if let Some(cert) = &signer.cert {
            // Outside the signed anchor, and needing no signature of ours: the CA's signature
            // vouches for the key that signed the anchor.
            envelope["signer"] = json!({"kid": key.kid, "certificate": cert.line});
        }
        let rest = serde_json::to_vec(&envelope)?;
        let path = bundle_path(&base, i + 1);
        let mut refused = None;
        let result = fs::write_atomic_with(&path, true, |w| {
            w.write_all(b"{\"entries\":[")?;
            match copy_lines(ledger, info.start, end, CHUNK, w)? {
                Ok(lines) if lines == info.entries => {}
                Ok(_) => refused = Some(disagree(&ledger.paths, "a chain's length")),
                Err(e) => refused = Some(e.into()),
            }
            if refused.is_some() {
                return Err(std::io::Error::other("export refused"));
            }
            w.write_all(b"],")?;
            w.write_all(&rest[1..])
        });
        if let Some(e) = refused {
            return Err(e);
        }
        if let Err(source) = result {
            return Err(ExportError::Write { path, source });
        }
        written.push(Written {
            path,
            chain_id: info.chain_id.clone(),
            entries: info.entries as usize,
            root: tree_root,
        });
    }
    Ok(written)
}

/// The first line of the verified bytes `start..end`, without its newline.
fn first_line(ledger: &Ledger, start: u64, end: u64) -> Result<Vec<u8>, ExportError> {
    let mut window = 1u64 << 16;
    loop {
        let to = end.min(start + window);
        let bytes = ledger.read_range(start, to)?;
        if let Some(n) = bytes.iter().position(|&b| b == b'\n') {
            return Ok(bytes[..n].to_vec());
        }
        if to == end {
            return Ok(bytes);
        }
        window *= 2;
    }
}

/// Copies the verified lines `start..end` into `w` as the members of a JSON array (each
/// newline but the last becomes a comma), `chunk` bytes at a time: the number of lines, or why
/// the ledger could not be read. An I/O error of `w` is the outer error.
fn copy_lines(
    ledger: &Ledger,
    start: u64,
    end: u64,
    chunk: u64,
    w: &mut dyn Write,
) -> std::io::Result<Result<u64, StoreError>> {
    let mut lines = 1u64;
    let mut at = start;
    while at < end {
        let to = end.min(at + chunk);
        let mut bytes = match ledger.read_range(at, to) {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        if to == end && bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        for b in bytes.iter_mut().filter(|b| **b == b'\n') {
            *b = b',';
            lines += 1;
        }
        w.write_all(&bytes)?;
        at = to;
    }
    Ok(Ok(lines))
}

/// The verified state and the file disagree: never sign in that case.
fn disagree(paths: &SessionPaths, what: &'static str) -> ExportError {
    ExportError::Disagree {
        ledger: paths.ledger.clone(),
        state: paths.state.clone(),
        what,
    }
}

/// `attenu-hook export`: exports a session's bundles (the newest session when none is named).
pub fn export_session(
    project: &Path,
    session: Option<&str>,
    out: Option<&Path>,
) -> Result<Vec<Written>, ExportError> {
    let attenu = project.join(".attenu");
    if !attenu.is_dir() {
        return Err(ExportError::NoStateDir {
            project: project.to_path_buf(),
        });
    }
    let paths = match session {
        Some(s) => SessionPaths::new(&attenu, s),
        None => newest_session(&attenu)?,
    };
    if !paths.ledger.exists() {
        return Err(ExportError::NoLedger {
            session: paths.name,
            dir: attenu,
            project: project.to_path_buf(),
        });
    }
    let signer = crate::trust::signer::load(&attenu)?;
    let ledger = Ledger::open(
        paths,
        keys::state_mac_key(&attenu)?,
        Instant::now() + Duration::from_secs(10),
    )?;
    export_locked(&ledger, &signer, out)
}

/// The session whose ledger was written most recently.
pub fn newest_session(attenu: &Path) -> Result<SessionPaths, ExportError> {
    let mut best: Option<(std::time::SystemTime, SessionPaths)> = None;
    let files = read::sessions(attenu).map_err(|source| ExportError::List {
        dir: attenu.to_path_buf(),
        source,
    })?;
    for f in files {
        // As the directory lists it: a symlink's own time, not its target's.
        let Ok(modified) = std::fs::symlink_metadata(&f.paths.ledger).and_then(|m| m.modified())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(t, _)| modified > *t) {
            best = Some((modified, f.paths));
        }
    }
    let (_, paths) = best.ok_or_else(|| ExportError::NoSessions {
        dir: attenu.to_path_buf(),
    })?;
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_attenu(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "attenu-bundle-{name}-{}-{}",
            std::process::id(),
            time::now_ms()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let attenu = dir.join(".attenu");
        fs::ensure_private_dir(&attenu).unwrap();
        attenu
    }

    fn entry(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// Export copies the ledger a chunk at a time: whatever the chunk size, and wherever a
    /// chunk ends (inside a line, on a newline), the copy is every line joined by commas.
    #[test]
    fn lines_are_copied_whole_whatever_the_chunk_size() {
        let attenu = temp_attenu("chunks");
        let key = keys::load_or_create(&attenu).unwrap();
        let paths = SessionPaths::new(&attenu, "s1");
        let mut ledger = Ledger::open(
            paths,
            key.state_mac_key(),
            Instant::now() + Duration::from_secs(5),
        )
        .unwrap();
        let mut entries = vec![entry(
            json!({"event": "root", "chain_id": "c1", "node": "n0",
            "params_salt": "00000000000000000000000000000000", "context": {"digest": "d"}}),
        )];
        for k in 0..6 {
            entries.push(entry(
                json!({"event": "deny", "chain_id": "c1", "node": "n0",
                "scope": "fs.write", "detail": "x".repeat(k * 7)}),
            ));
        }
        ledger.append(entries).unwrap();
        let text = std::fs::read(&ledger.paths.ledger).unwrap();
        let want: Vec<u8> = text[..text.len() - 1]
            .iter()
            .map(|&b| if b == b'\n' { b',' } else { b })
            .collect();
        for chunk in [1, 2, 7, 64, 333, 1 << 20] {
            let mut out = Vec::new();
            let lines = copy_lines(&ledger, 0, text.len() as u64, chunk, &mut out)
                .unwrap()
                .unwrap();
            assert_eq!(lines, 7, "chunk {chunk}");
            assert_eq!(out, want, "chunk {chunk}");
        }
        drop(ledger);
        let _ = std::fs::remove_dir_all(attenu.parent().unwrap());
    }

    #[test]
    fn export_refuses_when_the_file_disagrees_with_the_verified_state() {
        let attenu = temp_attenu("disagree");
        let signer = Signer::anchor(keys::load_or_create(&attenu).unwrap());
        let paths = SessionPaths::new(&attenu, "s1");
        let mut ledger = Ledger::open(
            paths,
            signer.key.state_mac_key(),
            Instant::now() + Duration::from_secs(5),
        )
        .unwrap();
        ledger
            .append(vec![
                entry(json!({"event": "root", "chain_id": "c1", "node": "n0",
                    "params_salt": "00000000000000000000000000000000", "context": {"digest": "d"}})),
                entry(json!({"event": "deny", "chain_id": "c1", "node": "n0", "scope": "fs.write"})),
            ])
            .unwrap();
        let out = attenu.join("b.json");
        let written = export_locked(&ledger, &signer, Some(&out)).unwrap();
        assert_eq!(written.len(), 1);
        assert_eq!(written[0].entries, 2);
        // A state that claims a line the file does not hold is never signed.
        ledger.state.chains[0].entries = 3;
        let err = export_locked(&ledger, &signer, Some(&out))
            .unwrap_err()
            .to_string();
        assert!(err.contains("differs from its sealed state"), "{err}");
        ledger.state.chains[0].entries = 2;
        ledger.state.chains[0].chain_id = "c2".into();
        let err = export_locked(&ledger, &signer, Some(&out))
            .unwrap_err()
            .to_string();
        assert!(err.contains("chain's id"), "{err}");
        drop(ledger);
        let _ = std::fs::remove_dir_all(attenu.parent().unwrap());
    }
}
