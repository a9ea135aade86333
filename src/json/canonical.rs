//! RFC 8785 JSON Canonicalization Scheme (JCS) over `serde_json::Value`.
//!
//! The ledger hash, the parameter commitments and the anchor signature are all computed over
//! these bytes, so this module is a format contract: it must agree byte for byte with the
//! attenu-guard reference (`canonical.py`). Like the reference, it refuses integers beyond
//! ±(2^53 − 1): RFC 8785 numbers are IEEE 754 doubles, and two distinct larger integers can
//! collapse to one double, which would let two different values sign alike.

use serde_json::Value;
use std::cmp::Ordering;

/// The largest integer magnitude a binary64 double represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("integer {0} exceeds the safe range ±(2^53 - 1) of an RFC 8785 number")]
    UnsafeInteger(String),
    #[error("non-finite numbers have no RFC 8785 form")]
    NonFinite,
}

/// The RFC 8785 canonical UTF-8 bytes of `value`.
pub fn to_vec(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(256);
    write_value(value, &mut out)?;
    Ok(out)
}

/// The canonical form as a `String` (always valid UTF-8).
pub fn to_string(value: &Value) -> Result<String, CanonicalError> {
    // The writer only ever emits valid UTF-8 (input strings are `str`, escapes are ASCII).
    Ok(String::from_utf8(to_vec(value)?).expect("canonical JSON is UTF-8"))
}

/// Appends the canonical form of `value` to `out`.
pub fn write_value(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => write_array(items, write_value, out)?,
        Value::Object(map) => write_object(map, None, out)?,
    }
    Ok(())
}

/// Appends the canonical form of an object, leaving out the member named `skip` (the chain
/// hashes an entry without its own `hash`, and this avoids copying the entry to drop it).
pub fn write_object(
    map: &serde_json::Map<String, Value>,
    skip: Option<&str>,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    write_members(
        map.iter().map(|(k, v)| (k.as_str(), v)),
        skip,
        write_value,
        out,
    )
}

/// Appends an array, each element written by `write_item`. Shared by every JSON tree written
/// here (`serde_json::Value`, and the verifier's borrowed `json::tree::Json`).
pub(crate) fn write_array<'v, V: 'v>(
    items: impl IntoIterator<Item = &'v V>,
    write_item: impl Fn(&V, &mut Vec<u8>) -> Result<(), CanonicalError> + Copy,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_item(item, out)?;
    }
    out.push(b']');
    Ok(())
}

/// Appends an object with its members sorted as RFC 8785 sorts them, whatever order they come
/// in, each value written by `write_item`, leaving out the member named `skip`.
///
/// Members usually arrive sorted already (a `serde_json::Map` without `preserve_order`, or the
/// verifier's tree), and one pass confirms it. They must never be trusted to: any crate in a
/// build can turn on serde_json's `preserve_order`, which makes every `Map` iterate in
/// insertion order.
pub(crate) fn write_members<'v, V: 'v>(
    members: impl Iterator<Item = (&'v str, &'v V)> + Clone,
    skip: Option<&str>,
    write_item: impl Fn(&V, &mut Vec<u8>) -> Result<(), CanonicalError> + Copy,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    let kept = members.filter(|(k, _)| Some(*k) != skip);
    if in_code_unit_order(kept.clone().map(|(k, _)| k)) {
        return write_in_order(kept, write_item, out);
    }
    let mut sorted: Vec<(&str, &V)> = kept.collect();
    sorted.sort_by(|a, b| utf16_cmp(a.0, b.0));
    write_in_order(sorted.into_iter(), write_item, out)
}

fn write_in_order<'v, V: 'v>(
    members: impl Iterator<Item = (&'v str, &'v V)>,
    write_item: impl Fn(&V, &mut Vec<u8>) -> Result<(), CanonicalError> + Copy,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    out.push(b'{');
    for (i, (key, item)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(key, out);
        out.push(b':');
        write_item(item, out)?;
    }
    out.push(b'}');
    Ok(())
}

/// Whether `names` are strictly ascending in UTF-16 code unit order, checked cheaply: UTF-8
/// byte order is code point order, which UTF-16 order differs from only for names holding a
/// character at or above U+E000 (lead byte 0xEE or more); such a name takes the slow path.
fn in_code_unit_order<'n>(names: impl Iterator<Item = &'n str>) -> bool {
    let mut previous: Option<&str> = None;
    for name in names {
        if name.bytes().any(|b| b >= 0xEE) || previous.is_some_and(|p| p >= name) {
            return false;
        }
        previous = Some(name);
    }
    true
}

/// RFC 8785 sorts member names by their UTF-16 code units, not by UTF-8 bytes: the two orders
/// differ for characters above U+FFFF against those in U+E000..U+FFFF.
pub(crate) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

pub(crate) fn write_number(
    n: &serde_json::Number,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(CanonicalError::UnsafeInteger(i.to_string()));
        }
        // Writing into a Vec cannot fail.
        let _ = std::io::Write::write_fmt(out, format_args!("{i}"));
        return Ok(());
    }
    if let Some(u) = n.as_u64() {
        // Only reached above i64::MAX, which is always unsafe.
        return Err(CanonicalError::UnsafeInteger(u.to_string()));
    }
    let f = n.as_f64().ok_or(CanonicalError::NonFinite)?;
    write_f64(f, out)
}

/// ECMAScript `Number::toString` of a double, which is what RFC 8785 prescribes.
pub fn write_f64(f: f64, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    if !f.is_finite() {
        return Err(CanonicalError::NonFinite);
    }
    if f == 0.0 {
        out.push(b'0'); // -0 is written as 0
        return Ok(());
    }
    if f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER as f64 {
        let mut buf = ryu_js::Buffer::new();
        return Err(CanonicalError::UnsafeInteger(
            buf.format_finite(f).to_string(),
        ));
    }
    let mut buf = ryu_js::Buffer::new();
    out.extend_from_slice(buf.format_finite(f).as_bytes());
    Ok(())
}

pub(crate) fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(v: Value) -> String {
        to_string(&v).unwrap()
    }

    #[test]
    fn members_are_sorted_whatever_order_they_arrive_in() {
        // What a `Map` with serde_json's `preserve_order` (turned on by any crate in the build)
        // hands over: insertion order. The form must not depend on it.
        let members: Vec<(&str, Value)> = vec![
            ("b", json!(1)),
            ("a", json!(2)),
            ("\u{FB01}", json!(3)),
            ("c", json!(4)),
        ];
        let mut out = Vec::new();
        write_members(
            members.iter().map(|(k, v)| (*k, v)),
            None,
            write_value,
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"a\":2,\"b\":1,\"c\":4,\"\u{FB01}\":3}"
        );
    }

    #[test]
    fn sorts_members_by_utf16_code_units() {
        // U+1F600 (surrogates D83D DE00) sorts before U+FB01 in UTF-16, after it in UTF-8.
        let v: Value = serde_json::from_str(r#"{"\ufb01":1,"\ud83d\ude00":2,"a":3}"#).unwrap();
        assert_eq!(c(v), "{\"a\":3,\"\u{1F600}\":2,\"\u{FB01}\":1}");
    }

    #[test]
    fn the_map_order_shortcut_agrees_with_utf16_sorting() {
        // Names below U+E000 take the shortcut; the result must be the sorted order anyway.
        let names = [
            "b", "a", "é", "\u{4e2d}", "A", "_", "~", "\u{d7ff}", "aa", "",
        ];
        let obj: serde_json::Map<String, Value> =
            names.iter().map(|n| (n.to_string(), json!(1))).collect();
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_by(|a, b| utf16_cmp(a, b));
        let expected = format!(
            "{{{}}}",
            sorted
                .iter()
                .map(|n| format!("{}:1", serde_json::to_string(n).unwrap()))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(c(Value::Object(obj)), expected);
    }

    #[test]
    fn numbers_follow_ecmascript() {
        assert_eq!(c(json!(1.0)), "1");
        assert_eq!(c(json!(-0.0)), "0");
        assert_eq!(c(json!(1e-7)), "1e-7");
        assert_eq!(c(json!(0.000001)), "0.000001");
        assert_eq!(c(json!(123456789012345.6)), "123456789012345.6");
        assert_eq!(c(json!(9007199254740991_i64)), "9007199254740991");
        assert_eq!(c(json!(-9007199254740991_i64)), "-9007199254740991");
    }

    #[test]
    fn refuses_unsafe_integers() {
        assert!(to_vec(&json!(9007199254740992_i64)).is_err());
        assert!(to_vec(&json!(u64::MAX)).is_err());
        assert!(to_vec(&json!(9007199254740992.0)).is_err());
        // Every double of magnitude 2^53 or more is integral, so 1e21 is refused as well.
        assert!(to_vec(&json!(1e21)).is_err());
    }

    #[test]
    fn escapes_only_what_rfc8785_escapes() {
        assert_eq!(
            c(json!("a\"\\\u{8}\u{c}\n\r\t\u{1}\u{1f}/é\u{2028}")),
            "\"a\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f/é\u{2028}\""
        );
    }

    #[test]
    fn rfc8785_example() {
        let v: Value = serde_json::from_str(
            r#"{"numbers":[333333333.33333329,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}"#,
        )
        .unwrap();
        assert_eq!(
            c(v),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }
}
