//! Reading the inputs: a bundle file's bytes (strictly: no duplicate member names, a depth
//! limit).

use super::{verify_bundle_with, AnchorKey, Failure, FailureName, Report, Value};
use crate::json::{strict, SyntaxError};
use crate::ledger::fields::ENTRY_MARKERS;

/// Why a bundle file could not be used at all (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("the bundle is not JSON ({0}); pass the bundle-<session>.json file `attenu-hook export` wrote")]
    /// The JSON reader's own error.
    NotJson(SyntaxError),
    /// What the verifier's reader refused is not known here (a caller that read the file
    /// with another reader first).
    #[error("the bundle is not JSON (unreadable); pass the bundle-<session>.json file `attenu-hook export` wrote")]
    Unreadable,
    #[error("the bundle is not JSON (not UTF-8: {0}); pass the bundle-<session>.json file `attenu-hook export` wrote")]
    NotUtf8(std::str::Utf8Error),
    #[error(
        "the bundle nests arrays and objects deeper than this verifier reads (128 levels; {0}); \
         `attenu-hook export` never writes one that deep, so this file was made or changed by something else"
    )]
    TooDeep(SyntaxError),
    #[error(
        "this is a session ledger (one JSON entry per line), not a bundle; a ledger carries no signed \
         anchor to verify. Export it first: `attenu-hook export --project DIR --session ID`, then \
         verify the bundle-<session>.json it writes"
    )]
    Ledger,
    /// What the file holds instead (`an array`, `an object with no "entries" or "anchor"`...).
    #[error(
        "the file is JSON but not an evidence bundle (it is {0}); pass the bundle-<session>.json file \
         `attenu-hook export` wrote, or a proof from `attenu-hook prove`"
    )]
    NotABundle(String),
}

/// Parses a bundle file's bytes and verifies it. Unlike [`verify_bundle`](super::verify_bundle), which receives an
/// already parsed value, this also refuses a member name that occurs twice in one object
/// (`duplicate-member`): which of the two a JSON reader keeps differs between readers.
pub fn verify_bundle_bytes(bytes: &[u8], key: &AnchorKey) -> Result<Report, InputError> {
    verify_parsed(bytes, key).map(|(report, _tree)| report)
}

/// [`verify_bundle_bytes`], also handing back the parsed tree, so that a caller about to exit
/// (`attenu-hook verify`) can let the process end without freeing it.
pub fn verify_parsed<'b>(
    bytes: &'b [u8],
    key: &AnchorKey,
) -> Result<(Report, crate::json::tree::Json<'b>), InputError> {
    let text = std::str::from_utf8(bytes).map_err(InputError::NotUtf8)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let parsed = strict::parse(text).map_err(|e| {
        let e = SyntaxError::from(e);
        if e.is_too_deep() {
            InputError::TooDeep(e)
        } else if first_line_is_ledger_entry(text) {
            InputError::Ledger
        } else {
            InputError::NotJson(e)
        }
    })?;
    not_a_bundle(&parsed.value)?;
    let mut report = verify_bundle_with(&parsed.value, key, parsed.entry_hashes);
    if let Some(dup) = parsed.duplicate {
        // Found while reading, so reported first.
        report.failures.insert(
            0,
            Failure {
                name: FailureName::DuplicateMember,
                reference_reason: None,
                index: None,
                seq: None,
                node: None,
                call_id: None,
                detail: format!(
                    "{dup}: a member name occurs twice in one object, and JSON readers disagree about which \
                     one counts, so two reviewers could read two different ledgers; the file was not \
                     written by an honest export"
                ),
            },
        );
        report.valid = false;
    }
    Ok((report, parsed.value))
}

/// A bundle is an object with `entries` or an `anchor`; anything else is the wrong file, not a
/// tampered bundle (exit 2, with what to pass instead). A bundle that lost both members is
/// indistinguishable from one, and says so.
fn not_a_bundle(value: &Value) -> Result<(), InputError> {
    let Some(members) = value.as_object() else {
        return Err(InputError::NotABundle(
            super::json::kind(Some(value)).into(),
        ));
    };
    if members.contains_key("entries") || members.contains_key("anchor") {
        return Ok(());
    }
    if is_ledger_entry(members) {
        return Err(InputError::Ledger);
    }
    Err(InputError::NotABundle(
        "an object with neither \"entries\" nor \"anchor\"".into(),
    ))
}

/// An object with a ledger entry's own members (`event`, `prev_hash`, `hash`).
fn is_ledger_entry(members: &super::Obj) -> bool {
    ENTRY_MARKERS.iter().all(|k| members.contains_key(k))
}

/// A ledger file is one entry per line, so it is not one JSON document: its first line is.
/// Only a first line that ends is read (a bundle cut short, one line, is not parsed twice).
fn first_line_is_ledger_entry(text: &str) -> bool {
    let Some((line, _)) = text.split_once('\n') else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| ENTRY_MARKERS.iter().all(|k| o.contains_key(*k)))
        })
        .unwrap_or(false)
}
