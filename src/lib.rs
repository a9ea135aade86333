//! attenu-hook: derives each Claude Code subagent's authority from the project's own
//! declarations, denies what a subagent does not hold, keeps a SHA-256 hash-chained ledger
//! of every decision, and exports Ed25519-signed evidence bundles for offline review.
//!
//! The decision itself ([`decide`]) is a pure function of the derived roster, the
//! configuration and the payload; file I/O, locking and SQLite live at the edges
//! ([`ledger::store`], [`evidence`], [`gate`]).
#![forbid(unsafe_code)]

pub mod cli;
pub mod config;
pub mod decide;
pub mod derive;
pub mod evidence;
pub mod fsutil;
pub mod gate;
pub mod hook;
pub mod ledger;
pub mod ops;
pub mod par;
pub mod reason;
