//! Handler commands as the shell Claude Code runs them with reads them: the first word,
//! variables expanded, the program found on `PATH`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A shell command's first word, unquoted as a shell would read it, and whether anything
/// follows it.
pub(super) fn split_command(command: &str) -> (String, bool) {
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.trim().chars();
    for ch in chars.by_ref() {
        match (quote, ch) {
            (None, '"' | '\'') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => break,
            (_, c) => word.push(c),
        }
    }
    (word, !chars.as_str().trim().is_empty())
}

pub(super) fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub(super) fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    })
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Resolves a handler command to the executable it runs, as a shell would for the first word.
/// `$NAME`, `${NAME}` and a leading `~/` are expanded as the shell Claude Code runs the command
/// with would, from this environment (`CLAUDE_PROJECT_DIR` is `project`); `None` when one is
/// not set here.
pub fn resolve_command(command: &str, project: &Path) -> Option<PathBuf> {
    let expanded = expand(command, project)?;
    let (word, _) = split_command(&expanded);
    if word.contains('/') {
        let p = PathBuf::from(&word);
        let p = if p.is_absolute() { p } else { project.join(p) };
        is_executable(&p).then_some(p)
    } else {
        which(&word)
    }
}

fn expand(command: &str, project: &Path) -> Option<String> {
    let var = |name: &str| -> Option<String> {
        if name == "CLAUDE_PROJECT_DIR" {
            Some(project.display().to_string())
        } else {
            std::env::var(name).ok()
        }
    };
    let command = command.trim_start();
    let mut out = String::with_capacity(command.len());
    let rest = match command.strip_prefix("~/") {
        Some(rest) => {
            out.push_str(&var("HOME")?);
            out.push('/');
            rest
        }
        None => command,
    };
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let braced = chars.peek() == Some(&'{');
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphanumeric() || n == '_' {
                name.push(n);
                chars.next();
            } else {
                break;
            }
        }
        if braced && chars.next() != Some('}') {
            return None;
        }
        if name.is_empty() {
            out.push('$');
            continue;
        }
        out.push_str(&var(&name)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_quoted_project_commands() {
        let dir = std::env::temp_dir();
        assert!(resolve_command("\"$CLAUDE_PROJECT_DIR\"/nope/attenu-hook", &dir).is_none());
        assert!(resolve_command("sh -c true", &dir).is_some());
    }
}
