//! What the hook prints, as a type. Allow is silence (`{}`): an explicit `"allow"` would skip
//! Claude Code's own permission flow and widen the session instead of recording it.

use super::exit::Exit;
use crate::reason::Reason;
use serde_json::{json, Value};

/// One answer to one hook event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// No objection: Claude Code's normal permission flow applies.
    NoObjection,
    /// A PreToolUse deny in the documented `hookSpecificOutput` shape.
    Deny(Reason),
    /// The deny for a failure whose event is unknown: JSON deny and exit 2, which blocks too.
    DenyAndBlock(Reason),
    /// Stop Claude after this hook (PostToolUse and PostToolUseFailure).
    Stop(Reason),
    /// A message shown to the user, for events whose output is never a decision.
    Message(String),
}

impl Answer {
    pub fn message(text: impl Into<String>) -> Self {
        Answer::Message(text.into())
    }

    /// The JSON Claude Code reads on stdout.
    pub fn to_json(&self) -> Value {
        match self {
            Answer::NoObjection => json!({}),
            Answer::Deny(r) | Answer::DenyAndBlock(r) => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": shown(r),
            }}),
            Answer::Stop(r) => json!({"continue": false, "stopReason": shown(r)}),
            Answer::Message(text) => json!({"systemMessage": format!("attenu-hook: {text}")}),
        }
    }

    /// The exit code that goes with it.
    pub fn exit(&self) -> Exit {
        match self {
            Answer::DenyAndBlock(_) => Exit::BLOCK,
            _ => Exit::Success,
        }
    }

    /// What goes to stderr beside exit 2 (Claude Code shows it).
    pub fn block_message(&self) -> Option<String> {
        match self {
            Answer::DenyAndBlock(r) => Some(shown(r)),
            _ => None,
        }
    }

    /// Is this a PreToolUse deny?
    pub fn is_deny(&self) -> bool {
        matches!(self, Answer::Deny(_) | Answer::DenyAndBlock(_))
    }
}

fn shown(r: &Reason) -> String {
    format!("attenu-hook: [{}] {}", r.code, r.message)
}
