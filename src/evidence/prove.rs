//! Proofs of one entry: a C2SP `tlog-proof` that the entry is entry `index` of its chain's
//! tree under a checkpoint signed by the anchor key, so a reviewer can check one decision
//! without the rest of the session. The proof's extra data is the entry itself (its canonical
//! JSON line), so the proof is self-contained: the reviewer recomputes the entry's hash from
//! its content, and the leaf from the hash.

use super::bundle::{newest_session, ExportError};
use super::checkpoint::{self, leaf_of_hash, origin};
use super::keys::{self, AnchorKey};
use crate::ledger::chain;
use crate::ledger::fields::field;
use crate::ledger::read::{self, EntryView, Verified};
use crate::ledger::store::{Ledger, SessionPaths};
use crate::tlog::{self, TlogProof, VerifierKey};
use serde_json::{Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Which entry to prove.
pub enum Which<'a> {
    /// The entry with this `call_id` (an allow, deny or outcome; the first that has it).
    Call(&'a str),
    /// The entry at this position of the session's last chain.
    Seq(u64),
}

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error(transparent)]
    Export(#[from] ExportError),
    #[error("the session's ledger cannot be read: {0}")]
    Ledger(#[source] crate::ledger::store::ScanError),
    /// An entry of the verified ledger has no RFC 8785 form (the store wrote it in that form).
    #[error("the session's ledger cannot be read: {0}")]
    NotCanonical(#[source] crate::json::canonical::CanonicalError),
    #[error(
        "no entry of session {session} has call_id {call}; `attenu-hook log --json` lists them"
    )]
    NoCall { session: String, call: String },
    #[error("the session's last chain has {entries} entries, so there is no entry at seq {seq}")]
    NoSeq { seq: u64, entries: usize },
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
    #[error("the proof cannot be made: {0}")]
    Proof(#[from] tlog::ProofError),
    #[error("the proof cannot be made: {0}")]
    Merkle(#[from] tlog::MerkleError),
}

/// The proof text for one entry of a session of the project at `project`.
pub fn prove(project: &Path, session: Option<&str>, which: Which<'_>) -> Result<Proof, ProveError> {
    let attenu = project.join(".attenu");
    let paths = match session {
        Some(s) => SessionPaths::new(&attenu, s),
        None => newest_session(&attenu)?,
    };
    // A read-only command: an unknown session is an error, never a new empty ledger.
    if !paths.ledger.exists() {
        return Err(ExportError::NoLedger {
            session: paths.name,
            dir: attenu,
            project: project.to_path_buf(),
        }
        .into());
    }
    let signer = crate::trust::signer::load(&attenu).map_err(ExportError::from)?;
    let key = &signer.key;
    let ledger = Ledger::open(
        paths,
        keys::state_mac_key(&attenu).map_err(ExportError::from)?,
        Instant::now() + Duration::from_secs(10),
    )
    .map_err(ExportError::from)?;
    let verified = Verified::read(&ledger).map_err(ExportError::from)?;
    let chains = verified.chains().map_err(ProveError::Ledger)?;
    let (entries, index) = locate(&chains, &which, &ledger.paths.name)?;
    Ok(Proof {
        text: proof_for(key, entries, index)?,
        kid: key.kid.clone(),
        source: signer.source,
    })
}

/// A proof's text and the key that signed its checkpoint.
#[derive(Debug)]
pub struct Proof {
    pub text: String,
    pub kid: String,
    /// Where the signing key came from: the project's anchor key, this user's enrolled key,
    /// or the environment's (a CI runner).
    pub source: crate::trust::signer::Source,
}

/// The chain and position of the entry asked for.
fn locate<'c>(
    chains: &'c [Vec<Value>],
    which: &Which<'_>,
    session: &str,
) -> Result<(&'c [Value], usize), ProveError> {
    match which {
        Which::Call(call) => chains
            .iter()
            .find_map(|c| {
                c.iter()
                    .position(|e| EntryView::of(e).call_id() == Some(call))
                    .map(|i| (c.as_slice(), i))
            })
            .ok_or_else(|| ProveError::NoCall {
                session: session.to_string(),
                call: call.to_string(),
            }),
        Which::Seq(seq) => {
            let last = chains.last().map(Vec::as_slice).unwrap_or(&[]);
            usize::try_from(*seq)
                .ok()
                .filter(|i| *i < last.len())
                .map(|i| (last, i))
                .ok_or(ProveError::NoSeq {
                    seq: *seq,
                    entries: last.len(),
                })
        }
    }
}

/// The proof that `entries[index]` is in the tree of all of `entries`.
pub fn proof_for(key: &AnchorKey, entries: &[Value], index: usize) -> Result<String, ProveError> {
    let leaves = checkpoint::leaves_of(entries)?;
    let tree = tlog::Frontier::from_leaves(&leaves);
    let chain_id = read::chain_id_of(entries);
    let signed = checkpoint::sign(key, chain_id, tree.size(), &tree.root())?;
    let path = tlog::inclusion_proof(&leaves, index as u64, tree.size())?;
    let line = crate::json::canonical::to_vec(&entries[index]).map_err(ProveError::NotCanonical)?;
    Ok(TlogProof::new(index as u64, path, &signed)?
        .with_extra(line)
        .to_text())
}

/// What a verified proof shows.
#[derive(Debug)]
pub struct Proved {
    pub entry: Map<String, Value>,
    pub index: u64,
    pub size: u64,
    pub origin: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ProofCheckError {
    #[error("the proof does not verify: {0}")]
    Proof(#[from] tlog::ProofError),
    #[error("the proof carries no entry (its extra data is empty); attenu-hook's proofs always carry one")]
    NoEntry,
    #[error("the proof's entry is not a JSON object")]
    EntryNotJson,
    #[error("the proof's entry does not reproduce its own hash: it was changed")]
    EntryChanged,
    #[error("the key cannot name a note key: {0}")]
    Key(tlog::NoteError),
}

/// Verifies a proof under the anchor public key `public` with id `kid`.
pub fn verify_proof(
    text: &str,
    kid: &str,
    public: ed25519_dalek::VerifyingKey,
) -> Result<Proved, ProofCheckError> {
    let proof = TlogProof::parse(text)?;
    let extra = proof.extra().ok_or(ProofCheckError::NoEntry)?;
    let Ok(Value::Object(mut entry)) = serde_json::from_slice::<Value>(extra) else {
        return Err(ProofCheckError::EntryNotJson);
    };
    let hash = entry
        .remove(field::HASH)
        .and_then(|h| h.as_str().map(str::to_string));
    let prev = entry
        .get(field::PREV_HASH)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let recomputed = chain::entry_hash(&prev, &entry).ok();
    let (Some(hash), true) = (hash.clone(), recomputed == hash) else {
        return Err(ProofCheckError::EntryChanged);
    };
    let leaf = leaf_of_hash(&hash).ok_or(ProofCheckError::EntryChanged)?;
    let chain_id = entry
        .get(field::CHAIN_ID)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let verifier = VerifierKey::new(kid, public).map_err(ProofCheckError::Key)?;
    let log_origin = origin(kid, &chain_id);
    let verified = proof.verify(&leaf, &log_origin, &[verifier])?;
    entry.insert(field::HASH.into(), Value::String(hash));
    Ok(Proved {
        entry,
        index: proof.index(),
        size: verified.checkpoint.size,
        origin: log_origin,
    })
}
