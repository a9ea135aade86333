//! Each object checked on its own, before any is compared with another: a checkpoint note
//! must open under the pinned key of its project and name its own chain, size and root; an
//! entries object must hold exactly its entries, each hash recomputed and each linked to the
//! one before; a bundle must verify under the pinned key and carry its own tree. An
//! [`ObjectProblem`] is the end of a sentence that starts with the object's name ("… has no
//! valid signature by …").

use crate::evidence::checkpoint::{origin, tree_of, CheckpointError};
use crate::evidence::verify::{verify_bundle_bytes, AnchorKey, InputError};
use crate::json::canonical::{self, CanonicalError};
use crate::ledger::chain;
use crate::ledger::fields::field;
use crate::ledger::read::EntryView;
use crate::tlog::{self, Checkpoint, Hash, NoteError, VerifierKey};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

/// What is wrong with one stored object, as the end of a sentence naming it.
#[derive(Debug, thiserror::Error)]
pub enum ObjectProblem {
    #[error("is not an object name of the layout (docs/SHIPPING.md)")]
    NotALayoutName,
    #[error("is not UTF-8 text")]
    NotUtf8,
    #[error("is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("cannot be checked: the pinned key's id is not a key name ({0})")]
    KeyName(#[source] NoteError),
    #[error("has no valid signature by the pinned key {kid} ({source})")]
    NoValidSignature {
        kid: String,
        #[source]
        source: NoteError,
    },
    #[error("is not a signed note ({0})")]
    NotANote(#[source] NoteError),
    #[error("is not a checkpoint ({0})")]
    NotACheckpoint(#[source] tlog::CheckpointError),
    #[error("names the log {found:?}, not {want:?} (the project and chain it is filed under)")]
    OtherLog { found: String, want: String },
    #[error("has extension lines, which attenu-hook never writes")]
    Extensions,
    #[error("signs size {size} root {}, but its name says size {named_size} root {}", chain::hex(.root), chain::hex(.named_root))]
    SignsOther {
        size: u64,
        root: Hash,
        named_size: u64,
        named_root: Hash,
    },
    #[error("names entries {from} to {to}, an empty range")]
    EmptyRange { from: u64, to: u64 },
    #[error("does not end with a newline")]
    NoFinalNewline,
    #[error("holds {lines} lines, but its name says entries {from} to {to} ({})", .to - .from)]
    LineCount { lines: usize, from: u64, to: u64 },
    #[error("entry {seq} {why}")]
    Entry { seq: u64, why: EntryProblem },
    #[error("entry {seq}'s prev_hash is not the hash of entry {}", .seq - 1)]
    Unlinked { seq: u64 },
    #[error("line {line} is not entry {seq} (its seq differs)")]
    OutOfSequence { line: usize, seq: u64 },
    #[error("entry {0}'s hash is not the hash of its content")]
    WrongHash(u64),
    #[error("cannot be read ({0})")]
    UnreadableBundle(#[source] InputError),
    #[error("does not verify under the pinned key {kid}{}", .first_failure.as_ref().map_or(String::new(), |f| format!(": {f}")))]
    Invalid {
        kid: String,
        first_failure: Option<String>,
    },
    #[error("is the bundle of chain {found}, not of {want}")]
    OtherChain { found: String, want: String },
    #[error(transparent)]
    Tree(#[from] CheckpointError),
    #[error("holds {entries} entries with root {}, but its name says size {named_size} root {}", chain::hex(.root), chain::hex(.named_root))]
    HoldsOther {
        entries: u64,
        root: Hash,
        named_size: u64,
        named_root: Hash,
    },
    #[error("carries no signed checkpoint")]
    NoCheckpoint,
    #[error("'s checkpoint {0}")]
    Checkpoint(Box<ObjectProblem>),
    #[error("carries a checkpoint of size {signed} that is not the tree of its {size} entries")]
    CheckpointOfOtherTree { signed: u64, size: u64 },
    #[error("extends a history of {from} entries ending with hash {last}, of which the store holds no entries")]
    Unattached { from: u64, last: String },
    #[error("has an entry hash that is not 64 hex digits")]
    NotAHash,
    #[error("has the tree root {found} over the history it extends, not the {named} of its name")]
    OtherRoot { found: String, named: String },
}

/// What is wrong with one line of an entries object.
#[derive(Debug, thiserror::Error)]
pub enum EntryProblem {
    #[error("is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    #[error("is not a JSON object")]
    NotAnObject,
    #[error("cannot be hashed ({0})")]
    Unhashable(#[source] CanonicalError),
    #[error("is not written in canonical JSON, as the ledger writes it")]
    NotCanonical,
    #[error("belongs to chain {found}, not {want}")]
    OtherChain { found: String, want: String },
}

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
    /// The seqs of its entries that record a lost sealed state ([`records_lost_state`]).
    pub losses: Vec<u64>,
}

/// What a bundle holds for the audit: its entries' hashes from GENESIS, and the seqs of the
/// entries that record a lost sealed state (the verifier's `checkpoint-lost` notices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntries {
    pub hashes: Vec<String>,
    pub losses: Vec<u64>,
}

/// Whether an entry records that the hook found its sealed state lost (the entry's
/// `context.checkpoint_lost`, docs/FORMATS.md "Lost sealed state"), as the verifier's notice
/// reads it.
pub fn records_lost_state(entry: &Value) -> bool {
    entry
        .get(field::CONTEXT)
        .and_then(Value::as_object)
        .is_some_and(|c| c.contains_key(crate::ledger::store::CHECKPOINT_LOST))
}

/// Opens a signed checkpoint note and checks it says what its name says.
pub fn check_note(
    bytes: &[u8],
    expect: Expect<'_>,
    size: u64,
    root: &Hash,
) -> Result<(), ObjectProblem> {
    let text = std::str::from_utf8(bytes).map_err(|_| ObjectProblem::NotUtf8)?;
    let cp = open_checkpoint(text, expect)?;
    if cp.size != size || cp.root != *root {
        return Err(ObjectProblem::SignsOther {
            size: cp.size,
            root: cp.root,
            named_size: size,
            named_root: *root,
        });
    }
    Ok(())
}

/// The checkpoint in a note signed by the pinned key, with the chain's origin.
fn open_checkpoint(text: &str, expect: Expect<'_>) -> Result<Checkpoint, ObjectProblem> {
    let vkey = VerifierKey::new(expect.kid, *expect.key).map_err(ObjectProblem::KeyName)?;
    let opened = tlog::open(text, &[vkey]).map_err(|e| match e {
        NoteError::NoVerifiedSignature | NoteError::InvalidSignature { .. } => {
            ObjectProblem::NoValidSignature {
                kid: expect.kid.to_string(),
                source: e,
            }
        }
        other => ObjectProblem::NotANote(other),
    })?;
    let cp = Checkpoint::parse(&opened.text).map_err(ObjectProblem::NotACheckpoint)?;
    let want = origin(expect.kid, expect.chain_id);
    if cp.origin != want {
        return Err(ObjectProblem::OtherLog {
            found: cp.origin,
            want,
        });
    }
    if !cp.extensions.is_empty() {
        return Err(ObjectProblem::Extensions);
    }
    Ok(cp)
}

/// Reads an entries object holding entries `from..to` of `chain_id`: canonical JSON lines,
/// each entry's `seq` its position, its `hash` recomputed, its `prev_hash` the previous
/// entry's `hash`. Where the first entry attaches, and the root, are for the caller.
pub fn check_entries(
    bytes: &[u8],
    chain_id: &str,
    from: u64,
    to: u64,
) -> Result<Segment, ObjectProblem> {
    if to <= from {
        return Err(ObjectProblem::EmptyRange { from, to });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ObjectProblem::NotUtf8)?;
    let body = text
        .strip_suffix('\n')
        .ok_or(ObjectProblem::NoFinalNewline)?;
    let lines: Vec<&str> = body.split('\n').collect();
    if lines.len() as u64 != to - from {
        return Err(ObjectProblem::LineCount {
            lines: lines.len(),
            from,
            to,
        });
    }
    let mut hashes = Vec::with_capacity(lines.len());
    let mut losses = Vec::new();
    let mut first_prev = String::new();
    for (i, line) in lines.iter().enumerate() {
        let seq = from + i as u64;
        let value = entry_line(line, chain_id).map_err(|why| ObjectProblem::Entry { seq, why })?;
        let e = EntryView::of(&value);
        let prev = e.prev_hash().unwrap_or_default();
        if i == 0 {
            first_prev = prev.to_string();
        } else if hashes.last().map(String::as_str) != Some(prev) {
            return Err(ObjectProblem::Unlinked { seq });
        }
        if e.seq() != Some(seq) {
            return Err(ObjectProblem::OutOfSequence { line: i + 1, seq });
        }
        let own = chain::own_hash(&value).filter(|h| Some(h.as_str()) == e.hash());
        hashes.push(own.ok_or(ObjectProblem::WrongHash(seq))?);
        if records_lost_state(&value) {
            losses.push(seq);
        }
    }
    Ok(Segment {
        first_prev,
        hashes,
        losses,
    })
}

/// One line as the ledger writes it: a canonical JSON object of this chain. Parsed strictly
/// here, not by the display reader (`ledger::read::entry`): a shipped line must be exactly the
/// bytes the hook hashed.
fn entry_line(line: &str, chain_id: &str) -> Result<Value, EntryProblem> {
    let e: Value = serde_json::from_str(line).map_err(EntryProblem::NotJson)?;
    if !e.is_object() {
        return Err(EntryProblem::NotAnObject);
    }
    let canonical = canonical::to_vec(&e).map_err(EntryProblem::Unhashable)?;
    if canonical != line.as_bytes() {
        return Err(EntryProblem::NotCanonical);
    }
    if EntryView::of(&e).chain_id() != Some(chain_id) {
        return Err(EntryProblem::OtherChain {
            found: e[field::CHAIN_ID].to_string(),
            want: chain_id.to_string(),
        });
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
) -> Result<BundleEntries, ObjectProblem> {
    let report = verify_bundle_bytes(bytes, &AnchorKey::Pinned(*expect.key))
        .map_err(ObjectProblem::UnreadableBundle)?;
    if !report.valid {
        return Err(ObjectProblem::Invalid {
            kid: expect.kid.to_string(),
            first_failure: report
                .failures
                .first()
                .map(|f| format!("{} ({})", f.name.as_str(), f.detail)),
        });
    }
    if report.chain_id.as_str() != Some(expect.chain_id) {
        return Err(ObjectProblem::OtherChain {
            found: report.chain_id.to_string(),
            want: expect.chain_id.to_string(),
        });
    }
    let bundle: Value = serde_json::from_slice(bytes).map_err(ObjectProblem::NotJson)?;
    let entries = bundle["entries"].as_array().cloned().unwrap_or_default();
    let tree = tree_of(&entries)?;
    if tree.size() != size || tree.root() != *root {
        return Err(ObjectProblem::HoldsOther {
            entries: tree.size(),
            root: tree.root(),
            named_size: size,
            named_root: *root,
        });
    }
    let note = bundle["checkpoint"]
        .as_str()
        .ok_or(ObjectProblem::NoCheckpoint)?;
    let cp =
        open_checkpoint(note, expect).map_err(|why| ObjectProblem::Checkpoint(Box::new(why)))?;
    if cp.size != size || cp.root != *root {
        return Err(ObjectProblem::CheckpointOfOtherTree {
            signed: cp.size,
            size,
        });
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
            .map(|e| EntryView::of(e).hash().unwrap_or_default().to_string())
            .collect(),
        losses,
    })
}
