//! What derivation copies from Claude Code 2.1.332, in one place.
//!
//! The hook must derive exactly the authority Claude Code itself offers a subagent: reading a
//! declaration more strictly would deny what the project grants, more loosely would let
//! through what Claude Code never offers. Where Claude Code's reading is not the obvious one,
//! the rule is here, each with why, so a new Claude Code version is checked against one file:
//!
//! * [`ALIASES`]: legacy tool names it still resolves, so a rule under an old name holds.
//! * [`DEFAULT_SUBAGENT_TYPE`]: what an `Agent` call naming no type spawns, checked as such.
//! * [`frontmatter_block`]: the block ends at the first `---`, so nothing after it grants.
//! * [`recovered`]: what it parses when a block is not YAML, so the agent it loads is read.
//! * [`refuses_agent_name`]: names it never loads, so such a file declares no agent.
//! * [`add_memory_tools`]: `memory:` adds Write, Edit and Read to `tools`, so they are held.
//! * [`agent_rule_with_arguments`]: a `disallowedTools` rule with arguments takes the whole tool.
//!   (In `tools`, Claude Code offers the whole tool too; the hook holds it only for the calls
//!   the rule matches: `super::rules`, and docs/DERIVATION.md "Rules with arguments".)
//! * [`take_with_bash`]: denying Bash takes Monitor and REPL, which run code as Bash does.
//! * [`gated_alike`]: a gate on one tool that runs commands gates them all, for that reason.
//! * [`LoadedOnce`]: a file reached by two paths loads once, so it is not "declared twice".
//! * [`spawned_agent`]: `subagent_type` in a loose spelling spawns that agent, checked as it.
//!
//! Their tests sit with the readers that apply them (`frontmatter`, `scopes`, `resolve`,
//! `policy::decision`), which is where a changed rule shows.

use super::scopes::{scope_for_tool_name, Declared, Site};
use std::collections::{BTreeSet, HashSet};
use yaml_rust2::{Yaml, YamlLoader};

/// Legacy names Claude Code 2.1.332 still resolves to a current tool (its whole table; it has
/// no alias for `MultiEdit`, which it no longer offers).
pub const ALIASES: &[(&str, &str)] = &[
    ("Task", "Agent"),
    ("KillShell", "TaskStop"),
    ("KillBash", "TaskStop"),
    ("ListPeers", "ListAgents"),
    ("Brief", "SendUserMessage"),
    ("ListMcpResources", "ListMcpResourcesTool"),
    ("ReadMcpResource", "ReadMcpResourceTool"),
    ("ReadMcpResourceDir", "ReadMcpResourceDirTool"),
    ("ProposeGoal", "SetGoal"),
];

/// The canonical name of a tool, after legacy aliases.
pub fn canonical_tool(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map(|(_, new)| *new)
        .unwrap_or(name)
}

/// The subagent type Claude Code uses when an `Agent` call names none.
pub const DEFAULT_SUBAGENT_TYPE: &str = "general-purpose";

/// The frontmatter text of an agent file (without the `---` fences), found as Claude Code
/// 2.1.332 finds it (`^---\s*\n([\s\S]*?)---\s*\n?`): the file starts with `---` and white
/// space up to a line break, and the block ends at the first `---` after it, wherever that is,
/// even inside a line or a comment. Reading the block any other way would derive an agent
/// from text Claude Code does not read. A UTF-8 BOM is accepted.
pub fn frontmatter_block(text: &str) -> Result<&str, BlockError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text.strip_prefix("---").ok_or(BlockError::NotStarted)?;
    let space = &rest[..rest.len() - rest.trim_start().len()];
    let body = &rest[space.rfind('\n').ok_or(BlockError::NotStarted)? + 1..];
    match body.find("---") {
        Some(end) => Ok(&body[..end]),
        None => Err(BlockError::NotClosed),
    }
}

/// Why an agent file has no frontmatter block ([`frontmatter_block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    #[error("the file does not start with a `---` frontmatter block")]
    NotStarted,
    #[error("the frontmatter block is not closed by `---`")]
    NotClosed,
}

/// What Claude Code 2.1.332 parses when a block is not valid YAML as written: on each
/// `key: value` line (a key of letters, `_` and `-` at the start of the line), a value that is
/// not quoted or a flow list and holds `: ` or one of ``{}[]*&#!|>%@` `` is put in double
/// quotes (so `description: Use when: reviewing` parses); then leading tabs become two spaces
/// each.
pub fn recovered(block: &str) -> String {
    const SPECIAL: &[char] = &[
        '{', '}', '[', ']', '*', '&', '#', '!', '|', '>', '%', '@', '`',
    ];
    let quote = |line: &str| -> Option<String> {
        let (key, rest) = line.split_once(':')?;
        let value = rest.trim_start();
        let key_ok = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'-');
        // JavaScript's `.` stops at \r, U+2028 and U+2029, so such a line never matched there.
        if !key_ok
            || value.len() == rest.len()
            || value.is_empty()
            || value.contains(['\r', '\u{2028}', '\u{2029}'])
        {
            return None;
        }
        let quoted = (value.starts_with('"') && value.ends_with('"'))
            || (value.starts_with('\'') && value.ends_with('\''));
        // Aliases refused first: the loader would expand an alias bomb in the value.
        let flow_list = value.starts_with('[')
            && value.ends_with(']')
            && super::frontmatter::refuse_aliases(value).is_ok()
            && matches!(
                YamlLoader::load_from_str(value).as_deref(),
                Ok([Yaml::Array(_)])
            );
        if quoted || flow_list || !(value.contains(SPECIAL) || value.contains(": ")) {
            return None;
        }
        let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
        Some(format!("{key}: \"{escaped}\""))
    };
    block
        .split('\n')
        .map(|line| {
            let line = quote(line).unwrap_or_else(|| line.to_string());
            let tabs = line.len() - line.trim_start_matches('\t').len();
            format!("{}{}", "  ".repeat(tabs), &line[tabs..])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why [`refuses_agent_name`] refuses a name.
pub const REFUSED_NAME: &str = "Claude Code does not load an agent under this `name` (one starting with `-`, longer than 256 characters, or with a `:`, which plugins' agents use)";

/// Names Claude Code 2.1.332 refuses to load an agent under: a file can then never declare
/// that agent, whose type may still come from elsewhere (a plugin's `a:b`).
pub fn refuses_agent_name(name: &str) -> bool {
    let colon = |c: char| matches!(c, ':' | '\u{ff1a}' | '\u{fe55}' | '\u{fe13}');
    name.starts_with('-') || name.encode_utf16().count() > 256 || name.contains(colon)
}

/// An agent with a memory scope gets the file tools to keep its memory with: Claude Code
/// 2.1.332 adds Write, Edit and Read to an explicit `tools` list for a valid `memory`.
pub fn add_memory_tools(tools: &mut Vec<String>, memory: &str) {
    if matches!(memory, "user" | "project" | "local") {
        tools.extend(["Write", "Edit", "Read"].map(String::from));
    }
}

/// A rule with arguments in an agent's `disallowedTools`, whose tool has the scope `whole`:
/// Claude Code 2.1.332 ignores the arguments there, so `disallowedTools: Agent(ops)` or
/// `Bash(rm *)` removes the whole tool.
pub fn agent_rule_with_arguments(entry: &str, site: Site, whole: String) -> Declared {
    debug_assert_eq!(site, Site::AgentDisallowed);
    Declared::WholeTool(
        vec![whole],
        format!("{entry} (Claude Code removes the whole tool)"),
    )
}

/// Claude Code takes Monitor (and REPL) away with Bash: its tools that run code as Bash does.
/// In settings a denial with arguments (`Bash(rm *)`) is a rule on those commands, not a
/// denial of Bash, and takes nothing with it.
pub fn take_with_bash(denied: &mut BTreeSet<String>) {
    if denied.contains("exec.bash") {
        denied.extend(["exec.monitor".to_string(), scope_for_tool_name("REPL")]);
    }
}

/// The scopes a gate on `scope` covers: itself, and for a tool that runs a command (Bash,
/// PowerShell, Monitor, REPL) every such tool, since each runs what the others do. Derivation
/// takes Monitor and REPL with a denied Bash for the same reason ([`take_with_bash`]).
pub fn gated_alike(scope: &str) -> Vec<String> {
    let runners = [
        "exec.bash".to_string(),
        "exec.powershell".to_string(),
        "exec.monitor".to_string(),
        scope_for_tool_name("REPL"),
    ];
    if runners.iter().any(|r| r == scope) {
        runners.to_vec()
    } else {
        vec![scope.to_string()]
    }
}

/// The agent files already read: Claude Code loads a file reached by two paths (a symlink
/// beside it) once, by its device and inode.
#[derive(Debug, Default)]
pub struct LoadedOnce(HashSet<(u64, u64)>);

impl LoadedOnce {
    /// Whether the file of `meta` is read for the first time.
    pub fn first(&mut self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.0.insert((meta.dev(), meta.ino()))
    }
}

/// The declared agent an `Agent` call's `subagent_type` spawns when it is not a declared name
/// itself: Claude Code 2.1.332 finds an agent by its exact name, and failing that by the name
/// lowercased without white space, `-` or `_` (`Code_Reviewer` spawns `code-reviewer`).
/// `None` when nothing or more than one declared agent matches that way.
pub fn spawned_agent<'a>(
    subagent_type: &str,
    declared: impl IntoIterator<Item = &'a String>,
) -> Option<&'a String> {
    let wanted = loose(subagent_type);
    let mut matches = declared.into_iter().filter(|n| loose(n) == wanted);
    match (matches.next(), matches.next()) {
        (Some(name), None) => Some(name),
        _ => None,
    }
}

/// A name with its `[\p{White_Space}\p{Pd}_]` removed (white space, dash punctuation, `_`),
/// lowercased.
fn loose(name: &str) -> String {
    let dash = |c: char| {
        matches!(
            c,
            '-' | '_' | '\u{58a}' | '\u{5be}' | '\u{1400}' | '\u{1806}' | '\u{2010}'
                ..='\u{2015}'
                    | '\u{2e17}'
                    | '\u{2e1a}'
                    | '\u{2e3a}'
                    | '\u{2e3b}'
                    | '\u{2e40}'
                    | '\u{2e5d}'
                    | '\u{301c}'
                    | '\u{3030}'
                    | '\u{30a0}'
                    | '\u{fe31}'
                    | '\u{fe32}'
                    | '\u{fe58}'
                    | '\u{fe63}'
                    | '\u{ff0d}'
                    | '\u{10ead}'
        )
    };
    name.chars()
        .filter(|c| !c.is_whitespace() && !dash(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GateConfig;

    #[test]
    fn a_gate_on_one_tool_that_runs_commands_gates_them_all() {
        let repl = scope_for_tool_name("REPL");
        let runners = [
            "exec.bash",
            "exec.powershell",
            "exec.monitor",
            repl.as_str(),
        ];
        for gated in runners {
            let gate = GateConfig {
                require: vec![gated.to_string()],
                ..GateConfig::default()
            };
            for scope in runners {
                assert!(gate.requires(scope, None), "{gated} gates {scope}");
            }
            assert!(!gate.requires("fs.write", None));
            let per_agent = GateConfig {
                agents: [("ops".to_string(), vec![gated.to_string()])].into(),
                ..GateConfig::default()
            };
            assert!(per_agent.requires("exec.monitor", Some("ops")));
            assert!(!per_agent.requires("exec.monitor", Some("dev")));
            assert!(per_agent.mentions("exec.powershell"));
        }
        assert_eq!(gated_alike("net.fetch"), ["net.fetch"]);
    }
}
