//! Self-protection: the files a subagent may never write (and, for the state's secrets, never
//! read) whatever its declared authority, because they decide what is recorded and enforced.

use super::decision::Call;
use super::glob::{expand_braces, glob_match};
use crate::derive::scopes::canonical_tool;
use crate::reason::{Code, Reason};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// What the state directory is called in a refusal.
const STATE: &str = "the hook's ledger, keys and configuration under .attenu/";

/// Files a subagent may never write (and, for secrets, never read): the hook's state,
/// the settings that wire the hook, and the hook itself.
pub(crate) fn self_protection(call: &Call<'_>, root: &Path) -> Option<Reason> {
    let tool = canonical_tool(call.tool_name);
    let path_of = |k: &str| {
        call.tool_input
            .get(k)
            .and_then(Value::as_str)
            .map(PathBuf::from)
    };
    let hit = match tool {
        "Write" | "Edit" | "NotebookEdit" => path_of("file_path")
            .or_else(|| path_of("notebook_path"))
            .and_then(|p| protected(root, &p)),
        // Reading the declarations or settings is harmless; reading the state holds its keys.
        "Read" => path_of("file_path")
            .and_then(|p| protected(root, &p))
            .filter(|w| w.contains(".attenu")),
        // Their file filters name paths too (a Grep `glob`, a Glob `pattern`).
        "Grep" | "Glob" => path_of("path")
            .and_then(|p| protected(root, &p))
            .or_else(|| search_filter_hit(tool, call, root, path_of("path")))
            .filter(|w| w.contains(".attenu")),
        "Bash" | "PowerShell" | "Monitor" => command_hit(
            call.tool_input
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ),
        _ => None,
    };
    hit.map(|what| {
        Reason::new(
            Code::SelfProtection,
            format!(
                "{} would touch {what}; subagents may not, so the record stays trustworthy",
                call.tool_name
            ),
        )
    })
}

/// What protected file `p` is, if it is one. Any `.attenu` directory and any `.claude/`
/// settings, hooks or agents, not only this root's: the project may be reached through a
/// symlink (or the path may be), which a lexical comparison with the root would miss without
/// touching the file system. Another project's state and wiring are no less protected.
fn protected(root: &Path, p: &Path) -> Option<&'static str> {
    let p = normalise(root, p);
    let comps: Vec<_> = p.components().map(|c| c.as_os_str()).collect();
    comps.iter().enumerate().find_map(|(i, c)| {
        if *c == ".attenu" {
            return Some(STATE);
        }
        if *c != ".claude" {
            return None;
        }
        match comps.get(i + 1).and_then(|n| n.to_str()) {
            Some("settings.json" | "settings.local.json") => {
                Some("the settings that wire the hook")
            }
            Some("hooks") => Some("the hook command itself"),
            Some("agents") => Some("the agent declarations the permissions are derived from"),
            _ => None,
        }
    })
}

/// A Grep `glob` or Glob `pattern` (searched from `path`) that names the state, or, for
/// Grep, could bring the anchor key into the search.
fn search_filter_hit(
    tool: &str,
    call: &Call<'_>,
    root: &Path,
    path: Option<PathBuf>,
) -> Option<&'static str> {
    let filter = if tool == "Grep" { "glob" } else { "pattern" };
    let g = call.tool_input.get(filter).and_then(Value::as_str)?;
    let reaches_key = || {
        let search_root = normalise(root, &path.unwrap_or_default());
        glob_reaches_key(g, root, &search_root)
    };
    (glob_names_state(g) || (tool == "Grep" && reaches_key())).then_some(STATE)
}

/// What a shell command that names the state, the wiring or a host-only command touches.
fn command_hit(cmd: &str) -> Option<&'static str> {
    if cmd.contains(".attenu") {
        Some(STATE)
    } else if cmd.contains(".claude/settings")
        || cmd.contains(".claude/hooks")
        || cmd.contains(".claude/agents")
    {
        Some("the settings and command that wire the hook")
    } else if cmd.contains("attenu-hook")
        && ["authorize", "keygen", "receipt", "reconcile"]
            .iter()
            .any(|c| cmd.contains(c))
    {
        Some("host-only attenu-hook commands (authorize, keygen, receipt, reconcile)")
    } else {
        None
    }
}

/// A file filter that can name `.attenu`: it says so literally, or one of its path
/// components, as a glob, matches `.attenu` (`.atten?`, `.att*`, `.atten[u]`, `.{x,attenu}`,
/// `.*`). Components of `*` alone are not counted: they name everything, and refusing them
/// would refuse every recursive search. Whatever cannot be read cheaply and surely (an escape,
/// unbalanced or too many braces, a very long filter) is counted: no real filter needs one.
pub(crate) fn glob_names_state(filter: &str) -> bool {
    const MAX_FILTER: usize = 1024;
    if filter.contains(".attenu") || filter.len() > MAX_FILTER || filter.contains('\\') {
        return true;
    }
    let Some(expanded) = expand_braces(filter) else {
        return true;
    };
    expanded.iter().any(|g| {
        // A Grep `glob` may hold several globs, separated by spaces or commas.
        g.split(|c: char| c == '/' || c == ',' || c.is_whitespace())
            .filter(|c| !c.bytes().all(|b| b == b'*'))
            .any(|c| glob_match(c.as_bytes(), b".attenu"))
    })
}

/// Could a Grep `glob` bring the anchor key into a search from `search_root`? The hook keeps
/// a `.ignore` of `*` in `.attenu/` (see [`crate::fs::STATE_IGNORE_FILE`]), so Claude
/// Code's ripgrep skips the key when no glob names it; but ripgrep searches a file that a
/// `--glob` matches even when an ignore file excludes it. A glob without `/` is matched against
/// the file name at any depth, one with `/` against the path from the search root; `*` is
/// taken to cross `/` here (ripgrep's does not), which only refuses more.
fn glob_reaches_key(filter: &str, root: &Path, search_root: &Path) -> bool {
    let key = normalise(root, Path::new(".attenu/anchor.key"));
    let rel = key
        .strip_prefix(search_root)
        .ok()
        .map(|r| r.to_string_lossy().into_owned());
    let Some(expanded) = expand_braces(filter) else {
        return true;
    };
    expanded.iter().any(|g| {
        g.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|part| !part.is_empty())
            .any(|part| match part.trim_start_matches('/') {
                p if !p.contains('/') => glob_match(p.as_bytes(), b"anchor.key"),
                p => rel
                    .as_deref()
                    .is_some_and(|rel| glob_match(p.as_bytes(), rel.as_bytes())),
            })
    })
}

/// Lexical normalisation: joins relative paths to `root` and folds `.` and `..`.
fn normalise(root: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}
