//! Re-verifying a whole ledger from GENESIS, when its sealed state cannot vouch for it, and
//! cutting a torn tail.

use super::seal::Found;
use super::state::{end_open_calls, track_pending, ChainInfo, CheckpointLoss, LossCause, State};
use super::{whole_lines_len, Ledger, StoreError};
use crate::fs;
use crate::ledger::chain;
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};

impl Ledger {
    /// Re-reads and re-verifies the whole file from GENESIS, rebuilding the state. `found` is
    /// the checkpoint as read: a sealed one whose stamp no longer matches (the file must still
    /// hold its prefix), or one that cannot vouch for the file (recorded when it is not empty).
    pub(super) fn full_verify(&mut self, found: Found) -> Result<(), StoreError> {
        let mut bytes = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| StoreError::Io(e.to_string()))?;
        self.file
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::Io(format!("cannot read the ledger: {e}")))?;
        // Before anything is changed (a torn tail cut): a file that lost what was verified is
        // left exactly as it is found.
        let (unrecorded, prior_loss, lost) = match found {
            Found::Sealed(prior) => {
                self.holds_prefix(&prior, &bytes)?;
                let prior = *prior;
                (prior.unrecorded_recovery, prior.unrecorded_loss, None)
            }
            Found::Outdated => (None, None, None),
            Found::Absent => (None, None, Some((LossCause::Missing, None))),
            Found::Lost(cause, read) => (None, None, Some((cause, read))),
        };
        let cut = whole_lines_len(&bytes);
        if cut < bytes.len() {
            self.recover_torn_tail(&bytes[cut..], cut as u64)?;
            bytes.truncate(cut);
        }
        self.state = scan(&bytes).map_err(|e| {
            StoreError::Unverifiable(format!(
                "{} does not verify ({e}); it is kept as evidence and nothing more is appended to it. Move it and its checkpoint {} aside (for example with a .broken suffix) to start a new ledger for this session, and keep the old one for review",
                self.paths.ledger.display(),
                self.paths.state.display()
            ))
        })?;
        self.state.stamp = self.stamp()?;
        if self.recovered.is_none() {
            self.recovered = unrecorded;
        }
        self.state.unrecorded_recovery = self.recovered.clone();
        self.lost = match lost {
            // An empty ledger without a checkpoint is a new session (or one whose files were
            // both moved aside): nothing was verified before, so nothing can have been lost.
            Some((cause, read)) if !bytes.is_empty() => Some(self.keep_lost(cause, read)?),
            _ => prior_loss,
        };
        self.state.unrecorded_loss = self.lost.clone();
        // Even an empty ledger gets its checkpoint now: a crash after the first append and
        // before its checkpoint then leaves a stale checkpoint, not a missing one.
        self.write_checkpoint();
        Ok(())
    }

    /// The record of a checkpoint that could not vouch for the ledger, its bytes (when read)
    /// kept aside for review.
    fn keep_lost(
        &self,
        cause: LossCause,
        read: Option<Vec<u8>>,
    ) -> Result<CheckpointLoss, StoreError> {
        let mut loss = CheckpointLoss {
            cause,
            ledger_bytes: self.state.stamp.len,
            entries: self.state.chains.iter().map(|c| c.entries).sum(),
            sha256: None,
            kept_in: None,
        };
        if let Some(bytes) = read {
            let name = format!(
                "ledger-{}.state-lost-{}",
                self.paths.name,
                crate::clock::now_ms()
            );
            fs::write_atomic(&self.paths.dir.join(&name), &bytes, true).map_err(|e| {
                StoreError::Io(format!("cannot keep the broken checkpoint aside: {e}"))
            })?;
            loss.sha256 = Some(chain::sha256_hex(&bytes));
            loss.kept_in = Some(name);
        }
        Ok(loss)
    }

    fn recover_torn_tail(&mut self, torn: &[u8], cut: u64) -> Result<(), StoreError> {
        let ms = crate::clock::now_ms();
        let aside = self
            .paths
            .dir
            .join(format!("ledger-{}.torn-{ms}", self.paths.name));
        fs::write_atomic(&aside, torn, true)
            .map_err(|e| StoreError::Io(format!("cannot keep the torn tail aside: {e}")))?;
        self.file
            .set_len(cut)
            .map_err(|e| StoreError::Io(format!("cannot truncate the torn tail: {e}")))?;
        self.file
            .sync_all()
            .map_err(|e| StoreError::Io(e.to_string()))?;
        self.recovered = Some(serde_json::json!({
            "bytes": torn.len(),
            "at_offset": cut,
            "sha256": chain::sha256_hex(torn),
            "kept_in": aside.file_name().map(|n| n.to_string_lossy().into_owned()),
        }));
        Ok(())
    }
}

/// Parses and verifies a whole ledger file (without a torn tail), chain by chain.
pub fn scan(bytes: &[u8]) -> Result<State, String> {
    let mut state = State::default();
    let mut offset = 0u64;
    let mut segment: Vec<Value> = Vec::new();
    let mut segment_start = 0u64;
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    for (i, (line, value)) in lines.iter().zip(parse_lines(&lines)).enumerate() {
        let value = value.map_err(|e| format!("line {} is not valid JSON ({e})", i + 1))?;
        if value.get("event").and_then(Value::as_str) == Some("root") {
            finish_chain(&mut segment, segment_start, &mut state)?;
            segment_start = offset;
        } else if segment.is_empty() {
            return Err(format!("line {} comes before any root entry", i + 1));
        }
        segment.push(value);
        state.last_line = offset;
        offset += line.len() as u64;
    }
    finish_chain(&mut segment, segment_start, &mut state)?;
    Ok(state)
}

/// Verifies one chain's entries (`segment`, starting at byte `start`) and adds it to `state`.
fn finish_chain(segment: &mut Vec<Value>, start: u64, state: &mut State) -> Result<(), String> {
    if segment.is_empty() {
        return Ok(());
    }
    let head = chain::verify_entries(segment).map_err(|b| {
        format!(
            "chain {} breaks: {b} (line {} of the file)",
            state.chains.len() + 1,
            line_no(state, b.index())
        )
    })?;
    let root = segment[0]
        .as_object()
        .expect("verified entries are objects");
    let mut info = ChainInfo::opened_by(root, state.chains.len() as u32 + 1, start);
    let chain_id = info.chain_id.clone();
    if let Some(bad) = segment
        .iter()
        .position(|e| e.get("chain_id").and_then(Value::as_str) != Some(chain_id.as_str()))
    {
        return Err(format!(
            "entry {bad} of chain {chain_id} carries another chain_id"
        ));
    }
    let expected_link = state
        .chains
        .last()
        .map(|p| serde_json::json!({"chain_id": p.chain_id, "head": p.head, "seq": p.entries - 1}));
    let link = segment[0]
        .pointer("/context/previous_chain")
        .cloned()
        .filter(|v| !v.is_null());
    if link != expected_link {
        return Err(format!("chain {chain_id} does not link to the chain before it (a chain was removed or reordered)"));
    }
    info.entries = segment.len() as u64;
    info.head = head;
    end_open_calls(state); // only the current chain's calls can still be completed
    for e in segment.iter() {
        let obj = e.as_object().expect("verified entries are objects");
        info.note_entry(obj);
        info.grow_tree(obj.get("hash").and_then(Value::as_str).unwrap_or(""))?;
        track_pending(&mut state.pending, obj, &chain_id);
    }
    state.chains.push(info);
    segment.clear();
    Ok(())
}

/// Below this many lines one thread is faster than starting others.
const PARALLEL_FROM: usize = 1024;

/// Parses every line, on every core for a long file (a full re-verify of a large ledger must
/// fit in the hook's deadline).
fn parse_lines(lines: &[&[u8]]) -> Vec<Result<Value, serde_json::Error>> {
    crate::par::map(lines, PARALLEL_FROM, |_, l| serde_json::from_slice(l))
}

fn line_no(state: &State, index_in_chain: usize) -> u64 {
    state.chains.iter().map(|c| c.entries).sum::<u64>() + index_in_chain as u64 + 1
}

/// Splits verified ledger bytes into chains of entries (for export), in file order.
pub fn chains_of(bytes: &[u8]) -> Result<Vec<Vec<Value>>, String> {
    let mut out: Vec<Vec<Value>> = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let v: Value = serde_json::from_slice(line)
            .map_err(|e| format!("line {} is not valid JSON ({e})", i + 1))?;
        if v.get("event").and_then(Value::as_str) == Some("root") || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().expect("pushed above").push(v);
    }
    Ok(out)
}
