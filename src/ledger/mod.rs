//! The hash-chained ledger: RFC 8785 canonical JSON, entry hashing and chain verification,
//! and the per-session file store under `.attenu/`.
pub mod canonical;
pub mod chain;
pub mod store;
