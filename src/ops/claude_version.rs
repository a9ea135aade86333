//! Which hook events the installed Claude Code knows. A settings file naming an event the
//! running version does not know makes that version drop the entry with a warning (and, for
//! `PreSkillShellCommand` before 2.1.332, open a dialog at start), so `install` wires an event
//! only for a version that has it, and `doctor` expects the same. The table is by version;
//! the version is read from `claude --version`, and when it cannot be, the pinned contract's
//! (`contract.json`, 2.1.332) is assumed.

use super::wiring::EVENTS;
use std::process::{Command, Stdio};

/// A Claude Code version, `major.minor.patch`.
pub type Version = (u32, u32, u32);

/// The release `contract.json` pins: assumed when the installed one cannot be told.
pub const PINNED: Version = (2, 1, 332);

/// Events beyond [`EVENTS`], with the first version known to raise them. PermissionDenied is
/// older than the pin, but is pinned there: it is the first release its payload was read from.
pub const VERSIONED_EVENTS: &[(&str, Version)] = &[
    ("PermissionDenied", (2, 1, 332)),
    ("PreSkillShellCommand", (2, 1, 332)),
    ("Interrupt", (2, 1, 335)),
];

/// `2.1.335 (Claude Code)` → `(2, 1, 335)`: the first word's three numbers.
pub fn parse(text: &str) -> Option<Version> {
    let word = text.split_whitespace().next()?;
    let mut n = word.trim_start_matches('v').split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    Some((n.next()??, n.next()??, n.next()??))
}

/// The installed Claude Code's version: `claude --version` run from PATH, `None` when there
/// is none, its answer is not a version, or it takes longer than [`ASK_FOR`]. Only `install`
/// and `doctor` ask; the hook never.
pub fn installed() -> Option<Version> {
    let mut child = Command::new("claude")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if started.elapsed() < ASK_FOR => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    parse(&text)
}

/// How long `claude --version` may take (it answers in well under a second).
const ASK_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// The events to wire for `version` (`None`: unknown, taken as [`PINNED`]), in order.
pub fn events_for(version: Option<Version>) -> Vec<&'static str> {
    let v = version.unwrap_or(PINNED);
    EVENTS
        .iter()
        .copied()
        .chain(
            VERSIONED_EVENTS
                .iter()
                .filter(|(_, since)| *since <= v)
                .map(|(e, _)| *e),
        )
        .collect()
}

/// The events the hook handles that `version` does not know: not wired, said so.
pub fn not_known(version: Option<Version>) -> Vec<(&'static str, Version)> {
    let v = version.unwrap_or(PINNED);
    VERSIONED_EVENTS
        .iter()
        .filter(|(_, since)| *since > v)
        .copied()
        .collect()
}

/// `2.1.335`.
pub fn show(v: Version) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_and_events_follow_them() {
        assert_eq!(parse("2.1.335 (Claude Code)\n"), Some((2, 1, 335)));
        assert_eq!(parse("v2.1.9"), Some((2, 1, 9)));
        assert_eq!(parse("Claude Code"), None);
        assert_eq!(parse(""), None);
        for (v, has, lacks) in [
            (
                Some((2, 1, 335)),
                vec!["Interrupt", "PermissionDenied"],
                vec![],
            ),
            (
                Some((2, 1, 332)),
                vec!["PreSkillShellCommand"],
                vec!["Interrupt"],
            ),
            (None, vec!["PermissionDenied"], vec!["Interrupt"]),
            (
                Some((2, 1, 300)),
                vec!["PreToolUse"],
                vec!["PreSkillShellCommand"],
            ),
        ] {
            let e = events_for(v);
            assert!(has.iter().all(|h| e.contains(h)), "{v:?}: {e:?}");
            assert!(lacks.iter().all(|l| !e.contains(l)), "{v:?}: {e:?}");
            assert!(EVENTS.iter().all(|b| e.contains(b)));
        }
    }
}
