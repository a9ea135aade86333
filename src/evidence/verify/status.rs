//! The verifier's statuses as types, each with its one string form: the words the JSON report
//! carries and the text output prints (`clean`, `not-checked`, `bundle-side`...). Scripts read
//! them, so a word here is a contract; the enums keep the code from matching on the words.

use serde::{Serialize, Serializer};

macro_rules! status {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $word:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vdoc])* $variant),* }

        impl $name {
            /// Every status, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The word the report carries.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

status! {
    /// Execution binding over a v2 chain, from best to worst; `not applicable` on v1 chains or
    /// when the versions are unsound.
    Binding {
        Clean => "clean",
        /// Something is not shown to have ended (an open call, a node neither done nor revoked).
        Incomplete => "incomplete",
        Failed => "failed",
        NotApplicable => "not applicable",
    }
}

status! {
    /// The anchor signature.
    AnchorStatus {
        Verified => "verified",
        Failed => "failed",
        /// No key (or only an HMAC secret where a signature is needed) to check it with.
        NotChecked => "not-checked",
    }
}

status! {
    /// The bundle's signed tree checkpoint.
    CheckpointStatus {
        Verified => "verified",
        Failed => "failed",
        NotChecked => "not-checked",
        /// The bundle carries none.
        Absent => "absent",
    }
}

status! {
    /// How many allowed calls carry both argument commitments.
    ParamsCoverage {
        Complete => "complete",
        Partial => "partial",
        None => "none",
    }
}

status! {
    /// An allowed call with no correctly bound outcome.
    CallState {
        /// None was promised (`capture` absent or `pre_hook_only`).
        Unobserved => "unobserved",
        /// `capture` promised one.
        Unaccounted => "unaccounted",
    }
}

status! {
    /// How far the reviewer trusts the key that checked the anchor ([`super::AnchorKey`]).
    KeyTrust {
        Pinned => "pinned",
        BundleSide => "bundle-side",
        Hmac => "hmac",
        None => "none",
    }
}

/// The verdict a report amounts to, in the order `verify` weighs it: invalid, then a key that
/// was not pinned, then a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Invalid,
    /// Valid, but only under the key read from beside the bundle.
    ValidUnpinned,
    /// Valid, and the ledger records something a reviewer must weigh (a lost sealed state).
    ValidWithNotice,
    Valid,
}

impl ParamsCoverage {
    /// Of `allows` allowed calls, `both` carry both commitments.
    pub fn of(allows: usize, both: usize) -> Self {
        if allows == 0 || both == 0 {
            ParamsCoverage::None
        } else if both == allows {
            ParamsCoverage::Complete
        } else {
            ParamsCoverage::Partial
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are the report's contract: each one pinned, and each serialized as itself.
    #[test]
    fn every_status_has_its_word() {
        let words: Vec<&str> = Binding::ALL
            .iter()
            .map(|s| s.as_str())
            .chain(AnchorStatus::ALL.iter().map(|s| s.as_str()))
            .chain(CheckpointStatus::ALL.iter().map(|s| s.as_str()))
            .chain(ParamsCoverage::ALL.iter().map(|s| s.as_str()))
            .chain(CallState::ALL.iter().map(|s| s.as_str()))
            .chain(KeyTrust::ALL.iter().map(|s| s.as_str()))
            .collect();
        assert_eq!(
            words,
            [
                "clean",
                "incomplete",
                "failed",
                "not applicable",
                "verified",
                "failed",
                "not-checked",
                "verified",
                "failed",
                "not-checked",
                "absent",
                "complete",
                "partial",
                "none",
                "unobserved",
                "unaccounted",
                "pinned",
                "bundle-side",
                "hmac",
                "none"
            ]
        );
        assert_eq!(
            serde_json::to_string(&Binding::NotApplicable).unwrap(),
            "\"not applicable\""
        );
    }

    #[test]
    fn coverage_counts_calls_with_both_commitments() {
        for (allows, both, want) in [
            (0, 0, ParamsCoverage::None),
            (3, 0, ParamsCoverage::None),
            (3, 1, ParamsCoverage::Partial),
            (3, 3, ParamsCoverage::Complete),
        ] {
            assert_eq!(ParamsCoverage::of(allows, both), want, "{allows} {both}");
        }
    }
}
