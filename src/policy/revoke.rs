//! The operator's revocation folded into a decision (`.attenu/revoke`, read at the edge).

use super::Decision;
use crate::derive::revoke::Revocations;
use crate::reason::{Code, Reason};

/// `decision`, denied when the revocations take its scope from its subagent. A revocation is
/// enforced in every mode: it is the operator's word in an incident. The main thread is
/// never revoked.
pub fn apply(mut decision: Decision, revocations: &Revocations, tool_name: &str) -> Decision {
    // A `--agent X` main thread is held to X's declaration, so X's revocation applies to it.
    let Some(ty) = decision.actor.agent_type() else {
        return decision;
    };
    if let Some(why) = revocations.revokes(ty, &decision.scope) {
        decision.held = false;
        decision.enforced = true;
        decision.reason = Some(Reason::new(
            Code::Revoked,
            format!("{tool_name} is revoked: {why}"),
        ));
    }
    decision
}
