//! A roster's slices: what one tool call needs of it, each part sealed on its own, so that a
//! running session's call reads and checks a few hundred bytes whatever the roster's size.
//!
//! The roster's body ([`super::codec`]) begins, after its key, with four parts:
//!
//! ```text
//! head     digest, the root's scopes but `agent.*` ones, root_excluded, rules (JSON or empty)
//! index    one 16-byte entry per agent: u64 hash of its name, u32 offset, u32 length, sorted
//! sets     n (offset length)*, then each distinct set of scopes but `agent.*` ones, and its tag
//! slices   per agent: name, set (u32, all ones: the root's), excluded, invalid (0 or 1),
//!          rules (JSON or empty), then its tag
//! ```
//!
//! Each set and each slice ends in a tag: the first 16 bytes of an HMAC under the state MAC
//! key over the roster's digest, what it is (a set and its number, or a slice) and its bytes;
//! the head is sealed by the session's pin with the session's name ([`super::pin`]). A call
//! reads the head, finds its agent in the index (not sealed: an entry that leads elsewhere
//! finds a slice of another name, or one whose tag fails, and the call falls back to the
//! whole pin, checked as a whole), and checks that agent's slice and set alone.
//!
//! A slice leaves out every `agent.` scope (above all the root's `agent.delegate.<name>`, one
//! per agent, which made the root's set grow with the roster): such a pattern covers only
//! scopes that start with `agent.`, so for any other scope the slice's sets decide exactly as
//! the whole sets do ([`decides_exactly`]). A call needing an `agent.` scope reads the whole
//! pin. A slice keeps no source and, for an agent whose declaration cannot be used, no note:
//! such an agent holds nothing, and its refusal is decided on the whole pin.

use super::codec::{put_bytes, put_str, put_u32, Reader};
use crate::derive::roster::{AgentAuthority, Roster};
use crate::derive::rules::{Rules, SettingsRule};
use crate::derive::scopes::Scopes;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

const SLICE_DOMAIN: &[u8] = b"attenu-hook roster slice v2\n";
const HEAD_DOMAIN: &[u8] = b"attenu-hook roster pin head v1\n";
/// The length of a set's or a slice's tag: an HMAC-SHA256 cut to 128 bits.
const TAG_LEN: usize = 16;
/// The set number that stands for the root's set.
const ROOT_SET: u32 = u32::MAX;

/// Whether a slice's sets decide `scope` exactly as the whole roster's do: every scope but
/// `agent.` ones.
pub fn decides_exactly(scope: &str) -> bool {
    !scope.starts_with("agent.")
}

/// The root's rules and the settings' rules, as the head holds them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct HeadRules {
    #[serde(default)]
    root: Rules,
    #[serde(default)]
    settings: Vec<SettingsRule>,
}

/// The four parts the body starts with (`B`: owned, or read in place).
pub struct Parts<B = Vec<u8>> {
    pub head: B,
    pub index: B,
    pub sets: B,
    pub slices: B,
}

fn kept(set: &BTreeSet<String>) -> Vec<&str> {
    set.iter()
        .map(String::as_str)
        .filter(|s| decides_exactly(s))
        .collect()
}

fn put_strs<'a>(out: &mut Vec<u8>, list: impl ExactSizeIterator<Item = &'a str>) {
    put_u32(out, list.len());
    for s in list {
        put_str(out, s);
    }
}

/// Where an agent's name falls in the index.
fn hash_of(name: &str) -> u64 {
    let h = Sha256::digest(name.as_bytes());
    u64::from_le_bytes(h[..8].try_into().expect("eight bytes"))
}

/// The MAC every set and slice of the roster of `digest` is tagged with, before what it is.
fn tag_mac(mac_key: &[u8; 32], digest: &str) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(mac_key).expect("any key length");
    mac.update(SLICE_DOMAIN);
    mac.update(&(digest.len() as u64).to_le_bytes());
    mac.update(digest.as_bytes());
    mac
}

/// The tag of set number `n` (`Some`) or of a slice (`None`) whose bytes are `bytes`.
fn tag_of(base: &Hmac<Sha256>, set: Option<u32>, bytes: &[u8]) -> Hmac<Sha256> {
    let mut mac = base.clone();
    match set {
        Some(n) => {
            mac.update(b"s");
            mac.update(&n.to_le_bytes());
        }
        None => mac.update(b"a"),
    }
    mac.update(bytes);
    mac
}

fn push_tag(out: &mut Vec<u8>, mac: Hmac<Sha256>) {
    out.extend_from_slice(&mac.finalize().into_bytes()[..TAG_LEN]);
}

/// The MAC a pin seals its head with: the session's part of the pin (`tail`) and the head.
pub fn head_mac(mac_key: &[u8; 32], tail: &[u8], head: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(mac_key).expect("any key length");
    mac.update(HEAD_DOMAIN);
    mac.update(&(tail.len() as u64).to_le_bytes());
    mac.update(tail);
    mac.update(head);
    mac
}

/// The head: where the other parts end (so a call reads only what it needs of them), then
/// what every call reads.
fn head(roster: &Roster, root: &[&str], parts: [&[u8]; 3], n_sets: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(1024);
    for part in parts {
        put_u32(&mut head, part.len());
    }
    put_u32(&mut head, n_sets);
    put_str(&mut head, &roster.digest);
    put_strs(&mut head, root.iter().copied());
    put_strs(&mut head, roster.root_excluded.iter().map(String::as_str));
    let rules = if roster.root_rules.is_empty() && roster.settings_rules.is_empty() {
        String::new()
    } else {
        serde_json::to_string(&HeadRules {
            root: roster.root_rules.clone(),
            settings: roster.settings_rules.clone(),
        })
        .expect("rules serialize")
    };
    put_str(&mut head, &rules);
    head
}

pub fn encode(roster: &Roster, mac_key: &[u8; 32]) -> Parts {
    let root = kept(&roster.root);
    let base = tag_mac(mac_key, &roster.digest);
    let mut distinct: BTreeMap<Vec<&str>, u32> = BTreeMap::new();
    let mut records: Vec<Vec<u8>> = Vec::new();
    let mut slices = Vec::with_capacity(64 * roster.agents.len());
    let mut entries: Vec<(u64, u32, u32)> = Vec::with_capacity(roster.agents.len());
    for (name, a) in &roster.agents {
        let own = kept(&a.scopes);
        let set = if a.scopes.same(&roster.root) || own == root {
            ROOT_SET
        } else {
            let next = records.len() as u32;
            *distinct.entry(own).or_insert_with_key(|own| {
                let mut record = Vec::new();
                put_strs(&mut record, own.iter().copied());
                let tag = tag_of(&base, Some(next), &record);
                push_tag(&mut record, tag);
                records.push(record);
                next
            })
        };
        let start = slices.len();
        put_str(&mut slices, name);
        slices.extend_from_slice(&set.to_le_bytes());
        put_strs(&mut slices, a.excluded.iter().map(String::as_str));
        slices.push(u8::from(a.invalid.is_some()));
        let rules = if a.rules.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&a.rules).expect("rules serialize")
        };
        put_str(&mut slices, &rules);
        let tag = tag_of(&base, None, &slices[start..]);
        push_tag(&mut slices, tag);
        let len = slices.len() - start;
        entries.push((hash_of(name), start as u32, len as u32));
    }
    entries.sort_unstable();
    let mut index = Vec::with_capacity(16 * entries.len());
    for (h, off, len) in entries {
        index.extend_from_slice(&h.to_le_bytes());
        index.extend_from_slice(&off.to_le_bytes());
        index.extend_from_slice(&len.to_le_bytes());
    }
    let mut sets = Vec::new();
    put_u32(&mut sets, records.len());
    let mut off = 0;
    for r in &records {
        put_u32(&mut sets, off);
        put_u32(&mut sets, r.len());
        off += r.len();
    }
    sets.extend(records.concat());
    Parts {
        head: head(roster, &root, [&index, &sets, &slices], records.len()),
        index,
        sets,
        slices,
    }
}

/// Writes `parts` as the body's four byte strings.
pub fn put(out: &mut Vec<u8>, parts: &Parts) {
    for part in [&parts.head, &parts.index, &parts.sets, &parts.slices] {
        put_bytes(out, part);
    }
}

/// The body's parts, as [`put`] wrote them after the key.
pub fn split(body: &[u8]) -> Option<Parts<&[u8]>> {
    let mut r = Reader { rest: body };
    r.bytes()?;
    Some(Parts {
        head: r.bytes()?,
        index: r.bytes()?,
        sets: r.bytes()?,
        slices: r.bytes()?,
    })
}

fn strings(r: &mut Reader<'_>) -> Option<BTreeSet<String>> {
    let n = r.count(4)?;
    let mut set = BTreeSet::new();
    for _ in 0..n {
        set.insert(r.string()?);
    }
    Some(set)
}

/// Reads `len` bytes at `offset` in the roster's body; `None` past its end.
pub type ReadAt<'a> = &'a dyn Fn(usize, usize) -> Option<Vec<u8>>;

/// The roster a call by `agent` (`None`: the main thread) needs, from a pin whose session
/// part is `tail` and head seal is `tag`: the root's scopes but `agent.` ones, its exclusions
/// and rules, the settings' rules, the digest, and `agent` alone. `head` is the body's head,
/// which ends at `head_end`; `read` reads what else the call needs of the body (a few hundred
/// bytes and the index). `None` when the head's seal fails, `agent` has no slice whose tags
/// hold, or anything is off: the caller then reads the whole pin. What it holds decides a
/// call needing a scope of [`decides_exactly`] as the whole roster would, but says nothing of
/// why: a refusal is decided again on the whole roster, for its hint.
pub fn roster_for(
    (head, head_end): (&[u8], usize),
    (tail, tag): (&[u8], &[u8]),
    mac_key: &[u8; 32],
    agent: Option<&str>,
    read: ReadAt<'_>,
) -> Option<Roster> {
    head_mac(mac_key, tail, head).verify_slice(tag).ok()?;
    let mut r = Reader { rest: head };
    let (index_len, sets_len, slices_len) = (r.u32()? as usize, r.u32()? as usize, r.u32()?);
    let n_sets = r.u32()?;
    let digest = r.string()?;
    let root: Scopes = strings(&mut r)?.into();
    let root_excluded = strings(&mut r)?;
    let rules = match r.string()? {
        t if t.is_empty() => HeadRules::default(),
        t => serde_json::from_str(&t).ok()?,
    };
    if !r.rest.is_empty() {
        return None;
    }
    let mut agents = BTreeMap::new();
    if let Some(name) = agent {
        let index = head_end.checked_add(4)?;
        let sets = index.checked_add(index_len)?.checked_add(4)?;
        let at = Layout {
            index: (index, index_len),
            sets: (sets, n_sets),
            slices: (
                sets.checked_add(sets_len)?.checked_add(4)?,
                slices_len as usize,
            ),
        };
        let base = tag_mac(mac_key, &digest);
        let a = find(&at, read, name, &base, &root)?;
        agents.insert(name.to_string(), a);
    }
    Some(Roster {
        root,
        root_excluded,
        agents,
        root_rules: rules.root,
        settings_rules: rules.settings,
        unrepresented: Vec::new(),
        problems: Vec::new(),
        broken_files: Vec::new(),
        digest,
        why: Default::default(),
    })
}

/// Where the index, the sets and the slices start in the body: with the index's and the
/// slices' lengths, and the number of sets.
struct Layout {
    index: (usize, usize),
    sets: (usize, u32),
    slices: (usize, usize),
}

/// `bytes` without its tag, if the tag is the one `mac` gives for them.
fn untagged(bytes: &[u8], mac: impl FnOnce(&[u8]) -> Hmac<Sha256>) -> Option<&[u8]> {
    let (body, tag) = bytes.split_at_checked(bytes.len().checked_sub(TAG_LEN)?)?;
    mac(body).verify_truncated_left(tag).ok()?;
    Some(body)
}

fn u32_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// The authority of `name` from its slice, found through the index, and its set, each tag
/// checked.
fn find(
    at: &Layout,
    read: ReadAt<'_>,
    name: &str,
    base: &Hmac<Sha256>,
    root: &Scopes,
) -> Option<AgentAuthority> {
    let index = read(at.index.0, at.index.1)?;
    if !index.len().is_multiple_of(16) {
        return None;
    }
    let hash = |i: usize| u64::from_le_bytes(index[i * 16..i * 16 + 8].try_into().expect("8"));
    let n = index.len() / 16;
    let h = hash_of(name);
    let first = partition_point(n, |i| hash(i) < h);
    (first..n).take_while(|&i| hash(i) == h).find_map(|i| {
        let (off, len) = (u32_at(&index, i * 16 + 8)?, u32_at(&index, i * 16 + 12)?);
        if off.checked_add(len)? > at.slices.1 {
            return None;
        }
        let bytes = read(at.slices.0.checked_add(off)?, len)?;
        let mut r = Reader { rest: &bytes };
        if r.bytes()? != name.as_bytes() {
            return None;
        }
        let body = untagged(&bytes, |b| tag_of(base, None, b))?;
        let mut r = Reader {
            rest: &body[4 + name.len()..],
        };
        let scopes = match r.u32()? {
            ROOT_SET => root.clone(),
            n => set(at, read, n, base)?,
        };
        authority(&mut r, scopes)
    })
}

/// Set number `n`, its tag checked.
fn set(at: &Layout, read: ReadAt<'_>, n: u32, base: &Hmac<Sha256>) -> Option<Scopes> {
    let (start, count) = at.sets;
    if n >= count {
        return None;
    }
    let entry = read(start + 4 + 8 * n as usize, 8)?;
    let (off, len) = (u32_at(&entry, 0)?, u32_at(&entry, 4)?);
    let records = start + 4 + 8 * count as usize;
    let record = read(records.checked_add(off)?, len)?;
    let body = untagged(&record, |b| tag_of(base, Some(n), b))?;
    let mut r = Reader { rest: body };
    let s = strings(&mut r)?;
    r.rest.is_empty().then(|| s.into())
}

/// The first of `0..n` for which `below` is false (`below` holds for a prefix).
fn partition_point(n: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn authority(r: &mut Reader<'_>, scopes: Scopes) -> Option<AgentAuthority> {
    let excluded = strings(r)?;
    // No note: an agent that holds nothing is refused, and refusals read the whole pin.
    let invalid = match r.byte()? {
        0 => None,
        1 => Some(String::new()),
        _ => return None,
    };
    let rules = match r.string()? {
        t if t.is_empty() => Rules::new(),
        t => serde_json::from_str(&t).ok()?,
    };
    r.rest.is_empty().then_some(AgentAuthority {
        scopes,
        excluded,
        invalid,
        rules,
        source: String::new(),
    })
}
