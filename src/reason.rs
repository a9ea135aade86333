//! Stable reason codes. Every deny and every halt names one of these kebab-case codes; scripts
//! and reviewers match on the code, people read the sentence that goes with it. Never rename
//! a code: add a new one.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    // Decisions: the call was evaluated against the derived authority.
    /// The project declares this capability, but not for this agent.
    OutOfAuthority,
    /// Nothing in the project declares this capability at all.
    Unresolved,
    /// The subagent type is not declared in `.claude/agents/` (or configuration).
    UndeclaredAgent,
    /// The agent's own declaration could not be read; it holds nothing.
    AgentDeclarationInvalid,
    /// A call under an `agent_id` without an `agent_type`: no declaration can be matched.
    AgentUnidentified,
    /// A subagent tried to touch the hook's own state, settings or keys.
    SelfProtection,
    /// The operator revoked this subagent's authority (or this tool of it) in `.attenu/revoke`.
    Revoked,
    /// The caller holds the tool only under argument rules (`Bash(git tag:*)`), and a command,
    /// path or host of the call matches none of them.
    ArgumentRuleUnmatched,
    /// A part of the call's arguments cannot be shown to match (or to escape) a rule: a command
    /// substitution, `eval`, `bash -c`, a nesting too deep to read.
    ArgumentUnprovable,
    /// A `permissions.deny` rule with arguments matches the call (it binds subagents too).
    SettingsDenyRule,
    /// A `permissions.ask` rule matches a subagent's call, and the hook cannot ask.
    SettingsAskRule,

    // Recorded, not decided: Claude Code's own refusals and interruptions.
    /// Claude Code refused the call by its own permission rules or mode (PermissionDenied).
    RefusedByClaudeCode,
    /// Claude Code interrupted the turn (Interrupt, 2.1.335).
    InterruptedByClaudeCode,

    // Failures: the hook could not decide or could not record, so it fails closed.
    PayloadInvalid,
    PayloadTooLarge,
    EventMissing,
    ProjectNotFound,
    ConfigInvalid,
    SettingsInvalid,
    DeclarationsUnreadable,
    StateDirUnsafe,
    LedgerUnverifiable,
    LedgerLockTimeout,
    /// A re-verify from GENESIS ran out of time and keeps its progress for the next call.
    LedgerReverifying,
    LedgerWriteFailed,
    KeyUnavailable,
    /// The session's pinned roster is lost and the files no longer give the same one.
    RosterPinLost,
    DeadlineExceeded,
    InternalError,

    // The decision-bound gate.
    GateAuthorizationRequired,
    GateAuthorizationUsedUp,
    GateAuthorizationExpired,
    GateAuthorizationBoundElsewhere,
    GateInputDiffers,
    GateReplay,
    GateStoreFailed,

    // Post-execution.
    OutcomeNotRecorded,
    ToolFailed,
    InputChangedAfterAuthorization,
}

impl Code {
    pub const ALL: &'static [Code] = &[
        Code::OutOfAuthority,
        Code::Unresolved,
        Code::UndeclaredAgent,
        Code::AgentDeclarationInvalid,
        Code::AgentUnidentified,
        Code::SelfProtection,
        Code::Revoked,
        Code::ArgumentRuleUnmatched,
        Code::ArgumentUnprovable,
        Code::SettingsDenyRule,
        Code::SettingsAskRule,
        Code::RefusedByClaudeCode,
        Code::InterruptedByClaudeCode,
        Code::PayloadInvalid,
        Code::PayloadTooLarge,
        Code::EventMissing,
        Code::ProjectNotFound,
        Code::ConfigInvalid,
        Code::SettingsInvalid,
        Code::DeclarationsUnreadable,
        Code::StateDirUnsafe,
        Code::LedgerUnverifiable,
        Code::LedgerLockTimeout,
        Code::LedgerReverifying,
        Code::LedgerWriteFailed,
        Code::KeyUnavailable,
        Code::RosterPinLost,
        Code::DeadlineExceeded,
        Code::InternalError,
        Code::GateAuthorizationRequired,
        Code::GateAuthorizationUsedUp,
        Code::GateAuthorizationExpired,
        Code::GateAuthorizationBoundElsewhere,
        Code::GateInputDiffers,
        Code::GateReplay,
        Code::GateStoreFailed,
        Code::OutcomeNotRecorded,
        Code::ToolFailed,
        Code::InputChangedAfterAuthorization,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Code::OutOfAuthority => "out-of-authority",
            Code::Unresolved => "unresolved",
            Code::UndeclaredAgent => "undeclared-agent",
            Code::AgentDeclarationInvalid => "agent-declaration-invalid",
            Code::AgentUnidentified => "agent-unidentified",
            Code::SelfProtection => "self-protection",
            Code::Revoked => "revoked",
            Code::ArgumentRuleUnmatched => "argument-rule-unmatched",
            Code::ArgumentUnprovable => "argument-unprovable",
            Code::SettingsDenyRule => "settings-deny-rule",
            Code::SettingsAskRule => "settings-ask-rule",
            Code::RefusedByClaudeCode => "refused-by-claude-code",
            Code::InterruptedByClaudeCode => "interrupted-by-claude-code",
            Code::PayloadInvalid => "payload-invalid",
            Code::PayloadTooLarge => "payload-too-large",
            Code::EventMissing => "event-missing",
            Code::ProjectNotFound => "project-not-found",
            Code::ConfigInvalid => "config-invalid",
            Code::SettingsInvalid => "settings-invalid",
            Code::DeclarationsUnreadable => "declarations-unreadable",
            Code::StateDirUnsafe => "state-dir-unsafe",
            Code::LedgerUnverifiable => "ledger-unverifiable",
            Code::LedgerLockTimeout => "ledger-lock-timeout",
            Code::LedgerReverifying => "ledger-reverifying",
            Code::LedgerWriteFailed => "ledger-write-failed",
            Code::KeyUnavailable => "key-unavailable",
            Code::RosterPinLost => "roster-pin-lost",
            Code::DeadlineExceeded => "deadline-exceeded",
            Code::InternalError => "internal-error",
            Code::GateAuthorizationRequired => "gate-authorization-required",
            Code::GateAuthorizationUsedUp => "gate-authorization-used-up",
            Code::GateAuthorizationExpired => "gate-authorization-expired",
            Code::GateAuthorizationBoundElsewhere => "gate-authorization-bound-elsewhere",
            Code::GateInputDiffers => "gate-input-differs",
            Code::GateReplay => "gate-replay",
            Code::GateStoreFailed => "gate-store-failed",
            Code::OutcomeNotRecorded => "outcome-not-recorded",
            Code::ToolFailed => "tool-failed",
            Code::InputChangedAfterAuthorization => "input-changed-after-authorization",
        }
    }

    /// The attenu-guard `disposition` a decision denial carries on the ledger.
    pub fn disposition(self) -> Option<&'static str> {
        match self {
            Code::OutOfAuthority | Code::Revoked => Some("out_of_authority"),
            Code::Unresolved
            | Code::UndeclaredAgent
            | Code::AgentDeclarationInvalid
            | Code::AgentUnidentified => Some("unresolved"),
            // Every gate refusal: the call waits on a human's grant.
            Code::GateAuthorizationRequired
            | Code::GateAuthorizationUsedUp
            | Code::GateAuthorizationExpired
            | Code::GateAuthorizationBoundElsewhere
            | Code::GateInputDiffers => Some("held_pending_grant"),
            _ => None,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason: a stable code and a sentence a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: Code,
    pub message: String,
}

impl Reason {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Reason {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(
                s.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'),
                "{s}"
            );
        }
    }
}
