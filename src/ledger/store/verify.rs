//! Re-verifying a whole ledger from GENESIS, when its sealed state cannot vouch for it, and
//! cutting a torn tail.

use super::line::{self, LineError, Parsed};
use super::progress::Progress;
use super::seal::Found;
use super::state::{end_open_calls, track_pending, ChainInfo, LossCause, State, StateLoss};
use super::{whole_lines_len, Ledger, LedgerIo, Reverifying, StoreError, Unverifiable};
use crate::fs;
use crate::json::SyntaxError;
use crate::ledger::chain::{self, ChainBreak};
use crate::ledger::fields::{context, event, field};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::os::unix::fs::FileExt;
use std::time::Instant;

impl Ledger {
    /// Re-reads and re-verifies the whole file from GENESIS, rebuilding the state. `found` is
    /// the sealed state as read: a sealed one whose stamp no longer matches (the file must still
    /// hold its prefix), or one that cannot vouch for the file (recorded when it is not empty).
    /// The file is read a chunk at a time; a re-verify that reaches the work deadline keeps
    /// its progress (`progress.rs`) and the call is refused, and the next call goes on.
    pub(super) fn full_verify(&mut self, found: Found) -> Result<(), StoreError> {
        let len = self.metadata()?.len();
        // Before anything is changed (a torn tail cut): a file that lost what was verified is
        // left exactly as it is found.
        // How many losses the sealed prefix records: one more in the file means the loss the
        // stale sealed state still carries was recorded by an append that died before it could
        // rewrite the sealed state.
        let mut losses_before = None;
        let (unrecorded, prior_loss, lost) = match found {
            Found::Sealed(prior) => {
                self.holds_prefix(&prior, len)?;
                let prior = *prior;
                losses_before = Some(losses_in(&prior));
                (prior.unrecorded_recovery, prior.unrecorded_loss, None)
            }
            Found::Outdated => (None, None, None),
            Found::Absent => (None, None, Some((LossCause::Missing, None))),
            Found::Lost(cause, read) => (None, None, Some((cause, read))),
        };
        let cut = self.whole_lines_len_of_file(len)?;
        if cut < len {
            let mut torn = vec![0u8; (len - cut) as usize];
            self.file
                .read_exact_at(&mut torn, cut)
                .map_err(LedgerIo::Read)?;
            self.recover_torn_tail(&torn, cut)?;
        }
        let stamp = self.stamp()?;
        let mut progress = match self.read_progress(&stamp)? {
            // A re-verify of exactly this file was under way: what it found when it started
            // is what it records.
            Some(p) => p,
            None => Progress {
                stamp,
                scanner: Scanner::default(),
                lost: match lost {
                    // An empty ledger without a sealed state is a new session (or one whose
                    // files were both moved aside): nothing can have been lost.
                    Some((cause, read)) if cut > 0 => Some(self.keep_lost(cause, read, cut)?),
                    _ => prior_loss,
                },
                recovered: self.recovered.take().or(unrecorded),
            },
        };
        if !self.stream(&mut progress.scanner, cut)? {
            self.write_progress(&progress);
            return Err(Reverifying {
                ledger: self.paths.ledger.clone(),
                done_mb: progress.scanner.offset >> 20,
                total_mb: cut >> 20,
                entries: progress.scanner.entries(),
            }
            .into());
        }
        let entries = progress.scanner.entries();
        self.state = progress.scanner.finish();
        self.state.stamp = stamp;
        self.recovered = progress.recovered;
        self.state.unrecorded_recovery = self.recovered.clone();
        if losses_before.is_some_and(|n| losses_in(&self.state) > n) {
            progress.lost = None;
        }
        self.lost = progress.lost.map(|mut l| {
            if l.entries == 0 {
                l.entries = entries;
            }
            l
        });
        self.state.unrecorded_loss = self.lost.clone();
        // Even an empty ledger gets its sealed state now: a crash after the first append and
        // before its state then leaves a stale sealed state, not a missing one.
        self.write_sealed();
        self.remove_progress();
        Ok(())
    }

    /// Verifies the file from `scanner.offset` to `end` (a line boundary), a chunk at a time;
    /// false when the work deadline came first.
    fn stream(&self, scanner: &mut Scanner, end: u64) -> Result<bool, StoreError> {
        let read = |buf: &mut [u8], at: u64| {
            self.file
                .read_exact_at(buf, at)
                .map_err(|e| StoreError::from(LedgerIo::Read(e)))
        };
        let mut buf = Vec::new();
        // At least one chunk per call, whatever the deadline, so every call makes progress.
        let mut first = true;
        while scanner.offset < end {
            if !first && self.work_deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            first = false;
            let at = scanner.offset;
            let want = (end - at).min(chunk_len() as u64) as usize;
            buf.resize(want, 0);
            read(&mut buf, at)?;
            let mut take = whole_lines_len(&buf);
            // One line longer than a chunk: read on to its newline (`end` is after one).
            while take == 0 {
                let from = buf.len();
                let more = (end - at - from as u64).min(CHUNK as u64) as usize;
                buf.resize(from + more, 0);
                read(&mut buf[from..], at + from as u64)?;
                take = whole_lines_len(&buf);
            }
            scanner
                .feed_chunk(&buf[..take])
                .map_err(|e| self.unverifiable(&e))?;
        }
        Ok(true)
    }

    fn unverifiable(&self, e: &ScanError) -> StoreError {
        Unverifiable::Broken {
            ledger: self.paths.ledger.clone(),
            state: self.paths.state.clone(),
            why: e.clone(),
        }
        .into()
    }

    /// The length of the file's complete lines, reading back from its end to the last newline.
    fn whole_lines_len_of_file(&self, len: u64) -> Result<u64, StoreError> {
        const BACK: u64 = 64 << 10;
        let mut end = len;
        let mut buf = vec![0u8; BACK as usize];
        while end > 0 {
            let start = end.saturating_sub(BACK);
            let part = &mut buf[..(end - start) as usize];
            self.file
                .read_exact_at(part, start)
                .map_err(LedgerIo::Read)?;
            if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
                return Ok(start + i as u64 + 1);
            }
            end = start;
        }
        Ok(0)
    }

    /// The record of a sealed state that could not vouch for the ledger, its bytes (when read)
    /// kept aside for review.
    /// (`entries` is filled in when the re-verify has counted them.)
    fn keep_lost(
        &self,
        cause: LossCause,
        read: Option<Vec<u8>>,
        ledger_bytes: u64,
    ) -> Result<StateLoss, StoreError> {
        let mut loss = StateLoss {
            cause,
            ledger_bytes,
            entries: 0,
            sha256: None,
            kept_in: None,
        };
        if let Some(bytes) = read {
            let name = format!(
                "ledger-{}.state-lost-{}",
                self.paths.name,
                crate::clock::now_ms()
            );
            fs::write_atomic(&self.paths.dir.join(&name), &bytes, true)
                .map_err(LedgerIo::KeepLostState)?;
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
        fs::write_atomic(&aside, torn, true).map_err(LedgerIo::KeepTornTail)?;
        self.file.set_len(cut).map_err(LedgerIo::TruncateTornTail)?;
        self.file.sync_all().map_err(LedgerIo::FsyncTornTail)?;
        self.recovered = Some(serde_json::json!({
            "bytes": torn.len(),
            "at_offset": cut,
            "sha256": chain::sha256_hex(torn),
            "kept_in": aside.file_name().map(|n| n.to_string_lossy().into_owned()),
        }));
        Ok(())
    }
}

/// Why a ledger file does not verify, naming where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    #[error("line {line} is not valid JSON ({why})")]
    NotJson { line: u64, why: SyntaxError },
    #[error("line {line} comes before any root entry")]
    BeforeRoot { line: u64 },
    #[error("chain {chain} breaks: {why} (line {line} of the file)")]
    Breaks {
        chain: usize,
        line: u64,
        why: ChainBreak,
    },
    #[error("entry {index} of chain {chain_id} carries another chain_id")]
    OtherChainId { index: usize, chain_id: String },
    #[error(
        "chain {chain_id} does not link to the chain before it (a chain was removed or reordered)"
    )]
    Unlinked { chain_id: String },
    /// Never from a verified chain or `chain::seal`: its entry hashes are 32 bytes of hex.
    #[error("entry hash {0} is not 32 bytes of hex")]
    NotAHash(String),
}

/// Parses and verifies a whole ledger file (without a torn tail), chain by chain.
pub fn scan(bytes: &[u8]) -> Result<State, ScanError> {
    let mut verifier = Verifier::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        let take = whole_lines_len(&rest[..CHUNK.min(rest.len())]);
        let take = if take == 0 {
            // One line longer than a chunk, or the last line without its newline.
            rest.iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1)
        } else {
            take
        };
        verifier.feed(&rest[..take])?;
        rest = &rest[take..];
    }
    Ok(verifier.finish())
}

/// [`scan`] for a reader that streams the file: it hands over whole lines as it reads them,
/// in file order, and memory stays bounded by what it hands over at once, not by the ledger.
#[derive(Debug, Default)]
pub struct Verifier(Scanner);

impl Verifier {
    /// Verifies the next lines of the file (each with its newline; the last may lack it only
    /// at the end of the file). After an error the ledger does not verify: feed no more.
    pub fn feed(&mut self, lines: &[u8]) -> Result<(), ScanError> {
        self.0.feed_chunk(lines)
    }

    /// What the lines fed hold, once all of them verified.
    pub fn finish(self) -> State {
        self.0.finish()
    }
}

/// How much of the file one step of a streaming re-verify reads: lines are parsed on every
/// core a chunk at a time, so memory stays bounded by the chunk, not the ledger.
pub(super) const CHUNK: usize = 8 << 20;

/// A re-verify from GENESIS in progress: every chain finished so far in `state`, the chain
/// being read, and how far. Serializable, so a re-verify that runs out of time is resumed
/// (see `progress.rs`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Scanner {
    pub state: State,
    current: Option<ChainInfo>,
    /// Bytes verified, always at a line boundary.
    pub offset: u64,
    lines: u64,
}

impl Scanner {
    /// Verifies `chunk`, whole lines starting at `self.offset`.
    pub(super) fn feed_chunk(&mut self, chunk: &[u8]) -> Result<(), ScanError> {
        let lines: Vec<&[u8]> = chunk.split_inclusive(|&b| b == b'\n').collect();
        let parsed = crate::par::map(&lines, PARALLEL_FROM, |_, l| {
            line::parse(l.strip_suffix(b"\n").unwrap_or(l))
        });
        for (l, p) in lines.iter().zip(parsed) {
            self.feed(l.len() as u64, p)?;
        }
        Ok(())
    }

    fn feed(&mut self, len: u64, parsed: Result<Parsed, LineError>) -> Result<(), ScanError> {
        self.lines += 1;
        let n = self.lines;
        let chain_no = self.state.chains.len() + 1;
        let broke = |why: ChainBreak| ScanError::Breaks {
            chain: chain_no,
            line: n,
            why,
        };
        let index = self.current.as_ref().map_or(0, |c| c.entries as usize);
        let Parsed { entry: e, computed } = match parsed {
            Ok(p) => p,
            Err(LineError::NotJson(e)) => {
                return Err(ScanError::NotJson {
                    line: n,
                    why: e.into(),
                })
            }
            Err(LineError::NotAnObject) if self.current.is_none() => {
                return Err(ScanError::BeforeRoot { line: n })
            }
            Err(LineError::NotAnObject) => return Err(broke(ChainBreak::NotAnObject { index })),
        };
        if e.get(field::EVENT).and_then(Value::as_str) == Some(event::ROOT) {
            self.open_chain(&e)?;
        }
        let offset = self.offset;
        let state = &mut self.state;
        let Some(chain) = self.current.as_mut() else {
            return Err(ScanError::BeforeRoot { line: n });
        };
        let index = chain.entries as usize;
        let seq = match e.get(field::SEQ) {
            Some(Value::Number(n)) => Some(n),
            _ => None,
        };
        if !chain::is_integral(seq, index as u64) {
            return Err(broke(ChainBreak::SeqGap { index }));
        }
        if e.get(field::PREV_HASH).and_then(Value::as_str) != Some(chain.head.as_str()) {
            return Err(broke(ChainBreak::PrevHashMismatch { index }));
        }
        let hash = match (computed, e.get(field::HASH).and_then(Value::as_str)) {
            (Some(c), Some(h)) if c == h => c,
            _ => return Err(broke(ChainBreak::HashMismatch { index })),
        };
        if e.get(field::CHAIN_ID).and_then(Value::as_str) != Some(chain.chain_id.as_str()) {
            return Err(ScanError::OtherChainId {
                index,
                chain_id: chain.chain_id.clone(),
            });
        }
        chain.note_entry(&e);
        chain.grow_tree(&hash)?;
        track_pending(&mut state.pending, &e, &chain.chain_id);
        chain.head = hash;
        chain.entries += 1;
        state.last_line = offset;
        self.offset += len;
        Ok(())
    }

    /// A `root` closes the chain before it and must name it (its id, head and last seq).
    fn open_chain(&mut self, root: &Map<String, Value>) -> Result<(), ScanError> {
        if let Some(done) = self.current.take() {
            self.state.chains.push(done);
        }
        let info = ChainInfo::opened_by(root, self.state.chains.len() as u32 + 1, self.offset);
        let expected_link = self.state.chains.last().map(
            |p| serde_json::json!({"chain_id": p.chain_id, "head": p.head, "seq": p.entries - 1}),
        );
        let link = root
            .get(field::CONTEXT)
            .and_then(|c| c.get(context::PREVIOUS_CHAIN))
            .cloned()
            .filter(|v| !v.is_null());
        if link != expected_link {
            return Err(ScanError::Unlinked {
                chain_id: info.chain_id,
            });
        }
        end_open_calls(&mut self.state); // only the current chain's calls can still be completed
        self.current = Some(info);
        Ok(())
    }

    /// Entries verified so far.
    pub(super) fn entries(&self) -> u64 {
        self.state.chains.iter().map(|c| c.entries).sum::<u64>()
            + self.current.as_ref().map_or(0, |c| c.entries)
    }

    pub(super) fn finish(mut self) -> State {
        if let Some(done) = self.current.take() {
            self.state.chains.push(done);
        }
        self.state
    }
}

/// [`CHUNK`], or in a `test-faults` build what `ATTENU_HOOK_TEST_REVERIFY_CHUNK` says (the
/// resumed re-verify test needs a ledger of several chunks without a big file).
fn chunk_len() -> usize {
    #[cfg(feature = "test-faults")]
    if let Some(n) = std::env::var("ATTENU_HOOK_TEST_REVERIFY_CHUNK")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.max(1);
    }
    CHUNK
}

/// Below this many lines one thread is faster than starting others.
const PARALLEL_FROM: usize = 1024;

/// The entries of every chain in `state` that record a lost sealed state.
fn losses_in(state: &State) -> u64 {
    state.chains.iter().map(|c| c.state_losses).sum()
}
