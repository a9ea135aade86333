//! One doctor finding: what it checks (a typed id), how it came out, and what it found.

/// What a check is about. Code and tests match on this, never on the printed name;
/// [`CheckId::as_str`] is its stable kebab-case id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckId {
    /// A settings file doctor cannot read or parse.
    Settings,
    /// The attenu-hook plugin `enabledPlugins` turns on: installed, and its hooks loadable.
    Plugin,
    /// `disableAllHooks` leaves attenu-hook running.
    HooksEnabled,
    /// One event's handler (the subject is the event).
    Wired,
    /// A handler's command resolves to an executable.
    Command,
    /// `.attenu/config.toml` loads.
    Config,
    /// No `[gate] reviewers` key is the project's own anchor key.
    GateReviewers,
    /// The roster derives without problems.
    Derive,
    /// What the agents without a `tools` list inherit, and from where.
    Inherit,
    /// Which of Claude Code's built-in agents the project's sessions used, and what they hold.
    Builtins,
    /// `.attenu/` does not exist yet.
    State,
    /// `.attenu/` is a directory only its owner can use.
    PermStateDir,
    /// A key, ledger, bundle or gate database file only its owner can read (the subject is
    /// its name).
    PermFile,
    /// Every such file only its owner can read.
    PermFiles,
    /// Git does not track `.attenu/anchor.key` (only inside a git work tree).
    GitAnchorKey,
    /// A ledger verifies (the subject is its file name).
    Ledger,
    /// The outbox's backlog and the last drain's error (`[ship]`).
    Ship,
    /// The store itself: a probe object written, read back and deleted where it may be.
    ShipStore,
}

impl CheckId {
    /// The stable kebab-case id.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::Settings => "settings",
            CheckId::Plugin => "plugin",
            CheckId::HooksEnabled => "hooks-enabled",
            CheckId::Wired => "wired",
            CheckId::Command => "command",
            CheckId::Config => "config",
            CheckId::GateReviewers => "gate-reviewers",
            CheckId::Derive => "derive",
            CheckId::Inherit => "inherit",
            CheckId::Builtins => "builtins",
            CheckId::State => "state",
            CheckId::PermStateDir => "perm-state-dir",
            CheckId::PermFile => "perm-file",
            CheckId::PermFiles => "perm-files",
            CheckId::GitAnchorKey => "git-anchor-key",
            CheckId::Ledger => "ledger",
            CheckId::Ship => "ship",
            CheckId::ShipStore => "ship-store",
        }
    }

    /// The name doctor prints, before `:subject` where there is one. These predate the ids and
    /// operators' scripts may read them, so they stay as they were.
    fn printed(self) -> &'static str {
        match self {
            CheckId::GateReviewers => "gate:reviewers",
            CheckId::PermStateDir => "perm:.attenu",
            CheckId::PermFile => "perm",
            CheckId::PermFiles => "perm:files",
            CheckId::GitAnchorKey => "git:anchor.key",
            CheckId::ShipStore => "ship:store",
            other => other.as_str(),
        }
    }
}

/// How a check came out. A `Fail` makes `doctor` exit non-zero; a `Warn` does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Ok,
    Warn,
    Fail,
}

impl Severity {
    /// An unmet check's severity: `Fail` where it is required, else `Warn`.
    pub(super) fn unmet(required: bool) -> Severity {
        if required {
            Severity::Fail
        } else {
            Severity::Warn
        }
    }

    /// The tag doctor prints before the check, four columns wide.
    pub fn tag(self) -> &'static str {
        match self {
            Severity::Ok => "ok  ",
            Severity::Warn => "warn",
            Severity::Fail => "FAIL",
        }
    }
}

/// One doctor finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub id: CheckId,
    /// Which event or file, for an id doctor checks once per event or file.
    pub subject: Option<String>,
    pub severity: Severity,
    pub detail: String,
}

impl Check {
    pub(super) fn new(id: CheckId, severity: Severity, detail: impl Into<String>) -> Check {
        Check {
            id,
            subject: None,
            severity,
            detail: detail.into(),
        }
    }

    /// A check of `id` about one event or file.
    pub(super) fn about(
        id: CheckId,
        subject: impl Into<String>,
        severity: Severity,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            subject: Some(subject.into()),
            ..Check::new(id, severity, detail)
        }
    }

    /// Whether this check makes `doctor` exit non-zero.
    pub fn failed(&self) -> bool {
        self.severity == Severity::Fail
    }

    /// The check's name as doctor prints it: `wired:PreToolUse`, `perm:anchor.key`, `config`.
    pub fn label(&self) -> String {
        match &self.subject {
            Some(s) => format!("{}:{s}", self.id.printed()),
            None => self.id.printed().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_names_stay_as_they_were() {
        let label = |id, subject: Option<&str>| {
            Check {
                id,
                subject: subject.map(String::from),
                severity: Severity::Ok,
                detail: String::new(),
            }
            .label()
        };
        assert_eq!(
            label(CheckId::Wired, Some("PreToolUse")),
            "wired:PreToolUse"
        );
        assert_eq!(label(CheckId::HooksEnabled, None), "hooks-enabled");
        assert_eq!(label(CheckId::GateReviewers, None), "gate:reviewers");
        assert_eq!(label(CheckId::PermStateDir, None), "perm:.attenu");
        assert_eq!(
            label(CheckId::PermFile, Some("anchor.key")),
            "perm:anchor.key"
        );
        assert_eq!(label(CheckId::PermFiles, None), "perm:files");
        assert_eq!(
            label(CheckId::Ledger, Some("ledger-s1.jsonl")),
            "ledger:ledger-s1.jsonl"
        );
    }
}
