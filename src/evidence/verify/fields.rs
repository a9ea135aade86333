//! Steps (3) and (4): every entry read whole (an object, a known event, only the ledger's
//! field names), and a node id that is a string.

use super::json::{event_of, get, kind};
use super::shown::{shown, shown_list, shown_opt};
use super::{Bundle, FailureName, Log, Obj, Value};
use crate::ledger::fields::{event, field};
use crate::ledger::fields::{is_ledger_field, LEDGER_EVENTS};

/// Step (3). True when every entry is an object with a known event and known fields.
pub(super) fn check_entries(bundle: &Bundle<'_>, log: &mut Log<'_>) -> bool {
    let mut ok = true;
    for (i, e) in bundle.entries.iter().enumerate() {
        let Some(e) = e else {
            ok = false;
            log.at(
                FailureName::InvalidLedgerEntry,
                i,
                format!(
                    "entries[{i}] is {}, not an object; the chain breaks here",
                    kind(Some(&bundle.raw_entries[i]))
                ),
            );
            continue;
        };
        ok &= known_event(e, bundle.v, i, log);
        ok &= known_fields(e, i, log);
    }
    ok
}

pub(super) fn known_event(
    e: &Obj<'_>,
    bundle_v: Option<i128>,
    i: usize,
    log: &mut Log<'_>,
) -> bool {
    let ev = e.get(field::EVENT);
    let known = match ev.and_then(Value::as_str) {
        Some(event::OUTCOME) => bundle_v != Some(1),
        Some(s) => LEDGER_EVENTS.contains(&s),
        None => false,
    };
    if known {
        return true;
    }
    let why = match ev {
        Some(Value::String(s)) if s == event::OUTCOME => {
            "is a version 2 event on a version 1 chain"
        }
        Some(Value::String(_)) => "is not one this verifier evaluates",
        _ => "is not a string",
    };
    log.at(
        FailureName::UnknownLedgerEvent,
        i,
        format!(
            "the entry's event {} {why}; no check would read the entry, so it is refused rather than skipped",
            shown_opt(ev)
        ),
    );
    false
}

pub(super) fn known_fields(e: &Obj<'_>, i: usize, log: &mut Log<'_>) -> bool {
    let mut extra: Vec<&str> = e.keys().filter(|f| !is_ledger_field(f)).collect();
    if extra.is_empty() {
        return true;
    }
    extra.sort();
    log.at(
        FailureName::UnknownLedgerField,
        i,
        format!(
            "the entry carries field(s) {} that the ledger format does not define; they would be read by \
             nothing (and could carry data that must not leave the project), so the entry is refused",
            shown_list(extra)
        ),
    );
    false
}

/// Step (4): a node id is a string (root, spawn and allow are judged where their node is read).
pub(super) fn check_node_ids(bundle: &Bundle<'_>, log: &mut Log<'_>) {
    for (i, e) in bundle.objects() {
        node_id(e, i, log);
    }
}

/// Step (4) for the entry at `i` (the streaming pass's too); false when it logged.
pub(super) fn node_id(e: &Obj<'_>, i: usize, log: &mut Log<'_>) -> bool {
    if matches!(event_of(e), Some(event::ROOT | event::SPAWN | event::ALLOW)) {
        return true;
    }
    match get(e, field::NODE) {
        Some(n) if !n.is_string() => {
            log.at(
                FailureName::InvalidNode,
                i,
                format!("the entry's node {} is not a string", shown(n)),
            );
            false
        }
        _ => true,
    }
}
