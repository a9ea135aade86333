//! Tool names and declarations in scope space.
//!
//! Every scope this module produces matches the attenu-guard scope grammar
//! (`^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*\.([a-z][a-z0-9_-]*|\*)$`), whatever name the
//! project or a payload uses: names outside it are encoded by [`segment`] rather than passed
//! through, so one odd agent or tool name can never make a whole authority unreadable.

use super::compat;
use serde_json::Value;

pub use super::compat::{canonical_tool, DEFAULT_SUBAGENT_TYPE};

/// Built-in tools of Claude Code 2.1.332 and the scope each needs.
pub const TOOL_SCOPES: &[(&str, &str)] = &[
    ("Read", "fs.read"),
    ("Glob", "fs.glob"),
    ("Grep", "fs.grep"),
    ("Write", "fs.write"),
    ("Edit", "fs.edit"),
    ("NotebookEdit", "fs.notebook_edit"),
    ("Bash", "exec.bash"),
    ("PowerShell", "exec.powershell"),
    ("Monitor", "exec.monitor"),
    ("WebFetch", "net.fetch"),
    ("WebSearch", "net.search"),
    ("TodoWrite", "session.todo"),
    ("Skill", "session.skill"),
    ("ToolSearch", "session.tool_search"),
    ("AskUserQuestion", "session.ask_user"),
    ("EnterPlanMode", "session.enter_plan_mode"),
    ("ExitPlanMode", "session.exit_plan_mode"),
    ("EnterWorktree", "session.enter_worktree"),
    ("ExitWorktree", "session.exit_worktree"),
    ("TaskCreate", "task.create"),
    ("TaskGet", "task.get"),
    ("TaskList", "task.list"),
    ("TaskUpdate", "task.update"),
    ("TaskStop", "task.stop"),
    ("SendMessage", "agent.message"),
    ("ListAgents", "agent.list"),
    ("LSP", "code.lsp"),
    ("CronCreate", "cron.create"),
    ("CronDelete", "cron.delete"),
    ("CronList", "cron.list"),
    ("ListMcpResourcesTool", "mcp_resource.list"),
    ("ReadMcpResourceTool", "mcp_resource.read"),
];

/// The tool that spawns a subagent.
pub const DELEGATION_TOOL: &str = "Agent";

/// One scope segment for an arbitrary name. A name already in the grammar (lowercase, digits,
/// `_`, `-`, starting with a letter, no `--`) is kept as it is; any other name becomes
/// `x--` followed by the name with every byte outside `[a-z0-9_]` written as `-hh`. The mapping
/// is injective: plain names never contain `--`, encoded ones always start with `x--`.
pub fn segment(name: &str) -> String {
    let plain = name
        .as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && !name.contains("--");
    if plain {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() * 2 + 3);
    out.push_str("x--");
    for b in name.bytes() {
        if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("-{b:02x}"));
        }
    }
    out
}

/// The scope of a subagent type, as spawned through the `Agent` tool.
pub fn delegate_scope(subagent_type: &str) -> String {
    format!("agent.delegate.{}", segment(subagent_type))
}

/// `mcp__srv__tool` → `mcp.srv.tool`; `mcp__srv` and `mcp__srv__*` → `mcp.srv.*`;
/// `mcp__*` and `mcp__` → `mcp.*`. `None` for a name that is not an MCP name.
pub fn mcp_scope(name: &str) -> Option<String> {
    let rest = name.strip_prefix("mcp__")?;
    if rest.is_empty() || rest == "*" {
        return Some("mcp.*".into());
    }
    match rest.split_once("__") {
        None => Some(format!("mcp.{}.*", segment(rest))),
        Some((server, "")) | Some((server, "*")) => Some(format!("mcp.{}.*", segment(server))),
        Some((server, tool)) => Some(format!("mcp.{}.{}", segment(server), segment(tool))),
    }
}

/// The scope a live tool call is checked against. Total: a tool nobody knows gets a scope under
/// `tool.` that nobody declared, so it is denied by default.
pub fn scope_for_call(tool_name: &str, tool_input: &Value) -> String {
    if let Some(s) = mcp_scope(tool_name) {
        return s;
    }
    let tool = canonical_tool(tool_name);
    if tool == DELEGATION_TOOL {
        let ty = tool_input
            .get("subagent_type")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(DEFAULT_SUBAGENT_TYPE);
        return delegate_scope(ty);
    }
    scope_for_tool_name(tool)
}

pub(super) fn scope_for_tool_name(tool: &str) -> String {
    TOOL_SCOPES
        .iter()
        .find(|(t, _)| *t == tool)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| format!("tool.{}", segment(tool)))
}

/// What one declared rule (`tools`, `disallowedTools`, `permissions.allow/deny`) means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared {
    /// Exactly these scopes.
    Scopes(Vec<String>),
    /// `*`: every tool of the pool.
    All,
    /// An argument-scoped or unparseable rule: left to Claude Code, never widened or narrowed.
    Unrepresented(String),
    /// The whole tool, although the rule names arguments (the note says which): where Claude
    /// Code itself reads such a rule as the whole tool.
    WholeTool(Vec<String>, String),
    /// The scope, held only for the calls the rule (as the roster keeps it, `Bash(git tag:*)`)
    /// matches: a rule with arguments in an agent's `tools` (see [`super::rules`]).
    Ruled(String, String),
}

/// Where a rule is written. Claude Code reads a rule with arguments differently in each: in
/// settings it is a permission rule on those arguments; in an agent's `tools` the whole tool
/// is offered; in its `disallowedTools` the whole tool is taken away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    Settings,
    AgentTools,
    AgentDisallowed,
}

/// Reads one rule written in settings. Bare names and `Agent(a, b)` are represented exactly;
/// a rule with arguments such as `Bash(npm run lint)` or `Read(./.env)` is
/// [`Declared::Unrepresented`].
pub fn declared(entry: &str) -> Declared {
    declared_at(entry, Site::Settings)
}

/// Reads one declared rule as Claude Code 2.1.332 does at `site`.
pub fn declared_at(entry: &str, site: Site) -> Declared {
    let entry = entry.trim();
    if entry.is_empty() {
        return Declared::Scopes(vec![]);
    }
    if entry == "*" {
        return Declared::All;
    }
    if let Some(s) = mcp_scope(entry) {
        return Declared::Scopes(vec![s]);
    }
    let (name, args) = match entry.find('(') {
        Some(open) if entry.ends_with(')') => (
            entry[..open].trim(),
            Some(&entry[open + 1..entry.len() - 1]),
        ),
        Some(_) => return Declared::Unrepresented(format!("{entry} (unparsed rule)")),
        None => (entry, None),
    };
    let valid_name = name
        .as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !valid_name {
        return Declared::Unrepresented(format!("{entry} (unparsed rule)"));
    }
    let name = canonical_tool(name);
    let args = args.map(str::trim).filter(|a| !a.is_empty());
    let whole = if name == DELEGATION_TOOL {
        "agent.delegate.*".to_string()
    } else {
        scope_for_tool_name(name)
    };
    match (args, site) {
        (None, _) => Declared::Scopes(vec![whole]),
        (Some(_), Site::AgentDisallowed) => compat::agent_rule_with_arguments(entry, site, whole),
        (Some(a), Site::Settings | Site::AgentTools) if name == DELEGATION_TOOL => {
            Declared::Scopes(
                a.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(delegate_scope)
                    .collect(),
            )
        }
        (Some(_), Site::Settings) => Declared::Unrepresented(entry.to_string()),
        // `Bash(*)` is `Bash`, as Claude Code reads it.
        (Some("*"), Site::AgentTools) => Declared::Scopes(vec![whole]),
        (Some(a), Site::AgentTools) => Declared::Ruled(whole, super::rules::written(name, a)),
    }
}

/// Can `pattern` (in the grammar) cover the scope of any tool call? A call's scope is one of
/// [`TOOL_SCOPES`], `agent.delegate.<type>`, `mcp.<server>.<tool>` or `tool.<name>` (a tool
/// this version does not know). `Err` says why not, with the likely intended pattern: a gate
/// pattern that matches nothing would leave the capability it names ungated without a word.
pub fn reaches_a_call(pattern: &str) -> Result<(), GatesNoCall> {
    let segs: Vec<&str> = pattern.split('.').collect();
    let wildcard = segs.last() == Some(&"*");
    let fixed = if wildcard {
        &segs[..segs.len() - 1]
    } else {
        &segs[..]
    };
    // The shapes a call scope has: a family name, then a fixed number of segments.
    let ok = match fixed {
        ["mcp"] => wildcard,
        ["mcp", _] => wildcard,
        ["mcp", _, _] => !wildcard,
        ["agent"] => wildcard,
        ["agent", "delegate"] => wildcard,
        ["agent", "delegate", _] => !wildcard,
        ["tool"] => wildcard,
        ["tool", _] => !wildcard,
        [family] => {
            wildcard
                && TOOL_SCOPES
                    .iter()
                    .any(|(_, s)| s.split('.').next() == Some(family))
        }
        _ => !wildcard && TOOL_SCOPES.iter().any(|(_, s)| *s == pattern),
    };
    if ok {
        return Ok(());
    }
    let hint = match fixed {
        ["mcp", server] => format!("an MCP tool's scope is mcp.<server>.<tool>: write mcp.{server}.* for every tool of that server"),
        ["agent", "delegate"] => "write agent.delegate.* for every subagent type, or agent.delegate.<type>".into(),
        [family, ..] => {
            let known: Vec<&str> = TOOL_SCOPES
                .iter()
                .map(|(_, s)| *s)
                .filter(|s| s.split('.').next() == Some(family))
                .collect();
            if known.is_empty() {
                "scopes start with one of fs, exec, net, session, task, agent, code, cron, mcp_resource, mcp or tool (`attenu-hook --derive` lists them)".into()
            } else {
                format!("the {family} scopes are {}", known.join(", "))
            }
        }
        [] => String::new(),
    };
    Err(GatesNoCall { hint })
}

/// A gate pattern no call's scope reaches ([`reaches_a_call`]); `hint` names the likely
/// intended pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{hint}")]
pub struct GatesNoCall {
    pub hint: String,
}

/// Does `pattern` (a scope, or `prefix.*`) cover the concrete `scope`?
pub fn covers(pattern: &str, scope: &str) -> bool {
    if pattern == scope {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) if prefix.ends_with('.') => {
            scope.starts_with(prefix) && scope.len() > prefix.len()
        }
        _ => false,
    }
}

/// Does any of `held` cover `scope`?
pub fn holds<'a>(held: impl IntoIterator<Item = &'a String>, scope: &str) -> bool {
    held.into_iter().any(|p| covers(p, scope))
}

/// [`holds`] for a set, by lookup rather than by a scan: a pattern covers `scope` only when
/// it is `scope` itself or `<prefix>*` for a `<prefix>` of `scope` ending at a `.` (and
/// shorter than it), so only those few patterns are looked up. Derivation asks this of sets
/// of every agent's delegation scope, where a scan made it quadratic in the agents.
pub fn set_covers(held: &std::collections::BTreeSet<String>, scope: &str) -> bool {
    if held.contains(scope) {
        return true;
    }
    let mut pattern = String::with_capacity(scope.len() + 1);
    scope.match_indices('.').any(|(i, _)| {
        i + 1 < scope.len() && {
            pattern.clear();
            pattern.push_str(&scope[..=i]);
            pattern.push('*');
            held.contains(pattern.as_str())
        }
    })
}

/// A set of scopes, shared rather than copied: every agent that inherits the session pool
/// holds the same set (the root's, with one `agent.delegate.<name>` per declared agent), so a
/// roster of `n` such agents holds one set, not `n` copies of `n` scopes. Reads go through
/// `Deref` to the `BTreeSet`; serialized, it is the set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scopes(std::sync::Arc<std::collections::BTreeSet<String>>);

impl Scopes {
    /// Whether `self` and `other` are one shared set (not merely equal ones).
    pub fn same(&self, other: &Scopes) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for Scopes {
    type Target = std::collections::BTreeSet<String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl From<std::collections::BTreeSet<String>> for Scopes {
    fn from(set: std::collections::BTreeSet<String>) -> Self {
        Scopes(std::sync::Arc::new(set))
    }
}

impl PartialEq<std::collections::BTreeSet<String>> for Scopes {
    fn eq(&self, other: &std::collections::BTreeSet<String>) -> bool {
        *self.0 == *other
    }
}

impl<'a> IntoIterator for &'a Scopes {
    type Item = &'a String;
    type IntoIter = std::collections::btree_set::Iter<'a, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl serde::Serialize for Scopes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Scopes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        std::collections::BTreeSet::deserialize(d).map(Scopes::from)
    }
}

/// The scope grammar the reference verifier enforces.
pub fn in_grammar(scope: &str) -> bool {
    let segs: Vec<&str> = scope.split('.').collect();
    if segs.len() < 2 {
        return false;
    }
    let seg_ok = |s: &str| {
        s.as_bytes().first().is_some_and(|b| b.is_ascii_lowercase())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    };
    let (last, init) = segs.split_last().expect("two or more segments");
    init.iter().all(|s| seg_ok(s)) && (*last == "*" || seg_ok(last))
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_covers_is_holds_by_lookup() {
        let sets: [&[&str]; 5] = [
            &["a.*", "fs.read"],
            &["a.b.*", "*", "x.y"],
            &["a.", "a.b.**", "mcp.pay.*", "agent.delegate.x"],
            &["a.b.c"],
            &[],
        ];
        let probes = [
            "a",
            "a.",
            "a.*",
            "a.b",
            "a.b.*",
            "a.b.c",
            "a.b.**",
            "x.y",
            "x.y.z",
            "fs.read",
            "fs.reads",
            "mcp.pay",
            "mcp.pay.",
            "mcp.pay.refund",
            "mcp.pay.*",
            "*",
            "",
            ".",
            "..",
            "agent.delegate.x",
            "agent.delegate.x.y",
        ];
        for set in sets {
            let held: std::collections::BTreeSet<String> =
                set.iter().map(|s| s.to_string()).collect();
            for p in probes {
                assert_eq!(
                    super::set_covers(&held, p),
                    super::holds(&held, p),
                    "{set:?} {p}"
                );
            }
        }
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn calls_map_to_scopes() {
        assert_eq!(scope_for_call("Read", &json!({})), "fs.read");
        assert_eq!(
            scope_for_call("Task", &json!({"subagent_type": "reviewer"})),
            "agent.delegate.reviewer"
        );
        assert_eq!(
            scope_for_call("Agent", &json!({})),
            "agent.delegate.general-purpose"
        );
        assert_eq!(scope_for_call("KillShell", &json!({})), "task.stop");
        assert_eq!(
            scope_for_call("mcp__github__create_issue", &json!({})),
            "mcp.github.create_issue"
        );
        assert_eq!(
            scope_for_call("FancyNewTool", &json!({})),
            "tool.x---46ancy-4eew-54ool"
        );
    }

    #[test]
    fn every_produced_scope_is_in_grammar() {
        for name in [
            "Explore",
            "",
            "../../etc",
            "a--b",
            "Ünïcode",
            "x--y",
            "1abc",
            "\u{202e}evil",
            "mcp__A b__C*d",
        ] {
            assert!(in_grammar(&delegate_scope(name)), "{name}");
            assert!(in_grammar(&scope_for_call(name, &json!({}))), "{name}");
        }
    }

    #[test]
    fn segment_is_injective_on_tricky_names() {
        let names = ["a-b", "a_b", "A-b", "x--a-2db", "x---41", "A", "a", "x--61"];
        let mut seen = std::collections::HashSet::new();
        for n in names {
            assert!(seen.insert(segment(n)), "collision for {n}");
        }
    }

    #[test]
    fn declarations() {
        assert_eq!(declared("Read"), Declared::Scopes(vec!["fs.read".into()]));
        assert_eq!(
            declared(" Agent(worker, researcher) "),
            Declared::Scopes(vec![
                "agent.delegate.worker".into(),
                "agent.delegate.researcher".into()
            ])
        );
        assert_eq!(
            declared("Agent"),
            Declared::Scopes(vec!["agent.delegate.*".into()])
        );
        assert_eq!(
            declared("Bash(npm run lint)"),
            Declared::Unrepresented("Bash(npm run lint)".into())
        );
        assert_eq!(
            declared("Read(./.env)"),
            Declared::Unrepresented("Read(./.env)".into())
        );
        assert_eq!(
            declared("mcp__srv"),
            Declared::Scopes(vec!["mcp.srv.*".into()])
        );
        assert_eq!(declared("mcp__*"), Declared::Scopes(vec!["mcp.*".into()]));
        assert_eq!(declared("*"), Declared::All);
        assert!(matches!(
            declared("Bash(unclosed"),
            Declared::Unrepresented(_)
        ));
        assert!(matches!(declared("rm -rf /"), Declared::Unrepresented(_)));
    }

    /// Regression: `disallowedTools: ListMcpResources` did not take the tool away (a legacy
    /// name Claude Code resolves), and `MultiEdit`, which it no longer offers, granted Edit.
    #[test]
    fn legacy_names_resolve_as_claude_code_resolves_them() {
        assert_eq!(
            declared_at("ListMcpResources", Site::AgentDisallowed),
            Declared::Scopes(vec!["mcp_resource.list".into()])
        );
        assert_eq!(
            scope_for_call("ListAgents", &serde_json::json!({})),
            match declared("ListPeers") {
                Declared::Scopes(s) => s[0].clone(),
                other => panic!("{other:?}"),
            }
        );
        assert_ne!(
            declared("MultiEdit"),
            Declared::Scopes(vec!["fs.edit".into()])
        );
    }

    #[test]
    fn a_rule_with_arguments_in_an_agent_file_is_the_whole_tool() {
        let whole = |d: Declared| match d {
            Declared::WholeTool(s, _) => s,
            other => panic!("{other:?}"),
        };
        // In `tools`, the tool held only under the rule (`super::rules`); `Bash(*)` is Bash.
        assert_eq!(
            declared_at("Bash(git status)", Site::AgentTools),
            Declared::Ruled("exec.bash".into(), "Bash(git status)".into())
        );
        assert_eq!(
            declared_at("Task( x )", Site::AgentTools),
            Declared::Scopes(vec!["agent.delegate.x".into()])
        );
        assert_eq!(
            declared_at("Bash(*)", Site::AgentTools),
            Declared::Scopes(vec!["exec.bash".into()])
        );
        for (rule, site, scope) in [
            ("Bash(rm *)", Site::AgentDisallowed, "exec.bash"),
            ("Read(./.env)", Site::AgentDisallowed, "fs.read"),
            ("Agent(ops)", Site::AgentDisallowed, "agent.delegate.*"),
        ] {
            assert_eq!(whole(declared_at(rule, site)), [scope], "{rule}");
        }
        assert_eq!(
            declared_at("Agent(ops)", Site::AgentTools),
            Declared::Scopes(vec!["agent.delegate.ops".into()])
        );
        assert!(matches!(
            declared_at("Bash(git status)", Site::Settings),
            Declared::Unrepresented(_)
        ));
    }

    #[test]
    fn wildcard_coverage() {
        assert!(covers("mcp.*", "mcp.github.create_issue"));
        assert!(covers("mcp.github.*", "mcp.github.x"));
        assert!(!covers("mcp.github.*", "mcp.githubx.y"));
        assert!(!covers("fs.read", "fs.readx"));
    }
}
