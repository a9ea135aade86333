//! The ledger's names in one place: the closed vocabularies of fields, events and values
//! (attenu-guard 0.21.0, evidence.py and reasons.py), and constants for the names code matches
//! on ([`field`], [`event`]), so a field is spelled once. [`super::entry`]'s types serialize
//! to these names; the verifier checks entries against these lists.

/// A closed list of names as a constant, a membership test compiled to a `match` (asked for
/// every member of every entry, where a linear scan or a hash shows in the profile), and the
/// list's own copy of a name.
macro_rules! name_list {
    ($(#[$doc:meta])* $vis:vis $list:ident, $test:ident, $own:ident, [$($name:literal),* $(,)?]) => {
        $(#[$doc])*
        $vis const $list: &[&str] = &[$($name),*];
        pub(crate) fn $test(name: &str) -> bool {
            matches!(name, $($name)|*)
        }
        pub(crate) fn $own(name: &str) -> Option<&'static str> {
            match name {
                $($name => Some($name),)*
                _ => None,
            }
        }
    };
}

name_list!(
    /// Every top-level field an entry may carry.
    pub LEDGER_FIELDS, is_ledger_field, ledger_field, [
    "v", "c14n", "seq", "ts", "event", "prev_hash", "hash", "chain_id", "node", "parent", "agent",
    "task", "scope", "tool", "context", "reason", "reasons", "authority", "requested", "granted",
    "target", "revoked", "strikes", "mode", "disposition", "detail", "call_id", "capture",
    "adapter", "authorized_params_hash", "params_hash_reason", "params_salt", "body_state",
    "error_code", "invoked_params_hash", "duration_ms", "receipt", "pending_at_kill", "policy",
]);

/// Every event name; `outcome` only on a schema version 2 chain.
pub const LEDGER_EVENTS: &[&str] = &[
    "root",
    "spawn",
    "spawn_denied",
    "allow",
    "deny",
    "kill",
    "done",
    "outcome",
];

/// Fields only a schema version 2 chain writes.
#[rustfmt::skip]
pub(crate) const V2_ONLY_FIELDS: &[&str] = &[
    "call_id", "capture", "adapter", "authorized_params_hash", "params_hash_reason", "params_salt",
    "body_state", "error_code", "invoked_params_hash", "duration_ms", "receipt", "pending_at_kill",
];

/// Fields only an `allow` may carry (a `deny` carrying one is invalid on v2).
pub(crate) const ALLOW_ONLY_FIELDS: &[&str] = &[
    "adapter",
    "authorized_params_hash",
    "capture",
    "params_hash_reason",
    "policy",
];

pub(crate) const CAPTURES: &[&str] = &[
    "wrapper_sync",
    "wrapper_async",
    "framework_post_hook",
    "pre_hook_only",
];
pub(crate) const BODY_STATES: &[&str] = &["returned", "raised", "abandoned", "deferred"];
pub(crate) const POLICIES: &[&str] = &["unlisted"];
pub(crate) const PARAMS_HASH_REASONS: &[&str] = &["unsupported"];
pub(crate) const EGRESS_ORDER: &[&str] = &["none", "internal", "any"];

/// Top-level entry fields that code reads by name.
pub mod field {
    pub const EVENT: &str = "event";
    pub const SEQ: &str = "seq";
    pub const TS: &str = "ts";
    pub const PREV_HASH: &str = "prev_hash";
    pub const HASH: &str = "hash";
    pub const CHAIN_ID: &str = "chain_id";
    pub const NODE: &str = "node";
    pub const AGENT: &str = "agent";
    pub const TOOL: &str = "tool";
    pub const SCOPE: &str = "scope";
    pub const CONTEXT: &str = "context";
    pub const REASON: &str = "reason";
    pub const CALL_ID: &str = "call_id";
    pub const AUTHORIZED_PARAMS_HASH: &str = "authorized_params_hash";
    pub const PARAMS_SALT: &str = "params_salt";
    pub const BODY_STATE: &str = "body_state";
    pub const POLICY: &str = "policy";
    pub const REASONS: &str = "reasons";
    pub const ERROR_CODE: &str = "error_code";
    pub const DURATION_MS: &str = "duration_ms";
    pub const V: &str = "v";
    pub const C14N: &str = "c14n";
    pub const PARENT: &str = "parent";
    pub const AUTHORITY: &str = "authority";
    pub const GRANTED: &str = "granted";
    pub const TARGET: &str = "target";
    pub const REVOKED: &str = "revoked";
    pub const CAPTURE: &str = "capture";
    pub const ADAPTER: &str = "adapter";
    pub const PARAMS_HASH_REASON: &str = "params_hash_reason";
    pub const INVOKED_PARAMS_HASH: &str = "invoked_params_hash";
    pub const RECEIPT: &str = "receipt";
    pub const PENDING_AT_KILL: &str = "pending_at_kill";
}

/// Event names ([`LEDGER_EVENTS`]).
pub mod event {
    pub const ROOT: &str = "root";
    pub const SPAWN: &str = "spawn";
    pub const SPAWN_DENIED: &str = "spawn_denied";
    pub const ALLOW: &str = "allow";
    pub const DENY: &str = "deny";
    pub const KILL: &str = "kill";
    pub const DONE: &str = "done";
    pub const OUTCOME: &str = "outcome";
}

/// The `context` members code reads by name.
pub mod context {
    pub const SESSION_ID: &str = "session_id";
    pub const TOOL_USE_ID: &str = "tool_use_id";
    pub const IDENTITY: &str = "identity";
    pub const PREVIOUS_CHAIN: &str = "previous_chain";
    pub const AT: &str = "at";
    pub const AGENT_ID: &str = "agent_id";
    pub const AGENT_TYPE: &str = "agent_type";
    pub const SUMMARY: &str = "summary";
    pub const REASON_CODE: &str = "reason_code";
    pub const REFUSED_BY: &str = "refused_by";
    pub const WOULD_DENY: &str = "would_deny";
    pub const RECONCILIATION: &str = "reconciliation";
}

/// The members of `context.reconciliation` (a reviewer's resolution, `reconciled_outcome`).
pub mod reconciliation {
    pub const MARKER: &str = "marker";
    pub const OUTCOME: &str = "outcome";
    pub const EVIDENCE: &str = "evidence";
}

/// The members that tell a ledger entry from anything else: a line with all three is an entry.
pub const ENTRY_MARKERS: [&str; 3] = [field::EVENT, field::PREV_HASH, field::HASH];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every constant is a name of the closed lists, so a typo cannot compile into a lookup
    /// that never matches.
    #[test]
    fn the_constants_are_names_of_the_vocabulary() {
        use field::*;
        for f in [
            EVENT,
            SEQ,
            TS,
            PREV_HASH,
            HASH,
            CHAIN_ID,
            NODE,
            AGENT,
            TOOL,
            SCOPE,
            CONTEXT,
            REASON,
            CALL_ID,
            AUTHORIZED_PARAMS_HASH,
            PARAMS_SALT,
            BODY_STATE,
            POLICY,
            REASONS,
            ERROR_CODE,
            DURATION_MS,
            V,
            C14N,
            PARENT,
            AUTHORITY,
            GRANTED,
            TARGET,
            REVOKED,
            CAPTURE,
            ADAPTER,
            PARAMS_HASH_REASON,
            INVOKED_PARAMS_HASH,
            RECEIPT,
            PENDING_AT_KILL,
        ] {
            assert!(is_ledger_field(f), "{f}");
        }
        use event::*;
        let events = [ROOT, SPAWN, SPAWN_DENIED, ALLOW, DENY, KILL, DONE, OUTCOME];
        assert_eq!(events.as_slice(), LEDGER_EVENTS);
    }
}
