//! Command-line text pinned as files under `tests/snapshots/`: what `verify`, `doctor`, `log`,
//! `--derive --human`, `audit`, `reconcile list`, `authorize`, `keygen`, `prove`, `receipt`,
//! `install`, `enroll`, `report`, `ship` and every command's `--help` print is part of the
//! interface (people read it, scripts grep it), so a change to it shows in review as a change
//! to a snapshot file.
//!
//! `assert_snapshot("verify-valid.txt", &text)` compares; a run with `UPDATE_SNAPSHOTS=1` writes
//! the files instead (then review the diff). [`mask`] first replaces what differs between runs:
//! the temporary project's path (and any others given), times, and hex ids and digests.

use super::Out;
use std::path::Path;

/// One command's exit code, stdout and stderr, as a snapshot shows them: `$ TITLE`, `exit N`,
/// then `--- stdout` and `--- stderr` each followed by what the command printed there.
pub fn transcript(title: &str, out: &Out) -> String {
    format!(
        "$ {title}\nexit {}\n--- stdout\n{}--- stderr\n{}\n",
        out.code, out.stdout, out.stderr
    )
}

/// Compares `actual` with `tests/snapshots/<name>`, or writes it there under
/// `UPDATE_SNAPSHOTS=1`.
#[track_caller]
pub fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with UPDATE_SNAPSHOTS=1 to write it",
            path.display()
        )
    });
    if actual != expected {
        let line = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        panic!(
            "{} differs from the output, first at line {}:\n  snapshot: {:?}\n  output:   {:?}\n\
             --- whole output ---\n{actual}\n--- end ---\n\
             run with UPDATE_SNAPSHOTS=1 to accept a deliberate change, and review the diff",
            path.display(),
            line + 1,
            expected.lines().nth(line).unwrap_or("<end>"),
            actual.lines().nth(line).unwrap_or("<end>"),
        );
    }
}

/// `text` with each `(from, to)` replaced (longest `from` first), then every ISO-8601 UTC time
/// as `<time>` and every run of 12 or more lowercase hex digits as `<hex:N>` (N its length).
pub fn mask(text: &str, literal: &[(&str, &str)]) -> String {
    let mut pairs = literal.to_vec();
    pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut text = text.to_string();
    for (from, to) in pairs {
        if !from.is_empty() {
            text = text.replace(from, to);
        }
    }
    mask_hex(&mask_times(&text))
}

/// `2026-12-02T03:10:30.123Z` (fraction optional) → `<time>`.
fn mask_times(text: &str) -> String {
    let b = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let fits = b.len() - i >= shape.len()
            && shape.iter().zip(&b[i..]).all(|(s, c)| match s {
                b'd' => c.is_ascii_digit(),
                s => s == c,
            });
        if !fits {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        let mut j = i + shape.len();
        if b.get(j) == Some(&b'.') {
            j += 1;
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
        }
        if b.get(j) == Some(&b'Z') {
            j += 1;
        }
        out.push_str("<time>");
        i = j;
    }
    out
}

fn mask_hex(text: &str) -> String {
    let is_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 12 {
            out.push_str(&format!("<hex:{}>", run.len()));
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    let mut prev_word = false;
    for c in text.chars() {
        // A run inside a longer word (`unaccounted`) is not an id.
        if is_hex(c) && (!run.is_empty() || !prev_word) {
            run.push(c);
        } else {
            let word = c.is_alphanumeric() || c == '_';
            if word && !run.is_empty() {
                out.push_str(&run);
                run.clear();
            } else {
                flush(&mut run, &mut out);
            }
            out.push(c);
            prev_word = word;
            continue;
        }
        prev_word = true;
    }
    flush(&mut run, &mut out);
    out
}
