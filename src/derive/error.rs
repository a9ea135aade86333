//! Why the project's declarations cannot be derived: each failure a variant, each message
//! saying what to fix. [`DeriveError::is_settings`] splits them between the two deny reasons
//! (`settings-invalid` and `declarations-unreadable`).

use std::path::PathBuf;

/// Why the project's declarations cannot be read into a roster.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    /// A directory under `.claude/agents` cannot be listed (`error` is the system's word).
    #[error(
        "cannot list {}: {error}; make it readable by the user running Claude Code",
        dir.display()
    )]
    AgentsUnlistable {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// More agent files than the bound allows.
    #[error("more than {limit} agent files under .claude/agents")]
    TooManyAgentFiles { limit: usize },
    /// `.claude/<label>` exists but cannot be read.
    #[error(".claude/{label} cannot be read ({error}); make it readable or remove it")]
    SettingsUnreadable {
        label: String,
        #[source]
        error: std::io::Error,
    },
    /// `.claude/<label>` is not JSON.
    #[error(".claude/{label} is not valid JSON ({error}); fix it so its permissions can be read")]
    SettingsNotJson {
        label: String,
        #[source]
        error: serde_json::Error,
    },
    /// Its `permissions` is not an object.
    #[error(".claude/{label}: `permissions` is not an object; fix it so it can be read")]
    PermissionsNotObject { label: String },
    /// Its `permissions.<key>` is not a list.
    #[error(".claude/{label}: permissions.{key} is not a list; fix it so it can be read")]
    PermissionsNotList { label: String, key: &'static str },
    /// A `permissions.deny` or `permissions.ask` entry is not a string: skipping it would
    /// widen (an `ask` binds subagents as a denial).
    #[error(
        ".claude/{label}: permissions.{key} has a non-string entry {item}; fix it so the rule can be honoured"
    )]
    RuleNotString {
        label: String,
        key: &'static str,
        item: String,
    },
}

impl DeriveError {
    /// Is this a fault of a settings file (`settings-invalid`) rather than of the agent files
    /// (`declarations-unreadable`)?
    pub fn is_settings(&self) -> bool {
        !matches!(
            self,
            DeriveError::AgentsUnlistable { .. } | DeriveError::TooManyAgentFiles { .. }
        )
    }
}
