//! Whether a JSON text is exactly the RFC 8785 form the ledger writes (checked byte by byte,
//! for the subset of JSON the ledger uses), and if so its entry hash straight from its own
//! bytes: SHA-256 of its `prev_hash` and the text without its top-level `hash` member.
//! Shared by the ledger's re-verify (`store/line.rs`) and the bundle verifier's streaming
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
    std::str::from_utf8(line).ok()?;
    let mut c = Cursor { b: line, i: 0 };
    let mut members = Vec::with_capacity(24);
    c.object(0, Some(&mut members))?;
    if c.i != line.len() {
        return None;
    }
    let mut hash_member = None;
    for (n, m) in members.iter().enumerate() {
        if &line[m.key.clone()] == b"hash" {
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
    Some(Exact {
        members,
        hash_member,
    })
}

impl Exact {
    /// The entry hash of `line` (the text this was made from) over `prev`; `None` when it has
    /// no `hash` member (nothing to compare with: the caller's slow path reports that).
    pub(crate) fn hash_over(&self, line: &[u8], prev: &str) -> Option<String> {
        let cut = self.hash_member.clone()?;
        let mut h = Sha256::new();
        h.update(prev.as_bytes());
        h.update(&line[..cut.start]);
        h.update(&line[cut.end..]);
        Some(chain::hex(&h.finalize()))
    }
}

/// The entry hash of `line` over `prev` when `line` is in exact canonical form.
pub(crate) fn own_hash(line: &[u8], prev: &str) -> Option<String> {
    exact(line)?.hash_over(line, prev)
}

pub(crate) struct Member {
    /// The key's bytes, between its quotes.
    pub(crate) key: Range<usize>,
    pub(crate) value: Range<usize>,
}

/// Deeper than this, the slow path decides (serde_json's own limit is 128).
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.i += 1)
    }

    /// An object in canonical form: keys plain ASCII (so byte order is RFC 8785's UTF-16
    /// order), strictly increasing, no white space. Its members are collected only at the top
    /// level (`into`), which is all the hash and the state need.
    fn object(&mut self, depth: usize, mut into: Option<&mut Vec<Member>>) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
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
            self.value(depth + 1)?;
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
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => self.object(depth, None),
            b'[' => self.array(depth),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.value(depth + 1)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// An integer as the canonical writer prints one within ±(2^53 − 1): no sign on zero, no
    /// leading zero, at most 15 digits (16-digit values take the slow path); never a fraction
    /// or an exponent.
    fn integer(&mut self) -> Option<()> {
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
        (ok && !matches!(self.peek(), Some(b'.' | b'e' | b'E'))).then_some(())
    }

    /// A string in canonical form: only `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and `\u00xx`
    /// (lower-case hex) for the other control characters; everything else as it is.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let b = self.peek()?;
            self.i += 1;
            match b {
                b'"' => return Some(()),
                0x00..=0x1f => return None,
                b'\\' => {
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
    }
}
