//! Values from the bundle as messages print them: bare when that is safe, escaped otherwise,
//! so that no value can forge a line of output.

use super::{Obj, Value};
use std::fmt::Write as _;

/// Printable ASCII other than space, `"` and `\`: printed as it is.
pub(super) fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

/// A value as JSON with every character outside printable ASCII, and the space, escaped: it
/// holds no whitespace and no line break, so it cannot forge a line of output.
pub(super) fn escaped(v: &Value) -> String {
    let json = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(json.len());
    for ch in json.chars() {
        if (ch as u32) > 0x20 && (ch as u32) < 0x7f {
            out.push(ch);
        } else {
            let mut buf = [0u16; 2];
            for unit in ch.encode_utf16(&mut buf) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
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
pub(in crate::evidence) fn shown_str_escaped(s: &str) -> String {
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
    shown_opt(e.get("seq"))
}
