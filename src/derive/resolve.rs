//! Resolution: gathered [`Declarations`] become a [`Roster`], as Claude Code resolves them.
//!
//! `disallowedTools` is applied first, then `tools` is resolved against what remains, and an
//! agent without `tools` inherits the session pool. The session root holds the operator's bare
//! `permissions.allow` rules, everything the declared agents hold, and one
//! `agent.delegate.<name>` per agent, minus every bare `permissions.deny` rule; each agent's
//! set is within the root by construction (`meet(session, derived)`).

use super::roster::digest_of;
use super::scopes::{declared_at, delegate_scope, set_covers, Declared, Scopes, Site};
use super::{compat, frontmatter, provenance, AgentAuthority, Declarations, Roster};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Resolves gathered declarations into a [`Roster`].
pub fn resolve(decl: Declarations) -> Roster {
    let mut unrepresented = Vec::new();
    let operator = Operator::read(&decl, &mut unrepresented);
    let mut pool = session_pool(operator.allow.clone(), &decl);
    // `[derive] session_pool`: what inheriting agents hold, within the root like everything.
    let configured = decl.session_pool.as_ref().map(|rules| {
        let label = "[derive] session_pool";
        scopes_of(rules, Site::AgentTools, false, label, &mut unrepresented).0
    });
    pool.extend(configured.iter().flatten().cloned());
    let root: Scopes = if operator.deny_all {
        BTreeSet::new()
    } else {
        subtract(&pool, &operator.deny)
    }
    .into();
    // Inheriting agents share the root's set unless a pool is configured.
    let mut inherited = Inherited::new(match &configured {
        Some(c) if !operator.deny_all => subtract(c, &operator.deny).into(),
        _ => root.clone(),
    });
    let root_excluded = excluded_within(&root, &operator.deny);
    let mut why = provenance::record(&decl);
    why.configured = configured.unwrap_or_default();
    let agents: BTreeMap<String, AgentAuthority> = decl
        .agents
        .into_iter()
        .map(|(name, (source, file))| {
            let authority = match file {
                Err(why) => AgentAuthority {
                    scopes: Scopes::default(),
                    excluded: BTreeSet::new(),
                    invalid: Some(why.message),
                    source,
                },
                Ok(a) => {
                    let (authority, removed) = agent_authority(
                        &name,
                        &a,
                        source,
                        &mut inherited,
                        &root,
                        &operator,
                        &mut unrepresented,
                    );
                    if !removed.is_empty() {
                        why.listed_removed.insert(name.clone(), removed);
                    }
                    authority
                }
            };
            (name, authority)
        })
        .collect();
    unrepresented.sort();
    unrepresented.dedup();
    let agents = share_equal_sets(agents);
    let digest = digest_of(&root, &root_excluded, &agents);
    Roster {
        root,
        root_excluded,
        agents,
        unrepresented,
        problems: decl.problems,
        broken_files: decl.broken_files,
        digest,
        why: why.into(),
    }
}

/// The operator's `permissions.allow` and `permissions.deny`, in scopes.
struct Operator {
    allow: BTreeSet<String>,
    deny: BTreeSet<String>,
    /// A `permissions.deny` of `*`: the root holds nothing.
    deny_all: bool,
}

impl Operator {
    fn read(decl: &Declarations, unrepresented: &mut Vec<String>) -> Operator {
        let (allow, allow_all) = scopes_of(
            &decl.allow,
            Site::Settings,
            false,
            "settings permissions.allow",
            unrepresented,
        );
        if allow_all {
            unrepresented.push("settings permissions.allow * (not a Claude Code rule)".into());
        }
        let (deny, deny_all) = scopes_of(
            &decl.deny,
            Site::Settings,
            true,
            "settings permissions.deny",
            unrepresented,
        );
        Operator {
            allow,
            deny,
            deny_all,
        }
    }
}

/// Pass 1: the operator's allowances, one delegation scope per agent, and what each agent with
/// an explicit list declares for itself (before the operator's denials).
fn session_pool(mut pool: BTreeSet<String>, decl: &Declarations) -> BTreeSet<String> {
    for (name, (source, file)) in &decl.agents {
        pool.insert(delegate_scope(name));
        // A built-in's preset list is Claude Code's, not the project's: it widens no one else.
        if source == super::builtin::SOURCE {
            continue;
        }
        if let Ok(a) = file {
            if let Some(tools) = &a.tools {
                let label = format!("{name}: tools");
                let (own, _) = scopes_of(tools, Site::AgentTools, false, &label, &mut Vec::new());
                let (denied, _) = scopes_of(
                    &a.disallowed,
                    Site::AgentDisallowed,
                    true,
                    "",
                    &mut Vec::new(),
                );
                pool.extend(subtract(&own, &denied));
            }
        }
    }
    pool
}

/// What an agent without `tools` holds (the root, or the configured session pool), and that
/// set less each `disallowedTools` seen so far: agents that take the same tools away share
/// one set, computed once (in a collection, a few denials recur across many agents).
struct Inherited {
    set: Scopes,
    less: HashMap<BTreeSet<String>, Scopes>,
}

impl Inherited {
    fn new(set: Scopes) -> Inherited {
        Inherited {
            set,
            less: HashMap::new(),
        }
    }

    /// The set less what `denied` covers; the set itself when nothing is denied.
    fn without(&mut self, denied: &BTreeSet<String>) -> Scopes {
        if denied.is_empty() {
            return self.set.clone();
        }
        if let Some(s) = self.less.get(denied) {
            return s.clone();
        }
        let s: Scopes = subtract(&self.set, denied).into();
        self.less.insert(denied.clone(), s.clone());
        s
    }
}

/// Pass 2: one readable agent against the resolved root, and the scopes its `tools` line
/// lists that a denial removed (for the deny hints). `inherited` is what an agent without
/// `tools` holds: the root, or the configured session pool.
fn agent_authority(
    name: &str,
    a: &frontmatter::AgentFile,
    source: String,
    inherited: &mut Inherited,
    root: &Scopes,
    operator: &Operator,
    unrepresented: &mut Vec<String>,
) -> (AgentAuthority, BTreeSet<String>) {
    let (denied, _) = scopes_of(
        &a.disallowed,
        Site::AgentDisallowed,
        true,
        &format!("{name}: disallowedTools"),
        unrepresented,
    );
    let mut removed = BTreeSet::new();
    // Shared with the inherited set when nothing is taken away: see `Scopes`.
    let scopes = match &a.tools {
        None => inherited.without(&denied),
        Some(tools) => {
            let (own, all) = scopes_of(
                tools,
                Site::AgentTools,
                false,
                &format!("{name}: tools"),
                unrepresented,
            );
            if all {
                inherited.without(&denied)
            } else {
                // Within the root: a tool the operator denies is removed here too.
                let held: BTreeSet<String> = subtract(&own, &denied)
                    .into_iter()
                    .filter(|s| set_covers(root, s))
                    .collect();
                removed = own.difference(&held).cloned().collect();
                held.into()
            }
        }
    };
    let all_denied: BTreeSet<String> = denied.union(&operator.deny).cloned().collect();
    let excluded = excluded_within(&scopes, &all_denied);
    let authority = AgentAuthority {
        scopes,
        excluded,
        invalid: None,
        source,
    };
    (authority, removed)
}

/// Agents whose sets are equal share one (agents with the same `disallowedTools`), so the
/// roster, its cache and its digest hold each distinct set once.
fn share_equal_sets(
    mut agents: BTreeMap<String, AgentAuthority>,
) -> BTreeMap<String, AgentAuthority> {
    let mut distinct: Vec<Scopes> = Vec::new();
    for a in agents.values_mut() {
        match distinct
            .iter()
            .find(|d| d.same(&a.scopes) || **d == a.scopes)
        {
            Some(d) => a.scopes = d.clone(),
            None => distinct.push(a.scopes.clone()),
        }
    }
    agents
}

/// The scopes `rules` declare at `site`, and whether one of them is `*`. What cannot be
/// represented is noted in `unrepresented` under `label`.
fn scopes_of(
    rules: &[String],
    site: Site,
    denies: bool,
    label: &str,
    unrepresented: &mut Vec<String>,
) -> (BTreeSet<String>, bool) {
    let mut out = BTreeSet::new();
    let mut all = false;
    for r in rules {
        match declared_at(r, site) {
            Declared::Scopes(s) => out.extend(s),
            Declared::All => all = true,
            Declared::Unrepresented(note) => unrepresented.push(format!("{label} {note}")),
            Declared::WholeTool(s, note) => {
                out.extend(s);
                unrepresented.push(format!("{label} {note}"));
            }
        }
    }
    if denies {
        compat::take_with_bash(&mut out);
    }
    (out, all)
}

/// The denials that fall strictly inside a held scope: `subtract` cannot remove those.
fn excluded_within(held: &BTreeSet<String>, denied: &BTreeSet<String>) -> BTreeSet<String> {
    denied
        .iter()
        .filter(|d| set_covers(held, d))
        .cloned()
        .collect()
}

/// `scopes` less every scope a pattern covers. A pattern covers itself and, as `<p>.*`, the
/// longer scopes starting `<p>.`, which sit together in the sorted set: each pattern takes one
/// range out, where asking every scope of a ~200-scope pool of each pattern cost far more.
fn subtract(scopes: &BTreeSet<String>, patterns: &BTreeSet<String>) -> BTreeSet<String> {
    use std::ops::Bound;
    let mut out = scopes.clone();
    for p in patterns {
        out.remove(p);
        let Some(prefix) = p.strip_suffix('*').filter(|x| x.ends_with('.')) else {
            continue;
        };
        let covered: Vec<String> = out
            .range::<str, _>((Bound::Excluded(prefix), Bound::Unbounded))
            .take_while(|s| s.starts_with(prefix))
            .cloned()
            .collect();
        for s in covered {
            out.remove(&s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::canonical;
    use crate::ledger::chain::sha256_hex;
    use serde_json::json;

    fn decl(agents: &[(&str, &str)], allow: &[&str], deny: &[&str]) -> Declarations {
        let mut d = Declarations::default();
        for (name, text) in agents {
            d.agents.insert(
                name.to_string(),
                (format!("{name}.md"), frontmatter::parse_agent(text)),
            );
        }
        d.allow = allow.iter().map(|s| s.to_string()).collect();
        d.deny = deny.iter().map(|s| s.to_string()).collect();
        d
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_seed_sample_project() {
        let r = resolve(decl(
            &[
                ("reviewer", "---\nname: reviewer\ntools: Read, Grep, Glob\n---\n"),
                ("researcher", "---\nname: researcher\ntools: Read, WebFetch\ndisallowedTools: Write, Edit\n---\n"),
            ],
            &["Read", "Grep", "Glob", "Bash(npm run lint)"],
            &["Read(./.env)", "NotebookEdit"],
        ));
        assert_eq!(
            r.root,
            set(&[
                "agent.delegate.researcher",
                "agent.delegate.reviewer",
                "fs.glob",
                "fs.grep",
                "fs.read",
                "net.fetch"
            ])
        );
        assert_eq!(
            r.agents["reviewer"].scopes,
            set(&["fs.glob", "fs.grep", "fs.read"])
        );
        assert_eq!(
            r.agents["researcher"].scopes,
            set(&["fs.read", "net.fetch"])
        );
        assert_eq!(
            r.unrepresented,
            [
                "settings permissions.allow Bash(npm run lint)",
                "settings permissions.deny Read(./.env)"
            ]
        );
    }

    /// Claude Code 2.1.332 reads an argument in an agent's `tools` as the whole tool, in its
    /// `disallowedTools` as taking the whole tool away, and takes Monitor away with Bash.
    #[test]
    fn agent_rules_with_arguments_and_bash_denials_follow_claude_code() {
        let r = resolve(decl(
            &[
                ("git", "---\nname: git\ntools: Bash(git status), Read\n---\n"),
                (
                    "nobash",
                    "---\nname: nobash\ntools: Bash, Monitor, Read\ndisallowedTools: Bash(rm *), Read(./.env)\n---\n",
                ),
                ("inherit", "---\nname: inherit\ndisallowedTools: Bash\n---\n"),
            ],
            &[],
            &[],
        ));
        assert_eq!(r.agents["git"].scopes, set(&["exec.bash", "fs.read"]));
        assert!(
            r.agents["nobash"].scopes.is_empty(),
            "{:?}",
            r.agents["nobash"].scopes
        );
        let inherit = &r.agents["inherit"].scopes;
        assert!(
            !inherit.contains("exec.bash") && !inherit.contains("exec.monitor"),
            "{inherit:?}"
        );
        assert!(inherit.contains("fs.read"), "{inherit:?}");
        assert!(r
            .unrepresented
            .iter()
            .any(|u| u.contains("git: tools Bash(git status)") && u.contains("whole tool")));
        // In settings, a denial of Bash takes Monitor with it too; one with arguments does not.
        let r = resolve(decl(
            &[("m", "---\nname: m\ntools: Monitor, Bash, Read\n---\n")],
            &[],
            &["Bash"],
        ));
        assert_eq!(r.agents["m"].scopes, set(&["fs.read"]));
        let r = resolve(decl(
            &[("m", "---\nname: m\ntools: Monitor, Bash, Read\n---\n")],
            &[],
            &["Bash(rm *)"],
        ));
        assert_eq!(
            r.agents["m"].scopes,
            set(&["exec.bash", "exec.monitor", "fs.read"])
        );
    }

    /// Regression: a denial narrower than a held scope (one tool of an allowed MCP server, one
    /// agent among all) was dropped, because only a whole held pattern can be removed.
    #[test]
    fn a_denial_inside_a_wider_held_scope_is_kept_as_an_exclusion() {
        let r = resolve(decl(
            &[
                (
                    "ops",
                    "---\nname: ops\ntools: mcp__pay, Read\ndisallowedTools: mcp__pay__refund\n---\n",
                ),
                (
                    "helper",
                    "---\nname: helper\ndisallowedTools: mcp__pay__refund, Agent(ops)\n---\n",
                ),
            ],
            &["mcp__pay", "Agent"],
            &["mcp__pay__wipe"],
        ));
        assert_eq!(r.root_excluded, set(&["mcp.pay.wipe"]));
        let ops = &r.agents["ops"];
        assert_eq!(ops.excluded, set(&["mcp.pay.refund", "mcp.pay.wipe"]));
        assert!(ops.holds("mcp.pay.charge"));
        assert!(!ops.holds("mcp.pay.refund") && ops.excludes("mcp.pay.refund"));
        assert!(!ops.holds("mcp.pay.wipe"));
        let helper = &r.agents["helper"];
        // `disallowedTools: Agent(ops)` takes the whole Agent tool away in Claude Code.
        assert!(!helper.holds("agent.delegate.ops") && !helper.holds("agent.delegate.ops2"));
        assert!(helper.holds("fs.read") || helper.holds("mcp.pay.charge"));
        assert!(!helper.holds("mcp.pay.refund") && !helper.holds("mcp.pay.wipe"));
        assert!(!r.declared_anywhere("mcp.pay.wipe"));
        assert!(
            r.declared_anywhere("mcp.pay.refund"),
            "other agents may hold it"
        );
        // A roster without exclusions keeps the digest it had before they existed.
        let plain = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
        assert!(plain.root_excluded.is_empty() && plain.agents["r"].excluded.is_empty());
        assert_eq!(
            plain.digest,
            sha256_hex(
                &canonical::to_vec(&json!({
                    "root": plain.root,
                    "agents": {"r": {"scopes": plain.agents["r"].scopes, "invalid": null}},
                }))
                .unwrap()
            )
        );
    }

    #[test]
    fn inheritance_with_disallowed_and_operator_deny() {
        let r = resolve(decl(
            &[
                (
                    "builder",
                    "---\nname: builder\ntools: [Bash, Write, Read]\n---\n",
                ),
                ("worker", "---\nname: worker\ndisallowedTools: Write\n---\n"),
            ],
            &[],
            &["Bash"],
        ));
        assert!(!r.root.contains("exec.bash"));
        assert_eq!(r.agents["builder"].scopes, set(&["fs.read", "fs.write"]));
        assert_eq!(
            r.agents["worker"].scopes,
            set(&["agent.delegate.builder", "agent.delegate.worker", "fs.read"])
        );
    }

    #[test]
    fn a_bad_agent_holds_nothing_and_others_are_untouched() {
        let r = resolve(decl(
            &[
                ("bad", "---\nname: bad\ntools: 42\n---\n"),
                ("good", "---\nname: good\ntools: Read\n---\n"),
            ],
            &[],
            &[],
        ));
        assert!(r.agents["bad"].scopes.is_empty());
        assert!(r.agents["bad"].invalid.is_some());
        assert_eq!(r.agents["good"].scopes, set(&["fs.read"]));
    }

    #[test]
    fn digest_changes_with_the_declarations() {
        let a = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
        let b = resolve(decl(
            &[("r", "---\nname: r\ntools: Read, Grep\n---\n")],
            &[],
            &[],
        ));
        let a2 = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
        assert_ne!(a.digest, b.digest);
        assert_eq!(a.digest, a2.digest);
    }

    /// `subtract` by ranges is the filter its definition states.
    #[test]
    fn subtract_takes_exactly_what_a_pattern_covers() {
        let scopes = set(&[
            "a",
            "a.",
            "a.*",
            "a.b",
            "a.b.c",
            "a.bc",
            "a/",
            "a0",
            "ab.c",
            "mcp.pay.*",
            "mcp.pay.refund",
            "mcp.payx.y",
            "mcp.pay",
            "agent.delegate.x",
            "fs.read",
        ]);
        let patterns: [&[&str]; 7] = [
            &["a.*"],
            &["a.b.*", "fs.read"],
            &["mcp.pay.*"],
            &["mcp.*", "a"],
            &["*", "a.", ".*"],
            &["agent.delegate.*", "zz.*", "a.b"],
            &[],
        ];
        for p in patterns {
            let p = set(p);
            let by_filter: BTreeSet<String> = scopes
                .iter()
                .filter(|s| !set_covers(&p, s))
                .cloned()
                .collect();
            assert_eq!(subtract(&scopes, &p), by_filter, "{p:?}");
        }
    }

    /// Agents that take the same tools away share one set; others do not.
    #[test]
    fn equal_denials_share_one_set() {
        let r = resolve(decl(
            &[
                ("a", "---\nname: a\ndisallowedTools: Bash, Write\n---\n"),
                ("b", "---\nname: b\ndisallowedTools: Write, Bash\n---\n"),
                ("c", "---\nname: c\ndisallowedTools: Bash\n---\n"),
                ("d", "---\nname: d\ntools: Read, Write, Bash\n---\n"),
            ],
            &[],
            &[],
        ));
        let (a, b, c) = (
            &r.agents["a"].scopes,
            &r.agents["b"].scopes,
            &r.agents["c"].scopes,
        );
        assert!(a.same(b));
        assert!(!a.same(c) && a != c);
        assert!(c.contains("fs.write") && !c.contains("exec.bash"));
        assert!(!a.contains("fs.write") && a.contains("fs.read"));
    }
}
