//! PreToolUse: decide under the ledger lock, record the ruling, then answer. A skill's inline
//! shell (PreSkillShellCommand, `tool_name` Bash or PowerShell) is decided here too, as that
//! tool's call with that command, so every rule a Bash call meets applies to it.

use super::checkpoint::{self, Occasion};
use super::context::{
    chain_for, pinned_under_lock, slice_suffices, store_reason, ChainTarget, Ctx, Found,
};
use super::faults;
use crate::derive::revoke;
use crate::derive::Roster;
use crate::gate::authz::{self, ClaimCall};
use crate::ledger::entry::{decision_entry, DecisionInput, Position};
use crate::policy::{self, Call, GateOutcome, GateQuestion, Ruling};
use crate::protocol::Answer;
use crate::reason::{Code, Reason};

pub(super) fn handle(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let p = ctx.p;
    if p.tool_name == "Grep" && (p.agent_id.is_some() || p.agent_type.is_some()) {
        // Before a subagent's search can reach the anchor key; see `fs::STATE_IGNORE_FILE`.
        crate::fs::ensure_search_ignore(ctx.attenu)
            .map_err(|e| Reason::new(Code::StateDirUnsafe, e.to_string()))?;
    }
    // The slice of the pin this call needs; the whole pin (or a derivation) when that does
    // not read.
    let slice = ctx.slice_roster();
    let found = match slice {
        Some(_) => None,
        None => Some(ctx.session_roster()?),
    };
    // Before the lock: it reads the file system (and, for a writing tool, the settings).
    let reach = super::reach::reach_of(p, ctx.project, ctx.attenu);
    faults::pause("ATTENU_HOOK_TEST_PAUSE_BEFORE_LOCK");
    let mut ledger = ctx.open_ledger()?;
    let call = Call {
        tool_name: &p.tool_name,
        tool_input: &p.tool_input,
        agent_id: p.agent_id.as_deref(),
        agent_type: p.agent_type.as_deref(),
        reach: &reach,
    };
    let (roster, decision) = decide_pinned(ctx, &ledger, (slice, found), &call)?;
    // The operator's revocation, read afresh on every call: stricter than the pinned roster.
    let decision = policy::revoke::apply(decision, &revoke::read(ctx.attenu), &p.tool_name);
    let mut target = chain_for(&ledger, &roster, p, ctx.config)?;
    let node = target.node_of(
        &roster,
        decision.node_agent.as_deref(),
        crate::clock::now_ms(),
    );
    let ChainTarget {
        opening: mut entries,
        chain_id,
        salt,
        ..
    } = target;
    // The gate is asked under the ledger lock, so the order of consumed uses is the order of
    // the record.
    let question = policy::gate_question(&decision, ctx.config);
    let ruling = policy::conclude(decision, ask_gate(ctx, question));
    let call_id = crate::random::random_hex(16)
        .map_err(|e| Reason::new(Code::InternalError, e.to_string()))?;
    let entry = decision_entry(
        &ruling,
        DecisionInput {
            payload: p,
            config: ctx.config,
            at: Position {
                chain_id: &chain_id,
                node: &node,
                salt: &salt,
            },
            now_ms: crate::clock::now_ms(),
            call_id,
        },
    );
    // A torn tail cut when the ledger was opened is recorded by `Ledger::append`.
    entries.push(entry.into_object());
    ledger.append(entries).map_err(store_reason)?;
    let occasion = if ruling.denies() {
        Occasion::Always
    } else {
        Occasion::IfDue
    };
    // A failure to queue is retried at the next event; the answer stands either way.
    let _ = checkpoint::make(ctx, &mut ledger, occasion);
    drop(ledger);
    Ok(answer(&ruling, &p.event))
}

/// The roster and the decision of `call`: with the slice of the pin when that suffices
/// ([`slice_suffices`]), else with the whole pin (`found`, or read now under the lock).
fn decide_pinned(
    ctx: &Ctx<'_>,
    ledger: &crate::ledger::store::Ledger,
    (slice, found): (Option<Roster>, Option<Found>),
    call: &Call<'_>,
) -> Result<(Roster, policy::Decision), Reason> {
    if let Some(roster) = slice {
        let decision = policy::decide(&roster, ctx.config, call, ctx.project);
        if slice_suffices(ledger, &roster, &decision) {
            return Ok((roster, decision));
        }
    }
    let found = match found {
        Some(f) => f,
        None => ctx.session_roster()?,
    };
    let roster = pinned_under_lock(ctx, ledger, found, false)?;
    let decision = policy::decide(&roster, ctx.config, call, ctx.project);
    Ok((roster, decision))
}

/// Asks the gate what `question` asks (the only I/O of the decision).
fn ask_gate(ctx: &Ctx<'_>, question: GateQuestion) -> GateOutcome {
    let p = ctx.p;
    match question {
        GateQuestion::NotAsked => GateOutcome::NotAsked,
        GateQuestion::Unchecked => GateOutcome::Unchecked,
        GateQuestion::Ask(how) => {
            let claim = ClaimCall {
                tool: &p.tool_name,
                input: &p.tool_input,
                tool_use_id: p.tool_use_id.as_deref(),
                session_id: &p.session_id,
                // A `--agent X` main thread claims as X, the declaration it is held to.
                agent_type: p.agent_type.as_deref(),
            };
            let verdict = authz::claim(ctx.attenu, ctx.config, &claim, how, ctx.busy());
            GateOutcome::Answered { how, verdict }
        }
    }
}

fn answer(ruling: &Ruling, event: &crate::protocol::Event) -> Answer {
    match (&ruling.decision.reason, ruling.denies()) {
        // PreSkillShellCommand honours exit 2 (stderr is the reason), not PreToolUse's JSON.
        (Some(r), true) if *event == crate::protocol::Event::PreSkillShellCommand => {
            Answer::DenyAndBlock(r.clone())
        }
        (Some(r), true) => Answer::Deny(r.clone()),
        _ => Answer::NoObjection,
    }
}
