//! Reading a bundle file: one pass that builds the JSON tree and notes a member name that
//! occurs twice in one object (which of the two a reader keeps differs between readers, so
//! the verifier reports it), with the entries parsed on every core.
//!
//! The tree ([`Json`], strings borrowed from the text) means what `serde_json::from_str::<Value>`
//! reads (the last of two equal members wins), so the verdict on everything else is unchanged;
//! only the duplicate is reported besides.

use super::tree::{self, Json, Members};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Number;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

/// Below this many entries one thread is faster than starting others.
const PARALLEL_FROM: usize = 512;

/// A parsed bundle and the first repeated member name found, if any.
pub struct Parsed<'a> {
    pub value: Json<'a>,
    pub duplicate: Option<String>,
    /// For a top-level `entries` array: each element's [`tree::own_hash`], computed by the
    /// thread that parsed it while it was still in cache.
    pub entry_hashes: Option<Vec<Option<String>>>,
}

/// Parses `text` as JSON. Errors are the syntax errors of `serde_json`, with line and column.
pub fn parse(text: &str) -> Result<Parsed<'_>, serde_json::Error> {
    let dup = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let top = Reader::new(&dup, Keep::Members).deserialize(&mut de)?;
    de.end()?;
    let mut duplicate = dup.into_inner();
    let mut entry_hashes = None;
    let value = match top {
        Node::Value(v) => v,
        // Only the top level keeps members, and only `entries` keeps raw elements.
        Node::Raws(_) => unreachable!("raw elements are kept for `entries` only"),
        Node::Members(members) => {
            let mut out = Vec::with_capacity(members.len());
            let mut names = HashSet::new();
            for (name, member) in members {
                let value = match member {
                    Node::Raws(raws) => {
                        let (v, hashes, dup) = parse_entries(&raws)?;
                        if duplicate.is_none() {
                            duplicate = dup;
                        }
                        // Of two `entries` members the last counts, as for the value.
                        entry_hashes = Some(hashes);
                        v
                    }
                    Node::Value(v) => {
                        if name == "entries" {
                            entry_hashes = None;
                        }
                        v
                    }
                    Node::Members(_) => unreachable!("members are kept at the top level only"),
                };
                if !names.insert(name.clone()) && duplicate.is_none() {
                    duplicate = Some(format!("duplicate member {}", quoted(&name)));
                }
                out.push((name, value));
            }
            Json::Object(Members::from_document_order(out, false))
        }
    };
    Ok(Parsed {
        value,
        duplicate,
        entry_hashes,
    })
}

/// Parses one value (a bundle's entry, read on its own) as [`parse`] reads each entry: the
/// tree serde_json reads, and the first repeated member name.
pub fn parse_one(text: &str) -> Result<Parsed<'_>, serde_json::Error> {
    let dup = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict(&dup).deserialize(&mut de)?;
    de.end()?;
    Ok(Parsed {
        value,
        duplicate: dup.into_inner(),
        entry_hashes: None,
    })
}

type Hashes = Vec<Option<String>>;

/// The entries array, its elements parsed (and hashed) in parallel.
fn parse_entries<'a>(
    raws: &[&'a RawValue],
) -> Result<(Json<'a>, Hashes, Option<String>), serde_json::Error> {
    let parsed = crate::par::map(raws, PARALLEL_FROM, |i, raw| {
        parse_one(raw.get()).map(|p| {
            let hash = tree::own_hash(&p.value);
            let dup = p.duplicate.map(|d| format!("{d} in entries[{i}]"));
            (p.value, hash, dup)
        })
    });
    let mut values = Vec::with_capacity(raws.len());
    let mut hashes = Vec::with_capacity(raws.len());
    let mut duplicate = None;
    for p in parsed {
        let (value, hash, dup) = p?;
        values.push(value);
        hashes.push(hash);
        if duplicate.is_none() {
            duplicate = dup;
        }
    }
    Ok((Json::Array(values), hashes, duplicate))
}

/// A member name as a failure prints it: JSON-quoted, with everything outside printable ASCII
/// escaped, so a name carrying a bidi override or a line separator cannot spoof the report.
fn quoted(s: &str) -> String {
    tree::ascii_json(&Json::String(Cow::Borrowed(s)))
}

/// What [`Reader`] keeps of a value: its tree, or (as asked) an object's members in order
/// with repeats, or an array's elements as raw text (syntax checked) for [`parse_entries`].
enum Node<'a> {
    Value(Json<'a>),
    Members(Vec<(Cow<'a, str>, Node<'a>)>),
    Raws(Vec<&'a RawValue>),
}

/// Which shape [`Reader`] keeps apart from a plain tree.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The top level: an object's members, with `entries` read as [`Keep::Raws`].
    Members,
    /// `entries`: an array's elements as raw text.
    Raws,
}

/// Reads the document's top level and its `entries`; everything else, and any value of
/// another shape than the one kept, is built by [`Strict`].
struct Reader<'d> {
    dup: &'d RefCell<Option<String>>,
    keep: Keep,
}

impl<'d> Reader<'d> {
    fn new(dup: &'d RefCell<Option<String>>, keep: Keep) -> Self {
        Reader { dup, keep }
    }
}

/// A seed that reads any JSON value with itself as the visitor, into `$value<'de>`.
macro_rules! seed_of_any_value {
    ($seed:ty => $value:ident) => {
        impl<'de> DeserializeSeed<'de> for $seed {
            type Value = $value<'de>;
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<$value<'de>, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

seed_of_any_value!(Reader<'_> => Node);

impl<'de> Visitor<'de> for Reader<'_> {
    type Value = Node<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        if self.keep != Keep::Members {
            return Strict(self.dup).visit_map(map).map(Node::Value);
        }
        let mut members = Vec::new();
        while let Some(k) = map.next_key_seed(Name)? {
            let member = if k == "entries" {
                map.next_value_seed(Reader::new(self.dup, Keep::Raws))?
            } else {
                Node::Value(map.next_value_seed(Strict(self.dup))?)
            };
            members.push((k, member));
        }
        Ok(Node::Members(members))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        if self.keep != Keep::Raws {
            return Strict(self.dup).visit_seq(seq).map(Node::Value);
        }
        let mut raws = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            raws.push(raw);
        }
        Ok(Node::Raws(raws))
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_bool(b).map(Node::Value)
    }
    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_i64(n).map(Node::Value)
    }
    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_u64(n).map(Node::Value)
    }
    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_f64(f).map(Node::Value)
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_borrowed_str(s).map(Node::Value)
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_str(s).map(Node::Value)
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_string(s).map(Node::Value)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_unit().map(Node::Value)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Node<'de>, E> {
        Strict(self.dup).visit_none().map(Node::Value)
    }
}

/// A member name, borrowed from the text unless it holds an escape.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        // A ledger field's name points at one static copy, not at each entry's own text: the
        // checks look fields up by name many times, and far-apart names would miss the cache.
        Ok(Cow::Borrowed(
            crate::ledger::fields::ledger_field(s).unwrap_or(s),
        ))
    }
    fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(crate::ledger::fields::ledger_field(s)
            .map_or_else(|| Cow::Owned(s.to_owned()), Cow::Borrowed))
    }
    fn visit_string<E>(self, s: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s))
    }
}

/// A seed reading one value as [`parse`] reads a bundle's members other than `entries`, for a
/// reader that streams the bundle: the tree, with a repeated member name noted in `dup`.
pub struct MemberSeed<'a>(pub &'a RefCell<Option<String>>);

impl<'de> DeserializeSeed<'de> for MemberSeed<'_> {
    type Value = Json<'de>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        Strict(self.0).deserialize(d)
    }
}

/// Builds the tree serde_json would read, noting the first repeated member name at the
/// point serde_json's own reader would meet it.
struct Strict<'a>(&'a RefCell<Option<String>>);

impl Strict<'_> {
    fn note_repeat(&self, name: &str) {
        let mut dup = self.0.borrow_mut();
        if dup.is_none() {
            *dup = Some(format!("duplicate member {}", quoted(name)));
        }
    }
}

seed_of_any_value!(Strict<'_> => Json);

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Json<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(f).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(v) = seq.next_element_seed(Strict(self.0))? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        // Names in increasing order (canonical JSON) cannot repeat; past the first one out of
        // order, a set of the names seen finds a repeat without a quadratic scan.
        let mut in_order = true;
        let mut seen: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(k) = map.next_key_seed(Name)? {
            let v = map.next_value_seed(Strict(self.0))?;
            if in_order && members.last().is_some_and(|(last, _)| k <= *last) {
                in_order = false;
                seen = Some(members.iter().map(|(name, _)| name.clone()).collect());
            }
            if let Some(seen) = seen.as_mut() {
                if !seen.insert(k.clone()) {
                    self.note_repeat(&k);
                }
            }
            members.push((k, v));
        }
        Ok(Json::Object(Members::from_document_order(
            members, in_order,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn the_tree_is_serde_jsons_and_a_repeat_is_noted() {
        for text in [
            r#"{"a":1,"b":[1,2.5,"x",null,true,{"c":{}}],"entries":[{"x":1},{"y":[]}]}"#,
            r#"[1,2,3]"#,
            r#""s""#,
            r#"{"entries":"not a list"}"#,
            "{\"entries\":[1e400]}",
        ] {
            let ours = parse(text);
            let theirs = serde_json::from_str::<Value>(text);
            match (ours, theirs) {
                (Ok(p), Ok(v)) => {
                    assert_eq!(p.value.to_value(), v, "{text}");
                    assert!(p.duplicate.is_none(), "{text}");
                }
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{text}: {:?} vs {:?}", a.map(|p| p.value.to_value()), b),
            }
        }
        let p = parse(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(p.value.to_value(), json!({"a": 2}));
        assert_eq!(p.duplicate.as_deref(), Some(r#"duplicate member "a""#));
        // Regression: the name was quoted by serde_json alone, which leaves U+202E (a bidi
        // override), C1 controls and U+2028 as they are, and the failure line is printed.
        let p = parse("{\"a\u{202e}\u{85}\u{2028}\":1,\"a\u{202e}\u{85}\u{2028}\":2}").unwrap();
        assert_eq!(
            p.duplicate.as_deref(),
            Some(r#"duplicate member "a\u202e\u0085\u2028""#)
        );
        let many: Vec<String> = (0..2000).map(|i| format!(r#"{{"i":{i}}}"#)).collect();
        let text = format!(r#"{{"entries":[{},{{"k":1,"k":2}}]}}"#, many.join(","));
        let p = parse(&text).unwrap();
        assert_eq!(p.value.to_value()["entries"][2000], json!({"k": 2}));
        assert_eq!(
            p.duplicate.as_deref(),
            Some(r#"duplicate member "k" in entries[2000]"#)
        );
        // Escaped and out-of-order names, a repeat inside a nested object, names on both sides
        // of U+E000: the same tree, the repeat the streaming reader meets first, and the
        // entry hash the ledger computes for the same value.
        let text = r#"{"entries":[{"z\u0041":"\u00e9\n","b":{"y":1,"x":2,"y":3},"a":[{"\ud800\udc00":1,"\ue000":2}],"b2":1,"prev_hash":"00"}],"v":2}"#;
        let p = parse(text).unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(p.value.to_value(), v);
        assert_eq!(
            p.duplicate.as_deref(),
            Some(r#"duplicate member "y" in entries[0]"#)
        );
        assert_eq!(
            p.entry_hashes.unwrap()[0],
            crate::ledger::chain::own_hash(&v["entries"][0])
        );
        let p = parse(r#"{"b":1,"a":{"c":1,"c":2},"b":2}"#).unwrap();
        assert_eq!(p.duplicate.as_deref(), Some(r#"duplicate member "c""#));
        assert!(parse(r#"{"a":1,}"#).is_err());
        assert!(parse(r#"{"entries":[1,]}"#).is_err());
        assert!(parse("{} x").is_err());
    }
}
