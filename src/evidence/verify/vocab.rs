//! The ledger's closed vocabularies (attenu-guard 0.21.0, evidence.py and reasons.py).

/// A closed list of names as a constant, a membership test compiled to a `match` (asked for
/// every member of every entry, where a linear scan or a hash shows in the profile), and the
/// list's own copy of a name.
macro_rules! name_list {
    ($(#[$doc:meta])* $vis:vis $list:ident, $test:ident, $own:ident, [$($name:literal),* $(,)?]) => {
        $(#[$doc])*
        $vis const $list: &[&str] = &[$($name),*];
        pub(super) fn $test(name: &str) -> bool {
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
pub(super) const V2_ONLY_FIELDS: &[&str] = &[
    "call_id", "capture", "adapter", "authorized_params_hash", "params_hash_reason", "params_salt",
    "body_state", "error_code", "invoked_params_hash", "duration_ms", "receipt", "pending_at_kill",
];

/// Fields only an `allow` may carry (a `deny` carrying one is invalid on v2).
pub(super) const ALLOW_ONLY_FIELDS: &[&str] = &[
    "adapter",
    "authorized_params_hash",
    "capture",
    "params_hash_reason",
    "policy",
];

pub(super) const CAPTURES: &[&str] = &[
    "wrapper_sync",
    "wrapper_async",
    "framework_post_hook",
    "pre_hook_only",
];
pub(super) const BODY_STATES: &[&str] = &["returned", "raised", "abandoned", "deferred"];
pub(super) const POLICIES: &[&str] = &["unlisted"];
pub(super) const PARAMS_HASH_REASONS: &[&str] = &["unsupported"];
pub(super) const EGRESS_ORDER: &[&str] = &["none", "internal", "any"];
