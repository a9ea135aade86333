//! The roster a session was pinned to when it started (`.attenu/roster-<session>.pin`).
//!
//! Claude Code loads the agent definitions when a session starts and keeps them for the
//! session. The hook does the same: the roster derived for a session's first event is written
//! here, sealed like the roster cache (an HMAC under the checkpoint key, a label of its own,
//! the session's name inside the sealed body), and every later call of that session decides
//! with it without listing or stamping a single agent file. A warm call reads this one file.
//!
//! A pin that is missing, not ours, or whose seal fails is never trusted: the caller derives
//! again and keeps the result only if it is the roster the session's chain was opened with
//! (the same digest); anything else is refused (see `hook::context`).

use super::{read_kind, sealed, Kind};
use crate::derive::Roster;
use std::path::{Path, PathBuf};

const PIN: Kind = Kind {
    header: "attenu-roster-pin v1 ",
    domain: b"attenu-hook session roster pin v1\n",
};

/// The pin file of the session whose file name (`ledger::store::session_file_name`) is `name`.
pub fn path(attenu_dir: &Path, name: &str) -> PathBuf {
    attenu_dir.join(format!("roster-{name}.pin"))
}

/// What the sealed body names: the session, so one session's pin never reads as another's.
fn key(name: &str) -> String {
    format!("session {name}")
}

/// The roster pinned for session `name`, if its pin is ours, sealed and of this session.
pub fn read(attenu_dir: &Path, name: &str, mac_key: &[u8; 32]) -> Option<Roster> {
    read_kind(&PIN, &path(attenu_dir, name), mac_key)?.roster(&key(name))
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
    read_kind(&PIN, &path(attenu_dir, name), mac_key)?.roster_for(&key(name), agent)
}

/// Pins `roster` for session `name`, replacing any pin (readers see the old file or the new
/// one). Not made durable: a pin lost in a crash is derived again, and used only if the
/// session's chain was opened with the same roster.
pub fn write(attenu_dir: &Path, name: &str, mac_key: &[u8; 32], roster: &Roster) -> bool {
    let part = super::codec::encode(&key(name), roster);
    let mut body = Vec::with_capacity(part.len() + 4);
    super::codec::put_bytes(&mut body, &part);
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
        assert!(write(&dir, "s1", &[3; 32], &r));
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
