//! A roster's slices: what one tool call needs of it, each part sealed on its own, so that a
//! running session's call reads and checks a few hundred bytes whatever the roster's size.
//!
//! The roster's body ([`super::codec`]) begins, after its key, with three parts:
//!
//! ```text
//! head     digest, the root's scopes but `agent.*` ones, root_excluded, rules (JSON or empty)
//! index    one 16-byte entry per agent: u64 hash of its name, u32 offset, u32 length, sorted
//! slices   per agent: name, scopes (1: the root's, or 0 and the list, `agent.*` left out),
//!          excluded, has_invalid [invalid], source, rules (JSON or empty), then its HMAC
//! ```
//!
//! Each slice carries an HMAC under the checkpoint key over the roster's digest and its bytes;
//! the head is sealed by the session's pin with the session's name ([`super::pin`]). A call
//! reads the head, finds its agent in the index (not sealed: an entry that leads elsewhere
//! finds a slice of another name, or one whose seal fails, and the call falls back to the
//! whole pin, checked as a whole) and checks that agent's slice alone.
//!
//! A slice leaves out every `agent.` scope (above all the root's `agent.delegate.<name>`, one
//! per agent, which made the root's set grow with the roster): such a pattern covers only
//! scopes that start with `agent.`, so for any other scope the slice's sets decide exactly as
//! the whole sets do ([`decides_exactly`]). A call needing an `agent.` scope reads the whole
//! pin.

use super::codec::{put_bytes, put_str, put_u32, Reader};
use crate::derive::roster::{AgentAuthority, Roster};
use crate::derive::rules::{Rules, SettingsRule};
use crate::derive::scopes::Scopes;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

const SLICE_DOMAIN: &[u8] = b"attenu-hook roster slice v1\n";
const HEAD_DOMAIN: &[u8] = b"attenu-hook roster pin head v1\n";
const MAC_LEN: usize = 32;

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

/// The three parts the body starts with, for `roster`.
pub struct Parts {
    pub head: Vec<u8>,
    pub index: Vec<u8>,
    pub slices: Vec<u8>,
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

/// The MAC every slice of the roster of `digest` is sealed with, before its bytes.
fn slice_mac(mac_key: &[u8; 32], digest: &str) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(mac_key).expect("any key length");
    mac.update(SLICE_DOMAIN);
    mac.update(&(digest.len() as u64).to_le_bytes());
    mac.update(digest.as_bytes());
    mac
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

pub fn encode(roster: &Roster, mac_key: &[u8; 32]) -> Parts {
    let root = kept(&roster.root);
    let mut head = Vec::with_capacity(1024);
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
    let base = slice_mac(mac_key, &roster.digest);
    let mut slices = Vec::with_capacity(128 * roster.agents.len());
    let mut entries: Vec<(u64, u32, u32)> = Vec::with_capacity(roster.agents.len());
    for (name, a) in &roster.agents {
        let start = slices.len();
        put_str(&mut slices, name);
        let own = kept(&a.scopes);
        if a.scopes.same(&roster.root) || own == root {
            slices.push(1);
        } else {
            slices.push(0);
            put_strs(&mut slices, own.into_iter());
        }
        put_strs(&mut slices, a.excluded.iter().map(String::as_str));
        match &a.invalid {
            None => slices.push(0),
            Some(why) => {
                slices.push(1);
                put_str(&mut slices, why);
            }
        }
        put_str(&mut slices, &a.source);
        let rules = if a.rules.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&a.rules).expect("rules serialize")
        };
        put_str(&mut slices, &rules);
        let tag = base.clone().chain_update(&slices[start..]).finalize();
        slices.extend_from_slice(&tag.into_bytes());
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
    Parts {
        head,
        index,
        slices,
    }
}

/// Writes `parts` as the body's three byte strings.
pub fn put(out: &mut Vec<u8>, parts: &Parts) {
    put_bytes(out, &parts.head);
    put_bytes(out, &parts.index);
    put_bytes(out, &parts.slices);
}

/// The body's head, index and slices, as [`put`] wrote them after the key.
pub fn split(body: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let mut r = Reader { rest: body };
    r.bytes()?;
    Some((r.bytes()?, r.bytes()?, r.bytes()?))
}

fn strings(r: &mut Reader<'_>) -> Option<BTreeSet<String>> {
    let n = r.count(4)?;
    let mut set = BTreeSet::new();
    for _ in 0..n {
        set.insert(r.string()?);
    }
    Some(set)
}

/// The roster a call by `agent` (`None`: the main thread) needs, from the body `part` of a
/// pin whose session part is `tail` and head seal is `tag`: the root's scopes but `agent.`
/// ones, its exclusions and rules, the settings' rules, the digest, and `agent` alone. `None`
/// when the head's seal fails, `agent` has no slice whose seal holds, or anything is off:
/// the caller then reads the whole pin. What it holds decides a call needing a scope of
/// [`decides_exactly`] as the whole roster would, but says nothing of why: a refusal is
/// decided again on the whole roster, for its hint.
pub fn roster_for(
    part: &[u8],
    tail: &[u8],
    tag: &[u8],
    mac_key: &[u8; 32],
    agent: Option<&str>,
) -> Option<Roster> {
    let (head, index, slices) = split(part)?;
    head_mac(mac_key, tail, head).verify_slice(tag).ok()?;
    let mut r = Reader { rest: head };
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
        let a = find(index, slices, name, &slice_mac(mac_key, &digest), &root)?;
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

/// The authority of `name` from its slice, found through the index and its seal checked.
fn find(
    index: &[u8],
    slices: &[u8],
    name: &str,
    base: &Hmac<Sha256>,
    root: &Scopes,
) -> Option<AgentAuthority> {
    if !index.len().is_multiple_of(16) {
        return None;
    }
    let entry = |i: usize| {
        let e = &index[i * 16..i * 16 + 16];
        let h = u64::from_le_bytes(e[..8].try_into().expect("8"));
        let off = u32::from_le_bytes(e[8..12].try_into().expect("4")) as usize;
        let len = u32::from_le_bytes(e[12..].try_into().expect("4")) as usize;
        (h, off, len)
    };
    let n = index.len() / 16;
    let h = hash_of(name);
    let first = partition_point(n, |i| entry(i).0 < h);
    (first..n)
        .map(entry)
        .take_while(|e| e.0 == h)
        .find_map(|(_, off, len)| {
            let bytes = slices.get(off..off.checked_add(len)?)?;
            let (body, tag) = bytes.split_at_checked(bytes.len().checked_sub(MAC_LEN)?)?;
            let mut r = Reader { rest: body };
            if r.bytes()? != name.as_bytes() {
                return None;
            }
            base.clone().chain_update(body).verify_slice(tag).ok()?;
            authority(&mut r, root)
        })
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

fn authority(r: &mut Reader<'_>, root: &Scopes) -> Option<AgentAuthority> {
    let scopes = match r.byte()? {
        1 => root.clone(),
        0 => strings(r)?.into(),
        _ => return None,
    };
    let excluded = strings(r)?;
    let invalid = match r.byte()? {
        0 => None,
        1 => Some(r.string()?),
        _ => return None,
    };
    let source = r.string()?;
    let rules = match r.string()? {
        t if t.is_empty() => Rules::new(),
        t => serde_json::from_str(&t).ok()?,
    };
    r.rest.is_empty().then_some(AgentAuthority {
        scopes,
        excluded,
        invalid,
        rules,
        source,
    })
}
