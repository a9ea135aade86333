//! Claude Code's own refusals (`PermissionDenied`) and interruptions (`Interrupt`) on the
//! record, so the ledger holds the whole attempt, not only what the hook decided; and how a
//! skill's inline shell (`PreSkillShellCommand`), which no PostToolUse follows, is captured.
//!
//! The reference verifier reads a closed set of entry events, so each is a `deny` (the
//! reference's refused action) on the caller's node, told apart by `reasons[0].code`
//! (`refused-by-claude-code`, `interrupted-by-claude-code`) and `context.refused_by:
//! "claude-code"`. The hook decided nothing: `context.enforced` is absent. Claude Code's
//! reason text is committed like an error, raw only with `[privacy] raw_capture`.

use super::commitment::commit_labeled;
use super::entry::{CallContext, Entry, Position};
use crate::derive::scopes::scope_for_call;
use crate::protocol::payload::{Event, Payload};
use crate::reason::Code;
use serde::Serialize;
use serde_json::Value;

/// The scope an interruption is recorded under: it is no tool call.
pub const INTERRUPT_SCOPE: &str = "session.interrupt";

/// `context.refused_by` of a refusal Claude Code made itself.
pub const BY_CLAUDE_CODE: &str = "claude-code";

/// The `tool` an interruption is recorded under.
pub const INTERRUPT_TOOL: &str = "Interrupt";

/// A refusal Claude Code made itself, in the reference's `deny` shape.
#[derive(Debug, Serialize)]
pub struct Refused<'a> {
    ts: u64,
    chain_id: &'a str,
    node: &'a str,
    scope: String,
    tool: &'a str,
    call_id: String,
    mode: &'static str,
    /// The reference's reason vocabulary.
    reason: &'static str,
    reasons: [Record; 1],
    context: RefusedContext<'a>,
}

#[derive(Debug, Serialize)]
struct Record {
    code: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
struct RefusedContext<'a> {
    #[serde(flatten)]
    call: CallContext<'a>,
    refused_by: &'static str,
    reason_code: &'static str,
    /// Interrupt's `source` and `reason` (`stop`, `permission_denied`, `rewind`, `other`):
    /// Claude Code's vocabulary, no argument in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupt_source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupt_reason: Option<&'a str>,
    /// PermissionDenied's `reason`, which can quote the arguments: committed.
    #[serde(skip_serializing_if = "Option::is_none")]
    claude_reason_commitment: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    claude_reason: Option<&'a str>,
}

/// The entry for a PermissionDenied or Interrupt payload, at `at`.
pub fn refused_entry<'a>(
    p: &'a Payload,
    at: Position<'a>,
    mode: &'static str,
    raw_capture: bool,
    now_ms: u64,
    call_id: String,
) -> Entry<'a> {
    let interrupt = p.event == Event::Interrupt;
    let (code, scope, tool, message) = if interrupt {
        (
            Code::InterruptedByClaudeCode,
            INTERRUPT_SCOPE.to_string(),
            INTERRUPT_TOOL,
            format!(
                "Claude Code interrupted the turn ({}); the hook decided nothing",
                p.reason.as_deref().unwrap_or("no reason given")
            ),
        )
    } else {
        (
            Code::RefusedByClaudeCode,
            scope_for_call(&p.tool_name, &p.tool_input),
            p.tool_name.as_str(),
            format!(
                "Claude Code refused {} by its own permission rules or mode; the hook decided nothing",
                p.tool_name
            ),
        )
    };
    let claude_reason = p.reason.as_deref().filter(|_| !interrupt);
    Entry::Refused(Refused {
        ts: now_ms,
        chain_id: at.chain_id,
        node: at.node,
        scope,
        tool,
        call_id,
        mode,
        reason: "scope_not_granted",
        reasons: [Record {
            code: code.as_str(),
            message,
        }],
        context: RefusedContext {
            call: CallContext::of(p, now_ms),
            refused_by: BY_CLAUDE_CODE,
            reason_code: code.as_str(),
            interrupt_source: p.source.as_deref().filter(|_| interrupt),
            interrupt_reason: p.reason.as_deref().filter(|_| interrupt),
            claude_reason_commitment: claude_reason
                .map(|r| commit_labeled("claude_reason", &Value::from(r), at.salt)),
            claude_reason: claude_reason.filter(|_| raw_capture),
        },
    })
}

/// An allow's `capture` and `adapter.hook_path` for the event that decided it: a skill's
/// inline shell has no PostToolUse, so no outcome is promised for it (`pre_hook_only`).
pub fn capture_of(event: &Event) -> (&'static str, &'static str) {
    match event {
        Event::PreSkillShellCommand => ("pre_hook_only", "PreSkillShellCommand"),
        _ => ("framework_post_hook", "PreToolUse"),
    }
}
