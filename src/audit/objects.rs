//! Each object checked on its own, before any is compared with another: a checkpoint note
//! must open under the pinned key of its project and name its own chain, size and root; an
//! entries object must hold exactly its entries, each hash recomputed and each linked to the
//! one before; a bundle must verify under the pinned key and carry its own tree. An `Err` is
//! the end of a sentence saying what is wrong ("… does not open under …").

use crate::evidence::checkpoint::{origin, tree_of};
use crate::evidence::verify::{verify_bundle_bytes, AnchorKey};
use crate::json::canonical;
use crate::ledger::chain;
use crate::tlog::{self, Checkpoint, Hash, NoteError, VerifierKey};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

/// Whom an object must be from: the project's pinned key and the chain it is filed under.
#[derive(Clone, Copy)]
pub struct Expect<'a> {
    pub kid: &'a str,
    pub chain_id: &'a str,
    pub key: &'a VerifyingKey,
}

/// The entries of an entries object: the `prev_hash` of its first entry (the history it
/// extends) and each entry's own hash, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub first_prev: String,
    pub hashes: Vec<String>,
    /// The seqs of its entries that record a lost checkpoint ([`lost_checkpoint`]).
    pub losses: Vec<u64>,
}

/// What a bundle holds for the audit: its entries' hashes from GENESIS, and the seqs of the
/// entries that record a lost checkpoint (the verifier's `checkpoint-lost` notices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntries {
    pub hashes: Vec<String>,
    pub losses: Vec<u64>,
}

/// Whether an entry records that the hook found its sealed checkpoint lost (the entry's
/// `context.checkpoint_lost`, docs/FORMATS.md "Lost checkpoints"), as the verifier's notice
/// reads it.
pub fn lost_checkpoint(entry: &Value) -> bool {
    entry
        .get("context")
        .and_then(Value::as_object)
        .is_some_and(|c| c.contains_key(crate::ledger::store::CHECKPOINT_LOST))
}

/// Opens a signed checkpoint note and checks it says what its name says.
pub fn check_note(bytes: &[u8], expect: Expect<'_>, size: u64, root: &Hash) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())?;
    let cp = open_checkpoint(text, expect)?;
    if cp.size != size || cp.root != *root {
        return Err(format!(
            "signs size {} root {}, but its name says size {size} root {}",
            cp.size,
            chain::hex(&cp.root),
            chain::hex(root)
        ));
    }
    Ok(())
}

/// The checkpoint in a note signed by the pinned key, with the chain's origin.
fn open_checkpoint(text: &str, expect: Expect<'_>) -> Result<Checkpoint, String> {
    let vkey = VerifierKey::new(expect.kid, *expect.key).map_err(|e| e.to_string())?;
    let opened = tlog::open(text, &[vkey]).map_err(|e| match e {
        NoteError::NoVerifiedSignature | NoteError::InvalidSignature { .. } => format!(
            "has no valid signature by the pinned key {} ({e})",
            expect.kid
        ),
        other => format!("is not a signed note ({other})"),
    })?;
    let cp = Checkpoint::parse(&opened.text).map_err(|e| format!("is not a checkpoint ({e})"))?;
    let want = origin(expect.kid, expect.chain_id);
    if cp.origin != want {
        return Err(format!(
            "names the log {:?}, not {want:?} (the project and chain it is filed under)",
            cp.origin
        ));
    }
    if !cp.extensions.is_empty() {
        return Err("has extension lines, which attenu-hook never writes".into());
    }
    Ok(cp)
}

/// Reads an entries object holding entries `from..to` of `chain_id`: canonical JSON lines,
/// each entry's `seq` its position, its `hash` recomputed, its `prev_hash` the previous
/// entry's `hash`. Where the first entry attaches, and the root, are for the caller.
pub fn check_entries(bytes: &[u8], chain_id: &str, from: u64, to: u64) -> Result<Segment, String> {
    if to <= from {
        return Err(format!("names entries {from} to {to}, an empty range"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())?;
    let body = text
        .strip_suffix('\n')
        .ok_or("does not end with a newline")?;
    let lines: Vec<&str> = body.split('\n').collect();
    if lines.len() as u64 != to - from {
        return Err(format!(
            "holds {} lines, but its name says entries {from} to {to} ({})",
            lines.len(),
            to - from
        ));
    }
    let mut hashes = Vec::with_capacity(lines.len());
    let mut losses = Vec::new();
    let mut first_prev = String::new();
    for (i, line) in lines.iter().enumerate() {
        let seq = from + i as u64;
        let e = entry_line(line, chain_id).map_err(|why| format!("entry {seq} {why}"))?;
        let prev = e["prev_hash"].as_str().unwrap_or_default();
        if i == 0 {
            first_prev = prev.to_string();
        } else if hashes.last().map(String::as_str) != Some(prev) {
            return Err(format!(
                "entry {seq}'s prev_hash is not the hash of entry {}",
                seq - 1
            ));
        }
        if e["seq"].as_u64() != Some(seq) {
            return Err(format!(
                "line {} is not entry {seq} (its seq differs)",
                i + 1
            ));
        }
        let own = chain::own_hash(&e).filter(|h| Some(h.as_str()) == e["hash"].as_str());
        hashes.push(own.ok_or(format!("entry {seq}'s hash is not the hash of its content"))?);
        if lost_checkpoint(&e) {
            losses.push(seq);
        }
    }
    Ok(Segment {
        first_prev,
        hashes,
        losses,
    })
}

/// One line as the ledger writes it: a canonical JSON object of this chain.
fn entry_line(line: &str, chain_id: &str) -> Result<Value, String> {
    let e: Value = serde_json::from_str(line).map_err(|e| format!("is not JSON ({e})"))?;
    if !e.is_object() {
        return Err("is not a JSON object".into());
    }
    let canonical = canonical::to_vec(&e).map_err(|e| format!("cannot be hashed ({e})"))?;
    if canonical != line.as_bytes() {
        return Err("is not written in canonical JSON, as the ledger writes it".into());
    }
    if e["chain_id"].as_str() != Some(chain_id) {
        return Err(format!(
            "belongs to chain {}, not {chain_id}",
            e["chain_id"]
        ));
    }
    Ok(e)
}

/// Verifies a bundle under the pinned key (the bundle verifier, then its `checkpoint` and
/// its name); returns its entries' hashes, from GENESIS.
pub fn check_bundle(
    bytes: &[u8],
    expect: Expect<'_>,
    size: u64,
    root: &Hash,
) -> Result<BundleEntries, String> {
    let report = verify_bundle_bytes(bytes, &AnchorKey::Pinned(*expect.key))
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !report.valid {
        let first = report.failures.first().map_or(String::new(), |f| {
            format!(": {} ({})", f.name.as_str(), f.detail)
        });
        return Err(format!(
            "does not verify under the pinned key {}{first}",
            expect.kid
        ));
    }
    if report.chain_id.as_str() != Some(expect.chain_id) {
        return Err(format!(
            "is the bundle of chain {}, not of {}",
            report.chain_id, expect.chain_id
        ));
    }
    let bundle: Value = serde_json::from_slice(bytes).map_err(|e| format!("is not JSON ({e})"))?;
    let entries = bundle["entries"].as_array().cloned().unwrap_or_default();
    let tree = tree_of(&entries).map_err(|e| e.to_string())?;
    if tree.size() != size || tree.root() != *root {
        return Err(format!(
            "holds {} entries with root {}, but its name says size {size} root {}",
            tree.size(),
            chain::hex(&tree.root()),
            chain::hex(root)
        ));
    }
    let note = bundle["checkpoint"]
        .as_str()
        .ok_or("carries no signed checkpoint")?;
    let cp = open_checkpoint(note, expect).map_err(|why| format!("'s checkpoint {why}"))?;
    if cp.size != size || cp.root != *root {
        return Err(format!(
            "carries a checkpoint of size {} that is not the tree of its {size} entries",
            cp.size
        ));
    }
    let losses = report
        .notices
        .iter()
        .filter(|n| n.name == "checkpoint-lost")
        .map(|n| {
            n.seq
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(n.index as u64)
        })
        .collect();
    Ok(BundleEntries {
        hashes: entries
            .iter()
            .map(|e| e["hash"].as_str().unwrap_or_default().to_string())
            .collect(),
        losses,
    })
}
