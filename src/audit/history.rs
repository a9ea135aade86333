//! A chain's entries as the store holds them, as a tree of histories. Each entry's `hash`
//! commits to its `prev_hash`, so an entry names the whole history before it: the entries of
//! every object (entries objects and bundles) go into one tree whose nodes are entries and
//! whose edges are `prev_hash` links. Two histories that share a beginning share those nodes;
//! a rewrite shows as a branch. Each node carries the RFC 6962 root of the history ending at
//! it, so a checkpoint `(size, root)` is found in the tree, or is not, by a lookup.

use crate::evidence::checkpoint::leaf_of_hash;
use crate::tlog::{Frontier, Hash};
use std::collections::HashMap;

/// A node: the history of `size` entries ending with the entry whose hash is `hash`.
#[derive(Debug, Clone)]
pub struct Node {
    pub parent: Option<usize>,
    pub size: u64,
    pub hash: String,
    pub tree: Frontier,
    /// The earliest store time of an object holding this entry (ms since the epoch).
    pub first_stored_ms: u64,
}

/// The tree of histories of one chain. Node 0 is the empty history (GENESIS).
#[derive(Debug, Clone)]
pub struct Histories {
    nodes: Vec<Node>,
    by_hash: HashMap<String, usize>,
    by_root: HashMap<(u64, Hash), usize>,
}

impl Default for Histories {
    fn default() -> Self {
        Self::new()
    }
}

impl Histories {
    pub fn new() -> Histories {
        let genesis = Node {
            parent: None,
            size: 0,
            hash: crate::ledger::chain::GENESIS.to_string(),
            tree: Frontier::new(),
            first_stored_ms: 0,
        };
        let mut h = Histories {
            nodes: vec![genesis],
            by_hash: HashMap::new(),
            by_root: HashMap::new(),
        };
        h.by_hash
            .insert(crate::ledger::chain::GENESIS.to_string(), 0);
        h.by_root.insert((0, Frontier::new().root()), 0);
        h
    }

    pub fn node(&self, id: usize) -> &Node {
        &self.nodes[id]
    }

    /// The node of the history of `size` entries ending with `hash` (GENESIS for none).
    pub fn at(&self, size: u64, hash: &str) -> Option<usize> {
        self.by_hash
            .get(hash)
            .copied()
            .filter(|&id| self.nodes[id].size == size)
    }

    /// The node whose history has `size` entries and tree root `root`.
    pub fn with_root(&self, size: u64, root: &Hash) -> Option<usize> {
        self.by_root.get(&(size, *root)).copied()
    }

    /// Appends `hashes` (entry hashes, already checked against their entries) after node
    /// `parent`, merging with what is there; returns the last node. `None` when a hash is
    /// not one (64 hex digits).
    pub fn extend(&mut self, parent: usize, hashes: &[String], stored_ms: u64) -> Option<usize> {
        let mut at = parent;
        for h in hashes {
            if let Some(&id) = self.by_hash.get(h) {
                // The same hash is the same history (SHA-256 collisions aside), so the same
                // parent; a hash seen under another parent is refused by the caller's links.
                let node = &mut self.nodes[id];
                node.first_stored_ms = node.first_stored_ms.min(stored_ms);
                at = id;
                continue;
            }
            let leaf = leaf_of_hash(h)?;
            let mut tree = self.nodes[at].tree.clone();
            tree.append(leaf);
            let size = self.nodes[at].size + 1;
            let id = self.nodes.len();
            self.by_root.insert((size, tree.root()), id);
            self.by_hash.insert(h.clone(), id);
            self.nodes.push(Node {
                parent: Some(at),
                size,
                hash: h.clone(),
                tree,
                first_stored_ms: stored_ms,
            });
            at = id;
        }
        Some(at)
    }

    /// The nodes from the empty history to `id`: `path(id)[n]` is its prefix of n entries.
    pub fn path(&self, id: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes[id].size as usize + 1);
        let mut at = Some(id);
        while let Some(n) = at {
            out.push(n);
            at = self.nodes[n].parent;
        }
        out.reverse();
        out
    }

    /// The root of the tree over the first `size` entries of the history ending at `id`.
    pub fn root_at(&self, path: &[usize], size: u64) -> Option<Hash> {
        path.get(size as usize).map(|&n| self.nodes[n].tree.root())
    }
}
