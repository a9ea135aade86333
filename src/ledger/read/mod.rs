//! Reading ledgers, for every command: which sessions a project has ([`sessions`]), one
//! session's ledger read without its lock for display ([`read_unlocked`]: its whole lines and
//! whether they verify) or under it ([`Verified`], from [`Ledger::read_verified`]), and its
//! entries as typed views ([`EntryView`], [`Event`]) and as chains split at each root
//! ([`chains_of`]). A command that reads a big ledger for display streams it instead
//! ([`Stream`]): whole lines a batch at a time, verified as they pass, each entry parsed into
//! the JSON layer's borrowed tree ([`with_entry`]) and read through the same [`EntryView`].
//!
//! Not through here, for speed: the hook's append and its re-verify ([`super::store`]) and
//! `verify`'s streaming pass (`crate::evidence::verify`) hash each line from its own exact
//! canonical bytes (`crate::json::exact`) and parse only the members they check, where this
//! reader builds a whole tree per entry (a `serde_json::Value`, or a borrowed tree when
//! streamed).

mod stream;
mod view;

pub use crate::ledger::fields::{context, reconciliation};
pub use stream::{with_entry, Stream};
pub use view::{EntryView, Event, Tree};

use super::store::{self, Ledger, ScanError, SessionPaths, State, StoreError};
use crate::fs::ReadError;
use crate::ledger::fields::field;
use serde_json::Value;
use std::fs::FileType;
use std::io;
use std::path::Path;

/// A session ledger file found in `.attenu/`.
#[derive(Debug, Clone)]
pub struct SessionFile {
    /// Its paths; `paths.name` is the session's file name (its id, or `h.` and a hash).
    pub paths: SessionPaths,
    /// What the directory says it is (not following a symlink), when it could say.
    pub file_type: Option<FileType>,
}

/// The session name in a ledger's file name (`ledger-<name>.jsonl`).
pub fn session_name(file_name: &str) -> Option<&str> {
    file_name.strip_prefix("ledger-")?.strip_suffix(".jsonl")
}

/// Every `ledger-<name>.jsonl` in `attenu`, sorted by file name; the directory's own error when it
/// cannot be listed (a missing `.attenu/` is `NotFound`). Names that are not UTF-8 are not
/// ledgers the hook wrote ([`store::session_file_name`] makes only ASCII ones).
pub fn sessions(attenu: &Path) -> io::Result<Vec<SessionFile>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(attenu)?.flatten() {
        let file = e.file_name();
        let Some(name) = file.to_str().and_then(session_name) else {
            continue;
        };
        out.push(SessionFile {
            paths: SessionPaths::of_file_name(attenu, name),
            file_type: e.file_type().ok(),
        });
    }
    // By file name, as a directory listing sorts them (`ledger-a-1.jsonl` before `ledger-a.jsonl`).
    out.sort_by(|a, b| a.paths.ledger.cmp(&b.paths.ledger));
    Ok(out)
}

/// A ledger read without its lock, for showing: a hook may be appending, so a final line
/// without its newline (torn, or being written) is left out of what is read as entries.
#[derive(Debug)]
pub struct Unlocked {
    bytes: Vec<u8>,
    whole: usize,
}

/// Reads the ledger at `path` without its lock, never through a symlink; `Ok(None)` when it
/// is not there.
pub fn read_unlocked(path: &Path) -> Result<Option<Unlocked>, ReadError> {
    // u64::MAX: a ledger has no bound.
    Ok(crate::fs::read_owned(path, u64::MAX)?.map(|(bytes, _)| Unlocked::of(bytes)))
}

impl Unlocked {
    pub fn of(bytes: Vec<u8>) -> Self {
        let whole = store::whole_lines_len(&bytes);
        Unlocked { bytes, whole }
    }

    /// Every byte read, a torn final line included.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The complete lines.
    pub fn whole_lines(&self) -> &[u8] {
        &self.bytes[..self.whole]
    }

    /// Whether a final line lacks its newline (the next hook call moves it aside).
    pub fn has_torn_tail(&self) -> bool {
        self.whole < self.bytes.len()
    }

    /// Whether the complete lines verify as chains, and what they hold if so.
    pub fn verify(&self) -> Result<State, ScanError> {
        store::scan(self.whole_lines())
    }

    /// The complete lines' entries, in file order (see [`entries`]).
    pub fn entries(&self) -> impl Iterator<Item = Value> + '_ {
        entries(self.whole_lines())
    }
}

/// A session's ledger as verified, read under its lock.
#[derive(Debug)]
pub struct Verified {
    bytes: Vec<u8>,
}

impl Verified {
    /// The verified bytes of the ledger `ledger` holds locked.
    pub fn read(ledger: &Ledger) -> Result<Verified, StoreError> {
        Ok(Verified {
            bytes: ledger.read_verified()?,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The entries whose line contains `needle`, in file order (see [`mentioning`]).
    pub fn mentioning<'s>(&'s self, needle: &'s [u8]) -> impl Iterator<Item = Value> + 's {
        mentioning(&self.bytes, needle)
    }

    /// The entries split into chains (see [`chains_of`]).
    pub fn chains(&self) -> Result<Vec<Vec<Value>>, ScanError> {
        chains_of(&self.bytes)
    }
}

/// The lines of `bytes` that parse as JSON, in order; a line that does not is skipped (shown
/// as written, text that is not UTF-8 replaced, as a person reading the file would see it).
pub fn entries(bytes: &[u8]) -> impl Iterator<Item = Value> + '_ {
    bytes.split(|&b| b == b'\n').filter_map(parse_line)
}

/// [`entries`] of only the lines that contain `needle`: a search reads few of them whole.
pub fn mentioning<'b>(bytes: &'b [u8], needle: &'b [u8]) -> impl Iterator<Item = Value> + 'b {
    let finder = memchr::memmem::Finder::new(needle);
    bytes
        .split(|&b| b == b'\n')
        .filter(move |l| finder.find(l).is_some())
        .filter_map(parse_line)
}

/// The entry on one line (without its newline), when it is JSON in UTF-8 (a line that is not
/// is no entry the hook wrote; [`entries`], for display, reads one as a person would).
pub fn entry(line: &[u8]) -> Option<Value> {
    serde_json::from_slice(line).ok()
}

fn parse_line(line: &[u8]) -> Option<Value> {
    serde_json::from_str(&String::from_utf8_lossy(line)).ok()
}

/// Splits verified ledger bytes into chains of entries (for export and proofs), in file
/// order: a chain starts at each `root`.
pub fn chains_of(bytes: &[u8]) -> Result<Vec<Vec<Value>>, ScanError> {
    let mut out: Vec<Vec<Value>> = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let v: Value = serde_json::from_slice(line).map_err(|e| ScanError::NotJson {
            line: i as u64 + 1,
            why: e.into(),
        })?;
        if EntryView::of(&v).is(Event::Root) || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().expect("pushed above").push(v);
    }
    Ok(out)
}

/// The `chain_id` of a chain's first entry (empty when it has none).
pub fn chain_id_of(entries: &[Value]) -> &str {
    entries
        .first()
        .and_then(|e| e.get(field::CHAIN_ID))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ledger_files_are_sessions_and_they_come_sorted() {
        let dir = std::env::temp_dir().join(format!("attenu-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "ledger-b.jsonl",
            "ledger-a.jsonl",
            "ledger-a.state.json",
            "ledger-a.torn-1",
            "bundle-a.json",
        ] {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        let names: Vec<_> = sessions(&dir)
            .unwrap()
            .into_iter()
            .map(|s| s.paths.name)
            .collect();
        assert_eq!(names, ["a", "b"]);
        let missing = sessions(&dir.join("nope")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_line_is_not_read_and_bad_lines_are_skipped() {
        let u = Unlocked::of(b"{\"event\":\"root\"}\nnot json\n{\"event\":\"al".to_vec());
        assert!(u.has_torn_tail());
        let events: Vec<_> = u.entries().map(|v| EntryView::of(&v).event()).collect();
        assert_eq!(events, [Some(Event::Root)]);
        let found: Vec<_> = mentioning(b"{\"a\":1}\n{\"b\":2}\n", b"\"b\"").collect();
        assert_eq!(found, [serde_json::json!({"b": 2})]);
    }

    #[test]
    fn chains_start_at_each_root() {
        let bytes = b"{\"event\":\"root\"}\n{\"event\":\"allow\"}\n{\"event\":\"root\"}\n";
        let chains = chains_of(bytes).unwrap();
        assert_eq!(chains.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1]);
        assert!(matches!(
            chains_of(b"{}\nnope\n"),
            Err(ScanError::NotJson { line: 2, .. })
        ));
    }
}
