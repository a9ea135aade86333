//! The session's lifecycle events: SessionStart and SubagentStart open the chain ahead of the
//! first tool call; SubagentStop and SessionEnd export the signed bundle.

use super::checkpoint::{self, Occasion};
use super::context::{chain_for, pinned_under_lock, store_reason, Ctx, Found};
use super::faults;
use crate::derive::Roster;
use crate::evidence::bundle;
use crate::ledger::entry::done_entry;
use crate::ledger::store::{Ledger, SessionPaths};
use crate::protocol::{Answer, Event};
use crate::reason::{Code, Reason};
use std::collections::BTreeSet;

/// Verifies the session's ledger and opens its chain (its root) unless the current one
/// already matches the session's roster, and defines `agent`'s node on it when that is a
/// declared agent not seen on it yet. With `repin`, the roster is derived from the files and
/// pinned for the session; otherwise it is the session's pin (pinned now if it has none).
/// Returns the roster and the ledger, still locked.
fn open_session_chain(
    ctx: &Ctx<'_>,
    agent: Option<&str>,
    repin: bool,
) -> Result<(Roster, Ledger), Reason> {
    let found = if repin {
        let (roster, part) = ctx.roster()?;
        Found::Derived(roster, part)
    } else {
        ctx.session_roster()?
    };
    // For the race tests: a pin read here may be replaced by a repin before the lock.
    faults::pause("ATTENU_HOOK_TEST_PAUSE_BEFORE_LOCK");
    let mut ledger = ctx.open_ledger()?;
    let roster = pinned_under_lock(ctx, &ledger, found, repin)?;
    let mut target = chain_for(&ledger, &roster, ctx.p, ctx.config)?;
    target.node_of(&roster, agent, crate::clock::now_ms());
    ledger.append(target.opening).map_err(store_reason)?;
    Ok((roster, ledger))
}

/// SessionStart runs before the session's first tool call and blocks nothing. Creating the
/// ledger here (a new file, its name made durable, the chain's root) takes that
/// cost off the first PreToolUse, which then only appends its decision. Every tool event still
/// opens the chain itself when SessionStart is not wired or failed; its failure is reported
/// to the user, and the first tool call then fails closed on the same cause.
pub(super) fn session_start(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    // Claude Code loads the agent definitions afresh when a session starts or is resumed and
    // after `/clear` (docs/DERIVATION.md), and so does the hook; a compaction keeps them.
    let repin = ctx.p.source.as_deref() != Some("compact");
    let (_, mut ledger) = open_session_chain(ctx, None, repin).map_err(|r| {
        Reason::new(
            r.code,
            format!(
                "{}; while this lasts, every tool call of this session is denied",
                r.message
            ),
        )
    })?;
    Ok(match checkpoint::make(ctx, &mut ledger, Occasion::Always) {
        Some(warning) => Answer::message(warning),
        None => Answer::NoObjection,
    })
}

pub(super) fn subagent_start(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let ty = ctx.p.agent_type.as_deref().unwrap_or("");
    // The subagent's spawn is written now, before its first tool call.
    let (roster, ledger) = open_session_chain(ctx, Some(ty), false)?;
    drop(ledger);
    Ok(if roster.agents.contains_key(ty) {
        Answer::NoObjection
    } else {
        Answer::message(match roster.broken_file_for(ty) {
            _ if ty.is_empty() => "a subagent started with no agent_type, so it cannot be matched to a declared agent; every tool call it makes will be denied (reason agent-unidentified)".to_string(),
            Some(f) => format!("subagent type '{ty}' is not declared: its agent file {} is broken ({}); every tool call it makes will be denied until it is fixed", f.file, f.error),
            None if crate::derive::builtin::get(ty).is_some() => format!("subagent type '{ty}' is one of Claude Code's built-in agents and holds nothing here, so every tool call it makes will be denied; [derive] builtin_agents = true (`attenu-hook install --builtin-agents`) grants it the tools Claude Code gives it"),
            None => format!("subagent type '{ty}' is not declared in .claude/agents/; every tool call it makes will be denied"),
        })
    })
}

/// SubagentStop and SessionEnd: checkpoint and export the session's bundle (with
/// `export_on_stop`, or with `[ship] url`, whose audit reads the closing bundle as the
/// session's end).
pub(super) fn stop(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    if !ctx.config.export_on_stop && ctx.config.ship.url.is_none() {
        return Ok(Answer::NoObjection);
    }
    let paths = SessionPaths::new(ctx.attenu, &ctx.p.session_id);
    if !paths.ledger.exists() {
        return Ok(Answer::NoObjection);
    }
    let mut ledger = ctx.open_ledger()?;
    if ctx.p.event == Event::SessionEnd {
        finalize_idle_nodes(ctx, &mut ledger)?;
    }
    let mut warnings: Vec<String> = checkpoint::make(ctx, &mut ledger, Occasion::Always)
        .into_iter()
        .collect();
    let signer = crate::trust::signer::load(ctx.attenu)
        .map_err(|e| Reason::new(Code::KeyUnavailable, e.to_string()))?;
    let written = bundle::export_locked(&ledger, &signer, None)
        .map_err(|e| Reason::new(Code::LedgerWriteFailed, e.to_string()))?;
    if written.is_empty() {
        // An empty ledger (opened, nothing recorded yet) has no chain to sign.
        return Ok(Answer::NoObjection);
    }
    if ctx.p.event == Event::SessionEnd {
        // Only the closing bundles ship: the audit reads a bundle as the session's end.
        warnings.extend(checkpoint::queue_bundles(ctx, &ledger, &signer, &written));
    }
    let names: Vec<String> = written
        .iter()
        .map(|w| {
            w.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let entries: usize = written.iter().map(|w| w.entries).sum();
    let mut text = format!(
        "evidence bundle written to .attenu/{} ({entries} entries)",
        names.join(", .attenu/")
    );
    for w in warnings {
        text.push_str("; ");
        text.push_str(&w);
    }
    Ok(Answer::message(text))
}

/// Finalizes every node of the current chain that has no open call, so a session whose calls
/// all finished reports execution binding clean; a node with an open call stays in progress,
/// which is the truth.
fn finalize_idle_nodes(ctx: &Ctx<'_>, ledger: &mut Ledger) -> Result<(), Reason> {
    let Some(chain) = ledger.current().cloned() else {
        return Ok(());
    };
    let busy: BTreeSet<&str> = ledger
        .state
        .pending
        .values()
        .map(|p| p.node.as_str())
        .collect();
    let now = crate::clock::now_ms();
    let done: Vec<_> = chain
        .nodes
        .iter()
        .filter(|(_, n)| !busy.contains(n.as_str()) && !chain.finalized.contains(n))
        .map(|(agent, node)| {
            done_entry(&chain.chain_id, node, agent, &ctx.p.session_id, now).into_object()
        })
        .collect();
    ledger.append(done).map_err(store_reason)
}
