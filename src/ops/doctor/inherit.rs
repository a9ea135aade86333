//! The inheritance check: which agents have no `tools` list and so hold the session pool,
//! what the pool holds, and where each entry comes from. It warns where that surprises: a pool
//! with nothing in it (every call those agents make is denied), or entries an inheriting
//! agent holds only because another agent's file lists them.

use super::{Check, CheckId, Severity};
use crate::derive::explain::Account;
use crate::derive::provenance::PoolSource;
use crate::derive::{explain_project, readable, Roster};
use std::path::Path;

/// The check, when some agent inherits (nothing is said otherwise).
pub(super) fn checks(dir: &Path) -> Vec<Check> {
    let Ok(c) = crate::config::load(&dir.join(".attenu")) else {
        return Vec::new(); // the config check reports it
    };
    let Ok((r, account)) = explain_project(dir, &c.agents, c.derive.session_pool.as_deref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if !r.why.inheriting.is_empty() {
        out.push(check(&r, &account));
    }
    // Said before a session hits it: a built-in that holds nothing is denied every call.
    if let Some(line) = crate::derive::builtin::used_line(&dir.join(".attenu"), &r) {
        let severity = if line.contains("holds nothing") {
            Severity::Warn
        } else {
            Severity::Ok
        };
        out.push(Check::new(CheckId::Builtins, severity, line));
    }
    out
}

fn check(r: &Roster, account: &Account) -> Check {
    let who: Vec<String> = r.why.inheriting.iter().cloned().collect();
    let who = format!(
        "{} agent(s) without a `tools` list ({})",
        who.len(),
        few(&who, 3)
    );
    let held: Vec<(&String, _)> = account
        .pool
        .iter()
        .filter(|(s, _)| r.why.deny_rule(s).is_none())
        .collect();
    if held.is_empty() {
        let fix = match account.source {
            PoolSource::Derived => "add the tools they need to permissions.allow in .claude/settings.json, or set [derive] session_pool in .attenu/config.toml",
            PoolSource::Configured => "[derive] session_pool in .attenu/config.toml names nothing that is not denied; add the tools they need there",
        };
        return Check::new(
            CheckId::Inherit,
            Severity::Warn,
            format!("{who} inherit an empty session pool, so every tool call they make is denied; {fix}"),
        );
    }
    let scopes: Vec<String> = held.iter().map(|(s, _)| readable::scope(s)).collect();
    let borrowed: Vec<String> = held
        .iter()
        .filter(|(_, o)| o.allow.is_empty() && !o.session_pool)
        .map(|(s, o)| format!("{} (tools of {})", readable::scope(s), few(&o.agents, 2)))
        .collect();
    let source = match account.source {
        PoolSource::Derived => "derived from permissions.allow and the agents' own tools",
        PoolSource::Configured => "from [derive] session_pool",
    };
    if borrowed.is_empty() {
        return Check::new(
            CheckId::Inherit,
            Severity::Ok,
            format!(
                "{who} hold the session pool ({source}): {}",
                few(&scopes, 12)
            ),
        );
    }
    Check::new(
        CheckId::Inherit,
        Severity::Warn,
        format!(
            "{who} inherit a session pool that holds {} only because another agent's file lists it; name the pool in [derive] session_pool in .attenu/config.toml (or give them `tools` lists) so an unrelated file cannot widen them",
            few(&borrowed, 4)
        ),
    )
}

/// Up to `max` items, then how many more.
fn few(items: &[String], max: usize) -> String {
    if items.len() <= max {
        return items.join(", ");
    }
    format!("{} and {} more", items[..max].join(", "), items.len() - max)
}
