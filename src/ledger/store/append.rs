//! Appending entries: seal each onto its chain, one write, fsync, then the sealed state.

use super::state::{end_open_calls, track_pending, ChainInfo, State};
use super::{Ledger, LedgerIo, StoreError};
use crate::fs;
use crate::json::canonical;
use crate::ledger::chain;
use crate::ledger::fields::{event, field};
use serde_json::{Map, Value};
use std::io::Write;

impl Ledger {
    /// Seals `entries` onto the current chain (or, when the first is a `root`, starts a new
    /// chain), appends them with one write, fsyncs, and only then updates the sealed state.
    /// Each entry must already carry everything but `v`, `c14n`, `seq`, `prev_hash`, `hash`.
    pub fn append(&mut self, mut entries: Vec<Map<String, Value>>) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        if let Some(recovery) = &self.recovered {
            // The first entry written after a torn tail was cut records the cut.
            let context = entries[0]
                .entry(field::CONTEXT)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(c) = context {
                c.entry("recovered_torn_tail")
                    .or_insert_with(|| recovery.clone());
            }
        }
        if let Some(loss) = &self.lost {
            // Likewise a sealed state found lost or broken beside the ledger.
            let context = entries[0]
                .entry(field::CONTEXT)
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Value::Object(c), Ok(v)) = (context, serde_json::to_value(loss)) {
                c.entry(super::state::CHECKPOINT_LOST).or_insert(v);
            }
        }
        let mut next = self.state.clone();
        next.unrecorded_recovery = None;
        next.unrecorded_loss = None;
        let mut buf = Vec::with_capacity(entries.len() * 700);
        let mut offset = next.stamp.len;
        let mut last_line = next.last_line;
        for e in entries {
            let line = seal_onto(&mut next, e, offset)?;
            last_line = offset;
            offset += line.len() as u64 + 1;
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        self.write_durably(&buf)?;
        next.last_line = last_line;
        next.stamp = self.stamp()?;
        if next.stamp.len != offset {
            return Err(LedgerIo::ChangedSize.into());
        }
        self.state = next;
        self.recovered = None;
        self.lost = None;
        self.write_sealed();
        Ok(())
    }

    /// Appends `buf` with one write (so a crash leaves either nothing or a torn final line,
    /// never interleaving) and makes it durable before anything is answered.
    fn write_durably(&mut self, buf: &[u8]) -> Result<(), StoreError> {
        // POSIX does not promise that a file's fsync makes its new name durable: without a
        // directory fsync, a crash could lose the whole ledger of a session whose first
        // decision had already been answered. Where the file system's own fsync of a file
        // this process created writes its name (ext4, XFS: see the function), that second
        // flush is skipped.
        let sync_dir = self.name_unsynced
            && !(self.created && fs::new_name_durable_with_file(self.state.stamp.dev));
        (&self.file).write_all(buf).map_err(LedgerIo::Write)?;
        self.file.sync_data().map_err(LedgerIo::Fsync)?;
        if sync_dir {
            fs::sync_dir(&self.paths.dir).map_err(|source| LedgerIo::FsyncDir {
                dir: self.paths.dir.clone(),
                source,
            })?;
        }
        self.name_unsynced = false;
        Ok(())
    }
}

/// Seals one entry onto the chain it belongs to in `state` (a `root` opens a new one at
/// `offset`), updates that chain and the open calls, and returns the entry's line.
fn seal_onto(
    state: &mut State,
    mut e: Map<String, Value>,
    offset: u64,
) -> Result<Vec<u8>, StoreError> {
    if e.get(field::EVENT).and_then(Value::as_str) == Some(event::ROOT) {
        let index = state.chains.len() as u32 + 1;
        // As in `scan`: a call opened on the chain that ends here can no longer be
        // completed on the new one (its outcome would be an outcome without an allow).
        end_open_calls(state);
        state.chains.push(ChainInfo::opened_by(&e, index, offset));
    }
    let chain = state.chains.last_mut().ok_or(LedgerIo::NoRoot)?;
    e.insert(field::V.into(), Value::from(2));
    e.insert(field::C14N.into(), Value::from("JCS"));
    e.insert(field::SEQ.into(), Value::from(chain.entries));
    let hash = chain::seal(&mut e, &chain.head).map_err(LedgerIo::Canonical)?;
    chain.note_entry(&e);
    chain.grow_tree(&hash).map_err(LedgerIo::Tree)?;
    let chain_id = chain.chain_id.clone();
    chain.head = hash;
    chain.entries += 1;
    track_pending(&mut state.pending, &e, &chain_id);
    Ok(canonical::to_vec(&Value::Object(e)).map_err(LedgerIo::Canonical)?)
}
