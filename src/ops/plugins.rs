//! The attenu-hook plugin as Claude Code loads it: which settings file turns it on
//! (`enabledPlugins`), where it is installed (`plugins/installed_plugins.json`), and the hooks
//! its files give.

use super::settings_files::{settings_sources, user_config_dir};
use super::wiring::{handlers_in, PluginRef, Wired};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The name in `.claude-plugin/plugin.json`: Claude Code's `enabledPlugins` names a plugin as
/// `name@marketplace`.
const PLUGIN_NAME: &str = "attenu-hook";

/// Every `enabledPlugins` key that turns the attenu-hook plugin on, with the scope of the
/// settings file that decides it. Each key is decided by the most specific file that sets it,
/// managed settings above all.
fn enabled_plugins(switches: &[(&'static str, String, bool)]) -> Vec<(String, &'static str)> {
    let mut keys: Vec<&String> = switches.iter().map(|(_, k, _)| k).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            ["managed", "local", "project", "user"]
                .iter()
                .find_map(|scope| {
                    switches
                        .iter()
                        .find(|(s, k, _)| s == scope && k == key)
                        .map(|(s, _, on)| (*on, *s))
                })
                .filter(|(on, _)| *on)
                .map(|(_, scope)| (key.clone(), scope))
        })
        .collect()
}

/// `name@marketplace` for the attenu-hook plugin; a key without a marketplace names none.
fn is_our_plugin_key(key: &str) -> bool {
    key.split_once('@')
        .is_some_and(|(name, market)| name == PLUGIN_NAME && !market.is_empty())
}

/// An attenu-hook plugin that `enabledPlugins` turns on, as Claude Code would load it.
#[derive(Debug)]
pub(super) struct PluginOn {
    pub(super) key: String,
    /// Managed settings turn it on: its hooks then run even where only managed hooks may.
    pub(super) by_managed: bool,
    /// Where the installation Claude Code uses for this project is, or why it uses none (no
    /// registry entry applies here, or it cannot read the registry); then it loads nothing.
    pub(super) install_path: Result<PathBuf, NotInstalled>,
}

/// Why Claude Code loads no hook from a plugin `enabledPlugins` turns on.
#[derive(Debug, thiserror::Error)]
#[error("`enabledPlugins` turns on {key}, but {} {problem}", .registry.display())]
pub(super) struct NotInstalled {
    key: String,
    /// `installed_plugins.json`.
    registry: PathBuf,
    problem: RegistryProblem,
}

/// What the registry says against a plugin's installation: the end of the sentence "the
/// registry ...", and what to do.
#[derive(Debug, thiserror::Error)]
enum RegistryProblem {
    #[error("lists no installation of it for this project, so Claude Code loads no hook from it; install it (`claude plugin install {key}`) or remove the entry")]
    NoneHere { key: String },
    #[error("has a record under {record} that Claude Code cannot read ({why}), and then it reads no installed plugin at all, so Claude Code loads no hook from it; reinstall {record} (`claude plugin install {record}`), or fix that record")]
    Unreadable { record: String, why: RecordProblem },
}

/// Why Claude Code cannot read a plugin's records in its registry.
#[derive(Debug, thiserror::Error)]
enum RecordProblem {
    #[error("not a list")]
    NotAList,
    #[error("a record is not an object")]
    NotAnObject,
    #[error("a record has no scope of user, managed, project or local")]
    NoScope,
    #[error("a record has no installPath")]
    NoInstallPath,
    #[error("a record's {0} is not a string")]
    NotAString(&'static str),
    #[error("a record's auto is not true or false")]
    AutoNotABoolean,
}

/// Reads `enabledPlugins` from every settings file and, for each attenu-hook plugin it turns
/// on, where Claude Code installed it (`plugins/installed_plugins.json` in its user config
/// directory).
pub(super) fn plugins_on(dir: &Path) -> Vec<PluginOn> {
    let mut switches = Vec::new();
    for (scope, path) in settings_sources(dir) {
        let Some(doc) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')).ok())
        else {
            continue;
        };
        for (key, on) in doc
            .get("enabledPlugins")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if is_our_plugin_key(key) {
                switches.push((scope, key.clone(), on.as_bool() == Some(true)));
            }
        }
    }
    let on = enabled_plugins(&switches);
    if on.is_empty() {
        return Vec::new();
    }
    let registry = user_config_dir()
        .unwrap_or_else(|| PathBuf::from("~/.claude"))
        .join("plugins")
        .join("installed_plugins.json");
    let doc: Option<Value> = std::fs::read_to_string(&registry)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    on.into_iter()
        .map(|(key, scope)| PluginOn {
            install_path: installation_for(doc.as_ref(), &key, dir).map_err(|problem| {
                NotInstalled {
                    key: key.clone(),
                    registry: registry.clone(),
                    problem,
                }
            }),
            key,
            by_managed: scope == "managed",
        })
        .collect()
}

/// The installation of plugin `key` that Claude Code 2.1 loads in `project`, from its
/// registry `doc`: the first entry that applies there. A user or managed installation applies
/// everywhere; a project or local one where its `projectPath` is this project or in the same
/// git repository (a linked worktree counts as its main checkout).
fn installation_for(
    doc: Option<&Value>,
    key: &str,
    project: &Path,
) -> Result<PathBuf, RegistryProblem> {
    let none_here = || RegistryProblem::NoneHere { key: key.into() };
    let Some(doc) = doc else {
        return Err(none_here());
    };
    let entries: Vec<&Value> = if doc.get("version").and_then(Value::as_u64) == Some(2) {
        v2_entries(doc, key)?
    } else {
        // Version 1: one user installation per key. (Claude Code recomputes its directory
        // under its plugin cache; this reads the one the file names.)
        doc.get("plugins")
            .and_then(|p| p.get(key))
            .or_else(|| doc.get(key))
            .into_iter()
            .collect()
    };
    let here = std::fs::canonicalize(project).ok();
    let repo = here.as_deref().and_then(git_root);
    entries
        .iter()
        .find(|e| {
            let scope = e.get("scope").and_then(Value::as_str);
            if matches!(scope, None | Some("user" | "managed")) {
                return true;
            }
            let Some(theirs) = e
                .get("projectPath")
                .and_then(Value::as_str)
                .and_then(|p| std::fs::canonicalize(p).ok())
            else {
                return false;
            };
            Some(&theirs) == here.as_ref() || (repo.is_some() && git_root(&theirs) == repo)
        })
        .and_then(|e| e.get("installPath").and_then(Value::as_str))
        .map(PathBuf::from)
        .ok_or_else(none_here)
}

/// The records of plugin `key` in a version 2 registry, as Claude Code reads them.
fn v2_entries<'a>(doc: &'a Value, key: &str) -> Result<Vec<&'a Value>, RegistryProblem> {
    // One record it cannot read, under any plugin, and Claude Code reads none.
    let plugins = doc.get("plugins").and_then(Value::as_object);
    for (k, records) in plugins.into_iter().flatten() {
        // Claude Code sets aside, without failing, a key that is not a plugin id and npm
        // records it resolves elsewhere.
        let npm = k.to_ascii_lowercase().ends_with("@npm")
            && records.as_array().is_some_and(|a| {
                a.iter()
                    .any(|r| r.as_object().is_some_and(|o| o.contains_key("npmResolved")))
            });
        if !is_plugin_id(k) || npm {
            continue;
        }
        if let Some(why) = unreadable_record(records) {
            return Err(RegistryProblem::Unreadable {
                record: k.clone(),
                why,
            });
        }
    }
    Ok(plugins
        .and_then(|p| p.get(key))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default())
}

/// Why Claude Code's registry schema rejects a plugin's records (version 2): a list of
/// objects, each with a known `scope`, a string `installPath`, and strings where it has
/// `projectPath`, `version` and the like.
fn unreadable_record(records: &Value) -> Option<RecordProblem> {
    let Some(records) = records.as_array() else {
        return Some(RecordProblem::NotAList);
    };
    for r in records {
        let Some(r) = r.as_object() else {
            return Some(RecordProblem::NotAnObject);
        };
        if !matches!(
            r.get("scope").and_then(Value::as_str),
            Some("user" | "managed" | "project" | "local")
        ) {
            return Some(RecordProblem::NoScope);
        }
        if !r.get("installPath").is_some_and(Value::is_string) {
            return Some(RecordProblem::NoInstallPath);
        }
        for field in [
            "projectPath",
            "version",
            "installedAt",
            "lastUpdated",
            "gitCommitSha",
            "resolvedVersion",
        ] {
            if r.get(field).is_some_and(|v| !v.is_string()) {
                return Some(RecordProblem::NotAString(field));
            }
        }
        if r.get("auto").is_some_and(|v| !v.is_boolean()) {
            return Some(RecordProblem::AutoNotABoolean);
        }
    }
    None
}

/// A plugin id as Claude Code's registry accepts one: `name@marketplace`, each part a letter
/// or digit followed by letters, digits, `-`, `.` or `_`.
fn is_plugin_id(key: &str) -> bool {
    let part = |p: &str| {
        p.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    };
    key.split_once('@')
        .is_some_and(|(name, market)| part(name) && part(market))
}

/// The root of the git checkout `dir` is in: the nearest directory at or above it that holds
/// `.git`; for a linked worktree, the main checkout it belongs to, as Claude Code maps it:
/// only when its git directory is `<common>/worktrees/<name>` with a `commondir` file, and
/// that directory's `gitdir` file links back to this worktree's `.git` (otherwise the
/// worktree counts as its own checkout).
fn git_root(dir: &Path) -> Option<PathBuf> {
    let top = dir
        .ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())?;
    let top = std::fs::canonicalize(top).ok()?;
    let dot_git = top.join(".git");
    if dot_git.is_dir() {
        return Some(top);
    }
    let main_checkout = || -> Option<PathBuf> {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let git_dir = top.join(text.trim().strip_prefix("gitdir:")?.trim());
        let plain = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
        if !plain(&git_dir.join("commondir")) || !plain(&git_dir.join("gitdir")) {
            return None;
        }
        let common_text = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
        let common = std::fs::canonicalize(git_dir.join(common_text.trim())).ok()?;
        let git_dir = std::fs::canonicalize(&git_dir).ok()?;
        if git_dir.parent()? != common.join("worktrees") {
            return None;
        }
        let back_text = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
        let back = std::fs::canonicalize(git_dir.join(back_text.trim())).ok()?;
        if back != dot_git {
            return None;
        }
        Some(match common.file_name() {
            Some(n) if n == ".git" => common.parent()?.to_path_buf(),
            _ => common,
        })
    };
    Some(main_checkout().unwrap_or(top))
}

/// The hooks an installed plugin gives Claude Code, each as a hooks document
/// (`{"hooks": {event: [groups]}}`), and what keeps any of them from loading.
#[derive(Debug, Default)]
pub(super) struct PluginHooks {
    pub(super) docs: Vec<Value>,
    pub(super) problems: Vec<HooksProblem>,
}

/// What keeps Claude Code from loading some or all of a plugin's hooks: the end of the
/// sentence "the plugin is installed at ..., but ...".
#[derive(Debug, thiserror::Error)]
pub(super) enum HooksProblem {
    #[error("cannot read {} ({source})", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid JSON ({source})", .path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is not a JSON object", .0.display())]
    ManifestNotObject(PathBuf),
    #[error("its manifest {} has the `hooks` entry {item}, which is neither a path of the form `./….json` nor hooks, and Claude Code rejects the manifest", .manifest.display())]
    ManifestEntry { manifest: PathBuf, item: Value },
    #[error("its manifest names the hooks file {0}, which is outside the plugin's directory, and Claude Code does not load it")]
    OutsidePlugin(String),
    #[error("it has no {} and its manifest names no hooks", .0.display())]
    NoHooks(PathBuf),
}

/// A JSON file of the plugin. Claude Code drops a leading byte-order mark from the manifest,
/// not from hooks files.
fn read_json(file: &Path, bom_allowed: bool) -> Result<Value, HooksProblem> {
    let text = std::fs::read_to_string(file).map_err(|source| HooksProblem::Read {
        path: file.into(),
        source,
    })?;
    let text = if bom_allowed {
        text.trim_start_matches('\u{feff}')
    } else {
        &text
    };
    serde_json::from_str(text).map_err(|source| HooksProblem::Json {
        path: file.into(),
        source,
    })
}

/// One entry of the manifest's `hooks`.
enum Listed {
    /// A `./….json` path inside the plugin.
    File(String),
    /// The hooks themselves, events to groups.
    Inline(serde_json::Map<String, Value>),
}

/// The manifest's `hooks` entries; `Err` when Claude Code rejects the manifest, and then
/// loads nothing from the plugin.
fn manifest_hooks(manifest_file: &Path) -> Result<Vec<Listed>, HooksProblem> {
    let manifest = match std::fs::metadata(manifest_file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        _ => read_json(manifest_file, true)?,
    };
    if !manifest.is_object() {
        return Err(HooksProblem::ManifestNotObject(manifest_file.into()));
    }
    let items: Vec<&Value> = match manifest.get("hooks") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => vec![],
    };
    // Claude Code validates the whole manifest first; one bad `hooks` item fails it.
    items
        .into_iter()
        .map(|item| match item {
            Value::Object(events) => Ok(Listed::Inline(events.clone())),
            Value::String(rel) if rel.starts_with("./") && rel.ends_with(".json") => {
                Ok(Listed::File(rel.clone()))
            }
            _ => Err(HooksProblem::ManifestEntry {
                manifest: manifest_file.into(),
                item: item.clone(),
            }),
        })
        .collect()
}

/// Reads an installed plugin's hooks as Claude Code 2.1 loads them: `hooks/hooks.json` when
/// it exists, always, and on top of it what the manifest's `hooks` adds (a `./….json` path
/// inside the plugin, the hooks themselves, or a list of those). A manifest Claude Code
/// rejects loads nothing at all, `hooks/hooks.json` included. A manifest entry naming
/// `hooks/hooks.json` again is loaded once.
pub(super) fn installed_plugin_hooks(root: &Path) -> PluginHooks {
    let mut out = PluginHooks::default();
    let listed = match manifest_hooks(&root.join(".claude-plugin").join("plugin.json")) {
        Ok(listed) => listed,
        Err(problem) => {
            out.problems.push(problem);
            return out;
        }
    };
    let root_real = std::fs::canonicalize(root).ok();
    let standard = root.join("hooks").join("hooks.json");
    let standard_real = std::fs::canonicalize(&standard).ok();
    match std::fs::metadata(&standard) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        _ => match read_json(&standard, false) {
            Ok(doc) => out.docs.push(doc),
            Err(e) => out.problems.push(e),
        },
    }
    for item in listed {
        match item {
            // Inline hooks map events to groups directly.
            Listed::Inline(events) => out.docs.push(json!({ "hooks": events })),
            Listed::File(rel) => {
                let file = root.join(&rel);
                let real = std::fs::canonicalize(&file).ok();
                if real.is_some() && real == standard_real {
                    continue;
                }
                let inside = match (&real, &root_real) {
                    (Some(r), Some(root)) => r.starts_with(root),
                    _ => true,
                };
                if !inside {
                    out.problems.push(HooksProblem::OutsidePlugin(rel));
                    continue;
                }
                match read_json(&file, false) {
                    Ok(doc) => out.docs.push(doc),
                    Err(e) => out.problems.push(e),
                }
            }
        }
    }
    if out.docs.is_empty() && out.problems.is_empty() {
        out.problems.push(HooksProblem::NoHooks(standard));
    }
    out
}

/// The handlers a hooks document (`{"hooks": {event: [groups]}}`) declares, as wired by the
/// plugin installed at `root`.
pub(super) fn plugin_handlers(doc: &Value, plugin: &PluginOn, root: &Path) -> Vec<Wired> {
    handlers_in(doc)
        .map(|(event, group, h)| Wired {
            event,
            scope: "plugin",
            matcher: group.get("matcher").cloned().unwrap_or(Value::Null),
            handler: h.clone(),
            plugin: Some(PluginRef {
                key: plugin.key.clone(),
                root: root.to_path_buf(),
                by_managed: plugin.by_managed,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::wiring::EVENTS;
    use super::*;

    /// The plugin's own wiring is what `install` writes: every event, no matcher, onFailure
    /// block, a timeout in range. Otherwise doctor would fail every project using the plugin.
    #[test]
    fn the_packaged_plugin_hooks_pass_doctors_checks() {
        let doc: Value = serde_json::from_str(include_str!("../../hooks/hooks.json")).unwrap();
        let plugin = PluginOn {
            key: "attenu-hook@m".into(),
            by_managed: false,
            install_path: Err(NotInstalled {
                key: "attenu-hook@m".into(),
                registry: PathBuf::new(),
                problem: RegistryProblem::NoneHere {
                    key: "attenu-hook@m".into(),
                },
            }),
        };
        let wired = plugin_handlers(&doc, &plugin, Path::new("/plugins/attenu-hook"));
        for event in EVENTS {
            let mine: Vec<&Wired> = wired.iter().filter(|w| w.event == *event).collect();
            assert_eq!(mine.len(), 1, "{event}");
            assert_eq!(mine[0].problem(), None, "{event}");
            assert_eq!(
                mine[0].command().as_deref(),
                Some("\"/plugins/attenu-hook\"/bin/attenu-hook"),
                "{event}"
            );
        }
    }

    #[test]
    fn the_most_specific_settings_file_turns_the_plugin_on_or_off() {
        let key = "attenu-hook@market".to_string();
        let on = |v: &[(&'static str, bool)]| {
            let switches: Vec<_> = v.iter().map(|(s, b)| (*s, key.clone(), *b)).collect();
            !enabled_plugins(&switches).is_empty()
        };
        assert!(on(&[("user", true)]));
        assert!(!on(&[("user", true), ("project", false)]));
        assert!(on(&[("project", false), ("local", true)]));
        assert!(!on(&[("local", true), ("managed", false)]));
        assert!(!on(&[]));
        assert!(is_our_plugin_key("attenu-hook@market"));
        for not in [
            "attenu-hook",
            "attenu-hook@",
            "attenu-hooks@market",
            "x@attenu-hook",
        ] {
            assert!(!is_our_plugin_key(not), "{not}");
        }
    }
}
