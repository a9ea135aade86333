//! Self-protection: the files a subagent may never write (and, for the state's secrets, never
//! read) whatever its declared authority, because they decide what is recorded and enforced.
//!
//! A path is judged by every file it reaches as the edge resolved it
//! ([`Reach`](super::reach::Reach): links
//! followed, `/proc` aliases mapped, names compared case-insensitively), and by the lexical
//! rules below on its spelling and on each of those files; a hit in any of them refuses.

use super::decision::Call;
use super::glob::{expand_braces, glob_match};
use super::reach::{fold, normalise, within, Guarded};
use super::shell_tripwire::command_hit;
use crate::derive::scopes::canonical_tool;
use crate::reason::{Code, Reason};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Files a subagent may never write (and, for secrets, never read): the hook's state,
/// the settings that wire the hook, and the hook itself.
pub(crate) fn self_protection(call: &Call<'_>, root: &Path) -> Option<Reason> {
    let tool = canonical_tool(call.tool_name);
    let first = |keys: &[&'static str], secret_only: bool| {
        keys.iter()
            .flat_map(|k| hits(call, root, k))
            .find(|g| !secret_only || g.secret())
    };
    let hit = match tool {
        "Write" | "Edit" | "NotebookEdit" => first(&["file_path", "notebook_path"], false),
        // Reading the declarations or settings is harmless; reading the state holds its keys.
        "Read" => first(&["file_path", "notebook_path"], true),
        // Their file filters name paths too (a Grep `glob`, a Glob `pattern`).
        "Grep" | "Glob" => first(&["path"], true).or_else(|| search_filter_hit(tool, call, root)),
        "Bash" | "PowerShell" | "Monitor" => None,
        // Any other tool: every file name in its arguments, as one that may write unless it
        // only reads (an unknown tool is taken to write).
        _ => args_hit(call, super::path_args::reads_only(tool)),
    };
    let what = match hit {
        Some(g) => g.what(),
        None if matches!(tool, "Bash" | "PowerShell" | "Monitor") => command_hit(
            call.tool_input
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or(""),
        )?,
        None => return None,
    };
    Some(Reason::new(
        Code::SelfProtection,
        format!(
            "{} would touch {what}; subagents may not, so the record stays trustworthy",
            call.tool_name
        ),
    ))
}

/// What guarded files input `key` touches: by its spelling, and by each file it reaches.
fn hits(call: &Call<'_>, root: &Path, key: &'static str) -> Vec<Guarded> {
    let reach = call.reach;
    let mut out: Vec<Guarded> = reach
        .unknowable
        .contains(&key)
        .then_some(Guarded::Unknowable)
        .into_iter()
        .collect();
    // A search without `path` has its directory only in `reach` (the session's `cwd`).
    let spelled = call
        .tool_input
        .get(key)
        .and_then(Value::as_str)
        .map(|raw| normalise(root, Path::new(raw)));
    for p in spelled.iter().chain(reach.of(key)) {
        out.extend(lexical(p));
        out.extend(reach.guarded_at(p));
    }
    out
}

/// What guarded file another tool's arguments name (`Reach::of("args")`, spelled and
/// resolved), or that it names more than is examined.
fn args_hit(call: &Call<'_>, reads_only: bool) -> Option<Guarded> {
    let reach = call.reach;
    let bounded = (!reach.args_overflow)
        .then_some(())
        .ok_or(Guarded::Unbounded);
    let unknowable = (!reach.unknowable.contains(&"args"))
        .then_some(())
        .ok_or(Guarded::Unknowable);
    if let Err(g) = bounded.and(unknowable) {
        return Some(g);
    }
    reach
        .of("args")
        .iter()
        .flat_map(|p| lexical(p).into_iter().chain(reach.guarded_at(p)))
        .find(|g| !reads_only || g.secret())
}

/// What guarded file `p` is by its names alone, compared case-insensitively. Any `.attenu`
/// directory and any `.claude/` settings, hooks, agents or plugins, not only this root's:
/// another project's state and wiring, or the user's, are no less protected.
fn lexical(p: &Path) -> Option<Guarded> {
    let comps: Vec<String> = p.components().map(|c| fold(c.as_os_str())).collect();
    // The state first: it is the one that is secret too.
    if comps.iter().any(|c| c == ".attenu") {
        return Some(Guarded::State);
    }
    let managed = [
        Path::new("/etc/claude-code"),
        Path::new("/library/application support/claudecode"),
    ];
    if managed.iter().any(|m| within(p, m)) {
        return Some(Guarded::Managed);
    }
    if matches!(
        comps.last().map(String::as_str),
        Some("attenu-hook" | "attenu-hook-ship")
    ) {
        return Some(Guarded::HookBinary);
    }
    comps.iter().enumerate().find_map(|(i, c)| {
        if c != ".claude" {
            return None;
        }
        match comps.get(i + 1).map(String::as_str) {
            Some("settings.json" | "settings.local.json") => Some(Guarded::Settings),
            Some("hooks") => Some(Guarded::HookCommand),
            Some("agents") => Some(Guarded::Declarations),
            Some("plugins") => Some(Guarded::Plugins),
            _ => None,
        }
    })
}

/// A Grep `glob` or Glob `pattern` (searched from `path`) that names the state, leads into it
/// through a linked directory, or, for Grep, could bring the anchor key into the search.
fn search_filter_hit(tool: &str, call: &Call<'_>, root: &Path) -> Option<Guarded> {
    let filter = if tool == "Grep" { "glob" } else { "pattern" };
    let g = call.tool_input.get(filter).and_then(Value::as_str)?;
    let reach = call.reach;
    let into_state = reach
        .of("glob")
        .iter()
        .any(|d| lexical(d) == Some(Guarded::State) || reach.guarded_at(d) == Some(Guarded::State));
    let reaches_key = || {
        let spelled = call
            .tool_input
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("");
        let roots: Vec<PathBuf> = std::iter::once(normalise(root, Path::new(spelled)))
            .chain(reach.of("path").iter().cloned())
            .collect();
        let keys: Vec<PathBuf> = std::iter::once(root.join(".attenu"))
            .chain(reach.state_dir.clone())
            .map(|d| d.join("anchor.key"))
            .collect();
        glob_reaches_key(g, &roots, &keys)
    };
    (into_state || glob_names_state(g) || (tool == "Grep" && reaches_key()))
        .then_some(Guarded::State)
}

/// A file filter that can name `.attenu`: it says so literally, or one of its path
/// components, as a glob, matches `.attenu` (`.atten?`, `.att*`, `.atten[u]`, `.{x,attenu}`,
/// `.*`). Components of `*` alone are not counted: they name everything, and refusing them
/// would refuse every recursive search. Whatever cannot be read cheaply and surely (an escape,
/// unbalanced or too many braces, a very long filter) is counted: no real filter needs one.
pub(crate) fn glob_names_state(filter: &str) -> bool {
    const MAX_FILTER: usize = 1024;
    let filter = &filter.to_lowercase();
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

/// Could a Grep `glob` bring the anchor key into a search from one of `search_roots`? The
/// hook keeps a `.ignore` of `*` in `.attenu/` (see [`crate::fs::STATE_IGNORE_FILE`]), so
/// Claude Code's ripgrep skips the key when no glob names it; but ripgrep searches a file that
/// a `--glob` matches even when an ignore file excludes it. A glob without `/` is matched
/// against the file name at any depth; one with `/` against the key's path from the search
/// root, and, when its last component is not all `*`, against the key's name too (a linked
/// directory can put the key at another path). `*` is taken to cross `/` here (ripgrep's
/// does not), and names are compared lowercased; both only refuse more.
fn glob_reaches_key(filter: &str, search_roots: &[PathBuf], keys: &[PathBuf]) -> bool {
    let rels: Vec<String> = search_roots
        .iter()
        .flat_map(|r| keys.iter().filter_map(move |k| k.strip_prefix(r).ok()))
        .map(|r| fold(r.as_os_str()))
        .collect();
    let Some(expanded) = expand_braces(&filter.to_lowercase()) else {
        return true;
    };
    expanded.iter().any(|g| {
        g.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|part| !part.is_empty())
            .any(|part| {
                let p = part.trim_start_matches('/');
                let last = p.rsplit('/').next().unwrap_or(p);
                let names_key = (!p.contains('/') || !last.bytes().all(|b| b == b'*'))
                    && glob_match(last.as_bytes(), b"anchor.key");
                names_key
                    || rels
                        .iter()
                        .any(|rel| glob_match(p.as_bytes(), rel.as_bytes()))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lexical_rules_find_the_state_first_and_ignore_case() {
        let g = |p: &str| lexical(Path::new(p));
        assert_eq!(g("/p/.claude/agents/.attenu/x"), Some(Guarded::State));
        assert_eq!(g("/p/.ATTENU/attenu-hook"), Some(Guarded::State));
        assert_eq!(g("/p/.Claude/Settings.json"), Some(Guarded::Settings));
        assert_eq!(
            g("/h/.claude/plugins/installed_plugins.json"),
            Some(Guarded::Plugins)
        );
        assert_eq!(g("/usr/local/bin/Attenu-Hook"), Some(Guarded::HookBinary));
        assert_eq!(
            g("/ETC/claude-code/managed-settings.json"),
            Some(Guarded::Managed)
        );
        assert_eq!(g("/p/.claude/README.md"), None);
        assert_eq!(g("/p/src/attenu_hook.rs"), None);
    }
}
