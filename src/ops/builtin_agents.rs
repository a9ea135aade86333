//! `install --builtin-agents`: turns on the built-in agent preset (`[derive] builtin_agents`,
//! `crate::derive::builtin`) in the team's committed `.claude/attenu.toml`, or with `--local`
//! in this clone's `.attenu/config.toml`. The key is added (or set) as text, so the file's
//! comments and layout stay; the result must still load as a configuration, or nothing is
//! written.

use crate::config::ConfigError;
use std::path::{Path, PathBuf};

/// Why the preset could not be turned on; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    #[error(transparent)]
    Read(#[from] ConfigError),
    #[error("{} would not load with [derive] builtin_agents = true ({why}); set it by hand", .path.display())]
    WouldNotLoad { path: PathBuf, why: String },
    #[error("cannot create {}: {source}", .dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The file the preset is written to, and whether it changed.
pub fn enable_builtin_agents(root: &Path, local: bool) -> Result<(PathBuf, bool), PresetError> {
    let path = if local {
        root.join(".attenu/config.toml")
    } else {
        root.join(crate::config::TEAM_FILE)
    };
    // Read as the configuration is: never through a link, only this user's file.
    let old = crate::config::read_optional(&path)?.unwrap_or_default();
    let new = with_builtin_agents(&old);
    if new == old {
        return Ok((path, false));
    }
    if let Err(e) = toml::from_str::<crate::config::Config>(&new) {
        return Err(PresetError::WouldNotLoad {
            why: crate::config::one_line(&e.to_string()),
            path,
        });
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| PresetError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    if let Err(source) = crate::fs::write_atomic(&path, new.as_bytes(), true) {
        return Err(PresetError::Write { path, source });
    }
    Ok((path, true))
}

/// `text` with `builtin_agents = true` in its `[derive]` table (added, or set where present).
fn with_builtin_agents(text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header = |l: &str| l.trim_start().starts_with('[');
    match lines.iter().position(|l| l.trim() == "[derive]") {
        Some(at) => {
            let end = lines[at + 1..]
                .iter()
                .position(|l| header(l))
                .map_or(lines.len(), |p| at + 1 + p);
            let key = lines[at + 1..end]
                .iter()
                .position(|l| l.split('=').next().map(str::trim) == Some("builtin_agents"));
            match key {
                Some(k) => lines[at + 1 + k] = "builtin_agents = true".into(),
                None => lines.insert(at + 1, "builtin_agents = true".into()),
            }
        }
        None => {
            if lines.last().is_some_and(|l| !l.trim().is_empty()) {
                lines.push(String::new());
            }
            lines.push("[derive]".into());
            lines.push("builtin_agents = true".into());
        }
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_added_or_set_and_the_rest_kept() {
        for (before, after) in [
            ("", "[derive]\nbuiltin_agents = true\n"),
            (
                "mode = \"shadow\"\n",
                "mode = \"shadow\"\n\n[derive]\nbuiltin_agents = true\n",
            ),
            (
                "# ours\n[derive]\nsession_pool = [\"Read\"]\n[gate]\nrequire = []\n",
                "# ours\n[derive]\nbuiltin_agents = true\nsession_pool = [\"Read\"]\n[gate]\nrequire = []\n",
            ),
            (
                "[derive]\nbuiltin_agents = false\n",
                "[derive]\nbuiltin_agents = true\n",
            ),
        ] {
            assert_eq!(with_builtin_agents(before), after, "{before:?}");
        }
    }
}
