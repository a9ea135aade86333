//! PostToolUse and PostToolUseFailure: bind the outcome to the allowed call on the ledger.
//! The tool has already run, so every failure here stops Claude and leaves a marker.

use super::context::{store_reason, Ctx};
use super::last_resort::store_marker;
use crate::gate::authz;
use crate::gate::reconcile::NewMarker;
use crate::ledger::entry::{outcome_entry, BodyState, Entry, Position};
use crate::ledger::store::{Ledger, Pending};
use crate::protocol::{Answer, Event};
use crate::reason::{Code, Reason};

pub(super) fn handle(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let p = ctx.p;
    let failed = p.event == Event::PostToolUseFailure;
    let mut ledger = match ctx.open_ledger() {
        Ok(l) => l,
        Err(r) => return Ok(unrecorded_outcome(ctx, None, &r.message)),
    };
    let pending = p
        .tool_use_id
        .as_deref()
        .and_then(|t| ledger.state.pending.get(t))
        .cloned();
    let current = ledger.current().cloned();
    // Only a call of the current chain: an outcome on another chain than its allow's would
    // be an outcome without an allow there.
    let (Some(pending), Some(chain)) = (
        pending.filter(|p| current.as_ref().is_some_and(|c| c.chain_id == p.chain_id)),
        current,
    ) else {
        return Ok(no_allowed_call(ctx, ledger, failed));
    };
    let body_state = match (failed, p.is_interrupt) {
        (false, _) => BodyState::Returned,
        (true, false) => BodyState::Raised,
        (true, true) => BodyState::Abandoned,
    };
    let outcome = outcome_entry(
        p,
        Position {
            chain_id: &chain.chain_id,
            node: &pending.node,
            salt: &chain.params_salt,
        },
        &pending.call_id,
        body_state,
        ctx.config.privacy.raw_capture,
        crate::clock::now_ms(),
    );
    let changed = changed_after_authorization(&pending, outcome.invoked_params_hash());
    if let Err(e) = ledger.append(vec![Entry::Outcome(outcome).into_object()]) {
        return Ok(unrecorded_outcome(
            ctx,
            Some(&pending.call_id),
            &store_reason(e).message,
        ));
    }
    Ok(if changed {
        Answer::Stop(Reason::new(
            Code::InputChangedAfterAuthorization,
            format!("{}'s arguments after the call differ from those authorized before it; recorded as a parameter mismatch. Check what ran", p.tool_name),
        ))
    } else if failed {
        Answer::Stop(Reason::new(
            Code::ToolFailed,
            format!(
                "{} failed{}; its side effects are uncertain, so Claude stops here for a person to check. The failure is on the ledger",
                p.tool_name,
                if p.is_interrupt { " (interrupted)" } else { "" }
            ),
        ))
    } else {
        Answer::NoObjection
    })
}

/// The arguments the call ran with differ from those a gate authorization was bound to.
fn changed_after_authorization(pending: &Pending, invoked: Option<&str>) -> bool {
    pending
        .authorized_params_hash
        .as_deref()
        .is_some_and(|authorized| invoked != Some(authorized))
}

/// The ledger holds no allowed call of the current chain for this outcome.
fn no_allowed_call(ctx: &Ctx<'_>, ledger: Ledger, failed: bool) -> Answer {
    let p = ctx.p;
    if let Some(ended) = p
        .tool_use_id
        .as_deref()
        .and_then(|t| ledger.state.ended.get(t))
    {
        // Allowed on a chain that an agent edit ended before the call finished: no chain
        // can carry its outcome, so it is not recorded, and a person is told.
        let cause = format!(
            "it was allowed on chain {}, which ended (the agent declarations changed) before the call finished, so no chain can carry its outcome",
            ended.chain_id
        );
        let call_id = ended.call_id.clone();
        drop(ledger);
        return unrecorded_outcome(ctx, Some(&call_id), &cause);
    }
    // The ledger holds no allow for it, but the gate allowed it: the ledger was moved,
    // replaced or deleted since. The gated action ran and nothing can carry its outcome.
    // Only asked when the ledger holds no chain at all (a second PostToolUse of the same
    // call, from the hook wired twice, finds its outcome already recorded) and only for a
    // gated tool.
    let gated = || {
        let scope = crate::derive::scopes::scope_for_call(&p.tool_name, &p.tool_input);
        let agent = p.agent_type.as_deref();
        ctx.config.gate.requires(&scope, agent)
    };
    if let Some(t) = p
        .tool_use_id
        .as_deref()
        .filter(|_| ledger.current().is_none() && gated())
    {
        let allowed = authz::allowed_claim(ctx.attenu, &p.session_id, t, ctx.busy());
        drop(ledger);
        match allowed {
            Ok(false) => {}
            Ok(true) => return unrecorded_outcome(ctx, None, "the gate allowed it, but the session's ledger no longer holds that allow (it was moved, replaced or deleted since)"),
            Err(e) => return unrecorded_outcome(ctx, None, &format!("the ledger holds no allow for it and the gate database cannot say whether it allowed it ({e})")),
        }
    }
    // No allowed call to bind to (a call from before the hook was wired). Nothing can be
    // recorded as its outcome.
    if failed {
        Answer::Stop(Reason::new(Code::ToolFailed, "a tool call failed; its side effects are uncertain, so Claude stops here for a person to check"))
    } else {
        Answer::NoObjection
    }
}

/// The tool already ran but its outcome cannot be recorded: stop Claude, and leave a
/// reconciliation marker for a person. Never retried automatically.
fn unrecorded_outcome(ctx: &Ctx<'_>, call_id: Option<&str>, cause: &str) -> Answer {
    let p = ctx.p;
    let m = NewMarker {
        session_id: &p.session_id,
        tool_use_id: p.tool_use_id.as_deref(),
        tool: &p.tool_name,
        call_id,
        cause,
    };
    let where_ = store_marker(ctx.attenu, m, ctx.busy());
    Answer::Stop(Reason::new(
        Code::OutcomeNotRecorded,
        format!(
            "the outcome of {} could not be recorded ({cause}); the action may already have happened, so Claude stops; {where_}. Do not retry it automatically",
            p.tool_name
        ),
    ))
}
