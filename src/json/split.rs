//! The streaming pass's reader: a bundle file's top-level object read from a buffer refilled
//! in large chunks, its `entries` handed out as the text of each element, a chunk's worth at a
//! time, and every other member as the text of its value.
//!
//! This scanner only finds where values begin and end (strings, with their escapes, and
//! brackets); each piece is then parsed by the same strict parser the full reader uses, which
//! is what decides whether it is JSON. It is strict about everything between the pieces (only
//! JSON whitespace, `:` and `,` where the grammar puts them), and gives up on anything else:
//! the full verifier then reads the file.

use std::io::Read;
use std::ops::Range;

/// How much is read at a time (small in unit tests, so that every value there is cut by a
/// refill somewhere).
const CHUNK: usize = if cfg!(test) { 61 } else { 4 << 20 };

/// Gave up: the full verifier decides.
#[derive(Debug)]
pub(crate) struct GiveUp;

pub(crate) type Step<T> = Result<T, GiveUp>;

/// What to do with the pieces found.
pub(crate) trait Sink {
    /// Each member's name, `entries` too, before its value.
    fn name(&mut self, name: &str) -> Step<()>;
    /// A member other than `entries`, its name decoded and its value's text.
    fn member(&mut self, name: String, value: &str) -> Step<()>;
    /// The next elements of `entries`, in order: each one's byte range in `span` (a piece of
    /// the input), starting with `{`. Not yet checked to be UTF-8: the parser of each does it.
    ///
    /// When `guessed`, the ranges were cut at each `},{` without reading the strings between
    /// them, so a cut may lie inside a string. They are then entries up to the first one that
    /// does not parse as one whole JSON value (every piece before it does, so the text up to
    /// there is a JSON array of exactly those pieces), and from there on the sink must split
    /// the rest of `span` exactly ([`elements`]); its end is then an entry's end only if that
    /// split ends there.
    fn entries(&mut self, span: &[u8], batch: &[Range<usize>], guessed: bool) -> Step<()>;
}

pub(crate) struct Splitter<R> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    cut: Cut,
}

/// How `entries` is being cut into elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// At each `},{`, checked by the sink ([`Sink::entries`]): scanning every byte of every
    /// string, in order, was a third of the pass's work and could not be shared out.
    Guessed,
    /// By following every string and bracket ([`value_end`]).
    Scanned,
    /// The closing `]` was read.
    Done,
}

/// A piece with no `},{` in this many bytes is scanned exactly instead.
const GUESS_WITHIN: usize = 16 << 20;

impl<R: Read> Splitter<R> {
    /// `guess`: cut `entries` at likely ends first ([`Cut::Guessed`]), else scan exactly.
    pub(crate) fn new(reader: R, guess: bool) -> Self {
        Splitter {
            reader,
            buf: Vec::with_capacity(CHUNK),
            pos: 0,
            eof: false,
            cut: if guess { Cut::Guessed } else { Cut::Scanned },
        }
    }

    /// Reads more, keeping the bytes from `pos` on. False at the end of the input.
    fn fill(&mut self) -> Step<bool> {
        if self.eof {
            return Ok(false);
        }
        self.buf.drain(..self.pos);
        self.pos = 0;
        let have = self.buf.len();
        let want = CHUNK.max(have);
        // Appended without zeroing the space first.
        let mut chunk = (&mut self.reader).take(want as u64);
        loop {
            match chunk.read_to_end(&mut self.buf) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(GiveUp),
            }
        }
        let got = self.buf.len();
        if got - have < want {
            self.eof = true;
        }
        Ok(got > have)
    }

    /// The next byte after JSON whitespace, not consumed.
    fn peek(&mut self) -> Step<Option<u8>> {
        loop {
            while let Some(&b) = self.buf.get(self.pos) {
                if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    fn expect(&mut self, want: u8) -> Step<()> {
        if self.peek()? != Some(want) {
            return Err(GiveUp);
        }
        self.pos += 1;
        Ok(())
    }

    /// The next value's byte range in `buf`, refilling until it is whole.
    fn value(&mut self) -> Step<(usize, usize)> {
        if self.peek()?.is_none() {
            return Err(GiveUp);
        }
        loop {
            if let Some(end) = value_end(&self.buf[self.pos..], self.eof) {
                let start = self.pos;
                self.pos += end;
                return Ok((start, start + end));
            }
            if !self.fill()? {
                return Err(GiveUp);
            }
        }
    }

    fn text(&self, (start, end): (usize, usize)) -> Step<&str> {
        std::str::from_utf8(&self.buf[start..end]).map_err(|_| GiveUp)
    }

    /// The whole input: one object, then only whitespace.
    pub(crate) fn run(mut self, sink: &mut impl Sink) -> Step<()> {
        self.expect(b'{')?;
        if self.peek()? == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.member(sink)?;
                match self.peek()? {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(GiveUp),
                }
            }
        }
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(GiveUp),
        }
    }

    fn member(&mut self, sink: &mut impl Sink) -> Step<()> {
        if self.peek()? != Some(b'"') {
            return Err(GiveUp);
        }
        let range = self.value()?;
        let name: String = serde_json::from_str(self.text(range)?).map_err(|_| GiveUp)?;
        self.expect(b':')?;
        sink.name(&name)?;
        if name == "entries" {
            return self.entries(sink);
        }
        let range = self.value()?;
        let text = self.text(range)?;
        sink.member(name, text)
    }

    /// `[`, elements separated by `,`, `]`; each element is an object.
    fn entries(&mut self, sink: &mut impl Sink) -> Step<()> {
        self.expect(b'[')?;
        if self.peek()? == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let (ranges, cut) = match self.cut {
                Cut::Guessed => (self.guessed()?, Cut::Guessed),
                Cut::Scanned => {
                    let (ranges, done) = self.batch()?;
                    (ranges, if done { Cut::Done } else { Cut::Scanned })
                }
                Cut::Done => return Ok(()),
            };
            if let (Some(first), Some(last)) = (ranges.first(), ranges.last()) {
                let base = first.0;
                let relative: Vec<Range<usize>> =
                    ranges.iter().map(|&(a, b)| a - base..b - base).collect();
                let guessed = cut == Cut::Guessed;
                sink.entries(&self.buf[base..last.1], &relative, guessed)?;
            }
            match cut {
                Cut::Done => return Ok(()),
                // Guessing took every candidate in the buffer, or gave way to the exact scan:
                // look again before reading more.
                Cut::Guessed if !ranges.is_empty() || self.cut != Cut::Guessed => {}
                _ if !self.fill()? => return Err(GiveUp),
                _ => {}
            }
        }
    }

    /// The pieces from `pos` on, cut at every `},{` in the buffer: each is an entry if that
    /// `,` is between two entries, which the sink finds out by parsing each piece on its own
    /// (see [`Sink::entries`]). Empty when more must be read first. Where no `},{` can be
    /// found (the input's end, entries with white space between them, or a piece longer than
    /// [`GUESS_WITHIN`]), the exact scan takes over for the rest of `entries`.
    fn guessed(&mut self) -> Step<Vec<(usize, usize)>> {
        let mut at = self.pos;
        skip_ws(&self.buf, &mut at);
        if at == self.buf.len() {
            return Ok(Vec::new());
        }
        if self.buf[at] != b'{' {
            return Err(GiveUp);
        }
        let mut out = Vec::new();
        let mut start = at;
        for c in memchr::memmem::find_iter(&self.buf[at..], b"},{") {
            out.push((start, at + c + 1));
            start = at + c + 2;
        }
        if out.is_empty() && (self.eof || self.buf.len() - at >= GUESS_WITHIN) {
            self.cut = Cut::Scanned;
        }
        self.pos = start;
        Ok(out)
    }

    /// The elements whole in the buffer from `pos` on, each with the separator after it
    /// consumed; true when the last one was followed by `]`.
    fn batch(&mut self) -> Step<(Vec<(usize, usize)>, bool)> {
        let mut out = Vec::new();
        loop {
            let mut at = self.pos;
            skip_ws(&self.buf, &mut at);
            if at == self.buf.len() {
                return Ok((out, false));
            }
            if self.buf[at] != b'{' {
                return Err(GiveUp);
            }
            let Some(len) = value_end(&self.buf[at..], self.eof) else {
                return Ok((out, false));
            };
            let mut after = at + len;
            skip_ws(&self.buf, &mut after);
            let Some(&sep) = self.buf.get(after) else {
                return Ok((out, false));
            };
            out.push((at, at + len));
            self.pos = after + 1;
            match sep {
                b',' => {}
                b']' => return Ok((out, true)),
                _ => return Err(GiveUp),
            }
        }
    }
}

/// `text` as entries separated by `,` (and white space), split exactly; it must end where its
/// last entry ends.
pub(crate) fn elements(text: &[u8]) -> Step<Vec<Range<usize>>> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        skip_ws(text, &mut at);
        if text.get(at) != Some(&b'{') {
            return Err(GiveUp);
        }
        let len = value_end(&text[at..], true).ok_or(GiveUp)?;
        out.push(at..at + len);
        at += len;
        skip_ws(text, &mut at);
        match text.get(at) {
            None => return Ok(out),
            Some(b',') => at += 1,
            Some(_) => return Err(GiveUp),
        }
    }
}

fn skip_ws(buf: &[u8], at: &mut usize) {
    while buf
        .get(*at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        *at += 1;
    }
}

/// Where the value starting at `buf[0]` ends (one past its last byte), or `None` when the
/// buffer ends first. Only strings and brackets are followed; the parser checks the rest.
fn value_end(buf: &[u8], eof: bool) -> Option<usize> {
    match buf.first()? {
        b'"' => string_end(buf, 1),
        b'{' | b'[' => nested_end(buf),
        _ => {
            let end = buf
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'));
            // A scalar at the very end of the input is not inside an object: the caller fails.
            end.or(eof.then_some(buf.len()))
        }
    }
}

/// One past the closing quote of the string whose content starts at `buf[from]`. (A plain
/// scan: strings here are short, and `memchr` measured slower on them.)
fn string_end(buf: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = from + buf[from..].iter().position(|&b| b == b'"' || b == b'\\')?;
        if buf[at] == b'"' {
            return Some(at + 1);
        }
        from = at + 2; // an escape and the byte it escapes
        if from > buf.len() {
            return None;
        }
    }
}

/// One past the bracket that closes the one at `buf[0]`.
fn nested_end(buf: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = 0;
    while at < buf.len() {
        match buf[at] {
            b'"' => {
                at = string_end(buf, at + 1)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the splitter hands over.
    #[derive(Default)]
    struct Seen {
        entries: Vec<String>,
        guessed: usize,
        scanned: usize,
    }

    impl Sink for Seen {
        fn name(&mut self, _: &str) -> Step<()> {
            Ok(())
        }
        fn member(&mut self, _: String, _: &str) -> Step<()> {
            Ok(())
        }
        fn entries(&mut self, span: &[u8], batch: &[Range<usize>], guessed: bool) -> Step<()> {
            for r in batch {
                self.entries
                    .push(String::from_utf8(span[r.clone()].to_vec()).unwrap());
                *if guessed {
                    &mut self.guessed
                } else {
                    &mut self.scanned
                } += 1;
            }
            Ok(())
        }
    }

    fn split(text: &str) -> Seen {
        let mut seen = Seen::default();
        Splitter::new(text.as_bytes(), true)
            .run(&mut seen)
            .expect("split");
        seen
    }

    #[test]
    fn compact_entries_are_cut_at_guesses_and_the_last_one_scanned() {
        let entries: Vec<String> = (0..30)
            .map(|i| format!("{{\"a\":{i},\"b\":\"x\"}}"))
            .collect();
        let seen = split(&format!("{{\"entries\":[{}],\"v\":2}}", entries.join(",")));
        assert_eq!(seen.entries, entries);
        assert!(seen.guessed >= 25, "guessed {}", seen.guessed);
        assert!(seen.scanned >= 1, "the last entry has no `}},{{` after it");
    }

    #[test]
    fn entries_with_white_space_between_them_are_scanned() {
        let entries: Vec<String> = (0..30).map(|i| format!("{{\"a\":{i}}}")).collect();
        let seen = split(&format!("{{\"entries\":[ {} ]}}", entries.join(" ,\n ")));
        assert_eq!(seen.entries, entries);
        assert_eq!(seen.guessed, 0);
    }

    #[test]
    fn elements_split_exactly_and_must_end_where_the_text_ends() {
        let text = br#"{"a":"},{"},{"b":[{},{}]} , {}"#;
        let got: Vec<&[u8]> = elements(text)
            .unwrap()
            .into_iter()
            .map(|r| &text[r])
            .collect();
        assert_eq!(got, [&br#"{"a":"},{"}"#[..], br#"{"b":[{},{}]}"#, b"{}"]);
        for bad in [
            &br#"{"a":1},"#[..],
            br#"{"a":1}{}"#,
            br#"{"a":"#,
            b"",
            b" 1",
        ] {
            assert!(elements(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
