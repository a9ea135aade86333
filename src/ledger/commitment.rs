//! Commitments: what an entry holds in place of raw tool arguments, results and error text.
//!
//! Arguments are committed as `SHA-256(params_salt || JCS(tool_input))` (the reference's
//! `params_c14n_v1`); results and error text as salted commitments domain-separated from
//! argument commitments, so one can never be replayed as the other. A raw copy is written only
//! with `[privacy] raw_capture`.

use crate::json::canonical;
use crate::ledger::chain::{hex, sha256_hex, unhex};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `params_c14n_v1`: `SHA-256(raw_salt || JCS(value))`, or `None` outside the JCS domain.
pub fn commit(value: &Value, salt_hex: &str) -> Option<String> {
    let salt = unhex(salt_hex)?;
    let body = canonical::to_vec(value).ok()?;
    let mut h = Sha256::new();
    h.update(&salt);
    h.update(&body);
    Some(hex(&h.finalize()))
}

/// A commitment to free text or a result, bound to the chain's salt and to `label`.
pub fn commit_labeled(label: &str, value: &Value, salt_hex: &str) -> Option<String> {
    let body = canonical::to_vec(value).ok()?;
    let mut h = Sha256::new();
    h.update(unhex(salt_hex)?);
    h.update(label.as_bytes());
    h.update([0]);
    h.update(&body);
    Some(hex(&h.finalize()))
}

/// A digest of arbitrary bytes for a record that must not carry them.
pub fn digest_text(s: &str) -> String {
    sha256_hex(s.as_bytes())
}

/// How deep a raw copy may nest inside an entry. The payload was read with serde_json's limit
/// of 128 levels, but the entry puts a raw copy two levels down (entry, `context`), and a bundle
/// two more (bundle, `entries`): a value near the limit would be written to a line that no
/// JSON reader with that limit can read back, and every later call of the session would deny.
pub const MAX_RAW_NESTING: usize = 64;

/// An opt-in raw copy of a value. A value with no RFC 8785 form (an integer beyond 2^53, say)
/// would make the whole entry unsealable, and so the decision unrecordable; a value nested
/// deeper than [`MAX_RAW_NESTING`] would make the ledger unreadable. Either is kept instead as
/// its JSON text under `<key>_json`, which is a string, so always readable and always
/// canonical.
#[derive(Debug, Default)]
pub struct RawCopy<'a> {
    /// Written under `<key>`.
    pub value: Option<&'a Value>,
    /// Written under `<key>_json`.
    pub json: Option<String>,
}

impl<'a> RawCopy<'a> {
    pub fn of(v: &'a Value) -> Self {
        if nesting(v, MAX_RAW_NESTING + 1) <= MAX_RAW_NESTING && canonical::to_vec(v).is_ok() {
            RawCopy {
                value: Some(v),
                json: None,
            }
        } else {
            RawCopy {
                value: None,
                json: Some(v.to_string()),
            }
        }
    }
}

/// How many arrays and objects nest in `v` (a scalar is 0), counting no further than `cap`.
/// Recursion is bounded: `v` was parsed with serde_json's depth limit, and `cap` stops early.
fn nesting(v: &Value, cap: usize) -> usize {
    let inner = |items: &mut dyn Iterator<Item = &Value>| {
        if cap == 0 {
            return 1;
        }
        1 + items.map(|c| nesting(c, cap - 1)).max().unwrap_or(0)
    };
    match v {
        Value::Array(a) => inner(&mut a.iter()),
        Value::Object(o) => inner(&mut o.values()),
        _ => 0,
    }
}
