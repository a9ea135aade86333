//! The sentence a deny for a scope not held ends with: the one change that would allow the
//! call, from the roster's [`Provenance`](crate::derive::provenance::Provenance). Built only
//! when a call is refused.

use crate::derive::compat::canonical_tool;
use crate::derive::provenance::{changes_for_agent, changes_for_session, Change, PoolSource};
use crate::derive::readable;
use crate::derive::scopes::{mcp_scope, DELEGATION_TOOL};
use crate::derive::Roster;

/// The rule a person writes for the tool of a call that needs `scope`: `Read`, `mcp__gh__x`,
/// `Agent(reviewer)`.
pub fn rule_for(tool_name: &str, scope: &str) -> String {
    if mcp_scope(tool_name).is_some() {
        return tool_name.to_string();
    }
    let tool = canonical_tool(tool_name);
    match readable::delegated_agent(scope) {
        Some(agent) if tool == DELEGATION_TOOL => format!("{DELEGATION_TOOL}({agent})"),
        _ => tool.to_string(),
    }
}

/// Why subagent `ty` (declared, readable) lacks `scope`, and what would grant it.
pub fn for_agent(roster: &Roster, ty: &str, tool_name: &str, scope: &str) -> String {
    sentence(
        &changes_for_agent(roster, ty, scope),
        &rule_for(tool_name, scope),
    )
}

/// Why the session's main thread lacks `scope`, and what would grant it.
pub fn for_session(roster: &Roster, tool_name: &str, scope: &str) -> String {
    sentence(
        &changes_for_session(roster, scope),
        &rule_for(tool_name, scope),
    )
}

fn sentence(changes: &[Change], rule: &str) -> String {
    let parts: Vec<String> = changes.iter().map(|c| one(c, rule)).collect();
    if parts.is_empty() {
        // Not reached for a scope not held; kept general rather than wrong.
        return "`attenu-hook --derive` shows who holds what and why".into();
    }
    parts.join("; and ")
}

fn one(change: &Change, rule: &str) -> String {
    match change {
        Change::RemoveDeny(r) => format!(
            "permissions.deny in {} has {}, which denies it to the whole session; remove that rule if it should be allowed",
            r.file, r.rule
        ),
        Change::RemoveDenyAll(file) => format!(
            "permissions.deny in {file} has `*`, which denies every tool; remove it to allow any"
        ),
        Change::RemoveDisallowed(r) => format!(
            "`disallowedTools` in {} has {}, which takes it; remove {} from disallowedTools there if it should have it",
            r.file, r.rule, r.rule
        ),
        Change::AddToPool { pool: PoolSource::Derived, file } => format!(
            "it inherits the session pool ({file} gives it no `tools` list), which holds only permissions.allow and what the other agents' `tools` list, and {rule} is in neither; add {rule} to permissions.allow in .claude/settings.json, or give it a `tools:` line in {file} that lists {rule}"
        ),
        Change::AddToPool { pool: PoolSource::Configured, file } => format!(
            "it inherits the session pool ({file} gives it no `tools` list), which [derive] session_pool in .attenu/config.toml names without {rule}; add {rule} to session_pool there, or give it a `tools:` line in {file} that lists {rule}"
        ),
        Change::AddToTools(file) => format!(
            "its `tools` in {file} does not list {rule}; add {rule} to that agent's `tools` there if it should have it"
        ),
        Change::AddToAllow(PoolSource::Derived) => format!(
            "add {rule} to permissions.allow in .claude/settings.json (or to an agent's `tools`) if the session should have it"
        ),
        Change::AddToAllow(PoolSource::Configured) => format!(
            "add {rule} to permissions.allow in .claude/settings.json or to [derive] session_pool in .attenu/config.toml if the session should have it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_named_is_the_one_a_person_writes() {
        for (tool, scope, want) in [
            ("Read", "fs.read", "Read"),
            ("Task", "agent.delegate.ops", "Agent(ops)"),
            (
                "Agent",
                "agent.delegate.x---50ython-20-53ecurity-20-45xpert",
                "Agent(Python Security Expert)",
            ),
            ("mcp__gh__create", "mcp.gh.create", "mcp__gh__create"),
            ("KillShell", "task.stop", "TaskStop"),
            ("MultiEdit", "tool.x---4dulti-45dit", "MultiEdit"),
        ] {
            assert_eq!(rule_for(tool, scope), want, "{tool}");
        }
    }
}
