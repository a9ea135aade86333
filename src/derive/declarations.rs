//! Gathering the declarations: the agent files under `.claude/agents/**` and the
//! `permissions` block of `.claude/settings.json` and `.claude/settings.local.json`.
//!
//! Containment: a bad agent file affects only that agent (it holds nothing and is reported);
//! only an unreadable settings file, which is project-wide, fails the derivation as a whole.

use super::{compat, frontmatter, DeriveError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Upper bounds on what derivation reads, so a hostile tree cannot stall the hook.
const MAX_AGENT_FILES: usize = 2000;
const MAX_AGENT_FILE_BYTES: u64 = 1 << 20;
const MAX_DIR_DEPTH: usize = 8;

/// Declarations gathered from the files, before resolution.
#[derive(Debug, Default)]
pub struct Declarations {
    /// name → (source, Ok(agent) or Err(why it holds nothing))
    pub agents: BTreeMap<String, (String, Result<frontmatter::AgentFile, String>)>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// The settings file (`settings.json`, `settings.local.json`) of each `allow` and `deny`
    /// entry, by index: the deny hints and `--derive` name it.
    pub allow_from: Vec<String>,
    pub deny_from: Vec<String>,
    /// `[derive] session_pool` from the configuration: when set, the pool inheriting agents
    /// hold instead of the one derived from the files.
    pub session_pool: Option<Vec<String>>,
    pub problems: Vec<String>,
    pub broken_files: Vec<super::roster::BrokenFile>,
}

/// Reads agent files and settings; an unreadable settings file is the only project-wide error.
pub fn read_declarations(root: &Path) -> Result<Declarations, DeriveError> {
    read_declarations_from(root, list_agent_files(root)?)
}

/// Every `.md` file under `.claude/agents`, in order.
pub(super) fn list_agent_files(root: &Path) -> Result<Vec<PathBuf>, DeriveError> {
    let mut files = Vec::new();
    collect_md(&root.join(".claude").join("agents"), 0, &mut files)?;
    files.sort();
    Ok(files)
}

/// [`read_declarations`] from the agent files [`list_agent_files`] found.
pub(super) fn read_declarations_from(
    root: &Path,
    files: Vec<PathBuf>,
) -> Result<Declarations, DeriveError> {
    let mut decl = Declarations::default();
    let mut loaded = compat::LoadedOnce::default();
    for path in files {
        read_agent_file(root, &path, &mut loaded, &mut decl);
    }
    let claude = root.join(".claude");
    for file in ["settings.json", "settings.local.json"] {
        read_permissions(&claude.join(file), file, &mut decl)?;
    }
    Ok(decl)
}

/// Adds the agent `path` declares to `decl`, or the problem that keeps it from declaring one.
fn read_agent_file(
    root: &Path,
    path: &Path,
    loaded: &mut compat::LoadedOnce,
    decl: &mut Declarations,
) {
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let meta = std::fs::metadata(path);
    if let Ok(m) = &meta {
        if !loaded.first(m) {
            return;
        }
    }
    let parsed = meta
        .map_err(|e| e.to_string())
        .and_then(|m| {
            if m.len() > MAX_AGENT_FILE_BYTES {
                Err(format!("larger than {MAX_AGENT_FILE_BYTES} bytes"))
            } else {
                std::fs::read(path).map_err(|e| e.to_string())
            }
        })
        .and_then(|bytes| String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string()));
    let text = match parsed {
        Ok(t) => t,
        Err(e) => {
            decl.problems.push(format!(
                "{rel}: cannot be read ({e}); no agent is derived from it"
            ));
            decl.broken_files.push(super::roster::BrokenFile {
                file: rel,
                error: format!("cannot be read: {e}"),
            });
            return;
        }
    };
    let (name, result) = match frontmatter::parse_agent(&text) {
        Ok(a) => (a.name.clone(), Ok(a)),
        Err(frontmatter::FrontmatterError {
            name: Some(n),
            message,
        }) => {
            decl.problems.push(format!(
                "{rel}: {message}; agent '{n}' holds nothing until it is fixed"
            ));
            (n, Err(message))
        }
        Err(frontmatter::FrontmatterError {
            name: None,
            message,
        }) => {
            decl.problems
                .push(format!("{rel}: {message}; no agent is derived from it"));
            decl.broken_files.push(super::roster::BrokenFile {
                file: rel,
                error: message,
            });
            return;
        }
    };
    if let Some((first, _)) = decl.agents.get(&name) {
        decl.problems.push(format!(
            "agent '{name}' is declared twice ({first} and {rel}); it holds nothing until one is renamed"
        ));
        let first = first.clone();
        decl.agents
            .insert(name, (first, Err("declared twice".into())));
        return;
    }
    decl.agents.insert(name, (rel, result));
}

fn collect_md(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), DeriveError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(DeriveError::DeclarationsUnreadable(format!(
                "cannot list {}: {e}; make it readable by the user running Claude Code",
                dir.display()
            )))
        }
    };
    for entry in entries {
        let entry = entry.map_err(|e| {
            DeriveError::DeclarationsUnreadable(format!("cannot list {}: {e}", dir.display()))
        })?;
        let path = entry.path();
        // The directory listing's own type, unless it is a link (Claude Code follows those):
        // a statx per agent file saved on every call.
        let ft = match entry.file_type() {
            Ok(t) if !t.is_symlink() => Ok(t),
            _ => std::fs::metadata(&path).map(|m| m.file_type()),
        };
        match ft {
            Ok(ft) if ft.is_dir() && depth < MAX_DIR_DEPTH => collect_md(&path, depth + 1, out)?,
            Ok(ft) if ft.is_file() && path.extension().is_some_and(|e| e == "md") => {
                if out.len() >= MAX_AGENT_FILES {
                    return Err(DeriveError::DeclarationsUnreadable(format!(
                        "more than {MAX_AGENT_FILES} agent files under .claude/agents"
                    )));
                }
                out.push(path);
            }
            _ => {}
        }
    }
    Ok(())
}

fn read_permissions(path: &Path, label: &str, decl: &mut Declarations) -> Result<(), DeriveError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(DeriveError::SettingsInvalid(format!(
                ".claude/{label} cannot be read ({e}); make it readable or remove it"
            )))
        }
    };
    parse_settings(&text, label, decl)
}

/// Reads the `permissions` block of one settings file's text into `decl`.
pub fn parse_settings(text: &str, label: &str, decl: &mut Declarations) -> Result<(), DeriveError> {
    let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| {
        DeriveError::SettingsInvalid(format!(
            ".claude/{label} is not valid JSON ({e}); fix it so its permissions can be read"
        ))
    })?;
    let Some(perms) = value.get("permissions") else {
        return Ok(());
    };
    if perms.is_null() {
        return Ok(());
    }
    if !perms.is_object() {
        return Err(DeriveError::SettingsInvalid(format!(
            ".claude/{label}: `permissions` is not an object; fix it so it can be read"
        )));
    }
    for (key, is_deny) in [("allow", false), ("deny", true)] {
        let list = match perms.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(a)) => a,
            Some(_) => {
                return Err(DeriveError::SettingsInvalid(format!(
                    ".claude/{label}: permissions.{key} is not a list; fix it so it can be read"
                )))
            }
        };
        for item in list {
            match (item.as_str(), is_deny) {
                (Some(s), false) => {
                    decl.allow.push(s.to_string());
                    decl.allow_from.push(label.to_string());
                }
                (Some(s), true) => {
                    decl.deny.push(s.to_string());
                    decl.deny_from.push(label.to_string());
                }
                // Skipping an allow only narrows; skipping a deny would widen, so it is an error.
                (None, false) => decl.problems.push(format!(".claude/{label}: permissions.allow has a non-string entry {item}; ignored")),
                (None, true) => {
                    return Err(DeriveError::SettingsInvalid(format!(
                        ".claude/{label}: permissions.deny has a non-string entry {item}; fix it so the denial can be honoured"
                    )))
                }
            }
        }
    }
    Ok(())
}
