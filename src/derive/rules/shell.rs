//! A `Bash(…)` rule's specifier, read and matched as Claude Code 2.1.332 reads and matches it.
//!
//! Three forms (its `parsePermissionRule` and wildcard matcher, read from the 2.1.332 binary):
//!
//! * **legacy prefix** `git tag:*`: the command is `git tag`, or starts with `git tag `;
//! * **wildcard**, any unescaped `*`: `*` matches any run of characters (spaces included),
//!   `\*` is a literal star and `\\` a backslash; a pattern whose only `*` ends it after a
//!   space (`git *`) also matches the command without that space and tail (`git`); `/**/`
//!   also matches a single `/`;
//! * **exact**, anything else: the command, exactly.
//!
//! Runs of spaces and tabs count as one space on both sides. The command matched is one simple
//! command of the call's command line (`policy::command` splits it), never the whole line.

/// One Bash rule's specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellPattern {
    Exact(String),
    Prefix(String),
    Wildcard(String),
}

impl ShellPattern {
    /// Reads a specifier (the text between the parentheses).
    pub fn parse(spec: &str) -> ShellPattern {
        match spec.strip_suffix(":*") {
            Some(prefix) if !prefix.is_empty() && !prefix.contains('\n') => {
                ShellPattern::Prefix(prefix.to_string())
            }
            _ if has_wildcard(spec) => ShellPattern::Wildcard(spec.to_string()),
            _ => ShellPattern::Exact(spec.to_string()),
        }
    }

    /// Whether `command` (one simple command, as written) matches.
    pub fn matches(&self, command: &str) -> bool {
        let command = collapse(command);
        match self {
            ShellPattern::Exact(c) => collapse(c.trim()) == command,
            ShellPattern::Prefix(p) => {
                let p = collapse(p);
                command == p || (command.starts_with(&p) && command[p.len()..].starts_with(' '))
            }
            ShellPattern::Wildcard(p) => wildcard_matches(p, &command),
        }
    }
}

/// An unescaped `*`, not the legacy `:*` ending.
fn has_wildcard(spec: &str) -> bool {
    if spec.ends_with(":*") {
        return false;
    }
    let b = spec.as_bytes();
    (0..b.len())
        .any(|i| b[i] == b'*' && b[..i].iter().rev().take_while(|c| **c == b'\\').count() % 2 == 0)
}

/// Runs of two or more spaces or tabs, and every tab, become one space.
pub fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut run = 0usize;
    let mut pending: Option<char> = None;
    for c in s.chars() {
        if c == ' ' || c == '\t' {
            run += 1;
            pending = Some(if run == 1 { c } else { ' ' });
            continue;
        }
        if let Some(p) = pending.take() {
            out.push(if p == '\t' { ' ' } else { p });
        }
        run = 0;
        out.push(c);
    }
    if let Some(p) = pending {
        out.push(if p == '\t' { ' ' } else { p });
    }
    out
}

/// A pattern's character: a literal, or an unescaped `*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Lit(char),
    Star,
}

/// One literal run between stars, matched in order.
#[derive(Debug)]
struct Piece {
    text: String,
    /// It starts a segment after a `/**/`: its leading `/` may be the one that ended the
    /// piece before.
    overlap: bool,
}

/// Claude Code's wildcard match: the pattern's literal runs found in order, the first at the
/// start, the last at the end.
fn wildcard_matches(pattern: &str, command: &str) -> bool {
    if pattern.contains('\0') {
        return false;
    }
    let pattern = collapse(pattern.trim());
    let toks = tokens(&pattern);
    let mut pieces: Vec<Piece> = Vec::new();
    let segments = split_double_star(&toks);
    let n = segments.len();
    for (i, seg) in segments.iter().enumerate() {
        let mut text = String::new();
        if i > 0 {
            text.push('/');
        }
        let mut first = true;
        let mut push = |text: &mut String, first: &mut bool| {
            pieces.push(Piece {
                text: std::mem::take(text),
                overlap: i > 0 && *first,
            });
            *first = false;
        };
        for t in seg.iter() {
            match t {
                Tok::Lit(c) => text.push(*c),
                Tok::Star => push(&mut text, &mut first),
            }
        }
        if i + 1 < n {
            text.push('/');
        }
        push(&mut text, &mut first);
    }
    // One `*`, at the very end: a space before it may be the end of the command instead.
    let optional_space = pieces.len() == 2 && pieces[1].text.is_empty();
    let mut k = 0usize;
    let last = pieces.len() - 1;
    for (i, p) in pieces.iter().enumerate() {
        let from = if p.overlap { k.saturating_sub(1) } else { k };
        if i == 0 {
            let (text, space) = match p.text.strip_suffix(' ') {
                Some(t) if optional_space => (t, true),
                _ => (p.text.as_str(), false),
            };
            if !command[from..].starts_with(text) {
                return false;
            }
            k = from + text.len();
            if space {
                match command[k..].chars().next() {
                    Some(' ') => k += 1,
                    None => {}
                    Some(_) => return false,
                }
            }
            if i == last && k != command.len() {
                return false;
            }
        } else if i == last {
            let start = command.len().checked_sub(p.text.len());
            match start {
                Some(s) if s >= from && command.is_char_boundary(s) && command[s..] == p.text => {
                    k = command.len()
                }
                _ => return false,
            }
        } else {
            match command.get(from..).and_then(|rest| rest.find(&p.text)) {
                Some(at) => k = from + at + p.text.len(),
                None => return false,
            }
        }
    }
    true
}

/// The pattern's characters, with `\*` and `\\` read as literals.
fn tokens(pattern: &str) -> Vec<Tok> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('*')) => {
                chars.next();
                out.push(Tok::Lit('*'));
            }
            ('\\', Some('\\')) => {
                chars.next();
                out.push(Tok::Lit('\\'));
            }
            ('*', _) => out.push(Tok::Star),
            _ => out.push(Tok::Lit(c)),
        }
    }
    out
}

/// The tokens split at every `/**/` (and `/**/**/`…), which are dropped.
fn split_double_star(toks: &[Tok]) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < toks.len() {
        let sep = |j: usize| toks.get(j..j + 3) == Some(&[Tok::Star, Tok::Star, Tok::Lit('/')][..]);
        if toks[i] == Tok::Lit('/') && sep(i + 1) {
            let mut end = i + 4;
            while sep(end) {
                end += 3;
            }
            out.push(&toks[start..i]);
            start = end;
            i = end;
            continue;
        }
        i += 1;
    }
    out.push(&toks[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rule: &str, cmd: &str) -> bool {
        ShellPattern::parse(rule).matches(cmd)
    }

    #[test]
    fn the_three_forms_read_as_claude_code_reads_them() {
        assert_eq!(
            ShellPattern::parse("git tag:*"),
            ShellPattern::Prefix("git tag".into())
        );
        assert_eq!(
            ShellPattern::parse("git *"),
            ShellPattern::Wildcard("git *".into())
        );
        assert_eq!(
            ShellPattern::parse("a \\* b"),
            ShellPattern::Exact("a \\* b".into())
        );
        assert_eq!(
            ShellPattern::parse("npm test"),
            ShellPattern::Exact("npm test".into())
        );
        assert_eq!(ShellPattern::parse(":*"), ShellPattern::Exact(":*".into()));
    }

    #[test]
    fn prefixes_exact_and_wildcards_match_as_documented() {
        for (rule, cmd, want) in [
            ("git tag:*", "git tag", true),
            ("git tag:*", "git tag v1", true),
            ("git tag:*", "git  tag\tv1", true),
            ("git tag:*", "git tagx", false),
            ("git tag:*", "git status", false),
            ("npm test", "npm test", true),
            ("npm test", "npm test --watch", false),
            ("git *", "git", true),
            ("git *", "git status", true),
            ("git *", "gitk", false),
            ("ls*", "lsof", true),
            ("ls *", "lsof", false),
            ("git * main", "git checkout main", true),
            ("git * main", "git checkout main2", false),
            ("* install", "npm install", true),
            ("* install", "npm install x", false),
            ("echo \\* *", "echo * x", true),
            ("echo \\* *", "echo a x", false),
            ("echo \\*", "echo *", false),
            ("echo a\\\\*", "echo a\\zz", true),
            ("cat src/**/x", "cat src/x", true),
            ("cat src/**/x", "cat src/a/b/x", true),
            ("cat src/**/x", "cat srcx", false),
            ("*", "anything at all", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("é* ü", "éa ü", true),
        ] {
            assert_eq!(m(rule, cmd), want, "{rule} ~ {cmd}");
        }
    }

    #[test]
    fn hostile_patterns_stay_cheap() {
        let long = "*a".repeat(2000);
        assert!(!m(&long, &"b".repeat(5000)));
        assert!(!m("x\0*", "x\0y"));
    }
}
