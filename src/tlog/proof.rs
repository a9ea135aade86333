//! The offline inclusion proof of <https://c2sp.org/tlog-proof> (`c2sp.org/tlog-proof@v1`,
//! a draft without a tagged version yet):
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! [extra <base64 opaque data>]
//! index <decimal leaf index>
//! [<base64 proof hash, from the leaf's sibling up>...]
//!
//! <signed checkpoint note, verbatim>
//! ```

use super::checkpoint::Checkpoint;
use super::encoding::{b64_decode, b64_encode, parse_decimal};
use super::merkle::{verify_inclusion, Hash, MAX_PROOF_HASHES};
use super::note::{open, Note, NoteSignature, VerifierKey};
use super::ProofError;

/// The first line of every proof.
pub const HEADER: &str = "c2sp.org/tlog-proof@v1";

/// A leaf index, its audit path, and the signed checkpoint the path leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlogProof {
    extra: Option<Vec<u8>>,
    index: u64,
    path: Vec<Hash>,
    checkpoint: String,
}

/// What a verified proof established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedProof {
    /// The checkpoint the leaf is included in.
    pub checkpoint: Checkpoint,
    /// The log keys whose signatures on the checkpoint verified.
    pub verified: Vec<VerifierKey>,
    /// Signatures by keys not given (such as witness cosignatures), left unchecked.
    pub unknown: Vec<NoteSignature>,
}

impl TlogProof {
    /// A proof of leaf `index` by `path` in `signed_checkpoint`, a signed note whose text is
    /// a checkpoint (checked for form here, for signatures by [`TlogProof::verify`]).
    pub fn new(index: u64, path: Vec<Hash>, signed_checkpoint: &str) -> Result<Self, ProofError> {
        if path.len() > MAX_PROOF_HASHES {
            return Err(ProofError::TooManyHashes);
        }
        Checkpoint::parse(Note::parse(signed_checkpoint)?.text())?;
        Ok(Self {
            extra: None,
            index,
            path,
            checkpoint: signed_checkpoint.to_string(),
        })
    }

    /// Attaches opaque extra data. The format does not authenticate it.
    pub fn with_extra(mut self, extra: Vec<u8>) -> Self {
        self.extra = Some(extra);
        self
    }

    /// The unauthenticated extra data, if any.
    pub fn extra(&self) -> Option<&[u8]> {
        self.extra.as_deref()
    }

    /// The leaf index.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The audit path, from the leaf's sibling up to the root's child.
    pub fn path(&self) -> &[Hash] {
        &self.path
    }

    /// The signed checkpoint note, verbatim.
    pub fn signed_checkpoint(&self) -> &str {
        &self.checkpoint
    }

    /// The proof's text.
    pub fn to_text(&self) -> String {
        let mut out = format!("{HEADER}\n");
        if let Some(extra) = &self.extra {
            out.push_str(&format!("extra {}\n", b64_encode(extra)));
        }
        out.push_str(&format!("index {}\n", self.index));
        for h in &self.path {
            out.push_str(&b64_encode(h));
            out.push('\n');
        }
        out.push('\n');
        out.push_str(&self.checkpoint);
        out
    }

    /// Reads a proof. The hash lines end at the first empty line; everything after it is
    /// the checkpoint note, which must be a well-formed signed note of a valid checkpoint.
    pub fn parse(text: &str) -> Result<Self, ProofError> {
        let mut rest = text;
        if next_line(&mut rest, "header")? != HEADER {
            return Err(ProofError::BadHeader);
        }
        let mut line = next_line(&mut rest, "index line")?;
        let mut extra = None;
        if let Some(encoded) = line.strip_prefix("extra ") {
            extra = Some(b64_decode(encoded).ok_or(ProofError::BadExtra)?);
            line = next_line(&mut rest, "index line")?;
        }
        let index = line
            .strip_prefix("index ")
            .and_then(parse_decimal)
            .ok_or_else(|| ProofError::BadIndex(line.to_string()))?;
        let mut path = Vec::new();
        loop {
            let line = next_line(&mut rest, "checkpoint")?;
            if line.is_empty() {
                break;
            }
            if path.len() == MAX_PROOF_HASHES {
                return Err(ProofError::TooManyHashes);
            }
            let hash = b64_decode(line).and_then(|b| Hash::try_from(b.as_slice()).ok());
            path.push(hash.ok_or(ProofError::BadHash {
                line: path.len() + 1,
            })?);
        }
        let proof = Self::new(index, path, rest)?;
        Ok(Self { extra, ..proof })
    }

    /// Verifies the proof for the leaf with hash `leaf_hash` (for raw data, pass
    /// [`leaf_hash(data)`](super::merkle::leaf_hash)): the checkpoint must be signed by one
    /// of `log_keys`, which are trusted for `origin`, carry that origin, and the path must
    /// lead from the leaf at the index to its root.
    pub fn verify(
        &self,
        leaf_hash: &Hash,
        origin: &str,
        log_keys: &[VerifierKey],
    ) -> Result<VerifiedProof, ProofError> {
        let opened = open(&self.checkpoint, log_keys)?;
        let checkpoint = Checkpoint::parse(&opened.text)?;
        if checkpoint.origin != origin {
            return Err(ProofError::OriginMismatch {
                expected: origin.to_string(),
                found: checkpoint.origin,
            });
        }
        verify_inclusion(
            leaf_hash,
            self.index,
            checkpoint.size,
            &self.path,
            &checkpoint.root,
        )?;
        Ok(VerifiedProof {
            checkpoint,
            verified: opened.verified,
            unknown: opened.unknown,
        })
    }
}

/// Takes the next newline-terminated line off `rest`.
fn next_line<'a>(rest: &mut &'a str, what: &'static str) -> Result<&'a str, ProofError> {
    let (line, tail) = rest.split_once('\n').ok_or(ProofError::Truncated(what))?;
    *rest = tail;
    Ok(line)
}

#[cfg(test)]
#[path = "proof_tests.rs"]
mod tests;
