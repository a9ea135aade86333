//! The policy: everything the hook decides about one call, as pure functions of the derived
//! roster, the configuration, the payload and the gate's verdict read beforehand.
//!
//! A PreToolUse call goes through two steps, with the only I/O between them at the edge
//! (`crate::hook`): [`decide`] says whether the caller holds the scope, and [`gate_question`]
//! whether the gate must be asked; the edge asks it under the ledger lock; and [`conclude`]
//! folds its verdict in. The resulting [`Ruling`] is everything the ledger
//! records about the decision and everything the answer needs.

pub mod arguments;
pub mod command;
mod command_words;
pub mod decision;
pub mod glob;
pub mod hint;
pub mod path_args;
pub mod reach;
pub mod revoke;
pub mod self_protection;
mod shell_tripwire;

pub use decision::{decide, Actor, Call, Decision};

use crate::config::{Config, Mode};
use crate::gate::authz::{Use, Verdict};
use serde::Serialize;

/// What to do about the gate for a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateQuestion {
    /// The scope is not gated, or the derived authority already refuses a call enforce mode
    /// would deny (shadow mode then records that reason, not the gate's).
    NotAsked,
    /// Observe mode: gated, recorded as not checked.
    Unchecked,
    /// Ask the gate: consume a use (enforce) or only look (shadow).
    Ask(Use),
}

/// Whether and how the gate is asked about `d`. It applies to whoever calls, the main thread
/// included.
pub fn gate_question(d: &Decision, config: &Config) -> GateQuestion {
    let refused_by_authority = !d.held && d.actor.is_enforced(config);
    if !d.gated || refused_by_authority {
        return GateQuestion::NotAsked;
    }
    match config.mode {
        Mode::Enforce => GateQuestion::Ask(Use::Consume),
        Mode::Shadow => GateQuestion::Ask(Use::DryRun),
        Mode::Observe => GateQuestion::Unchecked,
    }
}

/// What the gate contributed, as the decision entry's `context.gate` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum GateRecord {
    /// Enforce mode: one use of this authorization was consumed.
    Used {
        authorization_id: String,
        reviewer: String,
        uses_left: i64,
    },
    /// Shadow mode: this authorization would have been used; nothing was consumed.
    WouldUse {
        would_use: String,
        reviewer: String,
        uses_left: i64,
        consumed: bool,
    },
    /// The gate refused, with this reason code.
    Refused { refused: &'static str },
    /// Observe mode does not ask.
    Unchecked { checked: bool, why: &'static str },
}

/// The decision as recorded and answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub decision: Decision,
    pub gate: Option<GateRecord>,
}

impl Ruling {
    /// Does Claude Code get a deny?
    pub fn denies(&self) -> bool {
        self.decision.denies()
    }
}

/// What came of the [`GateQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateOutcome {
    NotAsked,
    Unchecked,
    Answered { how: Use, verdict: Verdict },
}

/// Folds what the gate said into the decision.
pub fn conclude(mut decision: Decision, outcome: GateOutcome) -> Ruling {
    let gate = match outcome {
        GateOutcome::NotAsked => None,
        GateOutcome::Unchecked => Some(GateRecord::Unchecked {
            checked: false,
            why: "observe mode records calls without asking the gate",
        }),
        GateOutcome::Answered { how, verdict } => {
            let dry = how == Use::DryRun;
            Some(match verdict {
                Verdict::Allowed {
                    authorization_id,
                    reviewer,
                    uses_left,
                } if dry => GateRecord::WouldUse {
                    would_use: authorization_id,
                    reviewer,
                    uses_left,
                    consumed: false,
                },
                Verdict::Allowed {
                    authorization_id,
                    reviewer,
                    uses_left,
                } => GateRecord::Used {
                    authorization_id,
                    reviewer,
                    uses_left,
                },
                Verdict::Denied(reason) => {
                    let refused = reason.code.as_str();
                    decision.held = false;
                    // A gated call is refused whoever calls; in shadow mode it is recorded as
                    // what would have been denied.
                    decision.enforced = !dry;
                    decision.reason = Some(reason);
                    GateRecord::Refused { refused }
                }
            })
        }
    };
    Ruling { decision, gate }
}
