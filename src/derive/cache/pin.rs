//! The roster a session was pinned to when it started (`.attenu/roster-<session>.pin`).
//!
//! Claude Code loads the agent definitions when a session starts and keeps them for the
//! session. The hook does the same: the roster derived for a session's first event is written
//! here, sealed like the roster cache (an HMAC under the checkpoint key, a label of its own,
//! the session's name inside the sealed body, after the roster part, which is copied from the
//! roster cache when that holds the inputs), and every later call of that session decides
//! with it without listing or stamping a single agent file. A warm call reads this one file.
//!
//! A pin that is missing, not ours, or whose seal fails is never trusted: the caller derives
//! again and keeps the result only if it is the roster the session's chain was opened with
//! (the same digest); anything else is refused (see `hook::context`).

use super::{read_kind, sealed, Kind};
use crate::derive::Roster;
use std::path::{Path, PathBuf};

const PIN: Kind = Kind {
    header: "attenu-roster-pin v2 ",
    domain: b"attenu-hook session roster pin v2\n",
};

/// The pin file of the session whose file name (`ledger::store::session_file_name`) is `name`.
pub fn path(attenu_dir: &Path, name: &str) -> PathBuf {
    attenu_dir.join(format!("roster-{name}.pin"))
}

/// What the sealed body names after the roster: the session, so one session's pin never
/// reads as another's.
fn session_tail(name: &str) -> Vec<u8> {
    let mut tail = Vec::new();
    super::codec::put_str(&mut tail, &format!("session {name}"));
    tail
}

/// The pin's roster part, if the pin is ours, sealed and of this session.
fn part(attenu_dir: &Path, name: &str, mac_key: &[u8; 32]) -> Option<super::Cached> {
    let c = read_kind(&PIN, &path(attenu_dir, name), mac_key)?;
    (c.bytes[c.roster.end..] == session_tail(name)[..]).then_some(c)
}

/// The roster pinned for session `name`, if its pin is ours, sealed and of this session.
pub fn read(attenu_dir: &Path, name: &str, mac_key: &[u8; 32]) -> Option<Roster> {
    let c = part(attenu_dir, name, mac_key)?;
    super::codec::decode(&c.bytes[c.roster.clone()]).map(|(_, r)| r)
}

/// [`read`] for one call by `agent` (`None`: the main thread or a session event): only the
/// root's and that agent's sets are built ([`super::codec::decode_for`]); every other agent
/// is named but holds nothing. What a warm call costs then hardly grows with the roster.
pub fn read_for(
    attenu_dir: &Path,
    name: &str,
    mac_key: &[u8; 32],
    agent: Option<&str>,
) -> Option<Roster> {
    let c = part(attenu_dir, name, mac_key)?;
    super::codec::decode_for(&c.bytes[c.roster.clone()], agent).map(|(_, r)| r)
}

/// Pins the roster of `part` for session `name`, replacing any pin (readers see the old file
/// or the new one). Not made durable: a pin lost in a crash is derived again, and used only if
/// the session's chain was opened with the same roster.
pub fn write(attenu_dir: &Path, name: &str, mac_key: &[u8; 32], part: &super::Part) -> bool {
    let mut body = Vec::with_capacity(part.0.len() + 64);
    super::codec::put_bytes(&mut body, &part.0);
    body.extend_from_slice(&session_tail(name));
    let file = sealed(&PIN, mac_key, &body);
    crate::fs::write_atomic(&path(attenu_dir, name), &file, false).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn scratch() -> PathBuf {
        let mut b = [0u8; 6];
        getrandom::fill(&mut b).unwrap();
        let dir = std::env::temp_dir().join(format!(
            "attenu-pin-{}-{}",
            std::process::id(),
            crate::ledger::chain::hex(&b)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn roster() -> Roster {
        let dir = scratch();
        std::fs::create_dir_all(dir.join(".claude/agents")).unwrap();
        std::fs::write(
            dir.join(".claude/agents/r.md"),
            "---\nname: r\ntools: Read\n---\n",
        )
        .unwrap();
        let r = crate::derive::derive_project(&dir, &BTreeMap::new(), None).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        r
    }

    #[test]
    fn a_pin_reads_back_for_its_own_session_only() {
        let dir = scratch();
        let r = roster();
        let part = super::super::Part(super::super::codec::encode("k", &r));
        assert!(write(&dir, "s1", &[3; 32], &part));
        assert_eq!(read(&dir, "s1", &[3; 32]), Some(r.clone()));
        assert_eq!(read_for(&dir, "s1", &[3; 32], Some("r")), Some(r.clone()));
        // Another key, or the file under another session's name: not a pin.
        assert_eq!(read(&dir, "s1", &[4; 32]), None);
        std::fs::copy(path(&dir, "s1"), path(&dir, "s2")).unwrap();
        assert_eq!(read(&dir, "s2", &[3; 32]), None);
        // One flipped byte anywhere breaks the seal.
        let bytes = std::fs::read(path(&dir, "s1")).unwrap();
        for at in [0, PIN.header.len() + 3, bytes.len() - 1] {
            let mut forged = bytes.clone();
            forged[at] ^= 1;
            std::fs::write(path(&dir, "s1"), &forged).unwrap();
            assert_eq!(read(&dir, "s1", &[3; 32]), None, "byte {at}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
