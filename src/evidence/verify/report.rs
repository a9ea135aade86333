//! The report [`super::verify_bundle`] returns, the failure names it uses, and the list the
//! checks log their failures into.

use super::json::seq_value;
use super::status::{AnchorStatus, Binding, CallState, CheckpointStatus, KeyTrust};
use super::status::{ParamsCoverage, Verdict};
use super::{Json, Obj, Value};
use crate::ledger::fields::field;
use ed25519_dalek::VerifyingKey;
use serde::{Serialize, Serializer};

/// The key the anchor signature is checked with, and how far the reviewer trusts it.
#[derive(Debug, Clone)]
pub enum AnchorKey {
    /// A key the reviewer chose (`--pub FILE`): the strongest statement this tool makes.
    Pinned(VerifyingKey),
    /// A key read from `anchor.pub` beside the bundle. It checks the signature, but whoever
    /// could rewrite the bundle could have replaced it too, so the report says it was not pinned.
    FromBundleSide(VerifyingKey),
    /// An HMAC-SHA256 secret: only for the reference's test vectors, which are signed that way.
    Hmac(Vec<u8>),
    /// No key: the anchor is not checked, and the report is invalid (`anchor-not-checked`).
    None,
}

impl AnchorKey {
    /// How far the report says this key is trusted.
    pub fn trust(&self) -> KeyTrust {
        match self {
            AnchorKey::Pinned(_) => KeyTrust::Pinned,
            AnchorKey::FromBundleSide(_) => KeyTrust::BundleSide,
            AnchorKey::Hmac(_) => KeyTrust::Hmac,
            AnchorKey::None => KeyTrust::None,
        }
    }
}

/// The result of [`verify_bundle`](super::verify_bundle). `valid` is true exactly when `failures` is empty.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub valid: bool,
    pub checks: Checks,
    /// `pinned`, `bundle-side`, `hmac` or `none` ([`AnchorKey::trust`]).
    pub key: KeyTrust,
    /// The bundle's `chain_id` as written (null when absent).
    pub chain_id: serde_json::Value,
    /// How many entries the bundle carries.
    pub entries: usize,
    /// How many nodes have a readable authority.
    pub nodes: usize,
    /// How many allows that claim authority were measured for containment.
    pub actions_checked: usize,
    /// How many allows were marked as never gated (`"policy": "unlisted"`).
    pub ungated: usize,
    /// How many calls were denied. With the allows (`actions_checked + ungated`), the calls
    /// `log` counts: one per decision.
    pub denied: usize,
    /// Of `denied`, the calls Claude Code refused (or turns it interrupted) itself, recorded
    /// from PermissionDenied and Interrupt: tried, and refused before the hook was asked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_by_claude_code: usize,
    /// Per-call execution binding (v2 chains).
    pub calls: CallSummary,
    pub failures: Vec<Failure>,
    /// What the ledger records about its own history that a reviewer must weigh (a lost
    /// sealed state); present only when there is one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<super::Notice>,
    /// Who signed and where, as the chain's root recorded it (`context.identity`); as
    /// trustworthy as the key that signed the chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<crate::trust::identity::Recorded>,
    /// The signer certificate the key was taken from (a team-certified machine's bundle), and
    /// the CA that vouched for it when one was pinned (`verify --ca`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<crate::trust::cert::Certified>,
}

/// What the steps found, which [`Report::new`] makes into the report: whichever pass ran
/// (the full one, the streaming one, or none on an unreadable bundle), the report is made here.
pub(super) struct Found {
    pub(super) checks: Checks,
    pub(super) entries: usize,
    pub(super) counts: Counts,
    pub(super) calls: CallSummary,
    pub(super) failures: Vec<Failure>,
    pub(super) notices: Vec<super::Notice>,
    pub(super) recorded: Option<crate::trust::identity::Recorded>,
}

/// The report's counts of nodes and decisions.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counts {
    pub(super) nodes: usize,
    pub(super) actions_checked: usize,
    pub(super) ungated: usize,
    pub(super) denied: usize,
    pub(super) refused_by_claude_code: usize,
}

impl Report {
    /// The report of what the steps `found` under `key`, for a bundle naming `chain_id`. Valid
    /// exactly when nothing failed.
    pub(super) fn new(key: &AnchorKey, chain_id: Option<&Value<'_>>, found: Found) -> Report {
        let Found {
            checks,
            entries,
            counts,
            calls,
            failures,
            notices,
            recorded,
        } = found;
        Report {
            valid: failures.is_empty(),
            checks,
            key: key.trust(),
            chain_id: chain_id.map_or(serde_json::Value::Null, Json::to_value),
            entries,
            nodes: counts.nodes,
            actions_checked: counts.actions_checked,
            ungated: counts.ungated,
            denied: counts.denied,
            refused_by_claude_code: counts.refused_by_claude_code,
            calls,
            failures,
            notices,
            recorded,
            // Set by the command from the key it chose (`crate::cli::verify`).
            certificate: None,
        }
    }

    /// What the report amounts to: invalid, valid under an unpinned key, valid with a notice,
    /// or valid (the order `verify`'s exit code and text verdict weigh it in).
    pub fn verdict(&self) -> Verdict {
        match (self.valid, self.key) {
            (false, _) => Verdict::Invalid,
            (true, KeyTrust::BundleSide) => Verdict::ValidUnpinned,
            (true, _) if !self.notices.is_empty() => Verdict::ValidWithNotice,
            (true, _) => Verdict::Valid,
        }
    }
}

/// The outcome of each check.
#[derive(Debug, Clone, Serialize)]
pub struct Checks {
    pub integrity: bool,
    pub monotonicity: bool,
    pub containment: bool,
    /// `clean`, `incomplete`, `failed`, or `not applicable` (v1 chains, or a version problem).
    pub execution_binding: Binding,
    /// `verified`, `failed` or `not-checked`.
    pub anchor: AnchorStatus,
    pub version: bool,
    pub chain_id: bool,
    pub root: bool,
    pub ledger_fields: bool,
    /// The bundle's signed tree checkpoint: `verified`, `failed`, `not-checked` or `absent`.
    pub checkpoint: CheckpointStatus,
}

impl Checks {
    /// Nothing checked: the bundle could not be read at all.
    pub(super) fn none() -> Checks {
        Checks {
            integrity: false,
            monotonicity: false,
            containment: false,
            execution_binding: Binding::NotApplicable,
            anchor: AnchorStatus::NotChecked,
            version: false,
            chain_id: false,
            root: false,
            ledger_fields: false,
            checkpoint: CheckpointStatus::NotChecked,
        }
    }
}

/// How each allowed call of a v2 chain ended, as far as the ledger shows.
#[derive(Debug, Clone, Serialize)]
pub struct CallSummary {
    /// An outcome exists on the same node, after the allow.
    pub observed: usize,
    /// No correctly bound outcome, and none was promised (`capture` is `pre_hook_only`).
    pub unobserved: usize,
    /// No correctly bound outcome although `capture` promised one.
    pub unaccounted: usize,
    /// `complete`, `partial` or `none`: how many calls carry both argument commitments.
    pub params_coverage: ParamsCoverage,
    /// Every call that is not observed, in ledger order.
    pub open: Vec<OpenCall>,
}

impl Default for CallSummary {
    fn default() -> Self {
        CallSummary {
            observed: 0,
            unobserved: 0,
            unaccounted: 0,
            params_coverage: ParamsCoverage::None,
            open: Vec::new(),
        }
    }
}

/// An allowed call with no correctly bound outcome.
#[derive(Debug, Clone, Serialize)]
pub struct OpenCall {
    pub call_id: String,
    /// `unobserved` or `unaccounted`.
    pub state: CallState,
    pub node: Option<String>,
    /// The allow's `tool`, `agent` and `context.tool_use_id` (Claude Code's id for the call),
    /// when they are strings: what a reviewer looks the call up by.
    pub tool: Option<String>,
    pub agent: Option<String>,
    pub tool_use_id: Option<String>,
    pub index: usize,
    pub seq: Option<i64>,
}

/// One problem, about one entry (`index`, `seq`, `node`) or about the whole bundle.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub name: FailureName,
    /// The reason token the reference verifier reports for this problem, if it has one.
    pub reference_reason: Option<&'static str>,
    /// Position in the bundle's `entries`.
    pub index: Option<usize>,
    /// The entry's own `seq`, when it is an integer.
    pub seq: Option<i64>,
    /// The entry's `node`, when it is a string.
    pub node: Option<String>,
    /// The call this failure is about, when there is one.
    pub call_id: Option<String>,
    /// One line, safe to print: values from the bundle are escaped.
    pub detail: String,
}

macro_rules! failure_names {
    ($($variant:ident => $name:literal, $reference:expr;)*) => {
        /// Our stable failure names. The string form ([`FailureName::as_str`]) is what the CLI
        /// prints and the JSON report carries; scripts may depend on it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FailureName { $($variant),* }

        impl FailureName {
            /// Every name, in the order the checks run.
            pub const ALL: &'static [FailureName] = &[$(FailureName::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(FailureName::$variant => $name),* }
            }

            /// The `reason` the reference (`failure_details`) reports for the same problem, or
            /// `None` where this verifier is stricter and the reference reports nothing.
            pub fn reference_reason(self) -> Option<&'static str> {
                match self { $(FailureName::$variant => $reference),* }
            }

            /// The name for a string form, if it is one of ours.
            pub fn from_name(name: &str) -> Option<FailureName> {
                match name { $($name => Some(FailureName::$variant),)* _ => None }
            }
        }
    };
}

failure_names! {
    InvalidBundle => "invalid-bundle", Some("invalid_bundle");
    DuplicateMember => "duplicate-member", None;
    UnsupportedVersion => "unsupported-version", Some("unsupported_version");
    AnchorVersionMismatch => "anchor-version-mismatch", Some("anchor_version_mismatch");
    MissingRoot => "missing-root", Some("missing_root");
    MultipleRoots => "multiple-roots", Some("missing_root");
    RootVersionMismatch => "root-version-mismatch", Some("root_version_mismatch");
    MixedEntryVersions => "mixed-entry-versions", Some("mixed_entry_versions");
    InvalidLedgerEntry => "invalid-ledger-entry", Some("invalid_ledger_entry");
    UnknownLedgerEvent => "unknown-ledger-event", Some("unknown_ledger_event");
    UnknownLedgerField => "unknown-ledger-field", Some("unknown_ledger_fields");
    InvalidNode => "invalid-node", Some("invalid_node");
    ChainIdMismatch => "chain-id-mismatch", Some("chain_id_mismatch");
    AnchorChainIdMismatch => "anchor-chain-id-mismatch", Some("chain_id_mismatch");
    SeqGap => "seq-gap", Some("integrity");
    PrevHashMismatch => "prev-hash-mismatch", Some("integrity");
    HashMismatch => "hash-mismatch", Some("integrity");
    AnchorMissing => "anchor-missing", Some("integrity(anchor)");
    AnchorMissingField => "anchor-missing-field", Some("integrity(anchor)");
    AnchorSignatureNotHex => "anchor-signature-not-hex", Some("integrity(anchor)");
    AnchorSignatureInvalid => "anchor-signature-invalid", Some("integrity(anchor)");
    AnchorOverBrokenChain => "anchor-over-broken-chain", Some("integrity(anchor)");
    AnchorHeadMismatch => "anchor-head-mismatch", Some("integrity(anchor)");
    AnchorNotChecked => "anchor-not-checked", None;
    UnreadableAuthority => "unreadable-authority", Some("unreadable_authority");
    UnreadableGrant => "unreadable-grant", Some("unreadable_granted");
    NodeRedefined => "node-redefined", Some("monotonicity");
    UnknownParent => "unknown-parent", Some("monotonicity");
    SpawnFromRevoked => "spawn-from-revoked-parent", Some("monotonicity");
    NotMonotonic => "not-monotonic", Some("monotonicity");
    AllowOnUnknownNode => "allow-on-unknown-node", Some("containment");
    AllowAfterRevoke => "allow-after-revoke", Some("containment");
    NotContained => "not-contained", Some("containment");
    V2FieldOnV1 => "v2-field-on-v1", Some("v2_field_on_v1");
    InvalidParamsSalt => "invalid-params-salt", Some("invalid_root");
    InvalidPendingAtKill => "invalid-pending-at-kill", Some("invalid_kill");
    DuplicateCallId => "duplicate-call-id", Some("duplicate_call_id");
    AllowCallIdInvalid => "allow-call-id-invalid", Some("invalid_allow");
    AllowCaptureInvalid => "allow-capture-invalid", Some("invalid_allow");
    AllowAdapterInvalid => "allow-adapter-invalid", Some("invalid_allow");
    AllowPolicyInvalid => "allow-policy-invalid", Some("invalid_allow");
    AllowParamsHashInvalid => "allow-params-hash-invalid", Some("invalid_allow");
    DenyCallIdInvalid => "deny-call-id-invalid", Some("invalid_deny");
    DenyCarriesAllowField => "deny-carries-allow-field", Some("invalid_deny");
    OutcomeCallIdInvalid => "outcome-call-id-invalid", Some("invalid_outcome");
    OutcomeRecordInvalid => "outcome-record-invalid", Some("invalid_outcome");
    DuplicateOutcome => "duplicate-outcome", Some("duplicate_outcome");
    OutcomeWithoutAllow => "outcome-without-allow", Some("outcome_without_allow");
    OutcomeOnOtherNode => "outcome-on-other-node", Some("cross_ref");
    OutcomeBeforeAllow => "outcome-before-allow", Some("outcome_before_allow");
    ParamsMismatch => "params-mismatch", Some("params_mismatch");
    UnknownPolicy => "unknown-policy", Some("invalid_policy");
    PolicyOnNonAllow => "policy-on-non-allow", Some("policy_on_non_allow");
    EnvelopesNotVerified => "envelopes-not-verified", Some("envelope_unknown_witness");
    CheckpointInvalid => "checkpoint-invalid", None;
    ChainPositionMismatch => "chain-position-mismatch", None;
}

impl Serialize for FailureName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for FailureName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The failure list, with the entry each failure is about.
pub(super) struct Log<'a> {
    entries: &'a [Option<&'a Obj<'a>>],
    pub(super) failures: Vec<Failure>,
}

impl<'a> Log<'a> {
    pub(super) fn new(entries: &'a [Option<&'a Obj<'a>>]) -> Self {
        Log {
            entries,
            failures: Vec::new(),
        }
    }

    /// A failure about the whole bundle.
    pub(super) fn chain(&mut self, name: FailureName, detail: String) {
        self.failures.push(Failure {
            name,
            reference_reason: name.reference_reason(),
            index: None,
            seq: None,
            node: None,
            call_id: None,
            detail,
        });
    }

    /// A failure about the entry at `index`.
    pub(super) fn at(&mut self, name: FailureName, index: usize, detail: String) {
        let e = self.entries.get(index).copied().flatten();
        let s = |k: &str| {
            e.and_then(|e| e.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        self.failures.push(Failure {
            name,
            reference_reason: name.reference_reason(),
            index: Some(index),
            seq: e.and_then(|e| seq_value(e.get(field::SEQ))),
            node: s(field::NODE),
            call_id: s(field::CALL_ID),
            detail,
        });
    }

    pub(super) fn len(&self) -> usize {
        self.failures.len()
    }
}

/// A count written only when there is something to count (older reports stay as they were).
fn is_zero(n: &usize) -> bool {
    *n == 0
}
