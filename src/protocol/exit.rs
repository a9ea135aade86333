//! The one exit-code policy of the binary.
//!
//! Claude Code honours only exit 2 or a JSON deny from a hook; exit 1, a crash or a timeout
//! lets the call run. So hook mode exits 0 with its JSON answer, or 2 (which blocks whatever
//! the event) when it cannot tell what it is answering. The commands run by a person use 0
//! for success, 1 for a check that failed, 2 for unusable input or usage, and `verify` 3 for a
//! bundle valid only under the key found beside it, 4 for one valid under a pinned key whose
//! ledger records a lost sealed state (a NOTICE).

/// How the process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done; in hook mode, the JSON answer stands.
    Success,
    /// 1: a check failed (an invalid bundle, a failed doctor check, a ledger that does not verify).
    CheckFailed,
    /// 2: unusable input or usage; in hook mode, block the call.
    Unusable,
    /// 3: `verify` only: valid, but only under the anchor key found beside the bundle.
    ValidUnpinned,
    /// 4: `verify` only: valid under a pinned key, with a notice (a lost sealed state recorded).
    ValidWithNotice,
}

impl Exit {
    /// In hook mode exit 2 is a block, whatever the event.
    pub const BLOCK: Exit = Exit::Unusable;

    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::CheckFailed => 1,
            Exit::Unusable => 2,
            Exit::ValidUnpinned => 3,
            Exit::ValidWithNotice => 4,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}
