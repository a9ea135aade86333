//! The account `--derive` and `doctor` give of inheritance: what the session pool holds, and
//! which file put each entry there. Computed only when printed, from the declarations (the
//! hook's deny hints use the compact [`super::provenance`] record instead).

use super::frontmatter::AgentFile;
use super::provenance::{denial_map, PoolSource};
use super::scopes::{covers, declared_at, Declared, Site};
use super::Declarations;
use std::collections::{BTreeMap, BTreeSet};

/// What put one scope into the pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Origins {
    /// Settings files whose `permissions.allow` has it (`.claude/settings.json`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Agents whose own `tools` list has it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// `[derive] session_pool` names it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub session_pool: bool,
}

/// The session pool, before `permissions.deny`: each entry (delegation aside, which is one
/// scope per declared agent) with its origins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Account {
    pub source: PoolSource,
    pub pool: BTreeMap<String, Origins>,
}

impl Account {
    /// The account of `decl`, as [`super::resolve`] builds the pool from it.
    pub fn of(decl: &Declarations) -> Account {
        let mut pool: BTreeMap<String, Origins> = BTreeMap::new();
        let source = match &decl.session_pool {
            Some(rules) => {
                for s in rules.iter().flat_map(|r| scopes(r, Site::AgentTools)) {
                    pool.entry(s).or_default().session_pool = true;
                }
                PoolSource::Configured
            }
            None => {
                for (i, rule) in decl.allow.iter().enumerate() {
                    let file = format!(
                        ".claude/{}",
                        decl.allow_from
                            .get(i)
                            .map_or("settings.json", String::as_str)
                    );
                    for s in scopes(rule, Site::Settings) {
                        let o = pool.entry(s).or_default();
                        if !o.allow.contains(&file) {
                            o.allow.push(file.clone());
                        }
                    }
                }
                for (name, (_, file)) in &decl.agents {
                    if let Ok(a) = file {
                        for s in listed(a) {
                            pool.entry(s).or_default().agents.push(name.clone());
                        }
                    }
                }
                PoolSource::Derived
            }
        };
        pool.retain(|s, _| !s.starts_with("agent.delegate."));
        Account { source, pool }
    }
}

/// The scopes of one rule at `site` (nothing for one that is not represented).
fn scopes(rule: &str, site: Site) -> Vec<String> {
    match declared_at(rule, site) {
        Declared::Scopes(s) | Declared::WholeTool(s, _) => s,
        Declared::Ruled(s, _) => vec![s],
        Declared::All | Declared::Unrepresented(_) => Vec::new(),
    }
}

/// What an agent's own `tools` list adds to the derived pool: the list minus its own
/// `disallowedTools`.
fn listed(a: &AgentFile) -> BTreeSet<String> {
    let Some(tools) = &a.tools else {
        return BTreeSet::new();
    };
    let denied = denial_map(&a.disallowed, Site::AgentDisallowed);
    tools
        .iter()
        .flat_map(|r| scopes(r, Site::AgentTools))
        .filter(|s| !denied.keys().any(|d| covers(d, s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derive::frontmatter;

    #[test]
    fn each_pool_entry_names_what_put_it_there() {
        let mut d = Declarations::default();
        for (n, t) in [
            (
                "a",
                "---\nname: a\ntools: Read, mcp__pay\ndisallowedTools: Read\n---\n",
            ),
            ("b", "---\nname: b\ntools: Read, Agent(a)\n---\n"),
            ("c", "---\nname: c\n---\n"),
        ] {
            d.agents
                .insert(n.into(), (format!("{n}.md"), frontmatter::parse_agent(t)));
        }
        d.allow = vec!["Read".into(), "Bash(git *)".into(), "Grep".into()];
        d.allow_from = vec![
            "settings.json".into(),
            "settings.json".into(),
            "settings.local.json".into(),
        ];
        let acc = Account::of(&d);
        assert_eq!(acc.source, PoolSource::Derived);
        assert_eq!(
            acc.pool.keys().collect::<Vec<_>>(),
            ["fs.grep", "fs.read", "mcp.pay.*"]
        );
        assert_eq!(acc.pool["fs.read"].allow, [".claude/settings.json"]);
        assert_eq!(acc.pool["fs.read"].agents, ["b"]);
        assert_eq!(acc.pool["fs.grep"].allow, [".claude/settings.local.json"]);
        assert_eq!(acc.pool["mcp.pay.*"].agents, ["a"]);
        d.session_pool = Some(vec!["Glob".into(), "Bash(git *)".into()]);
        let acc = Account::of(&d);
        assert_eq!(acc.source, PoolSource::Configured);
        assert_eq!(
            acc.pool.keys().collect::<Vec<_>>(),
            ["exec.bash", "fs.glob"]
        );
        assert!(acc.pool["exec.bash"].session_pool && acc.pool["exec.bash"].agents.is_empty());
    }
}
