//! The derived decision: whether the caller holds the scope its call needs.

use crate::config::{Config, Mode};
use crate::derive::compat::{self, canonical_tool};
use crate::derive::scopes::{delegate_scope, scope_for_call, DELEGATION_TOOL};
use crate::derive::{readable, AgentAuthority, Roster};
use crate::reason::{Code, Reason};
use serde_json::Value;
use std::path::Path;

use super::arguments::{self, Holder, Where};
use super::hint;
use super::reach::Reach;
use super::self_protection::self_protection;

/// Who made the call (the identity rules: docs/DERIVATION.md, "Who is calling").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// The session's main thread (no `agent_id`, no `agent_type`).
    MainThread,
    /// The main thread of a `claude --agent X` session (`agent_type` without `agent_id`):
    /// held to X's own declaration, like a subagent of type X.
    MainAgent(String),
    /// A subagent of this type (`agent_type`, with `agent_id` present, even empty: an
    /// agent-team teammate sends `agent_id: ""`).
    Subagent(String),
    /// A call under an `agent_id` with no `agent_type`: no declaration can be matched to it.
    Unidentified,
}

impl Actor {
    /// Who made the call, from the payload's two identity fields.
    pub fn of(agent_id: Option<&str>, agent_type: Option<&str>) -> Actor {
        match (agent_id, agent_type.filter(|t| !t.is_empty())) {
            (Some(_), Some(ty)) => Actor::Subagent(ty.to_string()),
            (Some(_), None) => Actor::Unidentified,
            (None, Some(ty)) => Actor::MainAgent(ty.to_string()),
            (None, None) => Actor::MainThread,
        }
    }

    /// Whether enforce mode enforces a refusal of this actor's call (the plain main thread's
    /// only with `enforce_main_thread`).
    pub fn is_enforced(&self, config: &Config) -> bool {
        match self {
            Actor::MainThread => config.enforce_main_thread,
            Actor::MainAgent(_) | Actor::Subagent(_) | Actor::Unidentified => true,
        }
    }

    /// The declared agent type whose authority applies (`None`: the session's, or none).
    pub fn agent_type(&self) -> Option<&str> {
        match self {
            Actor::MainAgent(t) | Actor::Subagent(t) => Some(t),
            Actor::MainThread | Actor::Unidentified => None,
        }
    }

    /// How a refusal names this actor.
    fn label(&self) -> String {
        match self {
            Actor::MainAgent(t) => format!("agent '{t}' (this session's main thread, --agent)"),
            Actor::Subagent(t) => format!("subagent '{t}'"),
            Actor::MainThread | Actor::Unidentified => "the caller".to_string(),
        }
    }
}

/// One PreToolUse call, as the decision needs it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub tool_name: &'a str,
    pub tool_input: &'a Value,
    pub agent_id: Option<&'a str>,
    pub agent_type: Option<&'a str>,
    /// What its paths reach on the file system and which files are guarded, found at the
    /// edge (empty: only the lexical rules apply).
    pub reach: &'a Reach,
}

/// What was decided, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub scope: String,
    pub actor: Actor,
    /// The declared agent whose node the decision is recorded on; `None` for the session root.
    pub node_agent: Option<String>,
    /// Whether the actor holds the scope (and the call passed self-protection).
    pub held: bool,
    /// Why it is not held (set exactly when `held` is false).
    pub reason: Option<Reason>,
    /// Whether a refusal is enforced (mode, main thread). Meaningless when `held`.
    pub enforced: bool,
    /// Whether the scope needs a host-signed authorization (`[gate] require`), whoever calls.
    pub gated: bool,
}

impl Decision {
    /// Does Claude Code get a deny?
    pub fn denies(&self) -> bool {
        !self.held && self.enforced
    }
}

/// Decides one call. `project_root` is used only to recognise the hook's own files.
pub fn decide(roster: &Roster, config: &Config, call: &Call<'_>, project_root: &Path) -> Decision {
    let scope = delegate_as_declared(roster, call)
        .unwrap_or_else(|| scope_for_call(call.tool_name, call.tool_input));
    let actor = Actor::of(call.agent_id, call.agent_type);
    let enforced = config.mode == Mode::Enforce && actor.is_enforced(config);
    let (node_agent, outcome) = match &actor {
        Actor::MainThread => {
            let outcome = if roster.declared_anywhere(&scope) {
                session_arguments(roster, call, &scope, project_root)
            } else {
                Err(unresolved_for_session(roster, call, &scope))
            };
            (None, outcome)
        }
        Actor::Unidentified => (None, Err(unidentified(call))),
        Actor::MainAgent(ty) | Actor::Subagent(ty) => match roster.agents.get(ty) {
            None => (None, Err(undeclared(roster, &actor, ty))),
            Some(agent) => {
                let outcome = agent_outcome(roster, agent, &actor, call, &scope, project_root);
                (Some(ty.clone()), outcome)
            }
        },
    };
    let gated = config.gate.requires(&scope, actor.agent_type());
    let (held, reason) = match outcome {
        Ok(()) => (true, None),
        Err(r) => (false, Some(r)),
    };
    Decision {
        scope,
        actor,
        node_agent,
        held,
        reason,
        enforced,
        gated,
    }
}

/// Whether the declared agent `ty` (declared as `agent`), as a subagent or as a `--agent`
/// main thread (`actor`), may make `call`, which needs `scope`.
fn agent_outcome(
    roster: &Roster,
    agent: &AgentAuthority,
    actor: &Actor,
    call: &Call<'_>,
    scope: &str,
    project_root: &Path,
) -> Result<(), Reason> {
    let ty = actor.agent_type().unwrap_or_default();
    let who = actor.label();
    if let Some(why) = &agent.invalid {
        Err(Reason::new(
            Code::AgentDeclarationInvalid,
            format!("the declaration of {who} in {} cannot be used ({why}); it holds nothing until it is fixed", agent.source),
        ))
    } else if agent.holds(scope) {
        self_protection(call, project_root).map_or(Ok(()), Err)?;
        let at = Where {
            project_root,
            reach: call.reach,
        };
        // Claude Code's order: the settings' denials and questions, then what is granted.
        let asks = matches!(actor, Actor::Subagent(_));
        arguments::settings(
            &roster.settings_rules,
            asks,
            scope,
            call.tool_name,
            call.tool_input,
            at,
        )?;
        match agent.rules.get(scope) {
            None => Ok(()),
            Some(rules) => {
                let holder = Holder {
                    who: &who,
                    declared_in: &agent.source,
                };
                arguments::grant(rules, call.tool_name, call.tool_input, at, holder)
            }
        }
    } else {
        let excluded = agent.excludes(scope);
        let code = if excluded || roster.declared_anywhere(scope) {
            Code::OutOfAuthority
        } else {
            Code::Unresolved
        };
        let held = if excluded {
            format!("which {who} holds only outside a narrower denial")
        } else if code == Code::OutOfAuthority {
            format!("which the project declares but not for {who}")
        } else {
            format!("which the session does not hold, so neither does {who}")
        };
        Err(Reason::new(
            code,
            format!(
                "{} needs {}, {held}: {}",
                call.tool_name,
                readable::scope(scope),
                hint::for_agent(roster, ty, call.tool_name, scope)
            ),
        ))
    }
}

/// The main thread's call of a scope the session holds: the settings' denials (not its
/// questions: Claude Code asks the main thread itself), and the rules the session holds the
/// scope under when every declaration of it has arguments.
fn session_arguments(
    roster: &Roster,
    call: &Call<'_>,
    scope: &str,
    project_root: &Path,
) -> Result<(), Reason> {
    let at = Where {
        project_root,
        reach: call.reach,
    };
    arguments::settings(
        &roster.settings_rules,
        false,
        scope,
        call.tool_name,
        call.tool_input,
        at,
    )?;
    match roster.root_rules.get(scope) {
        None => Ok(()),
        Some(rules) => {
            let holder = Holder {
                who: "the session",
                declared_in: "the agents' tools lines",
            };
            arguments::grant(rules, call.tool_name, call.tool_input, at, holder)
        }
    }
}

/// A call under an `agent_id` without an `agent_type` (Claude Code #90662): it cannot be
/// matched to any declaration, so it holds nothing.
fn unidentified(call: &Call<'_>) -> Reason {
    let id = call.agent_id.unwrap_or_default();
    Reason::new(
        Code::AgentUnidentified,
        format!(
            "{} was called under agent_id '{id}' with no agent_type, so it cannot be matched to a declared agent and holds nothing; this is a Claude Code fault (its issue #90662: a subagent not announced by SubagentStart), so update Claude Code, or give the task to a subagent declared in .claude/agents/ and spawned by name",
            call.tool_name
        ),
    )
}

/// An agent type the roster does not declare holds nothing. When an agent file is broken
/// (so it declares nothing), the deny names it: the one named for the type is taken to be its
/// declaration, any other is mentioned.
fn undeclared(roster: &Roster, actor: &Actor, ty: &str) -> Reason {
    let what = match actor {
        Actor::MainAgent(_) => "agent type",
        _ => "subagent type",
    };
    if let Some(f) = roster.broken_file_for(ty) {
        return Reason::new(
            Code::AgentDeclarationInvalid,
            format!("{what} '{ty}' is not declared: its agent file {} is broken ({}), so it declares nothing and '{ty}' holds nothing until it is fixed (`attenu-hook --derive` lists the problems)", f.file, f.error),
        );
    }
    let broken = match roster.broken_files.as_slice() {
        [] => String::new(),
        files => format!(
            "; these agent files are broken and declare nothing, if one is meant to declare it: {}",
            files
                .iter()
                .map(|f| format!("{} ({})", f.file, f.error))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut instead = match actor {
        Actor::MainAgent(_) => format!(
            "; this session's main thread runs as --agent {ty}, so it is held to that declaration: declare it, or start the session without --agent"
        ),
        _ => String::new(),
    };
    if crate::derive::builtin::get(ty).is_some() {
        instead.push_str(&format!(
            "; '{ty}' is one of Claude Code's built-in agents: [derive] builtin_agents = true (`attenu-hook install --builtin-agents`) grants it the tools Claude Code gives it"
        ));
    }
    Reason::new(
        Code::UndeclaredAgent,
        format!(
            "{what} '{ty}' is not declared in .claude/agents/, so it holds nothing; declare it there, or name it under [agents] in .attenu/config.toml{broken}{instead}"
        ),
    )
}

/// Why the session's main thread does not hold `scope`: nothing declares it for the session.
fn unresolved_for_session(roster: &Roster, call: &Call<'_>, scope: &str) -> Reason {
    Reason::new(
        Code::Unresolved,
        format!(
            "{} needs {}, which the session does not hold: {}",
            call.tool_name,
            readable::scope(scope),
            hint::for_session(roster, call.tool_name, scope)
        ),
    )
}

/// The scope of an `Agent` call whose `subagent_type` names a declared agent only in another
/// spelling ([`compat::spawned_agent`]: the agent Claude Code spawns for it). `None` when the
/// exact name is declared, no one declared agent matches, or the call is not an `Agent` call.
fn delegate_as_declared(roster: &Roster, call: &Call<'_>) -> Option<String> {
    if canonical_tool(call.tool_name) != DELEGATION_TOOL {
        return None;
    }
    let ty = call
        .tool_input
        .get("subagent_type")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty() && !roster.agents.contains_key(*t))?;
    compat::spawned_agent(ty, roster.agents.keys()).map(|name| delegate_scope(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derive::{frontmatter, resolve, Declarations};
    use crate::policy::glob::glob_match;
    use crate::policy::self_protection::glob_names_state;
    use serde_json::json;

    fn roster() -> Roster {
        let mut d = Declarations::default();
        for (n, t) in [
            ("reviewer", "Read, Grep, Glob"),
            ("researcher", "Read, WebFetch"),
        ] {
            let text = format!("---\nname: {n}\ntools: {t}\n---\n");
            d.agents.insert(
                n.into(),
                (format!("{n}.md"), frontmatter::parse_agent(&text)),
            );
        }
        resolve(d)
    }

    fn run(cfg: &Config, tool: &str, input: Value, agent: Option<&str>) -> Decision {
        let call = Call {
            tool_name: tool,
            tool_input: &input,
            agent_id: agent.map(|_| "a1"),
            agent_type: agent,
            reach: &Default::default(),
        };
        decide(&roster(), cfg, &call, Path::new("/p"))
    }

    #[test]
    fn the_seed_decisions() {
        let c = Config::default();
        assert!(run(&c, "Read", json!({"file_path": "/p/a"}), Some("reviewer")).held);
        let w = run(&c, "Write", json!({"file_path": "/p/a"}), Some("reviewer"));
        assert_eq!(
            (w.denies(), w.reason.unwrap().code),
            (true, Code::Unresolved)
        );
        let f = run(&c, "WebFetch", json!({}), Some("reviewer"));
        assert_eq!(
            (f.denies(), f.reason.unwrap().code),
            (true, Code::OutOfAuthority)
        );
        assert!(run(&c, "WebFetch", json!({}), Some("researcher")).held);
    }

    /// Regression: Claude Code spawns `reviewer` for `subagent_type: "Re_viewer"`, and the
    /// scope named another agent, so a denial of the real one did not apply.
    #[test]
    fn a_subagent_type_in_another_spelling_is_the_agent_claude_code_spawns() {
        let c = Config::default();
        for ty in ["Re_viewer", "REVIEWER", "re-view er", "re\u{2013}viewer"] {
            let d = run(&c, "Agent", json!({"subagent_type": ty}), None);
            assert_eq!(d.scope, "agent.delegate.reviewer", "{ty}");
        }
        let d = run(&c, "Agent", json!({"subagent_type": "reviewers"}), None);
        assert_ne!(d.scope, "agent.delegate.reviewer");
        // Two declared names with one loose spelling: neither is guessed.
        let mut decl = Declarations::default();
        for n in ["a-b", "a_b"] {
            let text = format!("---\nname: {n}\ntools: Read\n---\n");
            decl.agents
                .insert(n.into(), (n.into(), frontmatter::parse_agent(&text)));
        }
        let input = json!({"subagent_type": "AB"});
        let call = Call {
            tool_name: "Agent",
            tool_input: &input,
            agent_id: None,
            agent_type: None,
            reach: &Default::default(),
        };
        let d = decide(&resolve(decl), &c, &call, Path::new("/p"));
        assert!(
            !d.scope.ends_with(".a-b") && !d.scope.ends_with(".a_b"),
            "{}",
            d.scope
        );
    }

    /// Every shape of the two identity fields (docs/DERIVATION.md, "Who is calling").
    #[test]
    fn every_identity_shape_is_one_actor() {
        let sub = |t: &str| Actor::Subagent(t.into());
        for (id, ty, want) in [
            (None, None, Actor::MainThread),
            (None, Some(""), Actor::MainThread),
            (None, Some("reviewer"), Actor::MainAgent("reviewer".into())),
            (Some("a1"), Some("reviewer"), sub("reviewer")),
            (Some(""), Some("reviewer"), sub("reviewer")),
            (Some("a1"), None, Actor::Unidentified),
            (Some("a1"), Some(""), Actor::Unidentified),
            (Some(""), None, Actor::Unidentified),
        ] {
            assert_eq!(Actor::of(id, ty), want, "{id:?} {ty:?}");
        }
        let c = Config::default();
        assert!(!Actor::MainThread.is_enforced(&c));
        assert!(
            Actor::MainAgent("x".into()).is_enforced(&c) && Actor::Unidentified.is_enforced(&c)
        );
    }

    #[test]
    fn undeclared_agents_hold_nothing_and_the_main_thread_is_recorded() {
        let c = Config::default();
        let e = run(&c, "Read", json!({}), Some("Explore"));
        assert_eq!(
            (e.denies(), e.reason.unwrap().code),
            (true, Code::UndeclaredAgent)
        );
        let m = run(&c, "Bash", json!({"command": "ls"}), None);
        assert!(!m.held && !m.denies());
        let strict = Config {
            enforce_main_thread: true,
            ..Config::default()
        };
        assert!(run(&strict, "Bash", json!({"command": "ls"}), None).denies());
        assert!(run(&strict, "WebFetch", json!({}), None).held);
    }

    #[test]
    fn shadow_and_observe_never_deny() {
        for mode in [Mode::Shadow, Mode::Observe] {
            let c = Config {
                mode,
                ..Config::default()
            };
            let d = run(&c, "Bash", json!({}), Some("reviewer"));
            assert!(!d.held && !d.denies());
        }
    }

    #[test]
    fn self_protection_covers_state_settings_and_host_commands() {
        let c = Config::default();
        for (tool, input) in [
            ("Read", json!({"file_path": "/p/.attenu/anchor.key"})),
            (
                "Read",
                json!({"file_path": "/p/src/../.attenu/config.toml"}),
            ),
            // Regression: the same file through a symlink to the project was not refused.
            (
                "Read",
                json!({"file_path": "/elsewhere/p/.attenu/anchor.key"}),
            ),
            // Regression: a file filter naming the state, with no `path`.
            (
                "Grep",
                json!({"pattern": "key", "glob": ".attenu/anchor.key"}),
            ),
            ("Glob", json!({"pattern": "**/.attenu/*"})),
            // Regression: other spellings of the same directory in a filter.
            (
                "Grep",
                json!({"pattern": "k", "glob": ".atten[u]/anchor.key"}),
            ),
            ("Glob", json!({"pattern": "**/.atten?/*"})),
            ("Glob", json!({"pattern": "src/../.{git,attenu}/*.key"})),
        ] {
            let d = run(&c, tool, input, Some("reviewer"));
            assert_eq!(d.reason.map(|r| r.code), Some(Code::SelfProtection));
        }
        assert!(
            run(
                &c,
                "Read",
                json!({"file_path": "/p/src/main.rs"}),
                Some("reviewer")
            )
            .held
        );
    }

    #[test]
    fn file_filters_naming_the_state_are_refused_and_hostile_ones_stay_cheap() {
        let c = Config::default();
        // Regression: spellings that hid `.attenu` from the brace expansion.
        for pattern in [
            "{[}],.attenu}/anchor.key",
            "{x,.atten[u]}/{a,b}/{a,b}/{a,b}/{a,b}/{a,b}/{a,b}/{a,b}/k",
            ".{x,{y,attenu}}/*",
            "*.md .atten?/anchor.key",
            "**/.*",
            "{a",
        ] {
            assert!(glob_names_state(pattern), "{pattern}");
        }
        // Hostile filters stay cheap and never panic: long, many stars, odd brackets, braces.
        for pattern in [
            &format!("{}a", "*".repeat(5000)),
            &"{a,b}".repeat(40),
            "[",
            "[]",
            "[!]",
            "\\",
            "}{",
            "{",
            "é{ü,ö}/[é]",
        ] {
            let _ = run(&c, "Glob", json!({"pattern": pattern}), Some("reviewer"));
        }
        assert!(glob_match(b"**.*t*?*e*n*u*", b".attenu"));
        assert!(!glob_match(b"**.*t*?*e*n*x*", b".attenu"));
        assert!(glob_match(b".atten[a-z]", b".attenu") && !glob_match(b".atten[!u]", b".attenu"));
        for pattern in [
            "**/*.rs",
            "*",
            "***",
            "src/**/*.md",
            ".github/*",
            ".att*x/*",
            "src/{a,b}/*.{rs,toml}",
            "docs/[a-z]*.md",
        ] {
            assert!(
                run(&c, "Glob", json!({"pattern": pattern}), Some("reviewer")).held,
                "{pattern} does not name the state"
            );
        }
    }
}
