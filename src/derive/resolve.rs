//! Resolution: gathered [`Declarations`] become a [`Roster`], as Claude Code resolves them.
//!
//! `disallowedTools` is applied first, then `tools` is resolved against what remains, and an
//! agent without `tools` inherits the session pool. The session root holds the operator's bare
//! `permissions.allow` rules, everything the declared agents hold, and one
//! `agent.delegate.<name>` per agent, minus every bare `permissions.deny` rule; each agent's
//! set is within the root by construction (`meet(session, derived)`).

use super::roster::{digest_of, Ruled};
use super::rules::{self, ArgRule, Rules};
use super::scopes::{declared_at, delegate_scope, set_covers, Declared, Scopes, Site};
use super::{compat, frontmatter, provenance, AgentAuthority, Declarations, Roster};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Resolves gathered declarations into a [`Roster`].
pub fn resolve(decl: Declarations) -> Roster {
    let mut unrepresented = Vec::new();
    let operator = Operator::read(&decl, &mut unrepresented);
    let mut pool = session_pool(Pool::whole(operator.allow.clone()), &decl);
    // `[derive] session_pool`: what inheriting agents hold, within the root like everything.
    let configured = decl.session_pool.as_ref().map(|rules| {
        let label = "[derive] session_pool";
        let read = scopes_of(rules, Site::AgentTools, false, label, &mut unrepresented);
        Pool::of(read)
    });
    if let Some(c) = &configured {
        pool.add(c.clone());
    }
    let root: Scopes = if operator.deny_all {
        BTreeSet::new()
    } else {
        subtract(&pool.scopes, &operator.deny)
    }
    .into();
    let root_rules = pool.rules_within(&root);
    // Inheriting agents share the root's set unless a pool is configured.
    let mut inherited = match &configured {
        Some(c) if !operator.deny_all => {
            let set: Scopes = subtract(&c.scopes, &operator.deny).into();
            let rules = c.rules_within(&set);
            Inherited::new(set, rules)
        }
        _ => Inherited::new(root.clone(), root_rules.clone()),
    };
    let settings_rules =
        rules::settings_rules(&decl.deny, &decl.deny_from, &decl.ask, &decl.ask_from);
    let root_excluded = excluded_within(&root, &operator.deny);
    let mut why = provenance::record(&decl);
    why.configured = configured.map(|c| c.scopes).unwrap_or_default();
    let agents = agents_of(
        decl.agents,
        &mut inherited,
        (&root, &root_rules),
        &operator,
        &mut unrepresented,
        &mut why,
    );
    unrepresented.sort();
    unrepresented.dedup();
    let agents = share_equal_sets(agents);
    let ruled = Ruled {
        root: &root_rules,
        settings: &settings_rules,
    };
    let digest = digest_of(&root, &root_excluded, &agents, ruled);
    Roster {
        root,
        root_excluded,
        agents,
        root_rules,
        settings_rules,
        unrepresented,
        problems: decl.problems,
        broken_files: decl.broken_files,
        digest,
        why: why.into(),
    }
}

/// Each declared agent's authority; one whose file is broken holds nothing and says why.
/// Tools an agent lists but the session does not hold are noted in `why`.
fn agents_of(
    declared: BTreeMap<String, (String, super::declarations::Parsed)>,
    inherited: &mut Inherited,
    root: (&Scopes, &Rules),
    operator: &Operator,
    unrepresented: &mut Vec<String>,
    why: &mut provenance::Provenance,
) -> BTreeMap<String, AgentAuthority> {
    declared
        .into_iter()
        .map(|(name, (source, file))| {
            let authority = match file {
                Err(why) => AgentAuthority {
                    scopes: Scopes::default(),
                    excluded: BTreeSet::new(),
                    invalid: Some(why.message),
                    rules: Rules::new(),
                    source,
                },
                Ok(a) => {
                    let (authority, removed) = agent_authority(
                        &name,
                        &a,
                        source,
                        inherited,
                        root,
                        operator,
                        unrepresented,
                    );
                    if !removed.is_empty() {
                        why.listed_removed.insert(name.clone(), removed);
                    }
                    authority
                }
            };
            (name, authority)
        })
        .collect()
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
        let ReadRules {
            scopes: allow,
            all: allow_all,
            ..
        } = scopes_of(
            &decl.allow,
            Site::Settings,
            false,
            "settings permissions.allow",
            unrepresented,
        );
        if allow_all {
            unrepresented.push("settings permissions.allow * (not a Claude Code rule)".into());
        }
        // A denial with arguments is held at each call (`rules::SettingsRule`), not noted.
        let ReadRules {
            scopes: deny,
            all: deny_all,
            ..
        } = scopes_of(
            &decl.deny,
            Site::Settings,
            true,
            "settings permissions.deny",
            &mut Vec::new(),
        );
        for r in &decl.deny {
            if rules::split(r).is_none() {
                unrepresented.push(format!("settings permissions.deny {r} (unparsed rule)"));
            }
        }
        Operator {
            allow,
            deny,
            deny_all,
        }
    }
}

/// Scopes declared for the session, and the rules of those declared only with arguments.
#[derive(Debug, Clone, Default)]
struct Pool {
    scopes: BTreeSet<String>,
    /// Scopes some declaration holds outright (a bare name): no rule limits them.
    whole: BTreeSet<String>,
    rules: Rules,
}

impl Pool {
    fn whole(scopes: BTreeSet<String>) -> Pool {
        Pool {
            whole: scopes.clone(),
            scopes,
            rules: Rules::new(),
        }
    }

    fn of(read: ReadRules) -> Pool {
        let whole = read
            .scopes
            .iter()
            .filter(|s| !read.rules.contains_key(*s))
            .cloned()
            .collect();
        Pool {
            scopes: read.scopes,
            whole,
            rules: read.rules,
        }
    }

    fn add(&mut self, other: Pool) {
        self.scopes.extend(other.scopes);
        self.whole.extend(other.whole);
        for (scope, rules) in other.rules {
            self.rules.entry(scope).or_default().extend(rules);
        }
    }

    /// The rules of the scopes `held` holds that nothing declares outright.
    fn rules_within(&self, held: &BTreeSet<String>) -> Rules {
        self.rules
            .iter()
            .filter(|(scope, _)| held.contains(*scope) && !self.whole.contains(*scope))
            .map(|(scope, r)| (scope.clone(), r.clone()))
            .collect()
    }
}

/// Pass 1: the operator's allowances, one delegation scope per agent, and what each agent with
/// an explicit list declares for itself (before the operator's denials), with the rules of
/// what it declares only with arguments.
fn session_pool(mut pool: Pool, decl: &Declarations) -> Pool {
    for (name, (source, file)) in &decl.agents {
        pool.scopes.insert(delegate_scope(name));
        pool.whole.insert(delegate_scope(name));
        // A built-in's preset list is Claude Code's, not the project's: it widens no one else.
        if source == super::builtin::SOURCE {
            continue;
        }
        if let Ok(a) = file {
            if let Some(tools) = &a.tools {
                let label = format!("{name}: tools");
                let own = scopes_of(tools, Site::AgentTools, false, &label, &mut Vec::new());
                let denied = scopes_of(
                    &a.disallowed,
                    Site::AgentDisallowed,
                    true,
                    "",
                    &mut Vec::new(),
                )
                .scopes;
                let mut own = Pool::of(own);
                own.scopes = subtract(&own.scopes, &denied);
                own.whole = subtract(&own.whole, &denied);
                own.rules.retain(|scope, _| own.scopes.contains(scope));
                pool.add(own);
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
    /// The rules of what the set holds only with arguments.
    rules: Rules,
    less: HashMap<BTreeSet<String>, Scopes>,
}

impl Inherited {
    fn new(set: Scopes, rules: Rules) -> Inherited {
        Inherited {
            set,
            rules,
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
    root: (&Scopes, &Rules),
    operator: &Operator,
    unrepresented: &mut Vec<String>,
) -> (AgentAuthority, BTreeSet<String>) {
    let denied = scopes_of(
        &a.disallowed,
        Site::AgentDisallowed,
        true,
        &format!("{name}: disallowedTools"),
        unrepresented,
    )
    .scopes;
    let mut removed = BTreeSet::new();
    let mut own_rules = None;
    // Shared with the inherited set when nothing is taken away: see `Scopes`.
    let scopes = match &a.tools {
        None => inherited.without(&denied),
        Some(tools) => {
            let label = format!("{name}: tools");
            let own = scopes_of(tools, Site::AgentTools, false, &label, unrepresented);
            if own.all {
                inherited.without(&denied)
            } else {
                // Within the root: a tool the operator denies is removed here too.
                let held: BTreeSet<String> = subtract(&own.scopes, &denied)
                    .into_iter()
                    .filter(|s| set_covers(root.0, s))
                    .collect();
                removed = own.scopes.difference(&held).cloned().collect();
                own_rules = Some(own.rules);
                held.into()
            }
        }
    };
    // Its own rules where it lists a tool only with arguments; elsewhere the rules the root
    // (or the pool it inherits) holds the scope under, so no agent is wider than its session.
    let limits = match &own_rules {
        Some(_) => root.1,
        None => &inherited.rules,
    };
    let rules: Rules = scopes
        .iter()
        .filter_map(|scope| {
            let r = own_rules
                .as_ref()
                .and_then(|own| own.get(scope))
                .or_else(|| limits.get(scope))?;
            Some((scope.clone(), r.clone()))
        })
        .collect();
    let all_denied: BTreeSet<String> = denied.union(&operator.deny).cloned().collect();
    let excluded = excluded_within(&scopes, &all_denied);
    let authority = AgentAuthority {
        scopes,
        excluded,
        invalid: None,
        rules,
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

/// What a list of rules declares at one site.
#[derive(Debug, Default)]
struct ReadRules {
    scopes: BTreeSet<String>,
    /// One of them is `*`.
    all: bool,
    /// The scopes listed only with arguments, and those rules.
    rules: Rules,
}

/// The scopes `rules` declare at `site`, whether one of them is `*`, and the rules of the
/// scopes listed only with arguments. What cannot be represented is noted in `unrepresented`
/// under `label`.
fn scopes_of(
    rules: &[String],
    site: Site,
    denies: bool,
    label: &str,
    unrepresented: &mut Vec<String>,
) -> ReadRules {
    let mut out = ReadRules::default();
    let mut whole = BTreeSet::new();
    for r in rules {
        match declared_at(r, site) {
            Declared::Scopes(s) => {
                whole.extend(s.iter().cloned());
                out.scopes.extend(s);
            }
            Declared::All => out.all = true,
            Declared::Unrepresented(note) => unrepresented.push(format!("{label} {note}")),
            Declared::WholeTool(s, note) => {
                whole.extend(s.iter().cloned());
                out.scopes.extend(s);
                unrepresented.push(format!("{label} {note}"));
            }
            Declared::Ruled(scope, rule) => {
                if let Some((tool, Some(spec))) = rules::split(&rule) {
                    if let ArgRule::Unread(why) = ArgRule::read(tool, spec) {
                        unrepresented.push(format!(
                            "{label} {rule} ({why}; it holds {tool} for no call)"
                        ));
                    }
                }
                out.rules.entry(scope.clone()).or_default().insert(rule);
                out.scopes.insert(scope);
            }
        }
    }
    // A tool listed bare beside its rules is held outright.
    out.rules.retain(|scope, _| !whole.contains(scope));
    if denies {
        compat::take_with_bash(&mut out.scopes);
    }
    out
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
#[path = "resolve_tests.rs"]
mod tests;
