//! Transparency-log checkpoints for the ledger, at the level of formats only (no I/O).
//!
//! Each chain of the ledger gets an RFC 6962 Merkle tree beside its hash chain. Its head is
//! published as a C2SP checkpoint, signed as a C2SP signed note with the anchor key, and
//! shipped off the machine; a later rewrite of the chain then shows up as a checkpoint the
//! rewritten tree is not consistent with. A hash chain alone cannot give that: whoever holds
//! the ledger can recompute it end to end.
//!
//! * [`merkle`]: RFC 6962 section 2.1 hashing, a compact [`Frontier`] for appending, and
//!   inclusion and consistency proofs (built and verified iteratively, at most
//!   [`MAX_PROOF_HASHES`] hashes).
//! * [`checkpoint`]: the note text of <https://c2sp.org/tlog-checkpoint> (v1.0.0).
//! * [`note`]: <https://c2sp.org/signed-note> (v1.0.0) with Ed25519 signatures and
//!   verifier keys (vkeys).
//! * [`proof`]: the offline proof of <https://c2sp.org/tlog-proof> (`c2sp.org/tlog-proof@v1`).
//!
//! Parsers accept exactly what the specifications allow, and base64, hex and decimal each
//! have one accepted spelling, so a value never has two valid texts.

pub mod checkpoint;
mod encoding;
pub mod merkle;
pub mod note;
pub mod proof;

pub use checkpoint::Checkpoint;
pub use merkle::{
    consistency_proof, empty_root, inclusion_proof, leaf_hash, node_hash, root, verify_consistency,
    verify_inclusion, Frontier, Hash, MAX_PROOF_HASHES,
};
pub use note::{open, sign, Note, NoteSignature, Opened, VerifierKey};
pub use proof::{TlogProof, VerifiedProof};

/// Why a Merkle proof could not be built or did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MerkleError {
    #[error("leaf index {index} is not inside a tree of size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("tree size {size} needs more leaf hashes than the {available} given")]
    NotEnoughLeaves { size: u64, available: usize },
    #[error("consistency asked from tree size {old} to the smaller size {new}")]
    SizesOutOfOrder { old: u64, new: u64 },
    #[error("proof has {len} hashes, more than the limit of {MAX_PROOF_HASHES}")]
    ProofTooLong { len: usize },
    #[error("proof has the wrong number of hashes for its index and tree sizes")]
    WrongProofLength,
    #[error("proof must be empty when the old tree is empty or both trees have one size")]
    ProofNotEmpty,
    #[error("the root hash of an empty tree must be SHA-256 of nothing")]
    EmptyTreeRoot,
    #[error("two trees of the same size have different root hashes")]
    SameSizeDifferentRoots,
    #[error("proof does not lead to the given root hash")]
    RootMismatch,
    #[error("consistency proof does not lead to the given root hash of the old tree")]
    OldRootMismatch,
    #[error("consistency proof does not lead to the given root hash of the new tree")]
    NewRootMismatch,
    #[error("stored frontier is invalid: {0}")]
    InvalidFrontier(&'static str),
}

/// Why a checkpoint body was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint does not end with a newline")]
    MissingFinalNewline,
    #[error("checkpoint contains a control character at byte {offset}")]
    ControlCharacter { offset: usize },
    #[error("checkpoint has {lines} lines; origin, tree size and root hash are required")]
    TooFewLines { lines: usize },
    #[error("checkpoint origin line is empty")]
    EmptyOrigin,
    #[error("checkpoint tree size {0:?} is not a decimal number without leading zeros")]
    BadSize(String),
    #[error("checkpoint root hash {0:?} is not canonical standard base64")]
    BadRootEncoding(String),
    #[error("checkpoint root hash has {0} bytes, not 32")]
    BadRootLength(usize),
    #[error("checkpoint extension line {line} is empty")]
    EmptyExtension { line: usize },
    #[error("checkpoint {field} contains a newline")]
    NewlineInField { field: &'static str },
}

/// Why a signed note or verifier key was rejected, or a note did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteError {
    #[error("note is not valid UTF-8")]
    NotUtf8,
    #[error("note contains a control character at byte {offset}")]
    ControlCharacter { offset: usize },
    #[error("note text does not end with a newline")]
    TextWithoutFinalNewline,
    #[error("note has no blank line before its signatures")]
    NoSignatureBlock,
    #[error("note does not end with a newline after its last signature")]
    MissingFinalNewline,
    #[error("note signature line {line} is malformed: {reason}")]
    MalformedSignature { line: usize, reason: &'static str },
    #[error("note has more than {max} signatures")]
    TooManySignatures { max: usize },
    #[error("note has no signatures")]
    Unsigned,
    #[error("key name {0:?} is empty or contains a space, a plus sign or a control character")]
    InvalidKeyName(String),
    #[error("verifier key is malformed: {0}")]
    MalformedVerifierKey(&'static str),
    #[error("verifier key states key ID {stated:08x} but its name and key give {computed:08x}")]
    KeyIdMismatch { stated: u32, computed: u32 },
    #[error("signature type 0x{0:02x} is not supported; only Ed25519 (0x01) is")]
    UnsupportedSignatureType(u8),
    #[error("two different known keys are named {name}+{id:08x}")]
    AmbiguousKey { name: String, id: u32 },
    #[error("signature by known key {name}+{id:08x} does not verify")]
    InvalidSignature { name: String, id: u32 },
    #[error("note has no signature that verifies with a known key")]
    NoVerifiedSignature,
}

/// Why a tlog-proof was rejected or did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("tlog proof does not start with the line {:?}", proof::HEADER)]
    BadHeader,
    #[error("tlog proof ends before its {0}")]
    Truncated(&'static str),
    #[error("tlog proof extra data is not canonical standard base64")]
    BadExtra,
    #[error("tlog proof index line {0:?} is not `index` and a decimal without leading zeros")]
    BadIndex(String),
    #[error("tlog proof hash line {line} is not the base64 of 32 bytes")]
    BadHash { line: usize },
    #[error("tlog proof has more than {MAX_PROOF_HASHES} proof hashes")]
    TooManyHashes,
    #[error("tlog proof checkpoint: {0}")]
    Note(#[from] NoteError),
    #[error("tlog proof checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("tlog proof checkpoint has origin {found:?}, expected {expected:?}")]
    OriginMismatch { expected: String, found: String },
    #[error("tlog proof inclusion: {0}")]
    Inclusion(#[from] MerkleError),
}
