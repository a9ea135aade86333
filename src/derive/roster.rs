//! The derived permission sets ([`Roster`], one [`AgentAuthority`] per agent), the queries the
//! decision asks of them, and the digest that records which roster a decision was made under.

use super::rules::{Rules, SettingsRule};
use super::scopes::{set_covers, Scopes};
use crate::json::canonical;
use crate::ledger::chain::sha256_hex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One agent's derived authority.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgentAuthority {
    /// Shared with the root, and with every agent that holds the same set.
    pub scopes: Scopes,
    /// Denials narrower than a scope held (`disallowedTools: mcp__pay__refund` beside
    /// `tools: mcp__pay`, a `permissions.deny` of one tool of an allowed server): a wide scope
    /// cannot be cut into its parts, so it is held except where one of these covers the call.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub excluded: BTreeSet<String>,
    /// Set when the agent's own declaration could not be read: it then holds nothing.
    pub invalid: Option<String>,
    /// Scopes held only for the calls these rules match (`tools: Bash(git tag:*)`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rules: Rules,
    /// Where the agent was declared (a file, or the configuration).
    pub source: String,
}

/// The derived permission sets of one project.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Roster {
    pub root: Scopes,
    /// The operator's denials narrower than a scope the root holds (see
    /// [`AgentAuthority::excluded`]).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub root_excluded: BTreeSet<String>,
    pub agents: BTreeMap<String, AgentAuthority>,
    /// The root's scopes held only under rules (every declaration of them has arguments).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub root_rules: Rules,
    /// `permissions.deny` rules with arguments and every `permissions.ask` rule: applied to
    /// each call, whatever the caller holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings_rules: Vec<SettingsRule>,
    pub unrepresented: Vec<String>,
    pub problems: Vec<String>,
    /// Agent files that declare no agent because they are broken: a call by the type one was
    /// meant to declare is told which file and why, not only that the type is undeclared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken_files: Vec<BrokenFile>,
    pub digest: String,
    /// Why each agent holds what it holds, for the deny hints (not in the digest).
    #[serde(default)]
    pub why: super::provenance::Why,
}

/// An agent file no agent could be derived from, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BrokenFile {
    /// Its path from the project's root.
    pub file: String,
    pub error: String,
}

/// `scope` is covered by a held pattern and by no excluded one.
fn holds(held: &BTreeSet<String>, excluded: &BTreeSet<String>, scope: &str) -> bool {
    set_covers(held, scope) && !set_covers(excluded, scope)
}

impl AgentAuthority {
    pub fn holds(&self, scope: &str) -> bool {
        holds(&self.scopes, &self.excluded, scope)
    }

    /// Held by a scope but taken out by a narrower denial.
    pub fn excludes(&self, scope: &str) -> bool {
        set_covers(&self.scopes, scope) && !self.holds(scope)
    }
}

impl Roster {
    /// The broken agent file named for subagent type `ty` (`.claude/agents/<ty>.md`, in any
    /// folder), taken to be the declaration it was meant to be.
    pub fn broken_file_for(&self, ty: &str) -> Option<&BrokenFile> {
        self.broken_files.iter().find(|f| {
            std::path::Path::new(&f.file)
                .file_stem()
                .is_some_and(|s| s == ty)
        })
    }

    /// Does the session root hold `scope` (does the project declare it for anyone)?
    pub fn declared_anywhere(&self, scope: &str) -> bool {
        holds(&self.root, &self.root_excluded, scope)
    }

    /// The `--derive` JSON document.
    pub fn to_json(&self) -> Value {
        let mut doc = json!({
            "root": self.root,
            "agents": self.agents.iter().map(|(k, a)| (k.clone(), json!(a.scopes))).collect::<serde_json::Map<_, _>>(),
            "unrepresented": self.unrepresented,
            "problems": self.problems,
            "digest": self.digest,
        });
        // Only when some denial is narrower than a held scope, so other documents keep their shape.
        let excluded: serde_json::Map<String, Value> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.excluded.is_empty())
            .map(|(k, a)| (k.clone(), json!(a.excluded)))
            .collect();
        if !self.root_excluded.is_empty() || !excluded.is_empty() {
            doc["excluded"] = json!({"root": self.root_excluded, "agents": excluded});
        }
        let ruled: serde_json::Map<String, Value> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.rules.is_empty())
            .map(|(k, a)| (k.clone(), json!(super::rules::flat(&a.rules))))
            .collect();
        if !self.root_rules.is_empty() || !ruled.is_empty() || !self.settings_rules.is_empty() {
            doc["rules"] = json!({
                "root": super::rules::flat(&self.root_rules),
                "agents": ruled,
                "settings": self.settings_rules,
            });
        }
        doc
    }
}

/// The rules a digest covers besides the agents' own.
#[derive(Clone, Copy)]
pub(super) struct Ruled<'a> {
    pub root: &'a Rules,
    pub settings: &'a [SettingsRule],
}

/// The digest of a roster's permission sets (not of its notes), as the ledger records it: the
/// SHA-256 of the RFC 8785 form of `{"root", "agents": {name: {"scopes", "invalid"}}}`, where
/// an agent holding exactly the root's set has `"scopes": "root"`, and one holding the same
/// set as an agent before it (in the document's order) `"scopes": "as:<that agent>"`, rather
/// than a copy. With `n` agents inheriting the root, copies made the document (and its
/// hashing) grow with `n²`; a collection's agents that inherit the pool less a tool or two
/// hold a handful of such sets between them. Written straight to bytes; a roster whose agents
/// all hold sets of their own keeps the digest it had before.
pub(super) fn digest_of(
    root: &Scopes,
    root_excluded: &BTreeSet<String>,
    agents: &BTreeMap<String, AgentAuthority>,
    ruled: Ruled<'_>,
) -> String {
    let set = |s: &BTreeSet<String>, out: &mut Vec<u8>| {
        let string = |v: &String, o: &mut Vec<u8>| {
            canonical::write_string(v, o);
            Ok(())
        };
        canonical::write_array(s.iter(), string, out).expect("strings always have a canonical form")
    };
    // Each set written out so far, with the agent that holds it first.
    let mut written: Vec<(&Scopes, &str)> = Vec::new();
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"agents\":");
    // Exclusions enter only where there are some, so a roster without any keeps the digest
    // (and the chain) it had before they were derived.
    let mut sorted: Vec<(&String, &AgentAuthority)> = agents.iter().collect();
    sorted.sort_by(|a, b| canonical::utf16_cmp(a.0, b.0));
    out.push(b'{');
    for (i, (name, a)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        canonical::write_string(name, &mut out);
        out.push(b':');
        out.push(b'{');
        if !a.excluded.is_empty() {
            out.extend_from_slice(b"\"excluded\":");
            set(&a.excluded, &mut out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"invalid\":");
        match &a.invalid {
            None => out.extend_from_slice(b"null"),
            Some(why) => canonical::write_string(why, &mut out),
        }
        if !a.rules.is_empty() {
            out.extend_from_slice(b",\"rules\":");
            out.extend_from_slice(&canonical::to_vec(&json!(a.rules)).expect("rules are strings"));
        }
        out.extend_from_slice(b",\"scopes\":");
        if a.scopes == *root {
            out.extend_from_slice(b"\"root\"}");
            continue;
        }
        // Equal sets, shared or not, give the same document.
        match written
            .iter()
            .find(|(s, _)| s.same(&a.scopes) || **s == a.scopes)
        {
            Some((_, first)) => canonical::write_string(&format!("as:{first}"), &mut out),
            None => {
                set(&a.scopes, &mut out);
                written.push((&a.scopes, name));
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"},\"root\":");
    set(root, &mut out);
    if !root_excluded.is_empty() {
        out.extend_from_slice(b",\"root_excluded\":");
        set(root_excluded, &mut out);
    }
    // Rules enter only where there are some, as exclusions do.
    if !ruled.root.is_empty() {
        out.extend_from_slice(b",\"root_rules\":");
        out.extend_from_slice(&canonical::to_vec(&json!(ruled.root)).expect("rules are strings"));
    }
    if !ruled.settings.is_empty() {
        out.extend_from_slice(b",\"settings_rules\":");
        let doc = json!(ruled.settings);
        out.extend_from_slice(&canonical::to_vec(&doc).expect("rules are strings"));
    }
    out.push(b'}');
    sha256_hex(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest's definition, as a JSON tree.
    fn digest_by_tree(r: &Roster) -> String {
        // The agents in the document's order: by their names' UTF-16 code units.
        let mut order: Vec<(&String, &AgentAuthority)> = r.agents.iter().collect();
        order.sort_by_key(|(name, _)| name.encode_utf16().collect::<Vec<u16>>());
        let agent_doc = |name: &String, a: &AgentAuthority| {
            let first = order.iter().find(|(_, b)| b.scopes == a.scopes).unwrap().0;
            let scopes = if a.scopes == r.root {
                json!("root")
            } else if first != name {
                json!(format!("as:{first}"))
            } else {
                json!(a.scopes)
            };
            let mut d = json!({"scopes": scopes, "invalid": a.invalid});
            if !a.excluded.is_empty() {
                d["excluded"] = json!(a.excluded);
            }
            d
        };
        let mut doc = json!({
            "root": r.root,
            "agents": r.agents.iter().map(|(k, a)| (k.clone(), agent_doc(k, a))).collect::<serde_json::Map<_, _>>(),
        });
        if !r.root_excluded.is_empty() {
            doc["root_excluded"] = json!(r.root_excluded);
        }
        sha256_hex(&canonical::to_vec(&doc).unwrap())
    }

    #[test]
    fn the_digest_is_the_canonical_documents_whatever_is_shared() {
        let set = |v: &[&str]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<BTreeSet<String>>()
        };
        let root: Scopes = set(&["agent.delegate.x--41-20b", "fs.read", "mcp.*", "q\"\\\n"]).into();
        let mut agents = BTreeMap::new();
        // Names whose UTF-8 and UTF-16 orders differ, shared and unshared sets, exclusions.
        let shared: Scopes = set(&["fs.read"]).into();
        for (i, name) in ["a", "\u{ff5e}", "\u{1f600}", "Z z", "\u{ff60}", "c"]
            .iter()
            .enumerate()
        {
            // Shared with the root or equal to it without being shared; a set of their own
            // that others hold too, shared or only equal (the first holder differs between
            // UTF-8 and UTF-16 order); a set of its own alone.
            let scopes = match i {
                0 => root.clone(),
                1 | 2 => shared.clone(),
                3 => (*root).clone().into(),
                4 => set(&["fs.read"]).into(),
                _ => set(&["fs.grep"]).into(),
            };
            let excluded = if i == 1 {
                set(&["mcp.pay.refund"])
            } else {
                BTreeSet::new()
            };
            let invalid = (i == 3).then(|| "not \u{7f} valid".to_string());
            let source = String::new();
            agents.insert(
                name.to_string(),
                AgentAuthority {
                    scopes,
                    excluded,
                    invalid,
                    rules: Rules::new(),
                    source,
                },
            );
        }
        for root_excluded in [BTreeSet::new(), set(&["mcp.pay.wipe"])] {
            let r = Roster {
                root: root.clone(),
                root_excluded: root_excluded.clone(),
                agents: agents.clone(),
                root_rules: Rules::new(),
                settings_rules: vec![],
                unrepresented: vec![],
                problems: vec![],
                broken_files: vec![],
                digest: String::new(),
                why: Default::default(),
            };
            assert_eq!(
                digest_of(
                    &r.root,
                    &r.root_excluded,
                    &r.agents,
                    Ruled {
                        root: &r.root_rules,
                        settings: &r.settings_rules
                    }
                ),
                digest_by_tree(&r)
            );
        }
    }
}
