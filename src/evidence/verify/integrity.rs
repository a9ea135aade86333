//! Step (6), first half: the hash chain from `GENESIS`, seq 0, 1, 2… (the anchor over its head
//! is [`super::anchor`]).

use super::shown::seq_text;
use super::{Bundle, FailureName, Log, Value, PARALLEL_FROM};
use crate::json::tree;
use crate::ledger::chain::{self, ChainBreak};
use crate::ledger::fields::field;

/// True when every entry links to the one before and its stored hash covers it. Only the
/// first break is reported: nothing after it can be checked.
pub(super) fn check_chain(
    bundle: &Bundle<'_>,
    entry_hashes: Option<Vec<Option<String>>>,
    log: &mut Log<'_>,
) -> bool {
    let raw_entries = bundle.raw_entries;
    let hashes = match entry_hashes {
        Some(hashes) if hashes.len() == raw_entries.len() => hashes,
        _ => crate::par::map(raw_entries, PARALLEL_FROM, |_, e| tree::own_hash(e)),
    };
    let chain_result = chain::check_links(raw_entries, hashes, |e| {
        let obj = e.as_object()?;
        Some(chain::Links {
            seq: match obj.get(field::SEQ) {
                Some(Value::Number(n)) => Some(n),
                _ => None,
            },
            prev_hash: obj.get(field::PREV_HASH).and_then(Value::as_str),
            hash: obj.get(field::HASH).and_then(Value::as_str),
        })
    });
    match &chain_result {
        Ok(_) => true,
        Err(brk) => {
            report_break(bundle, brk, log);
            false
        }
    }
}

fn report_break(bundle: &Bundle<'_>, brk: &ChainBreak, log: &mut Log<'_>) {
    let i = brk.index();
    let (name, detail) = match brk {
        ChainBreak::NotAnObject { .. } => (
            FailureName::SeqGap,
            format!("entries[{i}] is not an object, so the hash chain cannot continue past it"),
        ),
        ChainBreak::SeqGap { .. } => (
            FailureName::SeqGap,
            format!(
                "entry {i} carries seq {} where {i} was expected: an entry was removed, inserted or reordered",
                seq_text(bundle.entries[i].expect("an object"))
            ),
        ),
        ChainBreak::PrevHashMismatch { .. } => (
            FailureName::PrevHashMismatch,
            format!(
                "entry {i}'s prev_hash is not the hash of entry {}: the chain was cut and re-joined here",
                i.saturating_sub(1)
            ),
        ),
        ChainBreak::HashMismatch { .. } => (
            FailureName::HashMismatch,
            format!(
                "entry {i}'s stored hash does not cover its contents: the entry was edited after it was \
                 written (entries after it are not checked further)"
            ),
        ),
    };
    log.at(name, i, detail);
}
