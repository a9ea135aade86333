//! Signed checkpoints of a chain's Merkle tree: a C2SP `tlog-checkpoint` in a C2SP
//! `signed-note`, signed with the anchor key, and the names their objects have in the outbox
//! and the store. `docs/SHIPPING.md` is the contract.

use super::keys::AnchorKey;
use crate::ledger::chain;
use crate::ledger::fields::field;
use crate::tlog::{self, Checkpoint, Frontier, Hash};
use serde_json::Value;

/// A checkpoint could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("the checkpoint cannot be written: {0}")]
    Body(#[from] tlog::CheckpointError),
    #[error("the checkpoint cannot be signed: {0}")]
    Note(#[from] tlog::NoteError),
    #[error("entry {index} has no valid hash, so the chain's tree cannot be computed")]
    EntryHash { index: usize },
}

/// The origin line naming one chain of one project: the anchor key's id and the chain id
/// (which holds the session's name).
pub fn origin(kid: &str, chain_id: &str) -> String {
    format!("attenu-hook/{kid}/{chain_id}")
}

/// The leaf an entry is in its chain's tree: the 32 bytes of its own `hash`, which commits to
/// its canonical form and to the entry before it.
pub fn leaf_of_hash(entry_hash_hex: &str) -> Option<Hash> {
    let bytes = chain::unhex(entry_hash_hex)?;
    let bytes: [u8; 32] = bytes.try_into().ok()?;
    Some(tlog::leaf_hash(&bytes))
}

/// Each entry's leaf (each entry with its `hash`), in order.
fn leaves(entries: &[Value]) -> impl Iterator<Item = Result<Hash, CheckpointError>> + '_ {
    entries.iter().enumerate().map(|(index, e)| {
        e.get(field::HASH)
            .and_then(Value::as_str)
            .and_then(leaf_of_hash)
            .ok_or(CheckpointError::EntryHash { index })
    })
}

/// The leaves of a chain's entries, in order (for a proof, which needs them all).
pub fn leaves_of(entries: &[Value]) -> Result<Vec<Hash>, CheckpointError> {
    leaves(entries).collect()
}

/// The tree over a chain's entries, in order, without holding their leaves.
pub fn tree_of(entries: &[Value]) -> Result<Frontier, CheckpointError> {
    let mut tree = Frontier::new();
    for leaf in leaves(entries) {
        tree.append(leaf?);
    }
    Ok(tree)
}

/// The signed checkpoint of `chain_id` at `size` with `root`.
pub fn sign(
    key: &AnchorKey,
    chain_id: &str,
    size: u64,
    root: &Hash,
) -> Result<String, CheckpointError> {
    let body = Checkpoint::new(origin(&key.kid, chain_id), size, *root).to_body()?;
    Ok(tlog::sign(&body, &key.kid, &key.signing)?)
}

/// Where the certificate that vouches for key `kid` lives in the store: named by its bytes'
/// SHA-256, so a renewed certificate is a new object and the same one is written once.
pub fn certificate_name(kid: &str, bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!(
        "{kid}/certificate/{}.pub",
        chain::hex(&Sha256::digest(bytes))
    )
}

/// Where a chain's objects live, below the store's prefix (and below `.attenu/outbox/`).
pub struct ObjectNames<'a> {
    pub kid: &'a str,
    pub session: &'a str,
    pub chain_id: &'a str,
}

impl ObjectNames<'_> {
    fn dir(&self) -> String {
        format!("{}/{}/{}", self.kid, self.session, self.chain_id)
    }

    pub fn checkpoint(&self, size: u64, root: &Hash) -> String {
        format!(
            "{}/checkpoint/{size:020}-{}.note",
            self.dir(),
            chain::hex(root)
        )
    }

    pub fn entries(&self, from: u64, to: u64, root: &Hash) -> String {
        format!(
            "{}/entries/{from:020}-{to:020}-{}.jsonl",
            self.dir(),
            chain::hex(root)
        )
    }

    pub fn bundle(&self, size: u64, root: &Hash) -> String {
        format!("{}/bundle/{size:020}-{}.json", self.dir(), chain::hex(root))
    }
}
