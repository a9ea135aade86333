//! What the hook prints. Allow is silence (`{}`): an explicit `"allow"` would skip Claude
//! Code's own permission flow and widen the session instead of recording it.

use crate::reason::Reason;
use serde_json::{json, Value};

/// One answer and the exit code it goes with.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub json: Value,
    pub exit: i32,
}

impl Answer {
    /// No objection: Claude Code's normal permission flow applies.
    pub fn none() -> Self {
        Answer {
            json: json!({}),
            exit: 0,
        }
    }

    /// A PreToolUse deny in the documented `hookSpecificOutput` shape.
    pub fn deny(reason: &Reason) -> Self {
        Answer {
            json: json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": format!("attenu-hook: [{}] {}", reason.code, reason.message),
            }}),
            exit: 0,
        }
    }

    /// The deny for a failure whose event is unknown: JSON deny and exit 2, which blocks too.
    pub fn deny_hard(reason: &Reason) -> Self {
        Answer {
            exit: 2,
            ..Self::deny(reason)
        }
    }

    /// Stop Claude after this hook (PostToolUse and PostToolUseFailure).
    pub fn halt(reason: &Reason) -> Self {
        Answer {
            json: json!({"continue": false, "stopReason": format!("attenu-hook: [{}] {}", reason.code, reason.message)}),
            exit: 0,
        }
    }

    /// A message shown to the user, for events whose output is never a decision.
    pub fn message(text: impl Into<String>) -> Self {
        Answer {
            json: json!({"systemMessage": format!("attenu-hook: {}", text.into())}),
            exit: 0,
        }
    }

    /// Is this a PreToolUse deny?
    pub fn is_deny(&self) -> bool {
        self.json
            .pointer("/hookSpecificOutput/permissionDecision")
            .and_then(Value::as_str)
            == Some("deny")
    }
}
