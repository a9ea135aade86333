//! Values from the bundle as messages print them: bare when that is safe, escaped otherwise,
//! so that no value can forge a line of output.

use super::{Obj, Value};
use crate::ledger::fields::field;

/// Printable ASCII other than space, `"` and `\`: printed as it is.
pub(super) fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

/// A value as JSON with everything outside printable ASCII, and the space, escaped
/// ([`crate::json::tree::ascii_json`]): it cannot forge a line of output.
pub(super) fn escaped(v: &Value) -> String {
    crate::json::tree::ascii_json(v)
}

/// A value from the bundle as a message prints it: bare when that is safe, escaped otherwise.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) if is_bare(s) => s.to_string(),
        Value::Null | Value::Bool(_) | Value::Number(_) => v.to_string(),
        _ => escaped(v),
    }
}

pub(super) fn shown_str(s: &str) -> String {
    if is_bare(s) {
        s.to_string()
    } else {
        shown_str_escaped(s)
    }
}

/// A string as JSON, escaped whether or not it would be safe bare.
pub(super) fn shown_str_escaped(s: &str) -> String {
    escaped(&Value::String(s.into()))
}

pub(super) fn shown_opt(v: Option<&Value>) -> String {
    v.map(shown).unwrap_or_else(|| "(absent)".into())
}

pub(super) fn shown_list<'a, I: IntoIterator<Item = &'a str>>(items: I) -> String {
    let parts: Vec<String> = items.into_iter().map(shown_str).collect();
    format!("[{}]", parts.join(", "))
}

pub(super) fn seq_text(e: &Obj) -> String {
    shown_opt(e.get(field::SEQ))
}
