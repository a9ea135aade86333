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

use super::keys::{self, AnchorKey};
use super::verify::anchor_signing_input;
use crate::fsutil;
use crate::hook::time;
use crate::ledger::chain::{self, hex};
use crate::ledger::store::{self, Ledger, SessionPaths};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One bundle written.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub chain_id: String,
    pub entries: usize,
}

/// Builds and signs the bundle for one verified chain.
pub fn build(
    entries: Vec<Value>,
    key: &AnchorKey,
    index: usize,
    of: usize,
) -> Result<Value, String> {
    let head_hash = chain::verify_entries(entries.iter())
        .map_err(|b| format!("chain does not verify ({b}); nothing was exported"))?;
    let chain_id = entries
        .first()
        .and_then(|e| e.get("chain_id"))
        .and_then(Value::as_str)
        .unwrap_or("chain")
        .to_string();
    let mut anchor = Map::new();
    anchor.insert("v".into(), json!(2));
    anchor.insert("c14n".into(), json!("JCS"));
    anchor.insert("chain_id".into(), json!(chain_id));
    anchor.insert("seq".into(), json!(entries.len() as i64 - 1));
    anchor.insert(
        "head".into(),
        json!(if entries.is_empty() {
            "GENESIS".to_string()
        } else {
            head_hash
        }),
    );
    anchor.insert("ts".into(), json!(time::now_ms()));
    let sig = key.sign(&anchor_signing_input(&anchor).map_err(|e| e.to_string())?);
    anchor.insert("kid".into(), json!(key.kid));
    anchor.insert("sig".into(), json!(hex(&sig)));
    anchor.insert("verified".into(), json!(true));
    let previous = entries
        .first()
        .and_then(|e| e.pointer("/context/previous_chain"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut bundle = json!({
        "v": 2,
        "c14n": "JCS",
        "chain_id": chain_id,
        "anchor": Value::Object(anchor),
        "chain": {"index": index, "of": of, "previous_chain": previous},
        "producer": {"name": "attenu-hook", "version": env!("CARGO_PKG_VERSION")},
        "note": "offline-verifiable: `attenu-hook verify BUNDLE --pub anchor.pub`, or attenu_guard.evidence.verify_bundle(bundle, signer) with the key in anchor.pub",
    });
    // Moved in, not through `json!`, which would copy every entry.
    bundle["entries"] = Value::Array(entries);
    Ok(bundle)
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

/// Exports every chain of a locked, verified ledger.
pub fn export_locked(
    ledger: &Ledger,
    key: &AnchorKey,
    out: Option<&Path>,
) -> Result<Vec<Written>, String> {
    let bytes = ledger.read_verified().map_err(|e| e.to_string())?;
    let chains = store::chains_of(&bytes)?;
    let base = out.map(Path::to_path_buf).unwrap_or_else(|| {
        ledger
            .paths
            .dir
            .join(format!("bundle-{}.json", ledger.paths.name))
    });
    // The ledger lines are already canonical JSON: the bundle carries them byte for byte
    // (after they verify) instead of serialising every entry again.
    let mut lines = bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty());
    let of = chains.len();
    let mut written = Vec::with_capacity(of);
    for (i, entries) in chains.into_iter().enumerate() {
        let n = entries.len();
        let mut bundle = build(entries, key, i + 1, of)?;
        let chain_id = bundle["chain_id"].as_str().unwrap_or_default().to_string();
        bundle
            .as_object_mut()
            .expect("a bundle is an object")
            .remove("entries");
        let rest = serde_json::to_vec(&bundle).map_err(|e| e.to_string())?;
        let mut text = Vec::with_capacity(bytes.len() / of.max(1) + rest.len() + 16);
        text.extend_from_slice(b"{\"entries\":[");
        for (j, line) in lines.by_ref().take(n).enumerate() {
            if j > 0 {
                text.push(b',');
            }
            text.extend_from_slice(line);
        }
        text.extend_from_slice(b"],");
        text.extend_from_slice(&rest[1..]);
        let path = bundle_path(&base, i + 1);
        fsutil::write_atomic(&path, &text, true)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(Written {
            path,
            chain_id,
            entries: n,
        });
    }
    Ok(written)
}

/// `attenu-hook export`: exports a session's bundles (the newest session when none is named).
pub fn export_session(
    project: &Path,
    session: Option<&str>,
    out: Option<&Path>,
) -> Result<Vec<Written>, String> {
    let attenu = project.join(".attenu");
    if !attenu.is_dir() {
        return Err(format!(
            "{} has no .attenu/ directory; no hook call has been recorded there yet",
            project.display()
        ));
    }
    let paths = match session {
        Some(s) => SessionPaths::new(&attenu, s),
        None => newest_session(&attenu)?,
    };
    if !paths.ledger.exists() {
        return Err(format!(
            "no ledger for session '{}' in {}; `attenu-hook log --project {}` lists the sessions",
            paths.name,
            attenu.display(),
            project.display()
        ));
    }
    let key = keys::load_or_create(&attenu)?;
    let ledger = Ledger::open(
        paths,
        key.checkpoint_mac_key(),
        Instant::now() + Duration::from_secs(10),
    )
    .map_err(|e| e.to_string())?;
    export_locked(&ledger, &key, out)
}

/// The session whose ledger was written most recently.
pub fn newest_session(attenu: &Path) -> Result<SessionPaths, String> {
    let mut best: Option<(std::time::SystemTime, String)> = None;
    for e in std::fs::read_dir(attenu)
        .map_err(|e| format!("cannot list {}: {e}", attenu.display()))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(session) = name
            .strip_prefix("ledger-")
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let Ok(modified) = e.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if best.as_ref().is_none_or(|(t, _)| modified > *t) {
            best = Some((modified, session.to_string()));
        }
    }
    let (_, name) = best.ok_or_else(|| format!("no session ledgers in {}", attenu.display()))?;
    // The file name is already the sanitised form; rebuild paths from it directly.
    Ok(SessionPaths {
        dir: attenu.to_path_buf(),
        ledger: attenu.join(format!("ledger-{name}.jsonl")),
        lock: attenu.join(format!("ledger-{name}.lock")),
        state: attenu.join(format!("ledger-{name}.state.json")),
        name,
    })
}
