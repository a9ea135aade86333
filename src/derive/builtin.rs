//! Claude Code's built-in agents (`Explore`, `Plan`, `general-purpose`, ...), as a preset a
//! project turns on by choice (`[derive] builtin_agents = true`, or one agent at a time with
//! `[agents] Explore = ["claude-code-builtin"]`). Each gets exactly the tools Claude Code's
//! own definition gives it, read from the pinned release's binary and pinned in
//! `contract.json` (`builtin_agents`; tests/contract.rs compares the two). Off by default: a
//! built-in the project does not name holds nothing. docs/DERIVATION.md, "Built-in agents".

use super::frontmatter::AgentFile;
use std::collections::BTreeMap;
use std::path::Path;

/// The value of an `[agents]` entry that means "this built-in, as Claude Code defines it".
pub const PRESET: &str = "claude-code-builtin";
/// Where a preset agent's declaration comes from, as the roster and the refusals name it.
pub const SOURCE: &str = "the Claude Code 2.1.332 built-in preset";

/// One built-in agent as Claude Code 2.1.332 defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    pub name: &'static str,
    /// `None`: every tool the session offers (its definition says `*`).
    pub tools: Option<&'static [&'static str]>,
    /// Removed from what it would otherwise hold (its `disallowedTools`).
    pub disallowed: &'static [&'static str],
}

/// What Claude Code's own read-only agents may not use (its `disallowedTools` for `Explore`
/// and `Plan`: the Agent tool, the artifact tools, ExitPlanMode and the editing tools).
const READ_ONLY_DENIED: &[&str] = &[
    "Agent",
    "Artifact",
    "ArtifactComments",
    "ArtifactData",
    "ArtifactCheck",
    "ExitPlanMode",
    "Edit",
    "Write",
    "NotebookEdit",
];

/// Every built-in the 2.1.332 binary defines (`agentType:` with `source:"built-in"`).
/// `claude-code-guide` is the public build's list (a build with embedded search tools gives it
/// Bash, Read, WebFetch, WebSearch instead).
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "general-purpose",
        tools: None,
        disallowed: &[],
    },
    Builtin {
        name: "statusline-setup",
        tools: Some(&["Read", "Edit"]),
        disallowed: &[],
    },
    Builtin {
        name: "Explore",
        tools: None,
        disallowed: READ_ONLY_DENIED,
    },
    Builtin {
        name: "Plan",
        tools: None,
        disallowed: READ_ONLY_DENIED,
    },
    Builtin {
        name: "claude-code-guide",
        tools: Some(&["Glob", "Grep", "Read", "WebFetch", "WebSearch"]),
        disallowed: &[],
    },
    // Dispatched by Claude Code's artifact comment pipeline, not spawned by name.
    Builtin {
        name: "comment-thread-analyst",
        tools: Some(&["Artifact"]),
        disallowed: &[],
    },
    // A fork of the calling conversation.
    Builtin {
        name: "fork",
        tools: None,
        disallowed: &[],
    },
    // Claude Code's workflow scripts' own subagent.
    Builtin {
        name: "workflow-subagent",
        tools: None,
        disallowed: &["SendUserMessage", "Agent", "Workflow"],
    },
    // Reads a page for an agent without WebFetch of its own.
    Builtin {
        name: "web-fetch",
        tools: Some(&["WebFetch"]),
        disallowed: &[],
    },
    // Coordinator mode's worker.
    Builtin {
        name: "worker",
        tools: None,
        disallowed: &[],
    },
    // FleetView's catch-all, when no agent name is typed.
    Builtin {
        name: "claude",
        tools: None,
        disallowed: &[],
    },
];

pub fn get(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// The declaration the preset gives `name`, or `None` when it is not a built-in.
pub fn agent_file(name: &str) -> Option<AgentFile> {
    let b = get(name)?;
    Some(AgentFile {
        name: b.name.to_string(),
        tools: b.tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        disallowed: b.disallowed.iter().map(|s| s.to_string()).collect(),
    })
}

/// Whether an `[agents]` entry asks for the preset.
pub fn is_preset(rules: &[String]) -> bool {
    matches!(rules, [one] if one == PRESET)
}

/// `[derive] builtin_agents = true`: every built-in not named under `[agents]` gets the preset.
pub fn expand(agents: &mut BTreeMap<String, Vec<String>>) {
    for b in BUILTINS {
        agents
            .entry(b.name.to_string())
            .or_insert_with(|| vec![PRESET.to_string()]);
    }
}

/// How many tool calls each built-in made in the sessions recorded under `attenu_dir`, read
/// from the ledgers' `agent_type` members (the ledger need not verify for this count: it says
/// which built-ins a project's sessions reach for, nothing is decided with it).
pub fn used_in(attenu_dir: &Path) -> BTreeMap<&'static str, usize> {
    let mut used = BTreeMap::new();
    let Ok(files) = crate::ledger::read::sessions(attenu_dir) else {
        return used;
    };
    for f in files {
        let Ok(Some(ledger)) = crate::ledger::read::read_unlocked(&f.paths.ledger) else {
            continue;
        };
        for b in BUILTINS {
            let needle = format!("\"agent_type\":\"{}\"", b.name);
            let n = memchr::memmem::find_iter(ledger.bytes(), needle.as_bytes()).count();
            if n > 0 {
                *used.entry(b.name).or_default() += n;
            }
        }
    }
    used
}

/// One line for `doctor` and `--derive`: the built-ins the project's sessions used, and what
/// each holds now; `None` when no session used one.
pub fn used_line(attenu_dir: &Path, roster: &super::Roster) -> Option<String> {
    let used = used_in(attenu_dir);
    if used.is_empty() {
        return None;
    }
    let each: Vec<String> = used
        .iter()
        .map(|(name, calls)| {
            let holds = match roster.agents.get(*name) {
                None => "holds nothing".to_string(),
                Some(a) if a.scopes.is_empty() => format!("holds nothing ({})", a.source),
                Some(a) => format!(
                    "holds {} ({})",
                    a.scopes
                        .iter()
                        .map(|s| super::readable::scope(s))
                        .collect::<Vec<_>>()
                        .join(", "),
                    a.source
                ),
            };
            format!("{name} ({calls} records) {holds}")
        })
        .collect();
    let off = used.keys().any(|n| !roster.agents.contains_key(*n));
    Some(format!(
        "built-in agents this project's sessions used: {}{}",
        each.join("; "),
        if off {
            "; to grant a built-in what Claude Code gives it, set [derive] builtin_agents = true (or [agents] NAME = [\"claude-code-builtin\"]) in .attenu/config.toml"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preset_expands_only_what_is_not_named() {
        let mut agents = BTreeMap::from([("Explore".to_string(), vec!["Read".to_string()])]);
        expand(&mut agents);
        assert_eq!(agents["Explore"], vec!["Read".to_string()]);
        assert!(is_preset(&agents["Plan"]));
        assert_eq!(agents.len(), BUILTINS.len());
        assert!(agent_file("reviewer").is_none());
        let e = agent_file("Explore").unwrap();
        assert_eq!((e.tools, e.disallowed.len()), (None, 9));
    }
}
