//! The hash-chained ledger: the entries the hook writes ([`entry`], with [`commitment`]s in
//! place of raw arguments), entry hashing and chain verification ([`chain`]), and the
//! per-session file store under `.attenu/` ([`store`]), and how every command reads a
//! project's ledgers ([`read`]). The RFC 8785 form the hashes are
//! computed over is [`crate::json::canonical`].
pub mod chain;
pub mod commitment;
pub mod entry;
pub mod fields;
pub mod read;
pub mod refusal;
pub mod store;
pub mod summary;

/// The canonicalizer's old path, kept only so branches written before it moved to
/// [`crate::json`] still build; new code names `crate::json::canonical`.
#[doc(hidden)]
pub use crate::json::canonical;
