//! `attenu-hook install`: wires the hook into the project's `.claude/settings.json` (or
//! `settings.local.json`), changing only what the hook needs.

use super::plugins::{installed_plugin_hooks, plugins_on, PluginOn};
use super::settings_doc::{merge, replace_machine_paths, Doc, MergeError};
use super::shell::shell_quote;
use super::wiring::{
    default_command, launcher_script, machine_specific, on_path, LAUNCHER, LAUNCHER_COMMAND,
    LINKED_COMMAND, PROJECT_LINK,
};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why `install` wrote nothing, and what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{} is not a directory; pass the project's root directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot resolve {} ({source})", .path.display())]
    Resolve { path: PathBuf, source: io::Error },
    #[error("the attenu-hook plugin ({key}) is turned on in `enabledPlugins` and installed, and it already wires the hook for every event; wiring it in settings as well would record every call twice (and deny a gated call's second claim as a replay). Use one: keep the plugin (`attenu-hook doctor` checks it), or turn it off, then run install again")]
    PluginWires { key: String },
    #[error("{problem}, and install does not run as root where another user controls a directory it writes through (what root writes there could be redirected); {remedy}")]
    UnsafeForRoot { problem: String, remedy: String },
    #[error("cannot create {}: {source}", .path.display())]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("{} is a symbolic link{}; install does not write through links. Add the hook block to the file it points to (see `attenu-hook install` in README.md), or replace the link with a regular file", .path.display(), link_target(.target))]
    SymbolicLink {
        path: PathBuf,
        target: Option<PathBuf>,
    },
    #[error("cannot read {}: {source}; make it readable by this user (or run install as its owner), then run install again", .path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot inspect {}: {source}", .path.display())]
    Inspect { path: PathBuf, source: io::Error },
    #[error("{} is not a regular file; move it aside, then run install again", .0.display())]
    NotAFile(PathBuf),
    #[error("cannot read {}: {source}; it must be UTF-8 JSON, readable by this user", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{} is not a JSON object; refusing to guess. Fix it, then run install again", .0.display())]
    NotAnObject(PathBuf),
    #[error("{} is not valid JSON ({source}); refusing to guess. Fix it, then run install again", .path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error("cannot write {}: {source}; nothing was changed", .path.display())]
    Write { path: PathBuf, source: io::Error },
}

fn link_target(target: &Option<PathBuf>) -> String {
    target
        .as_ref()
        .map(|t| format!(" to {}", t.display()))
        .unwrap_or_default()
}

/// What `install` did: the settings file, what changed in it and beside it, and what the
/// operator must hear (a command that works on this machine only).
#[derive(Debug)]
pub struct Installed {
    pub path: PathBuf,
    /// What changed in the settings file.
    pub changes: Vec<String>,
    /// What changed beside it: the per-developer link and its `.gitignore`.
    pub beside: Vec<String>,
    pub warnings: Vec<String>,
    /// What the installed Claude Code's version left unwired (`claude_version`).
    pub notes: Vec<String>,
    /// The per-developer link [`PROJECT_LINK`] was made or is used: other clones need theirs.
    pub linked: bool,
    /// The settings run the committed launcher [`LAUNCHER`] (which runs the link, else PATH's
    /// attenu-hook), not the link itself as installs before the launcher wired them.
    pub launcher: bool,
    /// The settings run `attenu-hook` from PATH: every developer needs it on theirs.
    pub on_path: bool,
}

/// `attenu-hook install [DIR] [--local] [--command CMD]`, with `dir` the project's root (the
/// CLI finds it). Writes only when something changes, atomically, keeping the file's mode, group
/// and (run as root, which it is only in a project root owns) owner; a settings file that is a
/// symbolic link is refused, never written through or replaced.
pub fn install(dir: &Path, local: bool, command: Option<&str>) -> Result<Installed, InstallError> {
    let (dir, as_root) = checked_project(dir)?;
    let dir = &dir;
    let claude = dir.join(".claude");
    std::fs::create_dir_all(&claude).map_err(|source| InstallError::CreateDir {
        path: claude.clone(),
        source,
    })?;
    let path = claude.join(if local {
        "settings.local.json"
    } else {
        "settings.json"
    });
    let (keep, text) = open_settings(&path, as_root)?;
    let mut doc = parse_settings(&path, text)?;
    let explicit = command.is_some();
    let command = command.map(str::to_string).unwrap_or_else(default_command);
    // Only the events the installed Claude Code knows: an unknown one drops its entry.
    let version = super::claude_version::installed();
    let events = super::claude_version::events_for(version);
    let mut changes = merge(&mut doc, &events, &command, explicit, dir)?;
    let mut kept = Vec::new();
    if !explicit && !local {
        let (replaced, wrappers) = replace_machine_paths(&mut doc, &command, dir);
        changes.extend(replaced);
        kept = wrappers;
    }
    if !changes.is_empty() {
        let text = serde_json::to_string_pretty(&doc).expect("JSON") + "\n";
        // The old file's mode (a private settings.local.json stays private) and owner (one
        // that `sudo attenu-hook install` rewrote stays its user's to edit).
        crate::fs::replace_keeping(&path, text.as_bytes(), keep).map_err(|source| {
            InstallError::Write {
                path: path.clone(),
                source,
            }
        })?;
    }
    let (beside, linked, on_path) = write_beside(dir, &doc)?;
    let launcher = runs(&doc, LAUNCHER_COMMAND);
    let shared = (!local).then_some(command.as_str());
    let warnings = machine_path_warnings(&path, &kept, shared);
    let notes = version_notes(version);
    Ok(Installed {
        path,
        changes,
        beside,
        warnings,
        notes,
        linked,
        launcher,
        on_path,
    })
}

/// The project's root, resolved once (the root checks then cover each directory the write
/// goes through), and whether this runs as root. Refused: not a directory, a plugin that
/// already wires the hook, and root in a project another user can change.
fn checked_project(dir: &Path) -> Result<(PathBuf, bool), InstallError> {
    if !dir.is_dir() {
        return Err(InstallError::NotADirectory(dir.into()));
    }
    let dir = std::fs::canonicalize(dir).map_err(|source| InstallError::Resolve {
        path: dir.into(),
        source,
    })?;
    let wiring_plugin = plugins_on(&dir).into_iter().find(|p| {
        p.install_path
            .as_ref()
            .is_ok_and(|r| !installed_plugin_hooks(r).docs.is_empty())
    });
    if let Some(PluginOn { key, .. }) = wiring_plugin {
        return Err(InstallError::PluginWires { key });
    }
    // Root (`sudo attenu-hook install`) in another user's project would write root's files
    // into directories that user controls, where a symbolic link swapped in at the right
    // moment redirects whatever root creates or hands over. The project's owner runs it.
    let as_root = crate::fs::current_uid() == Some(0);
    if as_root {
        if let Some((problem, remedy)) = unsafe_for_root(&dir) {
            return Err(InstallError::UnsafeForRoot { problem, remedy });
        }
    }
    Ok((dir, as_root))
}

/// The launcher when the settings `doc` run it; the link when they run it, or the launcher
/// runs it for want of attenu-hook on PATH (a wrapper kept from earlier needs neither).
/// Returns what was written, whether the link is used, and whether PATH's attenu-hook is.
fn write_beside(dir: &Path, doc: &Doc) -> Result<(Vec<String>, bool, bool), InstallError> {
    let launcher = runs(doc, LAUNCHER_COMMAND);
    let linked = runs(doc, LINKED_COMMAND) || (launcher && !on_path());
    let on_path = runs(doc, "attenu-hook") || (launcher && !linked);
    let mut beside = match launcher {
        true => write_launcher(dir)?,
        false => vec![],
    };
    if linked {
        beside.extend(link_this_executable(dir)?);
    }
    Ok((beside, linked, on_path))
}

/// Whether a handler of the settings `doc` runs exactly `command`.
fn runs(doc: &Doc, command: &str) -> bool {
    super::wiring::handlers_in(&doc.to_value()).any(|(_, _, h)| {
        h.get("command")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|c| c.trim() == command)
    })
}

/// What to tell the operator about this machine's paths in the shared settings file at
/// `path`: the wrappers `kept` from an earlier `--command`, and `wired` (the `--command` just
/// written to it, `None` for settings.local.json).
fn machine_path_warnings(path: &Path, kept: &[String], wired: Option<&str>) -> Vec<String> {
    let mut warnings = Vec::new();
    for k in kept {
        warnings.push(format!(
            "{} runs `{k}`, which --command wired earlier: a path that exists on this machine only, so committed, it blocks every call of a teammate without that file (\"onFailure\": \"block\"). Move it to settings.local.json (`attenu-hook install --local --command ...`), or put the wrapper inside the project and wire it as \"$CLAUDE_PROJECT_DIR\"/<path>",
            path.display()
        ));
    }
    if let Some(command) = wired.filter(|c| machine_specific(c)) {
        warnings.push(format!(
            "{} now runs `{command}`, a path that exists on this machine only; committed, it blocks every call of a teammate without that file (\"onFailure\": \"block\"). Wire it with `--local` instead, or leave out --command: install then wires `attenu-hook` from PATH, or {LINKED_COMMAND} through a git-ignored link",
            path.display()
        ));
    }
    warnings
}

/// Writes [`LAUNCHER`] (0755, to be committed) unless it already holds what this version
/// writes; never through a link.
fn write_launcher(dir: &Path) -> Result<Vec<String>, InstallError> {
    hooks_dir(dir)?;
    let path = dir.join(LAUNCHER);
    let text = launcher_script();
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(InstallError::SymbolicLink {
                target: std::fs::read_link(&path).ok(),
                path,
            })
        }
        Ok(m) if !m.is_file() => return Err(InstallError::NotAFile(path)),
        Ok(m)
            if m.permissions().mode() & 0o111 != 0
                && std::fs::read(&path).is_ok_and(|t| t == text.as_bytes()) =>
        {
            return Ok(vec![])
        }
        _ => {}
    }
    let keep = crate::fs::Keep {
        mode: 0o755,
        uid: None,
        gid: None,
    };
    crate::fs::replace_keeping(&path, text.as_bytes(), keep).map_err(|source| {
        InstallError::Write {
            path: path.clone(),
            source,
        }
    })?;
    Ok(vec![format!(
        "wrote {LAUNCHER}, the launcher the settings run (commit it: without the binary it says what to install, and blocks)"
    )])
}

/// `.claude/hooks`, created when missing; a link or a file there is refused.
fn hooks_dir(dir: &Path) -> Result<PathBuf, InstallError> {
    let hooks = dir.join(".claude/hooks");
    match std::fs::symlink_metadata(&hooks) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(InstallError::SymbolicLink {
                target: std::fs::read_link(&hooks).ok(),
                path: hooks,
            })
        }
        Ok(m) if !m.is_dir() => return Err(InstallError::NotADirectory(hooks)),
        Ok(_) => {}
        Err(_) => std::fs::create_dir(&hooks).map_err(|source| InstallError::CreateDir {
            path: hooks.clone(),
            source,
        })?,
    }
    Ok(hooks)
}

/// Makes [`PROJECT_LINK`] a symbolic link to this executable (this developer's, git-ignored
/// by `.claude/hooks/.gitignore`), unless it is a file the project keeps there itself.
fn link_this_executable(dir: &Path) -> Result<Vec<String>, InstallError> {
    let hooks = hooks_dir(dir)?;
    let link = dir.join(PROJECT_LINK);
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|source| InstallError::Resolve {
            path: "the running executable".into(),
            source,
        })?;
    let mut changes = Vec::new();
    let write = |source| InstallError::Write {
        path: link.clone(),
        source,
    };
    match std::fs::symlink_metadata(&link) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::os::unix::fs::symlink(&exe, &link).map_err(write)?;
            changes.push(format!(
                "linked {PROJECT_LINK} to {} (this developer's link, git-ignored)",
                exe.display()
            ));
        }
        Err(source) => return Err(InstallError::Inspect { path: link, source }),
        Ok(m) if m.file_type().is_symlink() => {
            let was = std::fs::read_link(&link).ok();
            if was.as_deref() != Some(exe.as_path()) {
                // A new link renamed over the old one: the path never names nothing.
                let tmp = hooks.join(format!(".attenu-hook.{}.tmp", std::process::id()));
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(&exe, &tmp).map_err(write)?;
                std::fs::rename(&tmp, &link).map_err(write)?;
                changes.push(format!(
                    "linked {PROJECT_LINK} to {} (was {})",
                    exe.display(),
                    was.map(|w| w.display().to_string()).unwrap_or_default()
                ));
            }
        }
        // A file the project keeps there (a shim of its own, committed): it is theirs.
        Ok(_) => return Ok(changes),
    }
    changes.extend(ignore_the_link(&hooks)?);
    Ok(changes)
}

/// Makes sure `.claude/hooks/.gitignore` lists the link, which names a path on this machine.
fn ignore_the_link(hooks: &Path) -> Result<Option<String>, InstallError> {
    let path = hooks.join(".gitignore");
    let text = match std::fs::symlink_metadata(&path) {
        Ok(m) if !m.is_file() => return Ok(None),
        Ok(_) => std::fs::read_to_string(&path).map_err(|source| InstallError::Read {
            path: path.clone(),
            source,
        })?,
        Err(_) => String::new(),
    };
    if text
        .lines()
        .any(|l| l.trim().trim_start_matches('/') == "attenu-hook")
    {
        return Ok(None);
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(
        "# attenu-hook install: a per-developer link to this machine's binary\n/attenu-hook\n",
    );
    let keep = crate::fs::Keep {
        mode: 0o644,
        uid: None,
        gid: None,
    };
    crate::fs::replace_keeping(&path, new.as_bytes(), keep).map_err(|source| {
        InstallError::Write {
            path: path.clone(),
            source,
        }
    })?;
    Ok(Some(format!(
        "{}: git-ignores the link",
        path.strip_prefix(hooks.parent().and_then(Path::parent).unwrap_or(hooks))
            .unwrap_or(&path)
            .display()
    )))
}

/// The settings file's text (`None` when there is none yet) and what its replacement keeps.
fn open_settings(
    path: &Path,
    as_root: bool,
) -> Result<(crate::fs::Keep, Option<String>), InstallError> {
    // One descriptor, opened without following a link: what is checked is what is read.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let mut f = match opened {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A new file gets the mode an editor would give it.
            let keep = crate::fs::Keep {
                mode: 0o644,
                uid: None,
                gid: None,
            };
            return Ok((keep, None));
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(InstallError::SymbolicLink {
                path: path.into(),
                target: std::fs::read_link(path).ok(),
            });
        }
        Err(source) => {
            return Err(InstallError::Open {
                path: path.into(),
                source,
            })
        }
        Ok(f) => f,
    };
    let m = f.metadata().map_err(|source| InstallError::Inspect {
        path: path.into(),
        source,
    })?;
    if !m.is_file() {
        return Err(InstallError::NotAFile(path.into()));
    }
    let mut text = String::new();
    io::Read::read_to_string(&mut f, &mut text).map_err(|source| InstallError::Read {
        path: path.into(),
        source,
    })?;
    let keep = crate::fs::Keep {
        mode: m.permissions().mode() & 0o7777,
        // Only root can give a file away; anyone else writes it as their own, as an
        // editor would, keeping its group where they are in it.
        uid: as_root.then(|| m.uid()),
        gid: Some(m.gid()),
    };
    Ok((keep, Some(text)))
}

/// The settings document in `text`: an empty or missing file is an empty object; anything
/// but a JSON object is refused rather than guessed at.
fn parse_settings(path: &Path, text: Option<String>) -> Result<Doc, InstallError> {
    match text {
        None => Ok(Doc::Obj(vec![])),
        Some(text) if text.trim().is_empty() => Ok(Doc::Obj(vec![])),
        Some(text) => match serde_json::from_str::<Doc>(text.trim_start_matches('\u{feff}')) {
            Ok(m @ Doc::Obj(_)) => Ok(m),
            Ok(_) => Err(InstallError::NotAnObject(path.into())),
            Err(source) => Err(InstallError::NotJson {
                path: path.into(),
                source,
            }),
        },
    }
}

/// Why root must not write `.claude/settings.json` under the canonical `dir`, and what to do
/// instead: a directory on the way that a user other than root could change. The project and
/// its `.claude` must be root's, writable by root only, and `.claude` a real directory; each
/// directory above the project must be root's and writable by root only, or sticky (like
/// `/tmp`, where no one else can rename root's entries). As `dir` is canonical, these are all
/// the directories on the way, and none of them is a link.
fn unsafe_for_root(dir: &Path) -> Option<(String, String)> {
    let places = [
        (dir.to_path_buf(), false),
        (dir.join(".claude"), false),
        (dir.join(".claude/hooks"), false),
    ]
    .into_iter()
    .chain(dir.ancestors().skip(1).map(|a| (a.to_path_buf(), true)));
    for (path, is_above) in places {
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let shown = path.display();
        if m.file_type().is_symlink() {
            return Some((
                format!("{shown} is a symbolic link"),
                "replace it with the directory it points to, or run install as the user who owns that directory".into(),
            ));
        }
        let owner = m.uid();
        if owner != 0 {
            let example = format!(
                "for example `sudo -u '#{owner}' attenu-hook install {}`",
                shell_quote(&dir.display().to_string())
            );
            return Some(if is_above {
                (
                    format!("{shown}, a directory above the project, belongs to uid {owner}"),
                    "move the project out of it, or run install as a user who owns the project"
                        .into(),
                )
            } else if path == dir {
                (
                    format!("{shown} belongs to uid {owner}"),
                    format!("run install as the project's owner, {example}"),
                )
            } else {
                (
                    format!("{shown} belongs to uid {owner}"),
                    format!("run install as its owner, {example}"),
                )
            });
        }
        let sticky = m.mode() & 0o1000 != 0;
        let writers = match (m.mode() & 0o020 != 0, m.mode() & 0o002 != 0) {
            _ if is_above && sticky => continue,
            (true, true) => "its group and by others",
            (true, false) => "its group",
            (false, true) => "others",
            (false, false) => continue,
        };
        return Some((
            format!("{shown} is writable by {writers}"),
            format!(
                "make it writable by its owner only (`chmod go-w {}`), or run install as the user who should own the project",
                shell_quote(&path.display().to_string())
            ),
        ));
    }
    None
}

/// What the installed Claude Code's version left unwired, and a version that could not be told.
fn version_notes(version: Option<super::claude_version::Version>) -> Vec<String> {
    use super::claude_version::{not_known, show, PINNED};
    let mut out = Vec::new();
    if version.is_none() {
        out.push(format!(
            "could not tell the installed Claude Code's version (`claude --version` from PATH); wired the events {} knows",
            show(PINNED)
        ));
    }
    for (event, since) in not_known(version) {
        out.push(format!(
            "{event} is not wired: Claude Code {} does not know it (it came in {}) and would drop the entry; run `attenu-hook install` again after upgrading",
            show(version.unwrap_or(PINNED)),
            show(since)
        ));
    }
    out
}
