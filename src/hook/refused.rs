//! PermissionDenied and Interrupt: Claude Code refused or interrupted on its own; the hook
//! records it on the caller's node (`crate::ledger::refusal`) and answers `{}`, never a retry.

use super::context::{chain_for, pinned_under_lock, store_reason, ChainTarget, Ctx};
use super::faults;
use crate::ledger::entry::Position;
use crate::ledger::refusal::refused_entry;
use crate::protocol::Answer;
use crate::reason::{Code, Reason};

pub(super) fn handle(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let p = ctx.p;
    let found = ctx.session_roster()?;
    faults::pause("ATTENU_HOOK_TEST_PAUSE_BEFORE_LOCK");
    let mut ledger = ctx.open_ledger()?;
    let roster = pinned_under_lock(ctx, &ledger, found, false)?;
    let mut target = chain_for(&ledger, &roster, p, ctx.config)?;
    // The caller's node, as its calls are recorded: a declared subagent's, else the root's.
    let agent = p.agent_id.as_ref().and(p.agent_type.as_deref());
    let node = target.node_of(&roster, agent, crate::clock::now_ms());
    let ChainTarget {
        opening: mut entries,
        chain_id,
        salt,
        ..
    } = target;
    let call_id = crate::random::random_hex(16)
        .map_err(|e| Reason::new(Code::InternalError, e.to_string()))?;
    let entry = refused_entry(
        p,
        Position {
            chain_id: &chain_id,
            node: &node,
            salt: &salt,
        },
        ctx.config.mode.as_str(),
        ctx.config.privacy.raw_capture,
        crate::clock::now_ms(),
        call_id,
    );
    entries.push(entry.into_object());
    ledger.append(entries).map_err(store_reason)?;
    Ok(Answer::NoObjection)
}
