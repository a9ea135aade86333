//! The words of a command line, for `super::command`: how deep a line nests before it is
//! parsed, a word's literal value, and the spellings a denial is matched against.

use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

/// Commands that wrap another (`timeout 5 rm x` runs `rm x`): a denial sees through them.
pub const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "nice", "timeout", "stdbuf", "env", "sudo",
    "doas", "xargs", "setsid", "ionice", "coproc", "busybox", "watch", "strace", "ltrace",
    "unshare", "nsenter", "chroot", "flock", "taskset", "chrt", "runuser",
];

/// Wrappers whose first operand is not the command (`timeout 5 …`, `chroot /srv …`).
const OPERAND_WRAPPERS: &[&str] = &["timeout", "chroot", "flock", "taskset", "chrt"];

/// git's options before its subcommand that take a value as the next word.
const GIT_VALUE_OPTIONS: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--attr-source",
    "--list-cmds",
];

/// How deeply `line` nests, counted as if nothing were quoted (so never less than bash nests
/// it): brackets, backquotes, and compound keywords against their closing words.
pub fn nesting(line: &str) -> usize {
    let (mut depth, mut max, mut backquotes) = (0usize, 0usize, 0usize);
    for b in line.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'`' => backquotes += 1,
            _ => {}
        }
    }
    let (mut kw, mut kw_max) = (0usize, 0usize);
    let words = line.split(|c: char| c.is_whitespace() || ";&|()".contains(c));
    for w in words {
        match w {
            "if" | "while" | "until" | "for" | "case" | "select" | "function" => {
                kw += 1;
                kw_max = kw_max.max(kw);
            }
            "fi" | "done" | "esac" => kw = kw.saturating_sub(1),
            _ => {}
        }
    }
    max + kw_max + backquotes / 2
}

/// Text that runs a command when bash expands it.
pub fn runs_code(text: &str) -> bool {
    text.contains("$(")
        || text.contains("$[")
        || text.contains('`')
        || text.contains("<(")
        || text.contains(">(")
}

/// A word's value when it has no expansion (quotes removed), else `None`.
pub fn literal(word: &str) -> Option<String> {
    let pieces = word::parse(word, &ParserOptions::default()).ok()?;
    let mut out = String::new();
    literal_into(&pieces, &mut out).then_some(out)
}

fn literal_into(pieces: &[WordPieceWithSource], out: &mut String) -> bool {
    for p in pieces {
        match &p.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                out.push_str(t)
            }
            WordPiece::EscapeSequence(s) => out.push_str(s.strip_prefix('\\').unwrap_or(s)),
            WordPiece::TildePrefix(t) if !t.contains(['$', '`', '<', '>']) => {
                out.push('~');
                out.push_str(t);
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                if !literal_into(inner, out) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// What a denial matches one simple command against.
#[derive(Debug, Default)]
pub struct DenyForms {
    /// The spellings: as written, with quotes removed, and from each place a wrapper may hand
    /// the command to (`sudo -u root rm x` is also `root rm x` and `rm x`), each also with the
    /// command's directory dropped (`/bin/rm x` is `rm x`) and git's own options dropped
    /// (`git -C . push` is `git push`).
    pub forms: Vec<String>,
    /// The words (by index) where a wrapped command may start, after the command's own.
    pub wrapped: Vec<usize>,
}

/// The spellings a denial is matched against (see [`DenyForms`]).
pub fn deny_forms(raw: &[&str], literal: &[Option<String>]) -> DenyForms {
    let plain: Vec<String> = literal
        .iter()
        .zip(raw)
        .map(|(l, r)| l.clone().unwrap_or_else(|| r.to_string()))
        .collect();
    let starts = wrapped_starts(&plain);
    let mut forms = vec![raw.join(" ")];
    for &s in std::iter::once(&0).chain(&starts) {
        let words = &plain[s.min(plain.len())..];
        forms.push(words.join(" "));
        if let Some((first, rest)) = words.split_first() {
            let base = first.rsplit('/').next().unwrap_or(first);
            let mut named: Vec<&str> = vec![base];
            named.extend(rest.iter().map(String::as_str));
            forms.push(named.join(" "));
            if base == "git" {
                forms.push(format!("git {}", without_git_options(rest).join(" ")));
            }
        }
    }
    forms.iter_mut().for_each(|f| *f = f.trim().to_string());
    forms.retain(|f| !f.is_empty());
    let mut seen = std::collections::BTreeSet::new();
    forms.retain(|f| seen.insert(f.clone()));
    DenyForms {
        forms,
        wrapped: starts,
    }
}

/// Where a command handed on by the wrappers in front of `words` may start: after each
/// wrapper's options (an option may or may not take the next word as its value, so both are
/// tried), its `NAME=value` settings (env) and its operand (timeout's duration).
fn wrapped_starts(words: &[String]) -> Vec<usize> {
    let mut starts = std::collections::BTreeSet::new();
    let mut todo = vec![0usize];
    let mut scanned = std::collections::BTreeSet::new();
    while let Some(at) = todo.pop() {
        let Some(first) = words.get(at) else { continue };
        let base = first.rsplit('/').next().unwrap_or(first);
        if !WRAPPERS.contains(&base) {
            continue;
        }
        let mut scan = vec![at + 1];
        while let Some(k) = scan.pop() {
            if !scanned.insert((at, k)) {
                continue;
            }
            let Some(w) = words.get(k) else { continue };
            let mut command_at = |i: usize| {
                if i < words.len() && starts.insert(i) {
                    todo.push(i);
                }
            };
            if w == "--" {
                command_at(k + 1);
            } else if w.starts_with('-') && w.len() > 1 {
                command_at(k + 1);
                scan.push(k + 1);
                if !w.contains('=') {
                    command_at(k + 2);
                    scan.push(k + 2);
                }
            } else if base == "env" && w.contains('=') {
                command_at(k + 1);
                scan.push(k + 1);
            } else {
                command_at(k);
                if OPERAND_WRAPPERS.contains(&base) {
                    command_at(k + 1);
                }
            }
        }
    }
    starts.into_iter().collect()
}

/// git's arguments without the options before its subcommand (`-C .`, `-c k=v`, `--no-pager`).
fn without_git_options(args: &[String]) -> &[String] {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        i += if GIT_VALUE_OPTIONS.contains(&a.as_str()) {
            2
        } else {
            1
        };
    }
    &args[i.min(args.len())..]
}
