//! The roster cache's body: a compact binary form of a [`Roster`] that shares what it shares.
//!
//! Little-endian `u32` counts and lengths, strings as length and UTF-8 bytes:
//!
//! ```text
//! key
//! head index sets slices     what one call reads of a session's pin ([`super::slice`])
//! digest
//! n_scopes  scope*            every scope named anywhere, sorted and distinct
//! n_sets    (len index*)*     each distinct set once, as ascending indices into the scopes
//! root_set root_excluded_set
//! n_agents  (name scopes_set excluded_set has_invalid [invalid] source)*   names ascending
//! n_unrepresented string*   n_problems string*
//! broken_files                JSON of the broken agent files (usually `[]`)
//! why                         JSON of the provenance: checked as JSON, parsed when a hint asks
//! rules                       JSON of the argument rules (`RulesPart`), or empty when none
//! ```
//!
//! Decoding builds each distinct set once and every agent holding it shares it, so reading
//! 200 agents that inherit the session pool costs one set of ~200 scopes, not 200 of them.
//! The scope table is read in place (a set's members are the only strings made from it), and
//! the provenance is kept as text until a deny's hint reads it ([`Why`]).
//! The body is sealed (see the parent module) before it is ever decoded; decoding still
//! checks every count, index and order, and anything off is `None`: the roster is derived
//! from the files again.

use crate::derive::provenance::Why;
use crate::derive::roster::{AgentAuthority, Roster};
use crate::derive::rules::{Rules, SettingsRule};
use crate::derive::scopes::Scopes;
use std::collections::{BTreeMap, BTreeSet};

/// The body for `roster`, derived from the inputs named by `key`; its slices are sealed with
/// `mac_key`.
pub fn encode<'a>(key: &str, roster: &'a Roster, mac_key: &[u8; 32]) -> Vec<u8> {
    let mut sets: Vec<&BTreeSet<String>> = Vec::new();
    let mut set_of = |s: &'a BTreeSet<String>| -> u32 {
        let found = sets.iter().position(|t| std::ptr::eq(*t, s) || **t == *s);
        let i = found.unwrap_or_else(|| {
            sets.push(s);
            sets.len() - 1
        });
        i as u32
    };
    let root_set = set_of(&roster.root);
    let root_excluded_set = set_of(&roster.root_excluded);
    let agent_sets: Vec<(u32, u32)> = roster
        .agents
        .values()
        .map(|a| (set_of(&a.scopes), set_of(&a.excluded)))
        .collect();
    // From the distinct sets: 200 agents sharing one set of ~200 scopes add it once.
    let all: BTreeSet<&str> = sets
        .iter()
        .flat_map(|s| s.iter().map(String::as_str))
        .collect();
    let table: Vec<&str> = all.into_iter().collect();
    let mut out = Vec::with_capacity(4096);
    put_str(&mut out, key);
    super::slice::put(&mut out, &super::slice::encode(roster, mac_key));
    put_str(&mut out, &roster.digest);
    put_u32(&mut out, table.len());
    for s in &table {
        put_str(&mut out, s);
    }
    put_u32(&mut out, sets.len());
    for set in &sets {
        put_u32(&mut out, set.len());
        for s in set.iter() {
            let i = table
                .binary_search(&s.as_str())
                .expect("every scope is in the table");
            put_u32(&mut out, i);
        }
    }
    put_u32(&mut out, root_set as usize);
    put_u32(&mut out, root_excluded_set as usize);
    put_u32(&mut out, roster.agents.len());
    for ((name, a), (scopes, excluded)) in roster.agents.iter().zip(agent_sets) {
        put_str(&mut out, name);
        put_u32(&mut out, scopes as usize);
        put_u32(&mut out, excluded as usize);
        match &a.invalid {
            None => out.push(0),
            Some(why) => {
                out.push(1);
                put_str(&mut out, why);
            }
        }
        put_str(&mut out, &a.source);
    }
    for list in [&roster.unrepresented, &roster.problems] {
        put_u32(&mut out, list.len());
        for s in list {
            put_str(&mut out, s);
        }
    }
    let broken = serde_json::to_string(&roster.broken_files).expect("broken files serialize");
    put_str(&mut out, &broken);
    let why = serde_json::to_string(&*roster.why).expect("the provenance serializes");
    put_str(&mut out, &why);
    put_str(&mut out, &RulesPart::of(roster));
    out
}

/// The roster's argument rules, as the body's last string holds them.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct RulesPart {
    #[serde(default)]
    root: Rules,
    #[serde(default)]
    settings: Vec<SettingsRule>,
    #[serde(default)]
    agents: BTreeMap<String, Rules>,
}

impl RulesPart {
    /// Empty when the roster has no rules, so a roster without any decodes as fast as before.
    fn of(roster: &Roster) -> String {
        let agents: BTreeMap<String, Rules> = roster
            .agents
            .iter()
            .filter(|(_, a)| !a.rules.is_empty())
            .map(|(n, a)| (n.clone(), a.rules.clone()))
            .collect();
        if agents.is_empty() && roster.root_rules.is_empty() && roster.settings_rules.is_empty() {
            return String::new();
        }
        let part = RulesPart {
            root: roster.root_rules.clone(),
            settings: roster.settings_rules.clone(),
            agents,
        };
        serde_json::to_string(&part).expect("rules serialize")
    }

    fn read(text: &str) -> Option<RulesPart> {
        if text.is_empty() {
            return Some(RulesPart::default());
        }
        serde_json::from_str(text).ok()
    }
}

/// The key and roster a body holds; `None` for anything that is not exactly such a body.
pub fn decode(body: &[u8]) -> Option<(String, Roster)> {
    decode_with(body, None)
}

/// [`decode`] for one call: the root's sets and those of `agent` (none for `None`, the main
/// thread) are built; every other agent keeps its name and place but holds nothing, with an
/// empty source and an empty `invalid` note (an empty `String` allocates nothing), so a use of
/// it that was not meant could only refuse. A
/// roster of 500 agents then costs its root and one agent's set, not every distinct set. The
/// whole body is still checked as [`decode`] checks it.
pub fn decode_for(body: &[u8], agent: Option<&str>) -> Option<(String, Roster)> {
    decode_with(body, Some(agent))
}

/// `only`: `None` builds everything; `Some(agent)` as [`decode_for`].
fn decode_with(body: &[u8], only: Option<Option<&str>>) -> Option<(String, Roster)> {
    let mut r = Reader { rest: body };
    let key = r.string()?;
    // The slices: read by a call alone ([`super::slice`]), passed over here.
    for _ in 0..4 {
        r.bytes()?;
    }
    let digest = r.string()?;
    let table = read_table(&mut r)?;
    let raw = read_sets(&mut r, table.len())?;
    let mut sets = Sets {
        built: vec![None; raw.len()],
        nothing: Scopes::default(),
        table,
        raw,
    };
    let root = sets.get(r.u32()?)?;
    let root_excluded = (*sets.get(r.u32()?)?).clone();
    let n = r.count(10)?;
    let mut agents: Vec<(String, AgentAuthority)> = Vec::with_capacity(n);
    for _ in 0..n {
        let name = r.string()?;
        if agents.last().is_some_and(|(last, _)| *last >= name) {
            return None;
        }
        let wanted = only.is_none_or(|a| a == Some(name.as_str()));
        let a = read_agent(&mut r, &mut sets, wanted)?;
        agents.push((name, a));
    }
    let unrepresented = r.strings()?;
    let problems = r.strings()?;
    let broken_files = serde_json::from_str(&r.string()?).ok()?;
    let why = Why::from_json(r.string()?)?;
    let mut ruled = RulesPart::read(&r.string()?)?;
    if !r.rest.is_empty() {
        return None;
    }
    for (name, a) in agents.iter_mut() {
        if let Some(rules) = ruled.agents.remove(name) {
            // An agent passed over holds nothing, whatever its rules.
            if a.invalid.as_deref() != Some("") || only.is_none() {
                a.rules = rules;
            }
        }
    }
    let roster = Roster {
        root,
        root_excluded,
        // In ascending order, checked above: built in one pass.
        agents: agents.into_iter().collect::<BTreeMap<_, _>>(),
        root_rules: ruled.root,
        settings_rules: ruled.settings,
        unrepresented,
        problems,
        broken_files,
        digest,
        why,
    };
    Some((key, roster))
}

/// The string table: every scope named, in strictly ascending order.
fn read_table<'a>(r: &mut Reader<'a>) -> Option<Vec<&'a str>> {
    let n = r.count(4)?;
    let mut table: Vec<&str> = Vec::with_capacity(n);
    for _ in 0..n {
        let s = std::str::from_utf8(r.bytes()?).ok()?;
        if table.last().is_some_and(|last| *last >= s) {
            return None;
        }
        table.push(s);
    }
    Some(table)
}

/// Each set's members as indices into a table of `table_len` strings, checked (in range and
/// strictly ascending) but not yet built.
fn read_sets<'a>(r: &mut Reader<'a>, table_len: usize) -> Option<Vec<&'a [u8]>> {
    let n = r.count(4)?;
    let mut raw: Vec<&[u8]> = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.count(4)?;
        let members = r.take(len * 4)?;
        let mut last = None;
        for i in members.chunks_exact(4) {
            let i = u32::from_le_bytes(i.try_into().ok()?) as usize;
            if i >= table_len || last.is_some_and(|l| l >= i) {
                return None;
            }
            last = Some(i);
        }
        raw.push(members);
    }
    Some(raw)
}

/// The body's sets, each built (once) when something holds it.
struct Sets<'a> {
    table: Vec<&'a str>,
    raw: Vec<&'a [u8]>,
    built: Vec<Option<Scopes>>,
    /// What an agent passed over holds: one empty set, shared.
    nothing: Scopes,
}

impl Sets<'_> {
    fn get(&mut self, i: u32) -> Option<Scopes> {
        let i = i as usize;
        let members = self.raw.get(i)?;
        let table = &self.table;
        let s = self.built[i].get_or_insert_with(|| {
            members
                .chunks_exact(4)
                .map(|m| table[u32::from_le_bytes([m[0], m[1], m[2], m[3]]) as usize].to_string())
                .collect::<BTreeSet<String>>()
                .into()
        });
        Some(s.clone())
    }
}

/// One agent's authority after its name; one not `wanted` is passed over without a copy (its
/// note and source are not read for this call) and holds nothing.
fn read_agent(r: &mut Reader<'_>, sets: &mut Sets<'_>, wanted: bool) -> Option<AgentAuthority> {
    let (scopes, excluded) = (r.u32()?, r.u32()?);
    if scopes as usize >= sets.raw.len() || excluded as usize >= sets.raw.len() {
        return None;
    }
    if !wanted {
        match r.byte()? {
            0 => {}
            1 => _ = r.bytes()?,
            _ => return None,
        }
        r.bytes()?;
        return Some(AgentAuthority {
            scopes: sets.nothing.clone(),
            excluded: BTreeSet::new(),
            invalid: Some(String::new()),
            rules: Rules::new(),
            source: String::new(),
        });
    }
    let invalid = match r.byte()? {
        0 => None,
        1 => Some(r.string()?),
        _ => return None,
    };
    Some(AgentAuthority {
        scopes: sets.get(scopes)?,
        excluded: (*sets.get(excluded)?).clone(),
        invalid,
        rules: Rules::new(),
        source: r.string()?,
    })
}

/// The key a body was derived from, read without decoding the roster.
pub fn key_of(body: &[u8]) -> Option<String> {
    Reader { rest: body }.string()
}

pub(super) fn put_u32(out: &mut Vec<u8>, n: usize) {
    let n = u32::try_from(n).expect("a roster's counts fit in 32 bits");
    out.extend_from_slice(&n.to_le_bytes());
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put_bytes(out, s.as_bytes());
}

pub(super) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len());
    out.extend_from_slice(b);
}

pub(super) struct Reader<'a> {
    pub rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.rest.split_at_checked(n)?;
        self.rest = rest;
        Some(head)
    }

    pub fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    /// A count of items of at least `min` bytes each: never more than the bytes left allow,
    /// so a forged count cannot make a huge allocation.
    pub fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(min)? <= self.rest.len()).then_some(n)
    }

    pub fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }

    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    pub fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.count(4)?;
        (0..n).map(|_| self.string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn roster() -> Roster {
        let root: Scopes =
            set(&["agent.delegate.a", "agent.delegate.b", "fs.read", "mcp.*"]).into();
        let mut agents = BTreeMap::new();
        for (name, scopes, excluded, invalid) in [
            ("a", root.clone(), set(&[]), None),
            ("b", root.clone(), set(&["mcp.pay.refund"]), None),
            (
                "c",
                Scopes::default(),
                set(&[]),
                Some("bad\nyaml".to_string()),
            ),
            ("Ünï c", set(&["fs.read"]).into(), set(&[]), None),
        ] {
            agents.insert(
                name.to_string(),
                AgentAuthority {
                    scopes,
                    excluded,
                    invalid,
                    // One agent holds Bash under rules: they read back with it.
                    rules: if name == "b" {
                        [("exec.bash".to_string(), set(&["Bash(git tag:*)"]))].into()
                    } else {
                        Rules::new()
                    },
                    source: format!(".claude/agents/{name}.md"),
                },
            );
        }
        Roster {
            root,
            root_excluded: set(&["mcp.pay.wipe"]),
            agents,
            root_rules: [("exec.bash".to_string(), set(&["Bash(git tag:*)"]))].into(),
            settings_rules: vec![SettingsRule {
                kind: crate::derive::rules::RuleKind::Ask,
                rule: "Bash(git push:*)".into(),
                file: "settings.json".into(),
            }],
            unrepresented: vec!["x Bash(npm run lint)".into()],
            problems: vec!["p".into()],
            broken_files: vec![crate::derive::roster::BrokenFile {
                file: ".claude/agents/d.md".into(),
                error: "the frontmatter block is not closed".into(),
            }],
            digest: "d".repeat(64),
            why: crate::derive::provenance::Provenance {
                inheriting: ["a".to_string(), "b".to_string()].into(),
                ..Default::default()
            }
            .into(),
        }
    }

    #[test]
    fn a_roster_reads_back_as_it_was_written_sharing_its_sets() {
        let r = roster();
        let body = encode("k", &r, &[7; 32]);
        let (key, back) = decode(&body).unwrap();
        assert_eq!(key, "k");
        assert_eq!(back, r);
        assert!(back.agents["a"].scopes.same(&back.root));
        assert!(back.agents["b"].scopes.same(&back.root));
    }

    #[test]
    fn a_roster_read_for_one_agent_holds_that_agents_sets_and_every_name() {
        let r = roster();
        let body = encode("k", &r, &[7; 32]);
        for agent in [Some("b"), Some("Ünï c"), None] {
            let (_, one) = decode_for(&body, agent).unwrap();
            assert_eq!(one.root, r.root);
            assert_eq!(one.digest, r.digest);
            assert!(
                one.agents.keys().eq(r.agents.keys()),
                "every name, in order"
            );
            for (name, a) in &one.agents {
                if Some(name.as_str()) == agent {
                    assert_eq!(a, &r.agents[name]);
                } else {
                    assert!(a.scopes.is_empty() && !a.holds("fs.read"), "{name}");
                    assert_eq!(a.invalid.as_deref(), Some(""));
                }
            }
        }
        // Checked as a whole all the same.
        for cut in 0..body.len() {
            assert!(
                decode_for(&body[..cut], Some("b")).is_none(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn anything_but_a_whole_body_is_refused() {
        let body = encode("k", &roster(), &[7; 32]);
        for cut in 0..body.len() {
            assert!(decode(&body[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = body.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        // An index past the table, or a huge count, is refused, never followed.
        let mut forged = body.clone();
        let at = forged.len() - 8;
        forged[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&forged).is_none());
    }
}
