//! Operator setup: `install` wires the hook into `.claude/settings.json`; `doctor` checks the
//! wiring, the command, permissions, configuration, derivation and ledgers.
//!
//! - `install`: writing the wiring; `settings_doc`: the document it edits, and the merge.
//! - `doctor`: the checks, each a typed [`Check`].
//! - `wiring`: which handlers are ours and whether one makes Claude Code wait for the hook;
//!   `shell`: their commands as a shell reads them.
//! - `plugins`: the attenu-hook plugin as Claude Code loads it; `settings_files`: where
//!   Claude Code keeps its settings; `wired_files`: the files outside `.claude/` the wiring
//!   runs, which self-protection guards.

mod builtin_agents;
mod claude_version;
mod doctor;
mod install;
mod plugins;
mod settings_doc;
mod settings_files;
mod shell;
mod wired_files;
mod wiring;

pub use builtin_agents::{enable_builtin_agents, PresetError};
pub use claude_version::{events_for, installed as installed_claude, VERSIONED_EVENTS};
pub use doctor::{doctor, doctor_for, doctor_store, Check, CheckId, Severity};
pub use install::{install, InstallError, Installed};
pub use settings_doc::{merge, Doc, MergeError};
pub use settings_files::user_config_dir;
pub use shell::resolve_command;
pub use wired_files::{wired_files, WiredFile};
pub use wiring::{
    default_command, launcher_script, machine_specific, EVENTS, LAUNCHER, LAUNCHER_COMMAND,
    LINKED_COMMAND, NOT_INSTALLED, PROJECT_LINK, TIMEOUT_S,
};
