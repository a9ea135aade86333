//! A [`Json`] tree read from text already in the ledger's exact canonical form, in the one
//! pass that checks that form ([`crate::json::exact`]), for the verifier's streaming pass.
//!
//! For such a text the tree is the one [`crate::json::strict::parse_one`] gives: keys are
//! strictly increasing (so none repeats and the members are already sorted), strings without
//! an escape are borrowed, the few canonical escapes are decoded, and integers are the
//! `Number`s serde_json reads. `tests` below and the streaming pass's differential tests hold
//! the two readers equal.

use super::tree::{Json, Members};
use crate::json::exact::{self, Build, Exact};
use serde_json::Number;
use std::borrow::Cow;

/// `text` as a tree and its [`Exact`] layout, when it is one object in exact canonical form.
pub(crate) fn read(text: &[u8]) -> Option<(Exact, Json<'_>)> {
    exact::exact_with(
        text,
        Tree {
            members: Vec::with_capacity(32),
            elements: Vec::new(),
        },
    )
}

/// Members and elements of the objects and arrays still open, innermost last: each is moved
/// into a vector of its exact size when it closes, so a tree costs one allocation per object
/// and array, not several growing ones (an entry has 17 members). An entry's open members
/// fit in the first allocation.
struct Tree<'t> {
    members: Vec<(Cow<'t, str>, Json<'t>)>,
    elements: Vec<Json<'t>>,
}

impl<'t> Build<'t> for Tree<'t> {
    type Value = Json<'t>;
    /// Where the object's members begin on the stack.
    type Object = usize;
    type Array = usize;

    fn object(&mut self) -> usize {
        self.members.len()
    }
    fn member(&mut self, _: &mut usize, key: &'t str, value: Json<'t>) {
        self.members.push((Cow::Borrowed(key), value));
    }
    fn end_object(&mut self, start: usize) -> Json<'t> {
        let members = self.members.drain(start..).collect();
        Json::Object(Members::from_document_order(members, true))
    }
    fn array(&mut self) -> usize {
        self.elements.len()
    }
    fn element(&mut self, _: &mut usize, value: Json<'t>) {
        self.elements.push(value);
    }
    fn end_array(&mut self, start: usize) -> Json<'t> {
        Json::Array(self.elements.drain(start..).collect())
    }
    fn string(&mut self, raw: &'t str, escaped: bool) -> Json<'t> {
        Json::String(if escaped {
            Cow::Owned(unescape(raw))
        } else {
            Cow::Borrowed(raw)
        })
    }
    fn integer(&mut self, value: i64) -> Json<'t> {
        // serde_json reads a non-negative integer as a u64 and a negative one as an i64.
        Json::Number(match u64::try_from(value) {
            Ok(n) => Number::from(n),
            Err(_) => Number::from(value),
        })
    }
    fn literal(&mut self, value: Option<bool>) -> Json<'t> {
        value.map_or(Json::Null, Json::Bool)
    }
}

/// Decodes the escapes the canonical check admits (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
/// `\u00xx`); the check has already refused every other.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                out.extend(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::strict;

    /// Equal to the strict reader's tree wherever the canonical check accepts the text, and
    /// `None` (the strict reader then decides) wherever it does not.
    fn same_as_strict(text: &str) -> bool {
        let strict = strict::parse_one(text).ok().map(|p| p.value);
        match read(text.as_bytes()) {
            Some((_, tree)) => strict.as_ref() == Some(&tree),
            None => true,
        }
    }

    #[test]
    fn reads_what_the_strict_reader_reads() {
        let accepted = [
            r#"{}"#,
            r#"{"a":1,"b":-7,"c":0,"d":123456789012345}"#,
            r#"{"a":"x\"y\\z\b\f\n\r\t\u0001\u001f","b":"é ☃ 𝄞"}"#,
            r#"{"a":[],"b":[1,"2",[true,false,null],{"c":{}}],"hash":"ab","prev_hash":"cd"}"#,
            r#"{"context":{"a":null,"b":{"c":[{"d":"e"}]}},"event":"allow","seq":3}"#,
        ];
        for text in accepted {
            let (_, tree) = read(text.as_bytes()).unwrap_or_else(|| panic!("not read: {text}"));
            assert_eq!(
                Some(tree),
                strict::parse_one(text).ok().map(|p| p.value),
                "{text}"
            );
        }
    }

    #[test]
    fn leaves_everything_else_to_the_strict_reader() {
        let refused = [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{ "a":1}"#,
            r#"{"a":1.5}"#,
            r#"{"a":1e3}"#,
            r#"{"a":-0}"#,
            r#"{"a":01}"#,
            r#"{"a":1234567890123456}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\u000A"}"#,
            r#"{"a":"\/"}"#,
            r#"{"é":1}"#,
            r#"{"a":1}x"#,
            r#"[1]"#,
        ];
        for text in refused {
            assert!(read(text.as_bytes()).is_none(), "read: {text}");
            assert!(same_as_strict(text));
        }
    }

    /// Every byte string of a small alphabet up to a few bytes long, inside an object: the
    /// two readers never disagree on one the canonical check accepts.
    #[test]
    fn agrees_with_the_strict_reader_on_every_short_text() {
        let alphabet: &[&str] = &[
            "\"", "\\", "u", "0", "1", "-", ",", ":", "[", "]", "{", "}", "n", "t", "a",
        ];
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &texts {
                for a in alphabet {
                    next.push(format!("{t}{a}"));
                }
            }
            texts.extend(next);
        }
        let mut accepted = 0;
        for t in &texts {
            let text = format!("{{\"k\":{t}}}");
            assert!(same_as_strict(&text), "{text}");
            accepted += usize::from(read(text.as_bytes()).is_some());
        }
        assert!(
            accepted > 50,
            "the alphabet reaches accepted texts ({accepted})"
        );
    }
}
