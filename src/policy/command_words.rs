//! The words of a command line, for `super::command`: how deep a line nests before it is
//! parsed, a word's literal value, and the spellings a denial is matched against.

use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

/// Commands that wrap another (`timeout 5 rm x` runs `rm x`): a denial sees through them.
pub const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "nice", "timeout", "stdbuf", "env", "sudo",
    "doas", "xargs", "setsid", "ionice",
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

/// The spellings a denial is matched against: as written, with quotes removed, and each with
/// the wrappers in front taken off (`sudo -n timeout 5 rm x` is also `rm x`).
pub fn deny_forms(raw: &[&str], literal: &[Option<String>]) -> Vec<String> {
    let plain: Vec<String> = literal
        .iter()
        .zip(raw)
        .map(|(l, r)| l.clone().unwrap_or_else(|| r.to_string()))
        .collect();
    let mut forms = vec![raw.join(" "), plain.join(" ")];
    let mut rest: &[String] = &plain;
    while let Some((first, more)) = rest.split_first() {
        let base = first.rsplit('/').next().unwrap_or(first);
        if !WRAPPERS.contains(&base) {
            break;
        }
        // Its options, `NAME=value` settings (env), and one operand (timeout's duration).
        let mut skip = more
            .iter()
            .take_while(|w| w.starts_with('-') || (base == "env" && w.contains('=')))
            .count();
        if base == "timeout" && skip < more.len() {
            skip += 1;
        }
        rest = &more[skip..];
        forms.push(rest.join(" "));
    }
    forms.retain(|f| !f.is_empty());
    forms.dedup();
    forms
}
