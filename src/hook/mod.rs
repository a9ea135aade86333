//! Hook mode: one Claude Code event on stdin, one answer on stdout.
//!
//! Exit-code policy (Claude Code honours only exit 2 or a JSON deny; exit 1, a crash or a
//! timeout lets the call run): every answer is printed as JSON with exit 0, except when the
//! hook cannot tell what event it is answering (unreadable stdin, a panic, the internal
//! deadline), where it prints the PreToolUse deny and exits 2, which blocks whatever the event.

pub mod answer;
pub mod handle;
pub mod payload;
pub mod record;
pub mod time;

pub use handle::run;
