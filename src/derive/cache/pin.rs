//! The roster a session was pinned to when it started (`.attenu/roster-<session>.pin`).
//!
//! Claude Code loads the agent definitions when a session starts and keeps them for the
//! session. The hook does the same: the roster derived for a session's first event is written
//! here, sealed like the roster cache (an HMAC under the state MAC key, a label of its own,
//! the session's name inside the sealed body, after the roster part, which is copied from the
//! roster cache when that holds the inputs), and every later call of that session decides
//! with it without listing or stamping a single agent file. A warm call reads this one file.
//!
//! After the session's name the body holds a second seal, over that name and the roster's
//! head ([`super::slice`]): a tool call checks that one and the slice of its own agent
//! ([`read_slice`]), not the whole file, so what it costs does not grow with the roster.
//!
//! A pin that is missing, not ours, or whose seal fails is never trusted: the caller derives
//! again and keeps the result only if it is the roster the session's chain was opened with
//! (the same digest); anything else is refused (see `hook::context`).

use super::{read_kind, sealed, Kind};
use crate::derive::Roster;
use hmac::Mac;
use std::path::{Path, PathBuf};

const PIN: Kind = Kind {
    header: "attenu-roster-pin v3 ",
    domain: b"attenu-hook session roster pin v3\n",
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
    let rest = c.bytes[c.roster.end..].strip_prefix(&session_tail(name)[..])?;
    (rest.len() == HEAD_TAG).then_some(c)
}

/// The length of the head's seal, the body's last bytes.
const HEAD_TAG: usize = 32;

/// The roster one tool call by `agent` needs ([`super::slice::roster_for`]), checking only the
/// seals of the pin's head and of that agent's slice and set: `None` when one fails or the pin
/// is not of this session (the caller then reads the whole pin). Only those parts, the index
/// and the pin's last bytes are read, each where the head says it is, so what a call reads
/// and checks does not grow with the roster but for the index (16 bytes an agent). The pin's
/// whole seal is not checked, so a byte changed in another agent's slice goes unseen by this
/// call, which decides only with what it checked; every call that needs more reads the whole
/// pin.
pub fn read_slice(
    attenu_dir: &Path,
    name: &str,
    mac_key: &[u8; 32],
    agent: Option<&str>,
) -> Option<Roster> {
    use std::os::unix::fs::FileExt;
    let (file, meta) = crate::fs::open_owned(&path(attenu_dir, name)).ok()??;
    let size = usize::try_from(meta.len()).ok()?;
    let at = |offset: usize, len: usize| -> Option<Vec<u8>> {
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, offset as u64).ok()?;
        Some(bytes)
    };
    // `<header><64 hex>\n`, the body's length and the body, the session's name, the head's seal.
    let tail = session_tail(name);
    let body = PIN.header.len() + 64 + 1 + 4;
    let end = size.checked_sub(tail.len() + HEAD_TAG)?;
    let body_len = end.checked_sub(body)?;
    let last = at(end, tail.len() + HEAD_TAG)?;
    let tag = last.strip_prefix(&tail[..])?;
    let first = at(0, size.min(PREFIX))?;
    if !first.starts_with(PIN.header.as_bytes()) || first.get(body - 5) != Some(&b'\n') {
        return None;
    }
    let u32_at = |b: &[u8], i: usize| -> Option<usize> {
        Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?) as usize)
    };
    if u32_at(&first, body - 4)? != body_len {
        return None;
    }
    // Within the body: bounded by it, so no forged length makes a large read.
    let in_body = |offset: usize, len: usize| -> Option<Vec<u8>> {
        (offset.checked_add(len)? <= body_len).then_some(())?;
        match first.get(body + offset..body + offset + len) {
            Some(b) => Some(b.to_vec()),
            None => at(body + offset, len),
        }
    };
    let key_len = u32_at(&in_body(0, 4)?, 0)?;
    let head_at = 4usize.checked_add(key_len)?;
    let head_len = u32_at(&in_body(head_at, 4)?, 0)?;
    let head = in_body(head_at + 4, head_len)?;
    super::slice::roster_for(
        (&head, head_at + 4 + head_len),
        (&tail, tag),
        mac_key,
        agent,
        &in_body,
    )
}

/// What a call reads first of the pin: its header and the body's head, most often.
const PREFIX: usize = 4096;

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
    let Some(super::slice::Parts { head, .. }) = super::slice::split(&part.0) else {
        return false;
    };
    let tail = session_tail(name);
    let mut body = Vec::with_capacity(part.0.len() + 128);
    super::codec::put_bytes(&mut body, &part.0);
    body.extend_from_slice(&tail);
    body.extend_from_slice(
        &super::slice::head_mac(mac_key, &tail, head)
            .finalize()
            .into_bytes(),
    );
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
        for (file, text) in [
            ("r.md", "---\nname: r\ntools: Read\n---\n"),
            ("g.md", "---\nname: g\ntools: Read, Bash(git tag:*)\n---\n"),
            ("i.md", "---\nname: i\n---\n"),
        ] {
            std::fs::write(dir.join(".claude/agents").join(file), text).unwrap();
        }
        let r = crate::derive::derive_project(&dir, &BTreeMap::new(), None).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        r
    }

    #[test]
    fn a_pin_reads_back_for_its_own_session_only() {
        let dir = scratch();
        let r = roster();
        let part = super::super::Part(super::super::codec::encode("k", &r, &[3; 32]));
        assert!(write(&dir, "s1", &[3; 32], &part));
        assert_eq!(read(&dir, "s1", &[3; 32]), Some(r.clone()));
        let one = read_for(&dir, "s1", &[3; 32], Some("r")).unwrap();
        assert_eq!((&one.root, &one.agents["r"]), (&r.root, &r.agents["r"]));
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

    #[test]
    fn a_call_reads_its_own_slice_and_decides_as_the_whole_pin() {
        let dir = scratch();
        let r = roster();
        let key = [3; 32];
        let part = super::super::Part(super::super::codec::encode("k", &r, &key));
        assert!(write(&dir, "s1", &key, &part));
        let exact = |set: &std::collections::BTreeSet<String>| -> Vec<String> {
            set.iter()
                .filter(|s| super::super::slice::decides_exactly(s))
                .cloned()
                .collect()
        };
        for agent in [None, Some("r"), Some("g"), Some("i")] {
            let one = read_slice(&dir, "s1", &key, agent).unwrap();
            assert_eq!(one.digest, r.digest);
            assert_eq!(exact(&one.root), exact(&r.root));
            assert!(!one.root.contains("agent.delegate.r"), "no agent. scope");
            assert_eq!(one.root_rules, r.root_rules);
            assert_eq!(one.settings_rules, r.settings_rules);
            assert_eq!(one.agents.len(), usize::from(agent.is_some()));
            if let Some(name) = agent {
                let (a, whole) = (&one.agents[name], &r.agents[name]);
                assert_eq!(exact(&a.scopes), exact(&whole.scopes), "{name}");
                assert_eq!((&a.excluded, &a.rules), (&whole.excluded, &whole.rules));
                assert_eq!(a.invalid.is_some(), whole.invalid.is_some());
            }
        }
        assert!(
            !read_slice(&dir, "s1", &key, Some("g")).unwrap().agents["g"]
                .rules
                .is_empty()
        );
        // An agent the roster does not declare, another key, another session: no slice.
        assert_eq!(read_slice(&dir, "s1", &key, Some("nobody")), None);
        assert_eq!(read_slice(&dir, "s1", &[4; 32], Some("r")), None);
        std::fs::copy(path(&dir, "s1"), path(&dir, "s2")).unwrap();
        assert_eq!(read_slice(&dir, "s2", &key, Some("r")), None);
        // One flipped byte anywhere: the slice read is refused or is exactly the honest one
        // (the byte was in a part this call does not read); never another roster. A byte of
        // the head's seal refuses every call's.
        let bytes = std::fs::read(path(&dir, "s1")).unwrap();
        for agent in [None, Some("r"), Some("i")] {
            std::fs::write(path(&dir, "s1"), &bytes).unwrap();
            let honest = read_slice(&dir, "s1", &key, agent);
            assert!(honest.is_some());
            for at in 0..bytes.len() {
                let mut forged = bytes.clone();
                forged[at] ^= 1;
                std::fs::write(path(&dir, "s1"), &forged).unwrap();
                let read = read_slice(&dir, "s1", &key, agent);
                assert!(read.is_none() || read == honest, "byte {at}, {agent:?}");
                if at >= bytes.len() - HEAD_TAG {
                    assert!(read.is_none(), "byte {at}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
