//! The bundle as the verifier holds it: a JSON tree whose strings borrow the file's text and
//! whose objects are member lists sorted by name.
//!
//! A 10,000-entry bundle read into `serde_json::Value` is about 55 MB of small allocations
//! (a string per member name and value, B-tree nodes per object); in a short-lived process
//! most of that is first-touch page faults, and it was half of `verify`'s time. Here a
//! member name or string without escapes costs nothing, and an object is one vector.
//!
//! The tree means exactly what `serde_json::from_str::<Value>` reads (the last of two equal
//! member names wins, numbers are the same `Number`s), [`Json::to_value`] gives that `Value`
//! back, and [`Serialize`] writes what the `Value` would; the canonical form and the entry
//! hash are those of `crate::ledger`.

use crate::json::canonical::{self, CanonicalError};
use crate::ledger::chain;
use crate::ledger::fields::field;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// A JSON value whose strings borrow from the text it was read from where they can.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Members<'a>),
}

/// An object's members, sorted by name (UTF-8 byte order, as `serde_json::Map` iterates),
/// each name once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Members<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Members<'a> {
    pub fn new() -> Self {
        Members(Vec::new())
    }

    /// From members in document order, `in_order` when each name was greater than the one
    /// before (the common case: canonical JSON is written sorted). Otherwise they are sorted
    /// and, of equal names, the last one is kept, as `serde_json` does.
    pub fn from_document_order(mut members: Vec<(Cow<'a, str>, Json<'a>)>, in_order: bool) -> Self {
        if in_order {
            return Members(members);
        }
        members.sort_by(|a, b| a.0.cmp(&b.0)); // stable: equal names keep document order
        let mut kept: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(members.len());
        for m in members {
            match kept.last_mut() {
                Some(last) if last.0 == m.0 => *last = m,
                _ => kept.push(m),
            }
        }
        Members(kept)
    }

    pub fn get(&self, name: &str) -> Option<&Json<'a>> {
        // Names are sorted, so a scan compares first bytes and stops past the name's; only a
        // name with the same first byte and length is compared whole. Many names of an entry
        // share a length (`node`, `hash`, `task`, `tool`), and absent ones are asked for often.
        if self.0.len() <= 32 {
            let want = name.as_bytes();
            for (k, v) in &self.0 {
                let k = k.as_bytes();
                match k.first().cmp(&want.first()) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Greater => return None,
                    std::cmp::Ordering::Equal if k == want => return Some(v),
                    std::cmp::Ordering::Equal => {}
                }
            }
            return None;
        }
        self.0
            .binary_search_by(|(k, _)| k.as_ref().cmp(name))
            .ok()
            .map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_ref())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json<'a>)> + Clone {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The same object as a `serde_json::Map`.
    pub fn to_map(&self) -> Map<String, Value> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_value()))
            .collect()
    }

    /// Appends the RFC 8785 form, leaving out the member named `skip`.
    fn write_canonical(&self, skip: Option<&str>, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
        canonical::write_members(self.iter(), skip, Json::write_canonical, out)
    }
}

impl<'a> Json<'a> {
    /// A borrowed view of a parsed `Value` (strings are not copied).
    pub fn from_value(v: &'a Value) -> Self {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(Cow::Borrowed(s)),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            // A Map iterates sorted by name, each name once.
            Value::Object(m) => Json::Object(Members(
                m.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::from_value(v)))
                    .collect(),
            )),
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(m) => Value::Object(m.to_map()),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Members<'a>> {
        match self {
            Json::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Json<'a>>> {
        match self {
            Json::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Json::String(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Json::Array(_))
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Json::Number(_))
    }

    /// Appends the RFC 8785 form (as `canonical::write_value` writes the same `Value`).
    pub fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
        match self {
            Json::Null => out.extend_from_slice(b"null"),
            Json::Bool(true) => out.extend_from_slice(b"true"),
            Json::Bool(false) => out.extend_from_slice(b"false"),
            Json::Number(n) => canonical::write_number(n, out)?,
            Json::String(s) => canonical::write_string(s, out),
            Json::Array(items) => canonical::write_array(items, Json::write_canonical, out)?,
            Json::Object(m) => m.write_canonical(None, out)?,
        }
        Ok(())
    }
}

/// An entry's hash over its own `prev_hash`, as [`chain::own_hash`] computes it for the same
/// `Value` (`None` when it has no string `prev_hash` or cannot be written canonically).
pub fn own_hash(entry: &Json<'_>) -> Option<String> {
    let obj = entry.as_object()?;
    let prev = obj.get(field::PREV_HASH)?.as_str()?;
    chain::hash_onto(prev, |buf| obj.write_canonical(Some(field::HASH), buf)).ok()
}

/// Compact JSON, as `serde_json::Value` displays.
impl std::fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(items) => s.collect_seq(items),
            Json::Object(m) => m.serialize(s),
        }
    }
}

impl Serialize for Members<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A value as JSON with every character outside printable ASCII, and the space, escaped: it
/// holds no whitespace and no line break, so a message that prints it cannot have a line forged.
pub fn ascii_json(v: &Json) -> String {
    use std::fmt::Write as _;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_writes_what_the_value_writes() {
        let v = json!({"b": [1, 2.5, -3, "x\n\"", null, true, {"z": {}, "a": []}], "a": "é", "\u{10000}": 1, "\u{e000}": 2});
        let j = Json::from_value(&v);
        assert_eq!(j.to_value(), v);
        assert_eq!(
            serde_json::to_string(&j).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
        let mut ours = Vec::new();
        j.write_canonical(&mut ours).unwrap();
        assert_eq!(ours, canonical::to_vec(&v).unwrap());
        assert!(Json::from_value(&json!(1u64 << 60))
            .write_canonical(&mut Vec::new())
            .is_err());
    }

    #[test]
    fn own_hash_is_the_chains() {
        let mut m = json!({"v": 2, "seq": 0, "event": "root", "chain_id": "c", "hash": "x"})
            .as_object()
            .unwrap()
            .clone();
        chain::seal(&mut m, chain::GENESIS).unwrap();
        let v = Value::Object(m);
        assert_eq!(own_hash(&Json::from_value(&v)), chain::own_hash(&v));
        assert!(own_hash(&Json::String("not an object".into())).is_none());
    }

    #[test]
    fn document_order_keeps_the_last_of_equal_names() {
        let m = |k: &'static str, n: u64| (Cow::Borrowed(k), Json::Number(n.into()));
        let obj =
            Members::from_document_order(vec![m("b", 1), m("a", 2), m("b", 3), m("a", 4)], false);
        assert_eq!(Json::Object(obj).to_value(), json!({"a": 4, "b": 3}));
        let obj = Members::from_document_order(vec![m("a", 1), m("b", 2)], true);
        assert_eq!(obj.get("b"), Some(&Json::Number(2u64.into())));
        assert_eq!(obj.get("c"), None);
    }
}
