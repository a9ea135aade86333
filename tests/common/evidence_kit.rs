//! Small assertions and runners the evidence-side tests (gate, ledger, report, audit, ship,
//! team, ...) share: text that must not be there, exit codes with the output that explains
//! them, and JSON read from a command's output.
use super::*;

/// `text` contains none of `needles` (`why` says what that shows).
#[track_caller]
pub fn assert_lacks(text: &str, needles: &[&str], why: &str) {
    for needle in needles {
        assert!(!text.contains(needle), "{why}: {needle:?} in:\n{text}");
    }
}

/// The command exited `code`; its stdout and stderr show otherwise.
#[track_caller]
pub fn assert_exit(out: &Out, code: i32) {
    assert_eq!(
        out.code, code,
        "exit {} (expected {code})\nstdout: {}\nstderr: {}",
        out.code, out.stdout, out.stderr
    );
}

/// The command's stdout, parsed as one JSON document.
#[track_caller]
pub fn stdout_json(out: &Out) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}{}", out.stdout, out.stderr))
}

/// The first line of `text` that contains `part`, which must be there.
#[track_caller]
pub fn line_with<'a>(text: &'a str, part: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(part))
        .unwrap_or_else(|| panic!("no line with {part:?} in:\n{text}"))
}

/// The command exited `code` and its stderr says each of `texts`.
#[track_caller]
pub fn assert_exit_saying(out: &Out, code: i32, texts: &[&str]) {
    assert_eq!(out.code, code, "{}", out.stderr);
    for text in texts {
        assert!(out.stderr.contains(text), "{text:?}: {}", out.stderr);
    }
}

/// The hook stopped Claude (`continue: false`) with each of `texts` in its stopReason.
#[track_caller]
pub fn assert_halted_saying_all(out: &Out, texts: &[&str]) {
    for text in texts {
        assert_halted_saying(out, text);
    }
}
