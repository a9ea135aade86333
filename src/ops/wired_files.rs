//! The files outside `.claude/` that decide whether and how the hook runs, found as `doctor`
//! finds the wiring: the program each handler of the hook's events runs, in every settings
//! file Claude Code reads hooks from, and the install directory of each attenu-hook plugin
//! `enabledPlugins` turns on. Self-protection guards them (`crate::hook::reach`).

use super::plugins::plugins_on;
use super::settings_files::settings_sources;
use super::shell::resolve_command;
use super::wiring::handlers_in;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a handler's program or a plugin's directory is, as wiring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WiredFile {
    /// The program a settings file's handler runs (attenu-hook, or a script around it).
    Program(PathBuf),
    /// The directory of an installed plugin that wires the hook.
    Plugin(PathBuf),
}

/// Every such file for `project`. A file that cannot be read adds nothing: doctor reports it.
pub fn wired_files(project: &Path) -> Vec<WiredFile> {
    let mut out = Vec::new();
    for (_, file) in settings_sources(project) {
        let Some(doc) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')).ok())
        else {
            continue;
        };
        for (_, _, h) in handlers_in(&doc) {
            let program = h
                .get("command")
                .and_then(Value::as_str)
                .and_then(|c| resolve_command(c, project));
            if let Some(p) = program {
                out.push(WiredFile::Program(p));
            }
        }
    }
    out.extend(
        plugins_on(project)
            .into_iter()
            .filter_map(|p| p.install_path.ok())
            .map(WiredFile::Plugin),
    );
    out
}
