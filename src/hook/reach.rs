//! The edge of self-protection: before the policy decides a subagent's file-tool call, what
//! file each of its paths reaches and which files are guarded, by their real paths. The
//! policy ([`crate::policy::self_protection`]) then compares without I/O.
//!
//! Only a subagent's calls pay for it: the built-in file tools' path fields, and for any other
//! tool (MCP, LSP, resources) the file names in its arguments (`crate::policy::path_args`);
//! a call that names no file reads nothing. A few `stat` and `canonicalize` calls; for a tool
//! that may write also the settings files read as `doctor` reads the wiring, and the agent
//! directory listed for links, which derivation lists anyway.

use crate::derive::scopes::canonical_tool;
use crate::fs::reach::{reach, resolve};
use crate::policy::glob::expand_braces;
use crate::policy::path_args::{path_args, reads_only};
use crate::policy::reach::{Guarded, Reach};
use crate::protocol::Payload;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Inputs that name a path, by tool.
fn path_keys(tool: &str) -> &'static [&'static str] {
    match tool {
        "Write" | "Edit" | "NotebookEdit" | "Read" => &["file_path", "notebook_path"],
        "Grep" | "Glob" => &["path"],
        _ => &[],
    }
}

/// What the call of `p` reaches and what is guarded, or nothing to compare for a call
/// self-protection does not look at.
pub(super) fn reach_of(p: &Payload, project: &Path, attenu: &Path) -> Reach {
    Reach {
        cwd: cwds_of(p, project).into_iter().next(),
        home: std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute()),
        ..found(p, project, attenu)
    }
}

/// [`reach_of`] less where the call is made from.
fn found(p: &Payload, project: &Path, attenu: &Path) -> Reach {
    let tool = canonical_tool(&p.tool_name);
    let keys = path_keys(tool);
    // A `--agent X` main thread (`agent_type` alone) is held like a subagent of type X.
    if p.agent_id.is_none() && p.agent_type.is_none() {
        return Reach::default();
    }
    if keys.is_empty() {
        // A shell command is the tripwire's; every other tool's file names are judged.
        return match tool {
            "Bash" | "PowerShell" | "Monitor" => Reach::default(),
            _ => args_reach(p, tool, project, attenu),
        };
    }
    let cwds = cwds_of(p, project);
    let here = std::env::current_dir().ok();
    let cwds: Vec<&Path> = cwds
        .iter()
        .map(PathBuf::as_path)
        .chain(here.as_deref())
        .collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out = Reach::default();
    let str_of = |k: &str| p.tool_input.get(k).and_then(Value::as_str);
    for &key in keys {
        // A search without `path` is from the session's directory.
        let default = matches!(tool, "Grep" | "Glob").then_some(".");
        if let Some(s) = str_of(key).or(default) {
            let r = reach(s, &cwds, home.as_deref());
            if r.unknowable {
                out.unknowable.push(key);
            }
            out.reached.push((key, r.paths));
        }
    }
    if let Some(filter) = str_of(if tool == "Grep" { "glob" } else { "pattern" })
        .filter(|_| matches!(tool, "Grep" | "Glob"))
    {
        let base = str_of("path").unwrap_or("");
        let dirs = filter_dirs(filter)
            .into_iter()
            // A Glob pattern may be absolute; a Grep glob's leading `/` anchors at its path.
            .map(|(absolute, d)| match base {
                _ if absolute && tool == "Glob" => format!("/{d}"),
                "" => d,
                b => format!("{b}/{d}"),
            })
            .flat_map(|d| reach(&d, &cwds, home.as_deref()).paths)
            .collect();
        out.reached.push(("glob", dirs));
    }
    guard(
        &mut out,
        project,
        attenu,
        matches!(tool, "Write" | "Edit" | "NotebookEdit"),
    );
    out
}

/// The directories a call's relative paths may be taken from: the payload's `cwd` first (the
/// one they are joined to), then the project's.
fn cwds_of(p: &Payload, project: &Path) -> Vec<PathBuf> {
    let cwd = p
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|c| c.is_absolute());
    cwd.into_iter().chain([project.to_path_buf()]).collect()
}

/// The guarded files by their real paths: the state (and the enrolled key) always, the wiring
/// for a call that may write.
fn guard(out: &mut Reach, project: &Path, attenu: &Path, writes: bool) {
    let state = resolve(attenu, 0);
    out.guarded.push((state.clone(), Guarded::State));
    out.state_dir = Some(state);
    // This user's enrolled signing key lives outside the clone: a secret like `.attenu/`.
    if let Some(dir) = crate::trust::signer::enrolled_dir().filter(|d| d.is_absolute()) {
        out.guarded.push((resolve(&dir, 0), Guarded::State));
    }
    if writes {
        out.guarded.extend(wiring(project));
    }
}

/// Any other tool (MCP, LSP, resources, the rest of the built-ins): every file name in its
/// arguments ([`path_args`]), spelled (joined to the call's `cwd`, or an `args` `cwd` of its
/// own) and resolved, under the key `args`. A shell tool's `command` is the tripwire's.
/// Nothing is read from disk for a call that names no file.
fn args_reach(p: &Payload, tool: &str, project: &Path, attenu: &Path) -> Reach {
    let found = path_args(&p.tool_input, &["command"]);
    let mut out = Reach {
        args_overflow: found.overflow,
        ..Reach::default()
    };
    if found.spelled.is_empty() {
        return out;
    }
    let mut cwds = cwds_of(p, project);
    // A tool's own working directory (an MCP server's `cwd` argument) is where its relative
    // paths start; it is judged as a path too.
    if let Some(own) = p.tool_input.get("cwd").and_then(Value::as_str) {
        cwds.insert(0, crate::policy::reach::normalise(&cwds[0], Path::new(own)));
    }
    let here = std::env::current_dir().ok();
    let cwd_refs: Vec<&Path> = cwds
        .iter()
        .map(PathBuf::as_path)
        .chain(here.as_deref())
        .collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut paths = Vec::new();
    for s in &found.spelled {
        let r = reach(s, &cwd_refs, home.as_deref());
        if r.unknowable && !out.unknowable.contains(&"args") {
            out.unknowable.push("args");
        }
        for base in &cwd_refs {
            paths.push(crate::policy::reach::normalise(base, Path::new(s)));
        }
        paths.extend(r.paths);
    }
    out.reached.push(("args", paths));
    guard(&mut out, project, attenu, !reads_only(tool));
    out
}

/// The literal directories a filter's path globs start with (`docs/x` of `docs/x/*.key`):
/// a link there can lead the search into the state directory.
fn filter_dirs(filter: &str) -> Vec<(bool, String)> {
    let spellings = expand_braces(filter).unwrap_or_else(|| vec![filter.to_string()]);
    let mut dirs = Vec::new();
    for s in &spellings {
        for part in s.split(|c: char| c == ',' || c.is_whitespace()) {
            let absolute = part.starts_with('/');
            let part = part.trim_start_matches('/');
            let literal: Vec<&str> = part
                .split('/')
                .take_while(|c| !c.contains(['*', '?', '[', '{', '\\']))
                .collect();
            let n = literal.len().min(part.split('/').count().saturating_sub(1));
            let dir = (absolute, literal[..n].join("/"));
            if n > 0 && !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// Every file that decides whether and how the hook runs, by its real path (the lexical
/// rules in the policy cover the usual names; these add where links and settings lead).
fn wiring(project: &Path) -> Vec<(PathBuf, Guarded)> {
    let real = |p: &Path| resolve(p, 0);
    let claude = project.join(".claude");
    let mut out = vec![
        (real(&claude.join("settings.json")), Guarded::Settings),
        (real(&claude.join("settings.local.json")), Guarded::Settings),
        (
            real(&project.join(crate::config::TEAM_FILE)),
            Guarded::Settings,
        ),
        (real(Path::new("/etc/attenu-hook")), Guarded::Managed),
        (real(&claude.join("agents")), Guarded::Declarations),
        (real(&claude.join("hooks")), Guarded::HookCommand),
        (real(&claude.join("hooks/attenu-hook")), Guarded::HookBinary),
        (real(Path::new("/etc/claude-code")), Guarded::Managed),
        (
            real(Path::new("/Library/Application Support/ClaudeCode")),
            Guarded::Managed,
        ),
    ];
    agent_links(&claude.join("agents"), 0, &mut out);
    if let Some(cfg) = crate::ops::user_config_dir().filter(|c| c.is_absolute()) {
        for (name, what) in [
            ("settings.json", Guarded::Settings),
            ("settings.local.json", Guarded::Settings),
            ("agents", Guarded::Declarations),
            ("hooks", Guarded::HookCommand),
            ("plugins", Guarded::Plugins),
        ] {
            out.push((real(&cfg.join(name)), what));
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        let exe = real(&exe);
        if let Some(bin) = exe.parent() {
            out.push((bin.join("attenu-hook-ship"), Guarded::HookBinary));
            // The plugin's `bin/`: its hooks files and manifest decide how the hook runs.
            if let Some(plugin) = bin.parent().filter(|d| d.join(".claude-plugin").is_dir()) {
                out.push((plugin.to_path_buf(), Guarded::Plugins));
            }
        }
        out.push((exe, Guarded::HookBinary));
    }
    if let Some(root) = std::env::var_os("CLAUDE_PLUGIN_ROOT").filter(|r| !r.is_empty()) {
        out.push((real(Path::new(&root)), Guarded::Plugins));
    }
    if let Some(on_path) = crate::ops::resolve_command("attenu-hook", project) {
        out.push((real(&on_path), Guarded::HookBinary));
    }
    for f in crate::ops::wired_files(project) {
        out.push(match f {
            crate::ops::WiredFile::Program(p) => (real(&p), Guarded::HookBinary),
            crate::ops::WiredFile::Plugin(p) => (real(&p), Guarded::Plugins),
        });
    }
    // An empty or relative variable (`CLAUDE_PLUGIN_ROOT=`) names no file; `/` would guard all.
    out.retain(|(p, _)| p.is_absolute() && p.components().count() > 1);
    out
}

/// The targets of links in the agent directory: Claude Code follows them, so writing a
/// target rewrites a declaration. Only links are resolved; the listing's own types are used
/// for the rest, as derivation does.
fn agent_links(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, Guarded)>) {
    const MAX_DEPTH: usize = 8;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten().take(10_000) {
        match e.file_type() {
            Ok(t) if t.is_symlink() => out.push((resolve(&e.path(), 0), Guarded::Declarations)),
            Ok(t) if t.is_dir() && depth < MAX_DEPTH => agent_links(&e.path(), depth + 1, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filters_literal_directories_are_found() {
        let dirs = |f: &str| {
            let mut d: Vec<String> = filter_dirs(f).into_iter().map(|(_, d)| d).collect();
            d.sort();
            d
        };
        assert_eq!(dirs("docs/x/*.key"), ["docs/x"]);
        assert_eq!(dirs("{a,b}/k*"), ["a", "b"]);
        assert!(dirs("*.rs").is_empty());
        assert!(dirs("**/anchor.key").is_empty());
        assert_eq!(dirs("a/b/c"), ["a/b"]);
        assert_eq!(filter_dirs("/p/.x/*"), [(true, "p/.x".to_string())]);
    }
}
