//! A ledger read without its lock a batch of whole lines at a time, verified as it is read
//! ([`store::Verifier`]), and each line's entry parsed into the JSON layer's borrowed tree
//! ([`with_entry`]): what [`super::read_unlocked`], [`super::Unlocked::verify`] and
//! [`super::entries`] give, in memory bounded by a batch rather than by the ledger.

use super::view::EntryView;
use crate::fs::{FileStamp, ReadError};
use crate::json::tree::Json;
use crate::json::{exact_tree, strict};
use crate::ledger::store::{self, ScanError, State};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Take};
use std::path::{Path, PathBuf};

/// About how many bytes of lines one batch holds (at least one line, however long).
const BATCH: usize = 1 << 20;

/// A ledger being read from its start, without its lock (see [`Stream::open`]).
#[derive(Debug)]
pub struct Stream {
    reader: BufReader<Take<File>>,
    path: PathBuf,
    /// The stamp of the file read when it was opened, so a second pass can tell it is the same
    /// one ([`FileStamp::same_file`]).
    file: FileStamp,
    batch: Vec<u8>,
    /// Bytes of whole lines read so far.
    whole: u64,
    /// `None` when the lines are not verified again (see [`Stream::reopen`]).
    verifier: Option<Result<store::Verifier, ScanError>>,
    torn: bool,
    done: bool,
}

impl Stream {
    /// Opens the ledger at `path`, never through a symlink, to read it and verify it as it
    /// is read; `Ok(None)` when it is not there.
    pub fn open(path: &Path) -> Result<Option<Stream>, ReadError> {
        Stream::start(path, u64::MAX, Some(Ok(store::Verifier::default())))
    }

    /// Opens it again to read its first `len` bytes (the whole lines a [`Stream`] read
    /// before, [`Stream::whole_len`]) without verifying them again. A hook only appends to
    /// them, so they are the lines read before while the path names the same file
    /// ([`Stream::stamp`]); the caller compares the two.
    pub fn reopen(path: &Path, len: u64) -> Result<Option<Stream>, ReadError> {
        Stream::start(path, len, None)
    }

    /// The stamp of the file this stream reads, as it was opened.
    pub fn stamp(&self) -> FileStamp {
        self.file
    }

    fn start(
        path: &Path,
        len: u64,
        verifier: Option<Result<store::Verifier, ScanError>>,
    ) -> Result<Option<Stream>, ReadError> {
        let Some((file, meta)) = crate::fs::open_owned(path)? else {
            return Ok(None);
        };
        Ok(Some(Stream {
            reader: BufReader::with_capacity(64 << 10, file.take(len)),
            path: path.to_path_buf(),
            file: FileStamp::of(&meta),
            batch: Vec::with_capacity(BATCH + (64 << 10)),
            whole: 0,
            verifier,
            torn: false,
            done: false,
        }))
    }

    /// The next whole lines, each with its newline (about [`BATCH`] bytes of them, at least
    /// one line), verified on the way; `None` at the end. A final line without its newline
    /// (torn, or being written as it is read) is left out, and nothing after it is read.
    pub fn next_lines(&mut self) -> Result<Option<&[u8]>, ReadError> {
        self.batch.clear();
        while !self.done && self.batch.len() < BATCH {
            let start = self.batch.len();
            let n = self
                .reader
                .read_until(b'\n', &mut self.batch)
                .map_err(|e| ReadError::io("read", &self.path, e))?;
            if n == 0 || self.batch.last() != Some(&b'\n') {
                self.torn = n > 0;
                self.batch.truncate(start);
                self.done = true;
            }
        }
        if self.batch.is_empty() {
            return Ok(None);
        }
        self.whole += self.batch.len() as u64;
        if let Some(Ok(v)) = &mut self.verifier {
            if let Err(e) = v.feed(&self.batch) {
                self.verifier = Some(Err(e));
            }
        }
        Ok(Some(&self.batch))
    }

    /// Whether a final line lacked its newline (the next hook call moves it aside).
    pub fn has_torn_tail(&self) -> bool {
        self.torn
    }

    /// The bytes of whole lines read so far.
    pub fn whole_len(&self) -> u64 {
        self.whole
    }

    /// Once read to the end: whether the whole lines verify as chains, and what they hold if
    /// so ([`super::Unlocked::verify`]); `None` for a stream that does not verify them.
    pub fn verdict(self) -> Option<Result<State, ScanError>> {
        self.verifier.map(|v| v.map(store::Verifier::finish))
    }
}

/// `f` of the entry on `line` (without its newline), when it is JSON, read as
/// [`super::entries`] reads it: in one pass into a tree that borrows the line when it is in
/// the exact canonical form the hook writes, else parsed as written (text that is not UTF-8
/// replaced). The tree means what the `serde_json::Value` of [`super::entries`] holds.
pub fn with_entry<R>(line: &[u8], f: impl FnOnce(EntryView<'_, Json<'_>>) -> R) -> Option<R> {
    if let Some((_, tree)) = exact_tree::read(line) {
        return Some(f(EntryView::of(&tree)));
    }
    let text = String::from_utf8_lossy(line);
    let parsed = strict::parse_one(&text).ok()?;
    Some(f(EntryView::of(&parsed.value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::read::{entries, Event};

    #[test]
    fn lines_stream_whole_and_a_torn_one_is_left_out() {
        let dir = std::env::temp_dir().join(format!("attenu-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ledger-s.jsonl");
        std::fs::write(&path, b"{\"event\":\"root\"}\nnot json\n{\"event\":\"al").unwrap();
        let mut s = Stream::open(&path).unwrap().unwrap();
        let mut events = Vec::new();
        while let Some(lines) = s.next_lines().unwrap() {
            for l in lines.split_inclusive(|&b| b == b'\n') {
                let l = l.strip_suffix(b"\n").unwrap();
                events.extend(with_entry(l, |e| e.event()));
            }
        }
        assert_eq!(events, [Some(Event::Root)]);
        assert!(s.has_torn_tail());
        assert_eq!(s.whole_len(), 26);
        assert!(matches!(
            s.verdict(),
            Some(Err(ScanError::Breaks { line: 1, .. }))
        ));
        let mut again = Stream::reopen(&path, 17).unwrap().unwrap();
        assert_eq!(
            again.next_lines().unwrap(),
            Some(&b"{\"event\":\"root\"}\n"[..])
        );
        assert_eq!(again.next_lines().unwrap(), None);
        assert!(again.verdict().is_none());
        assert!(Stream::open(&dir.join("none")).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn batches_cut_only_between_lines_and_hold_every_line_once() {
        let dir = std::env::temp_dir().join(format!("attenu-batches-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ledger-s.jsonl");
        let mut bytes = Vec::new();
        for i in 0..3000 {
            let pad = "x".repeat(i % 700);
            bytes.extend(format!("{{\"n\":{i},\"pad\":\"{pad}\"}}\n").into_bytes());
        }
        std::fs::write(&path, &bytes).unwrap();
        let mut s = Stream::open(&path).unwrap().unwrap();
        let (mut read, mut batches) = (Vec::new(), 0);
        while let Some(lines) = s.next_lines().unwrap() {
            assert_eq!(lines.last(), Some(&b'\n'));
            read.extend_from_slice(lines);
            batches += 1;
        }
        assert!(batches > 1, "{} bytes in one batch", bytes.len());
        assert_eq!(read, bytes);
        assert!(!s.has_torn_tail());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_entry_reads_the_same_as_its_value() {
        let lines: [&[u8]; 5] = [
            br#"{"context":{"agent_id":"a","at":"t"},"event":"deny","reasons":[{"message":"m"}]}"#,
            br#"{"event": "deny", "reasons": {"0": {"message": "m"}}, "event": "allow"}"#,
            b"{\"tool\":\"R\xffd\",\"ts\":12}",
            b"[1, 2]",
            b"{\"ts\": 1.5, \"scope\": \"\\u0041\"}",
        ];
        for line in lines {
            let v = entries(line).next().expect("JSON");
            let view = EntryView::of(&v);
            let read = with_entry(line, |e| {
                (e.event(), e.first_reason_message().map(str::to_string))
            });
            assert_eq!(
                read,
                Some((
                    view.event(),
                    view.first_reason_message().map(str::to_string)
                ))
            );
            let more = with_entry(line, |e| {
                (
                    e.ts(),
                    e.tool().map(str::to_string),
                    e.scope().map(str::to_string),
                )
            });
            let want = (
                view.ts(),
                view.tool().map(str::to_string),
                view.scope().map(str::to_string),
            );
            assert_eq!(more, Some(want));
            assert_eq!(
                with_entry(line, |e| e.context_str("at").map(str::to_string)),
                Some(view.context_str("at").map(str::to_string))
            );
        }
        assert_eq!(with_entry(b"nope", |_| ()), None);
    }
}
