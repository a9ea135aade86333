//! The verified state of a session ledger: its chains, their nodes, and the calls still open.

pub use crate::fs::FileStamp;
use crate::ledger::fields::{context, event, field};
use crate::tlog::Frontier;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One chain (segment) of a session ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainInfo {
    pub chain_id: String,
    pub digest: String,
    /// 1-based position of this chain in the session.
    pub index: u32,
    /// Byte offset of the chain's root line in the file.
    pub start: u64,
    /// Number of entries in the chain.
    pub entries: u64,
    pub head: String,
    pub params_salt: String,
    /// Agent name → node id; the session root is under "".
    pub nodes: BTreeMap<String, String>,
    /// Nodes a `done` entry has finalized.
    #[serde(default)]
    pub finalized: Vec<String>,
    /// The chain's RFC 6962 tree over its entries' hashes, as its frontier (at most one hash
    /// per bit of the size): what a signed checkpoint commits to (docs/SHIPPING.md).
    #[serde(default)]
    pub tree: Frontier,
    /// The last signed checkpoint queued for shipping, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpointed: Option<CheckpointMark>,
    /// Entries of this chain that record a lost or broken sealed state
    /// (`context.checkpoint_lost`). Stored as `checkpoint_losses`: a format on disk.
    #[serde(rename = "checkpoint_losses", default, skip_serializing_if = "is_zero")]
    pub state_losses: u64,
    /// The root entry's `ts` (Unix ms): when the chain was opened; 0 in a state written before
    /// it was kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub opened_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why a sealed state could not vouch for a non-empty ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossCause {
    /// No sealed state beside the ledger.
    Missing,
    /// A sealed state whose MAC does not hold (edited, forged, or torn by a crash).
    SealBroken,
    /// A sealed state that could not be read (far too large, or an I/O error).
    Unreadable,
}

impl LossCause {
    pub fn as_str(self) -> &'static str {
        match self {
            LossCause::Missing => "missing",
            LossCause::SealBroken => "seal-broken",
            LossCause::Unreadable => "unreadable",
        }
    }
}

/// What the first entry appended after a lost sealed state records in its
/// `context.checkpoint_lost`: the ledger was re-verified from GENESIS and verified, but nothing
/// shows it was not cut short first (every prefix of a chain verifies), so a reviewer must
/// know the local rollback check did not run here (docs/FORMATS.md, "Lost sealed state").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateLoss {
    pub cause: LossCause,
    /// The ledger's length and entry count as found (after a torn tail was cut).
    pub ledger_bytes: u64,
    pub entries: u64,
    /// SHA-256 of the broken sealed state, and the file it was kept in, when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_in: Option<String>,
}

/// Where the last queued signed checkpoint of a chain stands: its size, and the byte offset
/// in the ledger file where the entries after it begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMark {
    pub size: u64,
    pub offset: u64,
}

impl ChainInfo {
    pub fn root_node(&self) -> &str {
        self.nodes.get("").map(String::as_str).unwrap_or("")
    }

    /// The chain a `root` entry opens, as chain `index` of the session starting at byte
    /// `start`, before any entry is counted.
    pub(super) fn opened_by(root: &Map<String, Value>, index: u32, start: u64) -> ChainInfo {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        ChainInfo {
            chain_id: text(root.get(field::CHAIN_ID)),
            digest: text(root.get(field::CONTEXT).and_then(|c| c.get("digest"))),
            index,
            start,
            entries: 0,
            head: crate::ledger::chain::GENESIS.into(),
            params_salt: text(root.get(field::PARAMS_SALT)),
            nodes: BTreeMap::new(),
            finalized: Vec::new(),
            tree: Frontier::new(),
            checkpointed: None,
            state_losses: 0,
            opened_ms: root.get(field::TS).and_then(Value::as_u64).unwrap_or(0),
        }
    }

    /// Entries added since the last signed checkpoint queued for shipping.
    pub fn unshipped(&self) -> u64 {
        self.entries
            .saturating_sub(self.checkpointed.map_or(0, |m| m.size))
    }

    /// Adds an entry, by its own hash, to the chain's tree. A hash that is not 32 bytes of hex
    /// never comes from `chain::seal` or a verified chain.
    pub(super) fn grow_tree(&mut self, entry_hash: &str) -> Result<(), super::ScanError> {
        let leaf = crate::evidence::checkpoint::leaf_of_hash(entry_hash)
            .ok_or_else(|| super::ScanError::NotAHash(entry_hash.to_string()))?;
        self.tree.append(leaf);
        Ok(())
    }

    /// Notes what an entry of this chain says about its nodes: a `root` or `spawn` names one,
    /// a `done` finalizes one.
    pub(super) fn note_entry(&mut self, e: &Map<String, Value>) {
        if e.get(field::CONTEXT)
            .is_some_and(|c| c.get(CHECKPOINT_LOST).is_some())
        {
            self.state_losses += 1;
        }
        let Some(node) = e.get(field::NODE).and_then(Value::as_str) else {
            return;
        };
        match e.get(field::EVENT).and_then(Value::as_str) {
            Some(event::ROOT) => {
                self.nodes.insert(String::new(), node.to_string());
            }
            Some(event::SPAWN) => {
                if let Some(agent) = e.get(field::AGENT).and_then(Value::as_str) {
                    self.nodes.insert(agent.to_string(), node.to_string());
                }
            }
            Some(event::DONE) => self.finalized.push(node.to_string()),
            _ => {}
        }
    }
}

/// The `context` member recording a [`StateLoss`].
pub const CHECKPOINT_LOST: &str = "checkpoint_lost";

/// An allowed call still waiting for its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The seq of the allow entry, which orders open calls for the cap below.
    #[serde(default)]
    pub seq: u64,
    pub call_id: String,
    pub node: String,
    pub chain_id: String,
    pub authorized_params_hash: Option<String>,
    pub tool: String,
}

/// Open calls kept per session; see `track_pending`.
pub const MAX_OPEN_CALLS: usize = 256;

/// The verified state of a session ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct State {
    pub stamp: FileStamp,
    /// Byte offset where the last line starts.
    pub last_line: u64,
    pub chains: Vec<ChainInfo>,
    /// tool_use_id → the open call.
    pub pending: BTreeMap<String, Pending>,
    /// tool_use_id → a call still open when a new chain started (an agent edit mid-call). Its
    /// outcome can be bound to no chain, and must not be lost without a word: the hook stops
    /// Claude and leaves a reconciliation marker when it arrives.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ended: BTreeMap<String, Pending>,
    /// A torn tail moved aside that no entry records yet. Kept in the sealed state, so a process
    /// that recovers it but appends nothing (a SessionStart on a current chain, a failure
    /// before the append) leaves it for the next append to record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecorded_recovery: Option<Value>,
    /// A lost sealed state no entry records yet, kept like `unrecorded_recovery`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecorded_loss: Option<StateLoss>,
}

/// A new chain starts: the calls still open on the one before can no longer be completed.
pub(super) fn end_open_calls(state: &mut State) {
    let open = std::mem::take(&mut state.pending);
    state.ended.extend(open);
    // Bounded like the open calls: the oldest are forgotten (their outcome, if it ever comes,
    // then finds nothing and is not bound, as for a call from before the hook was wired).
    while state.ended.len() > MAX_OPEN_CALLS {
        forget_oldest(&mut state.ended);
    }
}

/// Drops the call allowed first (the earliest chain, then the lowest seq in it).
fn forget_oldest(calls: &mut BTreeMap<String, Pending>) {
    if let Some(oldest) = calls
        .iter()
        .min_by_key(|(_, p)| (chain_index(&p.chain_id), p.seq))
        .map(|(k, _)| k.clone())
    {
        calls.remove(&oldest);
    }
}

/// The position a chain id ends with (`cc-<session>-<digest>-<k>`).
fn chain_index(chain_id: &str) -> u32 {
    chain_id
        .rsplit('-')
        .next()
        .and_then(|k| k.parse().ok())
        .unwrap_or(0)
}

pub(super) fn track_pending(
    pending: &mut BTreeMap<String, Pending>,
    e: &Map<String, Value>,
    chain_id: &str,
) {
    match e.get(field::EVENT).and_then(Value::as_str) {
        Some(event::ALLOW) => {
            let (Some(tu), Some(cid)) = (
                e.get(field::CONTEXT)
                    .and_then(|c| c.get(context::TOOL_USE_ID))
                    .and_then(Value::as_str),
                e.get(field::CALL_ID).and_then(Value::as_str),
            ) else {
                return;
            };
            let seq = e.get(field::SEQ).and_then(Value::as_u64).unwrap_or(0);
            if pending.len() >= MAX_OPEN_CALLS {
                // Calls Claude Code never finished (refused after our allow, interrupted) would
                // otherwise grow the sealed state forever; the oldest is dropped. Its outcome, if it
                // ever arrives, finds no open call and is not bound.
                forget_oldest(pending);
            }
            pending.insert(
                tu.to_string(),
                Pending {
                    seq,
                    call_id: cid.to_string(),
                    node: e
                        .get(field::NODE)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    chain_id: chain_id.to_string(),
                    authorized_params_hash: e
                        .get(field::AUTHORIZED_PARAMS_HASH)
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    tool: e
                        .get(field::TOOL)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                },
            );
        }
        Some(event::OUTCOME) => {
            if let Some(cid) = e.get(field::CALL_ID).and_then(Value::as_str) {
                pending.retain(|_, p| p.call_id != cid);
            }
        }
        _ => {}
    }
}
