//! Hook mode, the edge around the pure policy: one Claude Code event on stdin, one answer on
//! stdout, within a deadline.
//!
//! [`process`] owns stdin, stdout, the watchdog and the exit code; [`dispatch`] reads the
//! payload, finds the project and its configuration and hands the event to its handler
//! ([`pre_tool_use`], which also decides a skill's inline shell, [`post_tool_use`],
//! [`lifecycle`], [`refused`] for Claude Code's own refusals and interruptions); [`context`] holds what a handler
//! reads from disk (roster, ledger); [`checkpoint`] queues signed checkpoints for shipping;
//! [`last_resort`] is the answer when the hook itself fails; [`reach`] finds what a call's
//! paths reach for self-protection.
//! The exit-code policy is [`crate::protocol::exit`].

mod checkpoint;
mod context;
pub mod dispatch;
pub(crate) mod faults;
mod last_resort;
mod lifecycle;
mod post_tool_use;
mod pre_tool_use;
pub mod process;
mod reach;
mod refused;

pub use context::project_root;
pub use dispatch::handle_bytes;
pub use process::run;
