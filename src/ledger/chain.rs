//! Entry hashing and chain verification in the attenu-guard format:
//! `hash = SHA-256(prev_hash || JCS(entry without "hash"))`, lowercase hex, with the first
//! entry of a chain linked to [`GENESIS`].

use crate::json::canonical::{self, CanonicalError};
use crate::ledger::fields::field;
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// The `prev_hash` of a chain's first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 0xf) as usize] as char);
    }
    s
}

/// Decodes lowercase or uppercase hex; `None` on any other input. Digits only: a sign, which
/// `u8::from_str_radix` would accept (`"+a"`), is not hex.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks_exact(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The hash of an entry (given without its `hash` member) chained onto `prev_hash`.
pub fn entry_hash(
    prev_hash: &str,
    entry_without_hash: &Map<String, Value>,
) -> Result<String, CanonicalError> {
    hash_skipping(prev_hash, entry_without_hash, None)
}

/// The hash of an entry chained onto `prev_hash`, ignoring its own `hash` member if present.
pub fn entry_hash_of(
    prev_hash: &str,
    entry: &Map<String, Value>,
) -> Result<String, CanonicalError> {
    hash_skipping(prev_hash, entry, Some(field::HASH))
}

fn hash_skipping(
    prev_hash: &str,
    entry: &Map<String, Value>,
    skip: Option<&str>,
) -> Result<String, CanonicalError> {
    hash_onto(prev_hash, |buf| canonical::write_object(entry, skip, buf))
}

/// SHA-256 (hex) of `prev_hash` followed by the canonical entry `write_entry` appends: the
/// entry hash, for any tree that can write an entry canonically.
pub(crate) fn hash_onto(
    prev_hash: &str,
    write_entry: impl FnOnce(&mut Vec<u8>) -> Result<(), CanonicalError>,
) -> Result<String, CanonicalError> {
    let mut buf = Vec::with_capacity(1024);
    buf.extend_from_slice(prev_hash.as_bytes());
    write_entry(&mut buf)?;
    Ok(hex(&Sha256::digest(&buf)))
}

/// Seals `entry` onto the chain: sets `prev_hash`, computes and inserts `hash`, returns it.
pub fn seal(entry: &mut Map<String, Value>, prev_hash: &str) -> Result<String, CanonicalError> {
    entry.remove(field::HASH);
    entry.insert(
        field::PREV_HASH.into(),
        Value::String(prev_hash.to_string()),
    );
    let hash = entry_hash(prev_hash, entry)?;
    entry.insert(field::HASH.into(), Value::String(hash.clone()));
    Ok(hash)
}

/// Why a sequence of entries is not one valid chain from [`GENESIS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainBreak {
    #[error("entry {index} is not a JSON object")]
    NotAnObject { index: usize },
    #[error("seq gap at {index}")]
    SeqGap { index: usize },
    #[error("prev_hash mismatch at seq {index}")]
    PrevHashMismatch { index: usize },
    #[error("hash mismatch at seq {index}")]
    HashMismatch { index: usize },
}

impl ChainBreak {
    pub fn index(&self) -> usize {
        match self {
            ChainBreak::NotAnObject { index }
            | ChainBreak::SeqGap { index }
            | ChainBreak::PrevHashMismatch { index }
            | ChainBreak::HashMismatch { index } => *index,
        }
    }
}

/// Is `n` the integral number `expected`, as the reference reads a `seq` (a bool is no number)?
pub(crate) fn is_integral(n: Option<&Number>, expected: u64) -> bool {
    let Some(n) = n else { return false };
    if let Some(u) = n.as_u64() {
        u == expected
    } else if let Some(f) = n.as_f64() {
        f.fract() == 0.0 && f >= 0.0 && f == expected as f64
    } else {
        false
    }
}

/// What the chain check reads of one entry.
pub struct Links<'e> {
    pub seq: Option<&'e Number>,
    pub prev_hash: Option<&'e str>,
    pub hash: Option<&'e str>,
}

impl Links<'_> {
    /// The chain's rule for the entry at `index`, after the entry whose hash is `prev`: seq is
    /// its position, prev_hash is `prev`, and hash is `computed` (the entry's own hash, `None`
    /// when it cannot be hashed). The one rule every reader of a chain applies, entry by entry.
    pub fn follow(
        &self,
        index: usize,
        prev: &str,
        computed: Option<&str>,
    ) -> Result<(), ChainBreak> {
        if !is_integral(self.seq, index as u64) {
            return Err(ChainBreak::SeqGap { index });
        }
        if self.prev_hash != Some(prev) {
            return Err(ChainBreak::PrevHashMismatch { index });
        }
        match computed {
            Some(c) if self.hash == Some(c) => Ok(()),
            _ => Err(ChainBreak::HashMismatch { index }),
        }
    }
}

/// Recomputes a chain from [`GENESIS`]: seq 0, 1, 2…, each `prev_hash` the previous `hash`,
/// each `hash` reproduced. Returns the head hash (or GENESIS for no entries).
///
/// The hashes are independent of each other given each entry's own `prev_hash`, so they are
/// computed first, on every core for a long chain, and then checked in order: when the links
/// hold, an entry's own `prev_hash` is the previous hash, and the result is the one a strictly
/// sequential walk gives.
pub fn verify_entries(entries: &[Value]) -> Result<String, ChainBreak> {
    verify_entries_with(entries, precompute_hashes(entries))
}

/// [`verify_entries`] with each entry's hash over its own `prev_hash` already computed (by
/// [`own_hash`], in the same order), for a reader that hashes entries as it parses them.
pub fn verify_entries_with(
    entries: &[Value],
    computed: Vec<Option<String>>,
) -> Result<String, ChainBreak> {
    check_links(entries, computed, |e| {
        let obj = e.as_object()?;
        Some(Links {
            seq: match obj.get(field::SEQ) {
                Some(Value::Number(n)) => Some(n),
                _ => None,
            },
            prev_hash: obj.get(field::PREV_HASH).and_then(Value::as_str),
            hash: obj.get(field::HASH).and_then(Value::as_str),
        })
    })
}

/// The chain check over entries in any representation: `links` reads an entry's members
/// (`None` when it is not an object), `computed` holds each entry's own hash.
pub fn check_links<'e, E>(
    entries: &'e [E],
    computed: Vec<Option<String>>,
    links: impl Fn(&'e E) -> Option<Links<'e>>,
) -> Result<String, ChainBreak> {
    assert_eq!(entries.len(), computed.len(), "one hash per entry");
    let mut prev = GENESIS.to_string();
    for (index, (e, computed)) in entries.iter().zip(computed).enumerate() {
        let l = links(e).ok_or(ChainBreak::NotAnObject { index })?;
        l.follow(index, &prev, computed.as_deref())?;
        prev = computed.expect("followed");
    }
    Ok(prev)
}

/// Below this many entries one thread is faster than starting others.
const PARALLEL_FROM: usize = 1024;

/// An entry's hash over its own `prev_hash` (`None` when it has none or cannot be hashed).
pub fn own_hash(e: &Value) -> Option<String> {
    let obj = e.as_object()?;
    let prev = obj.get(field::PREV_HASH)?.as_str()?;
    entry_hash_of(prev, obj).ok()
}

/// [`own_hash`] of every entry.
fn precompute_hashes(entries: &[Value]) -> Vec<Option<String>> {
    crate::par::map(entries, PARALLEL_FROM, |_, e| own_hash(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(n: usize) -> Vec<Value> {
        let mut prev = GENESIS.to_string();
        (0..n)
            .map(|i| {
                let mut m = json!({"v": 2, "c14n": "JCS", "seq": i, "ts": i + 1, "event": "allow", "chain_id": "c"})
                    .as_object()
                    .unwrap()
                    .clone();
                prev = seal(&mut m, &prev).unwrap();
                Value::Object(m)
            })
            .collect()
    }

    #[test]
    fn unhex_reads_hex_digits_only() {
        assert_eq!(unhex("00aBfF"), Some(vec![0x00, 0xab, 0xff]));
        assert_eq!(unhex(""), Some(vec![]));
        // `u8::from_str_radix` takes a sign: "+a" would read as 0x0a, and an anchor signature
        // spelled that way would pass here and fail in the reference.
        for bad in ["+a", "-0", "0+", "abc", " a", "a ", "0x", "g0", "é0"] {
            assert_eq!(unhex(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_sealed_chain_verifies_and_any_edit_breaks_it() {
        let mut c = chain(5);
        assert!(verify_entries(&c).is_ok());
        c[2]["event"] = json!("deny");
        assert_eq!(
            verify_entries(&c),
            Err(ChainBreak::HashMismatch { index: 2 })
        );
        let mut c = chain(5);
        c.remove(1);
        assert_eq!(verify_entries(&c), Err(ChainBreak::SeqGap { index: 1 }));
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(
            unhex(&hex(&[0, 1, 0xab, 0xff])).unwrap(),
            vec![0, 1, 0xab, 0xff]
        );
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }
}
