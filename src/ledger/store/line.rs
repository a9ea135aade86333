//! Reading one ledger line for a re-verify, fast: when the line is exactly the RFC 8785 form
//! the hook writes (checked here byte by byte, for the subset of JSON the ledger uses), the
//! entry's hash is the SHA-256 of its prev_hash and the line's own bytes without the `hash`
//! member, and only the few members the verified state needs are parsed. Any line outside
//! that subset (a float, a `\u` escape that is not a control character, a non-ASCII key,
//! white space, a duplicate or unsorted key) takes the slow path: parsed whole and
//! canonicalized, exactly as before, so the verdict is the same either way.

use crate::ledger::chain;
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::ops::Range;

/// One parsed line: the members the state needs (or all of them, on the slow path), and its
/// hash over its own `prev_hash`, when it could be computed.
pub(super) struct Parsed {
    pub entry: Map<String, Value>,
    pub computed: Option<String>,
}

/// Why a line is not an entry at all.
pub(super) enum LineError {
    NotJson(String),
    NotAnObject,
}

/// Top-level members the verified state reads (`ChainInfo`, `track_pending`, the links).
const NEEDED: &[&str] = &[
    "agent",
    "authorized_params_hash",
    "call_id",
    "chain_id",
    "event",
    "hash",
    "node",
    "params_salt",
    "prev_hash",
    "seq",
    "tool",
];

/// The `context` members the state reads.
#[derive(Deserialize)]
struct SlimContext {
    tool_use_id: Option<Value>,
    digest: Option<Value>,
    previous_chain: Option<Value>,
    checkpoint_lost: Option<Value>,
}

/// Parses `line` (without its newline).
pub(super) fn parse(line: &[u8]) -> Result<Parsed, LineError> {
    if let Some(p) = fast(line) {
        return Ok(p);
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(entry)) => {
            let prev = entry
                .get("prev_hash")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let computed = chain::entry_hash_of(&prev, &entry).ok();
            Ok(Parsed { entry, computed })
        }
        Ok(_) => Err(LineError::NotAnObject),
        Err(e) => Err(LineError::NotJson(e.to_string())),
    }
}

fn fast(line: &[u8]) -> Option<Parsed> {
    std::str::from_utf8(line).ok()?;
    let mut c = Cursor { b: line, i: 0 };
    let mut members = Vec::with_capacity(24);
    c.object(0, Some(&mut members))?;
    if c.i != line.len() {
        return None;
    }
    let mut entry = Map::new();
    let mut hash_member: Option<Range<usize>> = None;
    for (n, m) in members.iter().enumerate() {
        let key = std::str::from_utf8(&line[m.key.clone()]).ok()?;
        if key == "hash" {
            // The member with the comma that joins it to its neighbours.
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
        let raw = &line[m.value.clone()];
        if key == "context" && raw.first() == Some(&b'{') {
            let c: SlimContext = serde_json::from_slice(raw).ok()?;
            let mut slim = Map::new();
            for (k, v) in [
                ("tool_use_id", c.tool_use_id),
                ("digest", c.digest),
                ("previous_chain", c.previous_chain),
                ("checkpoint_lost", c.checkpoint_lost),
            ] {
                if let Some(v) = v {
                    slim.insert(k.into(), v);
                }
            }
            entry.insert(key.into(), Value::Object(slim));
        } else if NEEDED.contains(&key) {
            entry.insert(key.into(), serde_json::from_slice(raw).ok()?);
        }
    }
    let Some(cut) = hash_member else {
        // No own hash to compare with: the slow path reports it as it always did.
        return None;
    };
    let prev = entry.get("prev_hash").and_then(Value::as_str).unwrap_or("");
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(&line[..cut.start]);
    h.update(&line[cut.end..]);
    let computed = Some(chain::hex(&h.finalize()));
    Some(Parsed { entry, computed })
}

struct Member {
    /// The key's bytes, between its quotes.
    key: Range<usize>,
    value: Range<usize>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealed(mut e: Map<String, Value>) -> Vec<u8> {
        chain::seal(&mut e, chain::GENESIS).unwrap();
        crate::ledger::canonical::to_vec(&Value::Object(e)).unwrap()
    }

    #[test]
    fn the_fast_path_computes_the_same_hash_as_canonicalizing() {
        let entries = [
            json!({"event": "allow", "seq": 0, "context": {"tool_use_id": "t1", "x": [1, -2, true, null, "a\u{1}\"\\\n"]}, "call_id": "c", "z": "é\u{2028}"}),
            json!({"seq": 0, "a": {}}),
            json!({"seq": 0, "event": "root", "context": {"digest": "d", "previous_chain": null}}),
        ];
        for e in entries {
            let Value::Object(m) = e else { unreachable!() };
            let line = sealed(m);
            let fast = fast(&line).expect("canonical lines take the fast path");
            let slow: Value = serde_json::from_slice(&line).unwrap();
            let slow = slow.as_object().unwrap();
            assert_eq!(fast.computed.as_deref(), slow["hash"].as_str());
            for k in NEEDED {
                assert_eq!(fast.entry.get(*k), slow.get(*k), "{k}");
            }
        }
    }

    #[test]
    fn anything_not_canonical_takes_the_slow_path() {
        let line = sealed(json!({"seq": 0, "n": 1}).as_object().unwrap().clone());
        let text = String::from_utf8(line).unwrap();
        for other in [
            text.replace("\"n\":1", "\"n\":1.0"),
            text.replace("\"n\":1", "\"n\": 1"),
            text.replace("\"n\":1", "\"n\":\"\\u0041\""),
            text.replace("\"n\":1", "\"n\":\"\\/\""),
            text.replace("\"n\":1", "\"n\":-0"),
            text.replace("\"n\":1", "\"n\":1,\"n\":2"),
            text.replace("\"n\":1", "\"é\":1"),
            text.replace("\"n\":1", "\"n\":1e3"),
            text.replace("\"n\":1", "\"n\":1234567890123456"),
        ] {
            assert!(fast(other.as_bytes()).is_none(), "{other}");
            // The slow path still reads it, and the hash it computes is the canonical one.
            assert!(parse(other.as_bytes()).is_ok(), "{other}");
        }
        let invalid = text.replace("\"n\":1", "\"n\":01");
        assert!(fast(invalid.as_bytes()).is_none());
        assert!(matches!(
            parse(invalid.as_bytes()),
            Err(LineError::NotJson(_))
        ));
    }
}
