//! The derived permission sets ([`Roster`], one [`AgentAuthority`] per agent), the queries the
//! decision asks of them, and the digest that records which roster a decision was made under.

use super::scopes::covers;
use crate::ledger::{canonical, chain::sha256_hex};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One agent's derived authority.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgentAuthority {
    pub scopes: BTreeSet<String>,
    /// Denials narrower than a scope held (`disallowedTools: mcp__pay__refund` beside
    /// `tools: mcp__pay`, a `permissions.deny` of one tool of an allowed server): a wide scope
    /// cannot be cut into its parts, so it is held except where one of these covers the call.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub excluded: BTreeSet<String>,
    /// Set when the agent's own declaration could not be read: it then holds nothing.
    pub invalid: Option<String>,
    /// Where the agent was declared (a file, or the configuration).
    pub source: String,
}

/// The derived permission sets of one project.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Roster {
    pub root: BTreeSet<String>,
    /// The operator's denials narrower than a scope the root holds (see
    /// [`AgentAuthority::excluded`]).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub root_excluded: BTreeSet<String>,
    pub agents: BTreeMap<String, AgentAuthority>,
    pub unrepresented: Vec<String>,
    pub problems: Vec<String>,
    /// Agent files that declare no agent because they are broken: a call by the type one was
    /// meant to declare is told which file and why, not only that the type is undeclared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken_files: Vec<BrokenFile>,
    pub digest: String,
    /// Why each agent holds what it holds, for the deny hints (not in the digest).
    #[serde(default)]
    pub why: super::provenance::Provenance,
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
    held.iter().any(|p| covers(p, scope)) && !excluded.iter().any(|d| covers(d, scope))
}

impl AgentAuthority {
    pub fn holds(&self, scope: &str) -> bool {
        holds(&self.scopes, &self.excluded, scope)
    }

    /// Held by a scope but taken out by a narrower denial.
    pub fn excludes(&self, scope: &str) -> bool {
        self.scopes.iter().any(|p| covers(p, scope)) && !self.holds(scope)
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
        doc
    }
}

/// The digest of a roster's permission sets (not of its notes), as the ledger records it.
pub(super) fn digest_of(
    root: &BTreeSet<String>,
    root_excluded: &BTreeSet<String>,
    agents: &BTreeMap<String, AgentAuthority>,
) -> String {
    // Exclusions enter only where there are some, so a roster without any keeps the digest
    // (and the chain) it had before they were derived.
    let agent_doc = |a: &AgentAuthority| {
        let mut d = json!({"scopes": a.scopes, "invalid": a.invalid});
        if !a.excluded.is_empty() {
            d["excluded"] = json!(a.excluded);
        }
        d
    };
    let mut doc = json!({
        "root": root,
        "agents": agents.iter().map(|(k, a)| (k.clone(), agent_doc(a))).collect::<serde_json::Map<_, _>>(),
    });
    if !root_excluded.is_empty() {
        doc["root_excluded"] = json!(root_excluded);
    }
    sha256_hex(&canonical::to_vec(&doc).expect("derivation documents hold only strings"))
}
