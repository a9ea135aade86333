//! Notices: what the ledger itself records about its own history that a reviewer must weigh,
//! though every check passes. Today one kind: an entry whose `context.checkpoint_lost` says the
//! hook found its sealed state missing or broken beside a non-empty ledger, so entries
//! before it may have been cut off unnoticed (docs/FORMATS.md, "Lost sealed state"). The
//! reference verifier reads `context` as free-form and reports nothing; a valid bundle with a
//! notice makes `verify` exit `Exit::ValidWithNotice` (`exit_of` in `crate::cli::verify`).

use super::json::seq_value;
use super::shown::shown;
use super::{Bundle, Value};
use crate::ledger::fields::field;
use serde::Serialize;

/// One notice, about the entry at `index`.
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    /// `checkpoint-lost` (the name is output, kept from before the sealed state was renamed).
    pub name: &'static str,
    pub index: usize,
    pub seq: Option<i64>,
    /// One line, safe to print: values from the bundle are escaped.
    pub detail: String,
}

pub(super) fn collect(bundle: &Bundle<'_>) -> Vec<Notice> {
    let mut out = Vec::new();
    for (i, e) in bundle.objects() {
        let Some(loss) = e
            .get(field::CONTEXT)
            .and_then(Value::as_object)
            .and_then(|c| c.get(crate::ledger::store::CHECKPOINT_LOST))
        else {
            continue;
        };
        let field = |k: &str| {
            loss.as_object()
                .and_then(|o| o.get(k))
                .map_or_else(|| "?".to_string(), shown)
        };
        out.push(Notice {
            name: "checkpoint-lost",
            index: i,
            seq: seq_value(e.get(field::SEQ)),
            detail: format!(
                "before this entry the hook found the ledger's sealed state {} with {} entries \
                 ({} bytes) on file: they verified, but nothing shows entries after them were not cut off \
                 first; compare with a checkpoint shipped off the machine or another copy of the ledger",
                match loss.as_object().and_then(|o| o.get("cause")).and_then(Value::as_str) {
                    Some("missing") => "missing",
                    Some("seal-broken") => "broken (its seal failed)",
                    _ => "unreadable",
                },
                field("entries"),
                field("ledger_bytes"),
            ),
        });
    }
    out
}
