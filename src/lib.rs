//! attenu-hook: derives each Claude Code subagent's authority from the project's own
//! declarations, denies what a subagent does not hold, keeps a SHA-256 hash-chained ledger
//! of every decision, and exports Ed25519-signed evidence bundles for offline review.
//!
//! The decision ([`policy`]) is a pure function of the derived roster ([`derive`]), the
//! configuration ([`config`]), the payload ([`protocol`]) and the gate's verdict read
//! beforehand; file I/O, locking, SQLite and the clock live at the edges ([`hook`],
//! [`ledger::store`], [`evidence`], [`gate`], [`fs`]). `docs/ARCHITECTURE.md` walks one call
//! through the modules.
#![forbid(unsafe_code)]

pub mod audit;
pub mod cli;
pub mod clock;
pub mod config;
pub mod derive;
pub mod evidence;
pub mod fs;
pub mod gate;
pub mod hook;
pub mod json;
pub mod ledger;
pub mod ops;
pub mod par;
pub mod policy;
pub mod protocol;
pub mod random;
pub mod reason;
pub mod report;
pub mod ship;
pub mod tlog;
pub mod trust;
