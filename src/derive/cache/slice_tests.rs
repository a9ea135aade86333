//! The pin's slices under attack, and against the whole pin.
//!
//! An attacker who can write `.attenu/roster-<session>.pin` between two calls but not read
//! the state MAC key rearranges genuine bytes: this pin's own slices, sets and index, and
//! the parts of other pins sealed with the same key. Whatever they build, a call's slice read
//! ([`pin::read_slice`]) is refused or is exactly the honest one: never another roster. And
//! the decisions made with a slice are the whole pin's ([`a_slice_decides_as_the_whole_pin`]).

use super::pin;
use crate::derive::Roster;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

pub(super) const KEY: [u8; 32] = [7; 32];

pub(super) fn scratch(tag: &str) -> PathBuf {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "attenu-slice-{tag}-{}-{}",
        std::process::id(),
        crate::ledger::chain::hex(&b)
    ));
    std::fs::create_dir_all(dir.join(".claude/agents")).unwrap();
    dir
}

/// Agents of every kind: granted tools, argument rules, inheriting ones (with and without
/// exclusions), MCP tools, a declaration that cannot be used (two files, one name), names
/// differing only in case or in Unicode normalization; and the settings' allow, deny and ask
/// rules.
pub(super) const TEAM: &[(&str, &str)] = &[
    ("r.md", "name: r\ntools: Read, Grep"),
    (
        "g.md",
        "name: g\ntools: Read, Bash(git tag:*), Bash(git status)",
    ),
    ("i.md", "name: i"),
    (
        "x.md",
        "name: x\ntools: Bash, Read\ndisallowedTools: Bash(rm *), Read(./.env)",
    ),
    (
        "ops.md",
        "name: ops\ntools: mcp__pay, Read\ndisallowedTools: mcp__pay__refund",
    ),
    (
        "h.md",
        "name: h\ndisallowedTools: mcp__pay__refund, Agent(ops), Write",
    ),
    (
        "m.md",
        "name: m\ntools: mcp__pay, mcp__other, Bash\ndisallowedTools: mcp__other__x",
    ),
    ("w.md", "name: w\ntools: Write, Bash(npm test)"),
    ("dup1.md", "name: dup\ntools: Bash"),
    ("dup2.md", "name: dup\ntools: Read"),
    ("rev.md", "name: rev\ntools: Read"),
    ("Rev.md", "name: Rev\ntools: Bash, Read"),
    ("nfc.md", "name: caf\u{e9}\ntools: Read"),
    ("nfd.md", "name: cafe\u{301}\ntools: Bash"),
];

pub(super) fn derive(dir: &Path, team: &[(&str, &str)], settings: Value) -> Roster {
    for (file, front) in team {
        let text = format!("---\n{front}\ndescription: d\n---\n");
        std::fs::write(dir.join(".claude/agents").join(file), text).unwrap();
    }
    std::fs::write(dir.join(".claude/settings.json"), settings.to_string()).unwrap();
    crate::derive::derive_project(dir, &BTreeMap::new(), None).unwrap()
}

pub(super) fn settings() -> Value {
    json!({"permissions": {
        "allow": ["Read", "Glob", "Bash(ls:*)", "mcp__pay__charge"],
        "deny": ["Bash(curl:*)", "Read(./secret/**)"],
        "ask": ["Write(./docs/**)"],
    }})
}

/// The pin of `roster` for session `session` in `dir`, as its bytes.
pub(super) fn pinned(dir: &Path, session: &str, roster: &Roster) -> Vec<u8> {
    let part = super::Part(super::codec::encode("k", roster, &KEY));
    assert!(pin::write(dir, session, &KEY, &part));
    std::fs::read(pin::path(dir, session)).unwrap()
}

/// A pin file taken apart: the header line, the roster part, and the session's name with
/// the head's seal.
struct Opened {
    header: Vec<u8>,
    part: Vec<u8>,
    sealed_tail: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

fn set_u32(b: &mut [u8], at: usize, n: usize) {
    b[at..at + 4].copy_from_slice(&(n as u32).to_le_bytes());
}

fn open(file: &[u8]) -> Opened {
    let nl = file.iter().position(|&c| c == b'\n').unwrap() + 1;
    let part_len = u32_at(file, nl);
    Opened {
        header: file[..nl].to_vec(),
        part: file[nl + 4..nl + 4 + part_len].to_vec(),
        sealed_tail: file[nl + 4 + part_len..].to_vec(),
    }
}

/// The file again (its whole seal not renewed: a slice read does not check it).
fn close(o: &Opened) -> Vec<u8> {
    let mut file = o.header.clone();
    super::codec::put_bytes(&mut file, &o.part);
    file.extend_from_slice(&o.sealed_tail);
    file
}

/// Where the head, the index, the sets and the slices lie in a roster part.
fn regions(part: &[u8]) -> [Range<usize>; 4] {
    let mut at = 4 + u32_at(part, 0);
    [0, 1, 2, 3].map(|_| {
        let len = u32_at(part, at);
        let r = at + 4..at + 4 + len;
        at = r.end;
        r
    })
}

fn hash_of(name: &str) -> u64 {
    u64::from_le_bytes(Sha256::digest(name.as_bytes())[..8].try_into().unwrap())
}

/// The index entry (its start in the part) of agent `name`.
fn entry_of(part: &[u8], name: &str) -> usize {
    let index = regions(part)[1].clone();
    index
        .clone()
        .step_by(16)
        .find(|&e| u64::from_le_bytes(part[e..e + 8].try_into().unwrap()) == hash_of(name))
        .unwrap()
}

/// A call's slice read of `file` for `agent`: refused, or exactly `honest`.
fn refused_or_honest(dir: &Path, file: &[u8], agent: &str, honest: &Roster, what: &str) -> bool {
    std::fs::write(pin::path(dir, "s1"), file).unwrap();
    let read = pin::read_slice(dir, "s1", &KEY, Some(agent));
    assert!(
        read.is_none() || read.as_ref() == Some(honest),
        "{what}: {read:?}"
    );
    read.is_some()
}

/// Each declared agent's honest slice read of the pin now on disk.
fn honest_reads(dir: &Path, roster: &Roster) -> BTreeMap<String, Roster> {
    roster
        .agents
        .keys()
        .map(|a| {
            (
                a.clone(),
                pin::read_slice(dir, "s1", &KEY, Some(a)).unwrap(),
            )
        })
        .collect()
}

#[test]
fn swapped_index_entries_and_sets_never_read_as_another_agent() {
    let dir = scratch("swapped");
    let roster = derive(&dir, TEAM, settings());
    let good = pinned(&dir, "s1", &roster);
    let honest = honest_reads(&dir, &roster);
    let o = open(&good);
    // The index entries of two agents swapped: each finds the other's slice.
    for (a, b) in [
        ("x", "g"),
        ("rev", "Rev"),
        ("caf\u{e9}", "cafe\u{301}"),
        ("i", "h"),
    ] {
        let mut f = open(&good);
        let (ea, eb) = (entry_of(&o.part, a), entry_of(&o.part, b));
        f.part[ea + 8..ea + 16].copy_from_slice(&o.part[eb + 8..eb + 16]);
        f.part[eb + 8..eb + 16].copy_from_slice(&o.part[ea + 8..ea + 16]);
        for n in [a, b] {
            assert!(!refused_or_honest(
                &dir,
                &close(&f),
                n,
                &honest[n],
                "swapped index"
            ));
        }
    }
    // Two sets' table entries swapped: a set is tagged with its number.
    let mut f = open(&good);
    let sets = regions(&o.part)[2].clone();
    assert!(u32_at(&o.part, sets.start) >= 2, "two sets at least");
    let (e0, e1) = (sets.start + 4, sets.start + 12);
    f.part[e0..e0 + 8].copy_from_slice(&o.part[e1..e1 + 8]);
    f.part[e1..e1 + 8].copy_from_slice(&o.part[e0..e0 + 8]);
    let swapped = close(&f);
    let refused = honest
        .iter()
        .filter(|(a, h)| !refused_or_honest(&dir, &swapped, a, h, "swapped sets"))
        .count();
    assert!(refused >= 2, "the agents of both sets are refused");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_name_hash_shared_by_two_entries_finds_the_slice_of_that_name() {
    let dir = scratch("collision");
    let roster = derive(&dir, TEAM, settings());
    let good = pinned(&dir, "s1", &roster);
    let honest = honest_reads(&dir, &roster);
    let o = open(&good);
    let index = regions(&o.part)[1].clone();
    let (ex, eo) = (entry_of(&o.part, "x"), entry_of(&o.part, "ops"));
    // ops's entry under x's hash, next to x's, before it or after it: x finds its own.
    let mut forged = o.part[eo..eo + 16].to_vec();
    forged[..8].copy_from_slice(&o.part[ex..ex + 8]);
    let others: Vec<&[u8]> = o.part[index.clone()]
        .chunks(16)
        .filter(|e| *e != &o.part[eo..eo + 16])
        .collect();
    let xi = others
        .iter()
        .position(|e| *e == &o.part[ex..ex + 16])
        .unwrap();
    for at in [xi, xi + 1] {
        let mut list = others.clone();
        list.insert(at, &forged);
        let mut f = open(&good);
        f.part[index.clone()].copy_from_slice(&list.concat());
        assert!(refused_or_honest(
            &dir,
            &close(&f),
            "x",
            &honest["x"],
            "collision"
        ));
        assert!(!refused_or_honest(
            &dir,
            &close(&f),
            "ops",
            &honest["ops"],
            "collision"
        ));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The team, wider: `r` gains Bash, `x` loses its exclusions, `g` its rules, and a new agent
/// widens the root (so the inheriting `i` and `h` hold more).
fn wider(dir: &Path) -> Roster {
    let mut team: Vec<(&str, &str)> = TEAM.to_vec();
    for (file, front) in team.iter_mut() {
        *front = match *file {
            "r.md" => "name: r\ntools: Read, Grep, Bash",
            "x.md" => "name: x\ntools: Bash, Read",
            "g.md" => "name: g\ntools: Read, Bash",
            _ => front,
        };
    }
    team.push(("web.md", "name: web\ntools: WebFetch, Write"));
    derive(dir, &team, settings())
}

#[test]
fn another_rosters_slices_sets_and_head_under_the_same_key_are_refused() {
    let (dir, other) = (scratch("ours"), scratch("theirs"));
    let roster = derive(&dir, TEAM, settings());
    let theirs = wider(&other);
    assert_ne!(roster.digest, theirs.digest);
    let good = pinned(&dir, "s1", &roster);
    let honest = honest_reads(&dir, &roster);
    let (o, t) = (open(&good), open(&pinned(&other, "s1", &theirs)));
    let (ours_at, theirs_at) = (regions(&o.part), regions(&t.part));
    // Their slice of an agent, written over ours at the slices' start, and the agent's
    // index entry pointed at it.
    let mut tried = 0;
    for a in roster.agents.keys() {
        let (ea, et) = (entry_of(&o.part, a), entry_of(&t.part, a));
        let (off, len) = (u32_at(&t.part, et + 8), u32_at(&t.part, et + 12));
        let slice = &t.part[theirs_at[3].start + off..][..len];
        if len > ours_at[3].len()
            || slice == &o.part[ours_at[3].start + u32_at(&o.part, ea + 8)..][..len]
        {
            continue;
        }
        let mut f = open(&good);
        f.part[ours_at[3].start..][..len].copy_from_slice(slice);
        set_u32(&mut f.part, ea + 8, 0);
        set_u32(&mut f.part, ea + 12, len);
        assert!(!refused_or_honest(
            &dir,
            &close(&f),
            a,
            &honest[a],
            "their slice"
        ));
        tried += 1;
    }
    assert!(tried >= 4, "{tried} slices differ");
    // Their set of each number, written over ours.
    let n = u32_at(&o.part, ours_at[2].start).min(u32_at(&t.part, theirs_at[2].start));
    for i in 0..n {
        let (eo, et) = (ours_at[2].start + 4 + 8 * i, theirs_at[2].start + 4 + 8 * i);
        let (off, len) = (u32_at(&t.part, et), u32_at(&t.part, et + 4));
        let records =
            |at: &[Range<usize>; 4], part: &[u8]| at[2].start + 4 + 8 * u32_at(part, at[2].start);
        let set = &t.part[records(&theirs_at, &t.part) + off..][..len];
        let mut f = open(&good);
        let room = ours_at[2].end - records(&ours_at, &o.part);
        if len > room {
            continue;
        }
        f.part[records(&ours_at, &o.part)..][..len].copy_from_slice(set);
        set_u32(&mut f.part, eo, 0);
        set_u32(&mut f.part, eo + 4, len);
        let file = close(&f);
        for (a, h) in &honest {
            refused_or_honest(&dir, &file, a, h, "their set");
        }
    }
    // Their whole pin of another session, under this session's name: its head's seal names
    // the other session.
    let mut s2 = open(&pinned(&other, "s2", &theirs));
    let cut = s2.sealed_tail.len() - 32;
    s2.sealed_tail.splice(
        ..cut,
        o.sealed_tail[..o.sealed_tail.len() - 32].iter().copied(),
    );
    for (a, h) in &honest {
        assert!(!refused_or_honest(
            &dir,
            &close(&s2),
            a,
            h,
            "their session's head"
        ));
    }
    std::fs::write(pin::path(&dir, "s1"), close(&s2)).unwrap();
    assert_eq!(pin::read_slice(&dir, "s1", &KEY, None), None, "main thread");
    for d in [dir, other] {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn cut_stretched_or_misplaced_parts_are_refused_without_panic() {
    let dir = scratch("lengths");
    let roster = derive(&dir, TEAM, settings());
    let good = pinned(&dir, "s1", &roster);
    let honest = honest_reads(&dir, &roster);
    let o = open(&good);
    let at = regions(&o.part);
    // Cut anywhere, or grown: the lengths no longer add up.
    for len in (0..good.len()).chain([good.len() + 1, good.len() + 4096]) {
        let mut f = good.clone();
        f.resize(len, 0);
        assert!(!refused_or_honest(&dir, &f, "x", &honest["x"], "cut"));
    }
    let huge = [
        0,
        1,
        15,
        16,
        17,
        u32::MAX as usize,
        i32::MAX as usize,
        good.len(),
        o.part.len(),
    ];
    // The part's, the key's and the head's lengths (unsealed but for the head's).
    let nl = o.header.len();
    for field in [nl, nl + 4, nl + 4 + at[0].start - 4] {
        for n in huge.iter().copied().chain([at[0].len() + 4, at[1].len()]) {
            let mut f = good.clone();
            set_u32(&mut f, field, n);
            assert!(!refused_or_honest(&dir, &f, "x", &honest["x"], "length") || f == good);
        }
    }
    // Index entries and set entries out of bounds, empty, overlapping another's.
    let ex = entry_of(&o.part, "x");
    let eg = entry_of(&o.part, "g");
    let g_off = u32_at(&o.part, eg + 8);
    let set0 = at[2].start + 4;
    for (field, n) in [
        (ex + 8, 1),
        (ex + 12, 0),
        (ex + 12, 16),
        (ex + 8, g_off + 3),
        (ex + 8, at[3].len()),
    ]
    .into_iter()
    .chain(
        huge.iter()
            .flat_map(|&n| [(ex + 8, n), (ex + 12, n), (set0, n), (set0 + 4, n)]),
    ) {
        let mut f = open(&good);
        set_u32(&mut f.part, field, n);
        let file = close(&f);
        for (a, h) in &honest {
            refused_or_honest(&dir, &file, a, h, "entry");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn random_index_and_set_tables_under_a_valid_head_never_read_as_another_roster() {
    let dir = scratch("fuzz");
    let roster = derive(&dir, TEAM, settings());
    let good = pinned(&dir, "s1", &roster);
    let honest = honest_reads(&dir, &roster);
    let o = open(&good);
    let at = regions(&o.part);
    let table = at[2].start..at[2].start + 4 + 8 * u32_at(&o.part, at[2].start);
    let mut rng = [0u8; 4096];
    let mut allowed = 0;
    for round in 0..64 {
        getrandom::fill(&mut rng).unwrap();
        let mut f = open(&good);
        // A few bytes of the index or the sets' table changed, or one of its entries copied
        // over another.
        for k in 0..1 + usize::from(rng[0]) % 4 {
            let region = if rng[k + 1] % 2 == 0 {
                at[1].clone()
            } else {
                table.clone()
            };
            let i = region.start
                + usize::from(u16::from_le_bytes([rng[2 * k + 8], rng[2 * k + 9]])) % region.len();
            f.part[i] = rng[k + 32];
        }
        let file = close(&f);
        for (a, h) in &honest {
            allowed += usize::from(refused_or_honest(
                &dir,
                &file,
                a,
                h,
                &format!("round {round}"),
            ));
        }
    }
    assert!(allowed > 0, "some rounds leave some agents' parts alone");
    std::fs::remove_dir_all(&dir).unwrap();
}
