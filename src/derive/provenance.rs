//! Why each agent holds what it holds, kept compactly beside the [`Roster`] so that a deny can
//! name the one change that would allow the call (docs/DERIVATION.md, "Why a call is denied").
//!
//! Only what a deny needs is recorded at derivation time, and it stays small: which agents
//! inherit the pool, each `disallowedTools` and `permissions.deny` rule by the scopes it takes,
//! and each listed tool that a denial removed. The longer account (which files put each entry
//! into the pool) is computed only when `--derive` or `doctor` print it ([`super::explain`]).

use super::frontmatter::AgentFile;
use super::scopes::{covers, declared_at, Declared, Site};
use super::{compat, Declarations, Roster};
use std::collections::{BTreeMap, BTreeSet};

/// Where the pool of an agent without `tools` comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolSource {
    /// `permissions.allow` and what the agents with a `tools` line list (Claude Code's rule).
    #[default]
    Derived,
    /// `[derive] session_pool` in `.attenu/config.toml`.
    Configured,
}

/// One rule, and the file it is written in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RuleAt {
    pub rule: String,
    pub file: String,
}

/// The record a deny explains itself from. Not part of the digest: it says why, not what.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    pub pool: PoolSource,
    /// `[derive] session_pool` in scopes, before any denial (empty unless configured).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub configured: BTreeSet<String>,
    /// Agents with no `tools` line (or `tools: *`): they hold the pool.
    pub inheriting: BTreeSet<String>,
    /// Scope → the `permissions.deny` rule that takes it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub denied: BTreeMap<String, RuleAt>,
    /// The settings file with a `permissions.deny` of `*`, if one has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_all: Option<String>,
    /// Agent → scope → the `disallowedTools` rule that takes it (agents with such rules only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub disallowed: BTreeMap<String, BTreeMap<String, String>>,
    /// Agent → scopes its `tools` line lists that a denial removed (only where there are some).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub listed_removed: BTreeMap<String, BTreeSet<String>>,
}

/// A roster's [`Provenance`], read when first asked for. Only a deny's hint, `--derive` and
/// `doctor` read it, and a cached roster of 200 agents would otherwise parse it (a few
/// hundred names) on every call that allows.
#[derive(Default)]
pub struct Why {
    parsed: std::sync::OnceLock<Provenance>,
    /// Its JSON as the roster cache holds it, until it is parsed.
    json: Option<Box<str>>,
}

impl Why {
    /// The provenance written as `json` (by the roster cache, under its seal); `None` when it
    /// is not JSON at all. Checked without building anything, so text that is not what this
    /// build writes makes the cache a miss rather than hints that say less than they should.
    pub fn from_json(json: String) -> Option<Why> {
        serde_json::from_str::<serde::de::IgnoredAny>(&json).ok()?;
        Some(Why {
            parsed: std::sync::OnceLock::new(),
            json: Some(json.into_boxed_str()),
        })
    }
}

impl From<Provenance> for Why {
    fn from(p: Provenance) -> Why {
        Why {
            parsed: p.into(),
            json: None,
        }
    }
}

impl std::ops::Deref for Why {
    type Target = Provenance;
    /// A sealed cache holds only what this build wrote, and it was checked to be JSON; if it
    /// ever were not a provenance, the hints would lose their detail (they decide nothing).
    fn deref(&self) -> &Provenance {
        self.parsed.get_or_init(|| {
            self.json
                .as_deref()
                .and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or_default()
        })
    }
}

impl Clone for Why {
    /// A copy made before anything read the provenance stays unread.
    fn clone(&self) -> Why {
        match self.parsed.get() {
            Some(p) => Why::from(p.clone()),
            None => Why {
                parsed: std::sync::OnceLock::new(),
                json: self.json.clone(),
            },
        }
    }
}

impl PartialEq for Why {
    fn eq(&self, other: &Why) -> bool {
        **self == **other
    }
}

impl Eq for Why {}

impl std::fmt::Debug for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl serde::Serialize for Why {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Why {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Why, D::Error> {
        Provenance::deserialize(d).map(Why::from)
    }
}

/// One change that would let a call through, as a deny names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Remove `rule` from `permissions.deny` in `file`.
    RemoveDeny(RuleAt),
    /// `permissions.deny` in `file` holds `*`, which denies everything.
    RemoveDenyAll(String),
    /// Remove `rule` from the agent's `disallowedTools` in `file`.
    RemoveDisallowed(RuleAt),
    /// The agent (declared in `file`) inherits a pool without the tool.
    AddToPool { pool: PoolSource, file: String },
    /// The agent lists its tools in `file` without this one.
    AddToTools(String),
    /// Nothing declares the tool for the session.
    AddToAllow(PoolSource),
}

impl Provenance {
    /// The `permissions.deny` rule that takes `scope`, if one does (`*` for a deny of all).
    pub fn deny_rule(&self, scope: &str) -> Option<RuleAt> {
        if let Some(file) = &self.deny_all {
            return Some(RuleAt {
                rule: "*".into(),
                file: file.clone(),
            });
        }
        self.denied
            .iter()
            .find(|(p, _)| covers(p, scope))
            .map(|(_, r)| r.clone())
    }

    fn deny_of(&self, scope: &str) -> Option<Change> {
        self.deny_rule(scope)
            .map(|r| match (r.rule.as_str(), &self.deny_all) {
                ("*", Some(_)) => Change::RemoveDenyAll(r.file),
                _ => Change::RemoveDeny(r),
            })
    }
}

/// The changes that would let the declared, readable agent `name` hold `scope`, which it does
/// not hold. Every denial that takes it comes first, then what the agent's own line lacks.
pub fn changes_for_agent(roster: &Roster, name: &str, scope: &str) -> Vec<Change> {
    let why = &roster.why;
    let Some(agent) = roster.agents.get(name) else {
        return Vec::new();
    };
    let mut out: Vec<Change> = why.deny_of(scope).into_iter().collect();
    let disallowed = why
        .disallowed
        .get(name)
        .and_then(|m| m.iter().find(|(p, _)| covers(p, scope)));
    if let Some((_, rule)) = disallowed {
        out.push(Change::RemoveDisallowed(RuleAt {
            rule: rule.clone(),
            file: agent.source.clone(),
        }));
    }
    if why.inheriting.contains(name) {
        // After a settings denial the derived pool is not known (only the root is kept).
        let in_pool = match why.pool {
            PoolSource::Configured => why.configured.iter().any(|p| covers(p, scope)),
            PoolSource::Derived => roster.root.iter().any(|p| covers(p, scope)),
        };
        if !in_pool && (why.pool == PoolSource::Configured || why.deny_of(scope).is_none()) {
            out.push(Change::AddToPool {
                pool: why.pool,
                file: agent.source.clone(),
            });
        }
    } else {
        let listed = agent.scopes.iter().any(|p| covers(p, scope))
            || why
                .listed_removed
                .get(name)
                .is_some_and(|r| r.iter().any(|p| covers(p, scope)));
        if !listed {
            out.push(Change::AddToTools(agent.source.clone()));
        }
    }
    out
}

/// The changes that would let the session's main thread hold `scope`.
pub fn changes_for_session(roster: &Roster, scope: &str) -> Vec<Change> {
    match roster.why.deny_of(scope) {
        Some(c) => vec![c],
        None => vec![Change::AddToAllow(roster.why.pool)],
    }
}

/// The record of `decl`, before resolution (the listed tools a denial removed are added as
/// each agent resolves).
pub(super) fn record(decl: &Declarations) -> Provenance {
    let (denied, deny_all) = settings_denials(&decl.deny, &decl.deny_from);
    let mut why = Provenance {
        pool: match decl.session_pool {
            Some(_) => PoolSource::Configured,
            None => PoolSource::Derived,
        },
        denied,
        deny_all,
        ..Provenance::default()
    };
    for (name, (_, file)) in &decl.agents {
        let Ok(a) = file else { continue };
        if inherits(a) {
            why.inheriting.insert(name.clone());
        }
        if !a.disallowed.is_empty() {
            why.disallowed.insert(
                name.clone(),
                denial_map(&a.disallowed, Site::AgentDisallowed),
            );
        }
    }
    why
}

/// An agent without a `tools` line, or with `*` in it, holds the pool.
pub fn inherits(a: &AgentFile) -> bool {
    a.tools
        .as_ref()
        .is_none_or(|t| t.iter().any(|r| r.trim() == "*"))
}

/// Scope → rule for each of `rules` (written at `site`), as one denial reads them: denying
/// Bash also takes Monitor.
pub(super) fn denial_map(rules: &[String], site: Site) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in rules {
        let mut scopes = BTreeSet::new();
        match declared_at(r, site) {
            Declared::Scopes(s) | Declared::WholeTool(s, _) => scopes.extend(s),
            // Only an agent's `tools` holds a scope under a rule; no denial reads as one.
            Declared::Ruled(s, _) => _ = scopes.insert(s),
            Declared::All | Declared::Unrepresented(_) => {}
        }
        compat::take_with_bash(&mut scopes);
        for s in scopes {
            out.entry(s).or_insert_with(|| r.clone());
        }
    }
    out
}

/// The `permissions.deny` record: each rule with the settings file it comes from.
pub(super) fn settings_denials(
    deny: &[String],
    files: &[String],
) -> (BTreeMap<String, RuleAt>, Option<String>) {
    let file_of = |i: usize| {
        format!(
            ".claude/{}",
            files.get(i).map_or("settings.json", String::as_str)
        )
    };
    let mut out = BTreeMap::new();
    let mut all = None;
    for (i, r) in deny.iter().enumerate() {
        if r.trim() == "*" {
            all.get_or_insert_with(|| file_of(i));
        }
        for (scope, rule) in denial_map(std::slice::from_ref(r), Site::Settings) {
            out.entry(scope).or_insert(RuleAt {
                rule,
                file: file_of(i),
            });
        }
    }
    (out, all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derive::{frontmatter, resolve, Declarations};

    fn roster(agents: &[(&str, &str)], allow: &[&str], deny: &[&str]) -> Roster {
        let mut d = Declarations::default();
        for (name, text) in agents {
            d.agents.insert(
                name.to_string(),
                (
                    format!(".claude/agents/{name}.md"),
                    frontmatter::parse_agent(text),
                ),
            );
        }
        d.allow = allow.iter().map(|s| s.to_string()).collect();
        d.deny = deny.iter().map(|s| s.to_string()).collect();
        d.deny_from = vec!["settings.local.json".into(); deny.len()];
        resolve(d)
    }

    fn rule(rule: &str, file: &str) -> RuleAt {
        RuleAt {
            rule: rule.into(),
            file: file.into(),
        }
    }

    #[test]
    fn a_provenance_kept_as_json_reads_as_the_one_written() {
        let r = roster(&[("a", "---\nname: a\n---\n")], &["Read"], &["Bash"]);
        let json = serde_json::to_string(&*r.why).unwrap();
        let back = Why::from_json(json).unwrap();
        assert_eq!(*back, *r.why);
        assert!(back.inheriting.contains("a"));
        // Text that is not JSON is refused: the cache is then a miss.
        assert!(Why::from_json("{not json".into()).is_none());
        // JSON of another shape loses only the hints' detail.
        assert_eq!(
            *Why::from_json("[1]".into()).unwrap(),
            Provenance::default()
        );
        // A copy made before anything read it is the same provenance.
        let unread = Why::from_json(serde_json::to_string(&*r.why).unwrap()).unwrap();
        assert_eq!(*unread.clone(), *r.why);
    }

    /// Each way an agent can lack a tool, and the one change each deny names.
    #[test]
    fn each_missing_scope_names_the_change_that_would_grant_it() {
        let r = roster(
            &[
                ("inherits", "---\nname: inherits\n---\n"),
                ("star", "---\nname: star\ntools: '*'\n---\n"),
                ("lists", "---\nname: lists\ntools: Read, Bash\n---\n"),
                (
                    "takes",
                    "---\nname: takes\ndisallowedTools: Grep, Bash(rm *)\n---\n",
                ),
                (
                    "both",
                    "---\nname: both\ntools: Read, WebFetch\ndisallowedTools: Read\n---\n",
                ),
            ],
            &["Grep"],
            &["WebFetch"],
        );
        let at = |n: &str| format!(".claude/agents/{n}.md");
        let table: &[(&str, &str, Vec<Change>)] = &[
            (
                "inherits",
                "fs.write",
                vec![Change::AddToPool {
                    pool: PoolSource::Derived,
                    file: at("inherits"),
                }],
            ),
            (
                "star",
                "fs.write",
                vec![Change::AddToPool {
                    pool: PoolSource::Derived,
                    file: at("star"),
                }],
            ),
            ("lists", "fs.grep", vec![Change::AddToTools(at("lists"))]),
            (
                "takes",
                "fs.grep",
                vec![Change::RemoveDisallowed(rule("Grep", &at("takes")))],
            ),
            (
                "takes",
                "exec.monitor",
                vec![
                    Change::RemoveDisallowed(rule("Bash(rm *)", &at("takes"))),
                    Change::AddToPool {
                        pool: PoolSource::Derived,
                        file: at("takes"),
                    },
                ],
            ),
            (
                "both",
                "fs.read",
                vec![Change::RemoveDisallowed(rule("Read", &at("both")))],
            ),
            (
                "both",
                "net.fetch",
                vec![Change::RemoveDeny(rule(
                    "WebFetch",
                    ".claude/settings.local.json",
                ))],
            ),
            (
                "lists",
                "net.fetch",
                vec![
                    Change::RemoveDeny(rule("WebFetch", ".claude/settings.local.json")),
                    Change::AddToTools(at("lists")),
                ],
            ),
            (
                "inherits",
                "net.fetch",
                vec![Change::RemoveDeny(rule(
                    "WebFetch",
                    ".claude/settings.local.json",
                ))],
            ),
        ];
        for (agent, scope, want) in table {
            assert!(!r.agents[*agent].holds(scope), "{agent} {scope}");
            assert_eq!(
                &changes_for_agent(&r, agent, scope),
                want,
                "{agent} {scope}"
            );
        }
        assert_eq!(
            changes_for_session(&r, "fs.write"),
            [Change::AddToAllow(PoolSource::Derived)]
        );
        let all = roster(&[], &["Read"], &["*"]);
        assert_eq!(
            changes_for_session(&all, "fs.read"),
            [Change::RemoveDenyAll(".claude/settings.local.json".into())]
        );
    }

    /// `[derive] session_pool`: what an inheriting agent (or `tools: *`) holds, minus the
    /// settings' and its own denials; it joins the root; agents with a list are unchanged.
    #[test]
    fn a_configured_pool_replaces_the_derived_one() {
        let mut d = Declarations::default();
        for (n, t) in [
            (
                "inherits",
                "---\nname: inherits\ndisallowedTools: Glob\n---\n",
            ),
            ("star", "---\nname: star\ntools: '*'\n---\n"),
            ("lists", "---\nname: lists\ntools: Bash, mcp__pay\n---\n"),
        ] {
            d.agents
                .insert(n.into(), (format!("{n}.md"), frontmatter::parse_agent(t)));
        }
        d.allow = vec!["WebSearch".into()];
        d.deny = vec!["Grep".into()];
        d.session_pool = Some(vec![
            "Read".into(),
            "Grep".into(),
            "Glob".into(),
            "Agent(lists)".into(),
        ]);
        let r = resolve(d);
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            r.agents["inherits"].scopes,
            set(&["agent.delegate.lists", "fs.read"])
        );
        assert_eq!(
            r.agents["star"].scopes,
            set(&["agent.delegate.lists", "fs.glob", "fs.read"])
        );
        assert_eq!(r.agents["lists"].scopes, set(&["exec.bash", "mcp.pay.*"]));
        for s in ["fs.read", "fs.glob", "net.search", "exec.bash"] {
            assert!(r.root.contains(s), "{s} in the root: {:?}", r.root);
        }
        assert!(!r.root.contains("fs.grep"));
        assert_eq!(r.why.pool, PoolSource::Configured);
        assert_eq!(
            changes_for_agent(&r, "inherits", "net.search"),
            [Change::AddToPool {
                pool: PoolSource::Configured,
                file: "inherits.md".into()
            }]
        );
        assert_eq!(
            changes_for_agent(&r, "inherits", "fs.grep"),
            [Change::RemoveDeny(rule("Grep", ".claude/settings.json"))]
        );
        // A deny of everything leaves the configured pool empty too.
        let mut d = Declarations::default();
        d.agents.insert(
            "i".into(),
            (
                "i.md".into(),
                frontmatter::parse_agent("---\nname: i\n---\n"),
            ),
        );
        d.deny = vec!["*".into()];
        d.session_pool = Some(vec!["Read".into()]);
        let r = resolve(d);
        assert!(r.root.is_empty() && r.agents["i"].scopes.is_empty());
    }
}
