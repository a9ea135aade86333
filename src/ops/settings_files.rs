//! Where Claude Code keeps its settings: the files it reads hooks and `enabledPlugins` from,
//! and the user configuration directory.

use std::path::{Path, PathBuf};

/// Claude Code's user configuration directory: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

/// The settings files Claude Code reads hooks from, most authoritative first: managed policy,
/// the user's (`CLAUDE_CONFIG_DIR`, else `~/.claude`), the project's and the local one.
pub(super) fn settings_sources(project: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut out = vec![(
        "managed",
        PathBuf::from("/etc/claude-code/managed-settings.json"),
    )];
    let project_file = project.join(".claude").join("settings.json");
    if let Some(user_file) = user_config_dir().map(|d| d.join("settings.json")) {
        let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        // A project at the home directory: its settings are the user's, read once.
        if !same(&user_file, &project_file) {
            out.push(("user", user_file));
        }
    }
    out.push(("project", project_file));
    out.push(("local", project.join(".claude").join("settings.local.json")));
    out
}
