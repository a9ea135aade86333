//! The hash-chained ledger: the entries the hook writes ([`entry`], with [`commitment`]s in
//! place of raw arguments), RFC 8785 canonical JSON ([`canonical`]), entry hashing and chain
//! verification ([`chain`]), and the per-session file store under `.attenu/` ([`store`]).
pub mod canonical;
pub mod chain;
pub mod commitment;
pub mod entry;
pub(crate) mod exact;
pub mod store;
