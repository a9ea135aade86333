//! Whether a JSON text is exactly the RFC 8785 form the ledger writes (checked byte by byte,
//! for the subset of JSON the ledger uses), and if so its entry hash straight from its own
//! bytes: SHA-256 of its `prev_hash` and the text without its top-level `hash` member.
//! Shared by the ledger's re-verify (`ledger/store/line.rs`) and the bundle verifier's streaming
//! pass (`evidence/verify/fold.rs`), whose entries are the ledger's lines copied verbatim.
//! Anything outside the subset (a float, a `\u` escape that is not a control character, a
//! non-ASCII key, white space, a duplicate or unsorted key) is `None`: the caller then
//! canonicalizes the parsed entry, as it would anyway.

use crate::ledger::chain;
use sha2::{Digest, Sha256};
use std::ops::Range;

/// A text checked to be in exact canonical form: its top-level members, and where its
/// `hash` member is (with the comma that joins it to its neighbours).
pub(crate) struct Exact {
    pub(crate) members: Vec<Member>,
    hash_member: Option<Range<usize>>,
}

/// `line` as [`Exact`] when it is one canonical object and nothing else.
pub(crate) fn exact(line: &[u8]) -> Option<Exact> {
    exact_with(line, Check).map(|(e, ())| e)
}

/// [`exact`], and what `build` made of the object as the check read it (one pass for both).
pub(crate) fn exact_with<'t, B: Build<'t>>(line: &'t [u8], build: B) -> Option<(Exact, B::Value)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut c = Cursor {
        b: line,
        text,
        i: 0,
        build,
    };
    let mut members = Vec::with_capacity(24);
    let value = c.object(0, Some(&mut members))?;
    if c.i != line.len() {
        return None;
    }
    let mut hash_member = None;
    for (n, m) in members.iter().enumerate() {
        if &line[m.key.clone()] == crate::ledger::fields::field::HASH.as_bytes() {
            let start = if n == 0 {
                m.key.start - 1
            } else {
                m.key.start - 2
            };
            let end = if n == 0 && members.len() > 1 {
                m.value.end + 1
            } else {
                m.value.end
            };
            hash_member = Some(start..end);
        }
    }
    let exact = Exact {
        members,
        hash_member,
    };
    Some((exact, value))
}

/// What the cursor makes of each value it checks: nothing for the ledger's re-verify
/// ([`Check`]), a tree for the bundle verifier (`crate::json::tree`), so a canonical text is read
/// once, not once to check it and again to parse it. Only called for text the check accepts.
pub(crate) trait Build<'t> {
    type Value;
    type Object;
    type Array;
    fn object(&mut self) -> Self::Object;
    /// Keys come in strictly increasing byte order, each plain ASCII.
    fn member(&mut self, object: &mut Self::Object, key: &'t str, value: Self::Value);
    fn end_object(&mut self, object: Self::Object) -> Self::Value;
    fn array(&mut self) -> Self::Array;
    fn element(&mut self, array: &mut Self::Array, value: Self::Value);
    fn end_array(&mut self, array: Self::Array) -> Self::Value;
    /// `raw` is the text between the quotes; `escaped` when it holds a (canonical) escape.
    fn string(&mut self, raw: &'t str, escaped: bool) -> Self::Value;
    /// At most 15 digits, so always exact.
    fn integer(&mut self, value: i64) -> Self::Value;
    /// `Some(bool)` for `true` and `false`, `None` for `null`.
    fn literal(&mut self, value: Option<bool>) -> Self::Value;
}

/// Builds nothing: the check alone.
pub(crate) struct Check;

impl<'t> Build<'t> for Check {
    type Value = ();
    type Object = ();
    type Array = ();
    fn object(&mut self) {}
    fn member(&mut self, _: &mut (), _: &'t str, _: ()) {}
    fn end_object(&mut self, _: ()) {}
    fn array(&mut self) {}
    fn element(&mut self, _: &mut (), _: ()) {}
    fn end_array(&mut self, _: ()) {}
    fn string(&mut self, _: &'t str, _: bool) {}
    fn integer(&mut self, _: i64) {}
    fn literal(&mut self, _: Option<bool>) {}
}

impl Exact {
    /// The entry hash of `line` (the text this was made from) over `prev`; `None` when it has
    /// no `hash` member (nothing to compare with: the caller's slow path reports that).
    pub(crate) fn hash_over(&self, line: &[u8], prev: &str) -> Option<String> {
        self.digest_over(line, prev).map(|d| chain::hex(&d))
    }

    /// [`Exact::hash_over`] as the digest's bytes.
    pub(crate) fn digest_over(&self, line: &[u8], prev: &str) -> Option<[u8; 32]> {
        let cut = self.hash_member.clone()?;
        let mut h = Sha256::new();
        h.update(prev.as_bytes());
        h.update(&line[..cut.start]);
        h.update(&line[cut.end..]);
        Some(h.finalize().into())
    }
}

pub(crate) struct Member {
    /// The key's bytes, between its quotes.
    pub(crate) key: Range<usize>,
    pub(crate) value: Range<usize>,
}

/// Deeper than this, the slow path decides (serde_json's own limit is 128).
const MAX_DEPTH: usize = 64;

struct Cursor<'t, B> {
    b: &'t [u8],
    /// The same bytes, checked to be UTF-8.
    text: &'t str,
    i: usize,
    build: B,
}

impl<'t, B: Build<'t>> Cursor<'t, B> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.i += 1)
    }

    /// An object in canonical form: keys plain ASCII (so byte order is RFC 8785's UTF-16
    /// order), strictly increasing, no white space. Its members are collected only at the top
    /// level (`into`), which is all the hash and the state need.
    fn object(&mut self, depth: usize, mut into: Option<&mut Vec<Member>>) -> Option<B::Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        let mut object = self.build.object();
        if self.eat(b'}').is_some() {
            return Some(self.build.end_object(object));
        }
        let mut last: Option<Range<usize>> = None;
        loop {
            self.eat(b'"')?;
            let start = self.i;
            while self.peek()? != b'"' {
                let b = self.peek()?;
                if b == b'\\' || !(0x20..0x7f).contains(&b) {
                    return None;
                }
                self.i += 1;
            }
            let key = start..self.i;
            self.i += 1;
            if let Some(last) = last {
                if self.b[last] >= self.b[key.clone()] {
                    return None;
                }
            }
            last = Some(key.clone());
            self.eat(b':')?;
            let vstart = self.i;
            let value = self.value(depth + 1)?;
            self.build
                .member(&mut object, &self.text[key.clone()], value);
            if let Some(members) = into.as_deref_mut() {
                members.push(Member {
                    key,
                    value: vstart..self.i,
                });
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(self.build.end_object(object));
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<B::Value> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => self.object(depth, None),
            b'[' => self.array(depth),
            b't' => self.literal(b"true", Some(true)),
            b'f' => self.literal(b"false", Some(false)),
            b'n' => self.literal(b"null", None),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    fn array(&mut self, depth: usize) -> Option<B::Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        let mut array = self.build.array();
        if self.eat(b']').is_some() {
            return Some(self.build.end_array(array));
        }
        loop {
            let value = self.value(depth + 1)?;
            self.build.element(&mut array, value);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(self.build.end_array(array));
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8], value: Option<bool>) -> Option<B::Value> {
        if !self.b[self.i..].starts_with(word) {
            return None;
        }
        self.i += word.len();
        Some(self.build.literal(value))
    }

    /// An integer as the canonical writer prints one within ±(2^53 − 1): no sign on zero, no
    /// leading zero, at most 15 digits (16-digit values take the slow path); never a fraction
    /// or an exponent.
    fn integer(&mut self) -> Option<B::Value> {
        let negative = self.eat(b'-').is_some();
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let digits = &self.b[start..self.i];
        let ok = match digits {
            [] => false,
            [b'0'] => !negative,
            [b'0', ..] => false,
            d => d.len() <= 15,
        };
        if !ok || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let magnitude = digits
            .iter()
            .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        let value = if negative { -magnitude } else { magnitude };
        Some(self.build.integer(value))
    }

    /// A string in canonical form: only `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and `\u00xx`
    /// (lower-case hex) for the other control characters; everything else as it is.
    fn string(&mut self) -> Option<B::Value> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            let b = self.peek()?;
            self.i += 1;
            match b {
                b'"' => break,
                0x00..=0x1f => return None,
                b'\\' => {
                    escaped = true;
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = self.b.get(self.i..self.i + 4)?;
                            self.i += 4;
                            let lower = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
                            let code = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok();
                            let canonical = hex.starts_with(b"00")
                                && hex.iter().all(|&c| lower(c))
                                && code.is_some_and(|c| {
                                    c < 0x20 && !matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                                });
                            if !canonical {
                                return None;
                            }
                        }
                        _ => return None,
                    }
                }
                _ => {}
            }
        }
        let raw = &self.text[start..self.i - 1];
        Some(self.build.string(raw, escaped))
    }
}
