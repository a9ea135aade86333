//! RFC 6962 section 2.1 Merkle hash trees over SHA-256: hashing, a compact frontier for
//! appending one leaf at a time, and inclusion (audit path) and consistency proofs.
//!
//! Proofs are built from the full list of leaf hashes by walking down the tree's split
//! points (RFC 6962's PATH and SUBPROOF, without recursion) and verified with the iterative
//! algorithms of RFC 9162 sections 2.1.3.2 and 2.1.4.2, which check the proof's length
//! against the sizes as they go.

use super::encoding::{hex_decode, hex_encode};
use super::MerkleError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A SHA-256 tree hash.
pub type Hash = [u8; 32];

/// The longest proof accepted: one hash per level of a tree of 2^64 leaves.
pub const MAX_PROOF_HASHES: usize = 64;

/// The hash of a leaf: `SHA-256(0x00 || data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    Sha256::new()
        .chain_update([0x00])
        .chain_update(data)
        .finalize()
        .into()
}

/// The hash of an interior node: `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    hash_children(left, right)
}

fn hash_children(left: &[u8], right: &[u8]) -> Hash {
    Sha256::new()
        .chain_update([0x01])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// The root of the empty tree: `SHA-256("")`.
pub fn empty_root() -> Hash {
    Sha256::digest(b"").into()
}

/// The root of the tree over `leaves` (leaf hashes, in order).
pub fn root(leaves: &[Hash]) -> Hash {
    // Pairing each level left to right and lifting an odd last node unchanged builds the
    // same tree as RFC 6962's split at the largest power of two below the size.
    let Some(first) = leaves.first() else {
        return empty_root();
    };
    if leaves.len() == 1 {
        return *first;
    }
    let mut level: Vec<Hash> = leaves.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [left, right] => node_hash(left, right),
                [single, ..] => *single,
                [] => empty_root(), // chunks never yields an empty slice
            })
            .collect();
    }
    level[0]
}

/// The largest power of two strictly below `n` (for `n >= 2`): RFC 6962's split point `k`.
fn split(n: usize) -> usize {
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// The first `size` leaf hashes, or an error when fewer were given.
fn prefix(leaves: &[Hash], size: u64) -> Result<&[Hash], MerkleError> {
    usize::try_from(size)
        .ok()
        .and_then(|n| leaves.get(..n))
        .ok_or(MerkleError::NotEnoughLeaves {
            size,
            available: leaves.len(),
        })
}

/// The audit path of leaf `index` in the tree of the first `size` of `leaves`: sibling
/// hashes from the leaf's sibling up to the child of the root.
pub fn inclusion_proof(leaves: &[Hash], index: u64, size: u64) -> Result<Vec<Hash>, MerkleError> {
    let tree = prefix(leaves, size)?;
    if index >= size {
        return Err(MerkleError::IndexOutOfRange { index, size });
    }
    // `index < size <= tree.len()`, so it fits a usize.
    let (mut lo, mut hi, mut m) = (0, tree.len(), index as usize);
    let mut path = Vec::new();
    while hi - lo > 1 {
        let k = split(hi - lo);
        if m < k {
            path.push(root(&tree[lo + k..hi]));
            hi = lo + k;
        } else {
            path.push(root(&tree[lo..lo + k]));
            lo += k;
            m -= k;
        }
    }
    // Collected from the root down; the format lists them from the leaf up.
    path.reverse();
    Ok(path)
}

/// The consistency proof from the tree of the first `old` leaves to the tree of the first
/// `new` leaves (RFC 6962 section 2.1.2). Empty when `old` is 0 or equals `new`.
pub fn consistency_proof(leaves: &[Hash], old: u64, new: u64) -> Result<Vec<Hash>, MerkleError> {
    let tree = prefix(leaves, new)?;
    if old > new {
        return Err(MerkleError::SizesOutOfOrder { old, new });
    }
    if old == 0 || old == new {
        return Ok(Vec::new());
    }
    // `old < new <= tree.len()`, so it fits a usize.
    let (mut lo, mut hi, mut m, mut whole) = (0, tree.len(), old as usize, true);
    let mut proof = Vec::new();
    loop {
        if m == hi - lo {
            // The old tree's own root is left out when the verifier already has it.
            if !whole {
                proof.push(root(&tree[lo..hi]));
            }
            break;
        }
        let k = split(hi - lo);
        if m <= k {
            proof.push(root(&tree[lo + k..hi]));
            hi = lo + k;
        } else {
            proof.push(root(&tree[lo..lo + k]));
            lo += k;
            m -= k;
            whole = false;
        }
    }
    proof.reverse();
    Ok(proof)
}

fn check_length(proof: &[Hash]) -> Result<(), MerkleError> {
    if proof.len() > MAX_PROOF_HASHES {
        return Err(MerkleError::ProofTooLong { len: proof.len() });
    }
    Ok(())
}

/// Shifts `fnode` and `snode` right until `fnode` is odd or zero.
fn climb(fnode: &mut u64, snode: &mut u64) {
    while *fnode & 1 == 0 && *fnode != 0 {
        *fnode >>= 1;
        *snode >>= 1;
    }
}

/// Checks that `proof` leads from leaf hash `leaf` at `index` to `root`, the root of a tree
/// of `size` leaves (RFC 9162 section 2.1.3.2).
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), MerkleError> {
    check_length(proof)?;
    if index >= size {
        return Err(MerkleError::IndexOutOfRange { index, size });
    }
    let (mut fnode, mut snode) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if snode == 0 {
            return Err(MerkleError::WrongProofLength);
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node_hash(p, &r);
            climb(&mut fnode, &mut snode);
        } else {
            r = node_hash(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    if snode != 0 {
        return Err(MerkleError::WrongProofLength);
    }
    if r != *root {
        return Err(MerkleError::RootMismatch);
    }
    Ok(())
}

/// Checks that the tree of `old` leaves with root `old_root` is a prefix of the tree of
/// `new` leaves with root `new_root` (RFC 9162 section 2.1.4.2).
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), MerkleError> {
    check_length(proof)?;
    if old > new {
        return Err(MerkleError::SizesOutOfOrder { old, new });
    }
    if old == new || old == 0 {
        if !proof.is_empty() {
            return Err(MerkleError::ProofNotEmpty);
        }
        if old == new && old_root != new_root {
            return Err(MerkleError::SameSizeDifferentRoots);
        }
        // Every tree extends the empty one, but a claimed empty tree must have its root.
        if old == 0 && *old_root != empty_root() {
            return Err(MerkleError::EmptyTreeRoot);
        }
        return Ok(());
    }
    let mut rest = proof.iter();
    // The old root is itself the first hash of the path when the old tree is perfect.
    let seed = if old.is_power_of_two() {
        *old_root
    } else {
        *rest.next().ok_or(MerkleError::WrongProofLength)?
    };
    let (mut fnode, mut snode) = (old - 1, new - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (seed, seed);
    for c in rest {
        if snode == 0 {
            return Err(MerkleError::WrongProofLength);
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            climb(&mut fnode, &mut snode);
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    if snode != 0 {
        return Err(MerkleError::WrongProofLength);
    }
    if fr != *old_root {
        return Err(MerkleError::OldRootMismatch);
    }
    if sr != *new_root {
        return Err(MerkleError::NewRootMismatch);
    }
    Ok(())
}

/// The right edge of a growing tree: the roots of the perfect subtrees that cover leaves
/// `[0, size)`, largest (leftmost) first, one per set bit of `size`. Enough to append a leaf
/// and compute the root without the leaves, in at most 64 hashes.
///
/// Serializes as `{"size": N, "nodes": ["<hex>", ...]}`; deserialization checks that the
/// node count matches the size.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FrontierRepr", into = "FrontierRepr")]
pub struct Frontier {
    size: u64,
    nodes: Vec<Hash>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontierRepr {
    size: u64,
    nodes: Vec<String>,
}

impl Frontier {
    /// The frontier of the empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frontier of the tree over `leaves`.
    pub fn from_leaves(leaves: &[Hash]) -> Self {
        let mut f = Self::new();
        for leaf in leaves {
            f.append(*leaf);
        }
        f
    }

    /// Rebuilds a frontier from its parts; the node count must be the number of set bits of
    /// `size`.
    pub fn from_parts(size: u64, nodes: Vec<Hash>) -> Result<Self, MerkleError> {
        if nodes.len() != size.count_ones() as usize {
            return Err(MerkleError::InvalidFrontier(
                "node count does not match the size",
            ));
        }
        Ok(Self { size, nodes })
    }

    /// Appends the leaf with hash `leaf`, merging equal-sized subtrees (O(log n)).
    ///
    /// A tree of 2^64 leaves is out of reach, so the size does not overflow in practice; if
    /// it did, the size would stop at `u64::MAX`.
    pub fn append(&mut self, leaf: Hash) {
        let mut hash = leaf;
        let mut carry = self.size;
        // Each trailing one bit of the size is a perfect subtree the new leaf completes.
        while carry & 1 == 1 {
            let Some(left) = self.nodes.pop() else {
                break; // unreachable: one node per set bit of size
            };
            hash = node_hash(&left, &hash);
            carry >>= 1;
        }
        self.nodes.push(hash);
        self.size = self.size.saturating_add(1);
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The subtree roots, largest first.
    pub fn nodes(&self) -> &[Hash] {
        &self.nodes
    }

    /// The tree's root hash.
    pub fn root(&self) -> Hash {
        self.nodes
            .iter()
            .rev()
            .copied()
            .reduce(|right, left| node_hash(&left, &right))
            .unwrap_or_else(empty_root)
    }
}

impl From<Frontier> for FrontierRepr {
    fn from(f: Frontier) -> Self {
        Self {
            size: f.size,
            nodes: f.nodes.iter().map(|h| hex_encode(h)).collect(),
        }
    }
}

impl TryFrom<FrontierRepr> for Frontier {
    type Error = MerkleError;

    fn try_from(r: FrontierRepr) -> Result<Self, MerkleError> {
        let nodes = r
            .nodes
            .iter()
            .map(|s| hex_decode::<32>(s))
            .collect::<Option<Vec<_>>>()
            .ok_or(MerkleError::InvalidFrontier(
                "a node is not 64 lowercase hex digits",
            ))?;
        Self::from_parts(r.size, nodes)
    }
}

#[cfg(test)]
#[path = "merkle_tests.rs"]
mod tests;
