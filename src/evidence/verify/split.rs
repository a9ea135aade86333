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

/// How much is read at a time (small in unit tests, so that every value there is cut by a
/// refill somewhere).
const CHUNK: usize = if cfg!(test) { 61 } else { 4 << 20 };

/// Gave up: the full verifier decides.
#[derive(Debug)]
pub(super) struct GiveUp;

type Step<T> = Result<T, GiveUp>;

/// What to do with the pieces found.
pub(super) trait Sink {
    /// Each member's name, `entries` too, before its value.
    fn name(&mut self, name: &str) -> Step<()>;
    /// A member other than `entries`, its name decoded and its value's text.
    fn member(&mut self, name: String, value: &str) -> Step<()>;
    /// The next elements of `entries`, in order; each one's text starts with `{`.
    fn entries(&mut self, batch: &[&str]) -> Step<()>;
}

pub(super) struct Splitter<R> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

impl<R: Read> Splitter<R> {
    pub(super) fn new(reader: R) -> Self {
        Splitter {
            reader,
            buf: Vec::with_capacity(CHUNK),
            pos: 0,
            eof: false,
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
    pub(super) fn run(mut self, sink: &mut impl Sink) -> Step<()> {
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
            let (ranges, done) = self.batch()?;
            let texts = ranges
                .iter()
                .map(|&r| self.text(r))
                .collect::<Step<Vec<&str>>>()?;
            sink.entries(&texts)?;
            if done {
                return Ok(());
            }
            if !self.fill()? {
                return Err(GiveUp);
            }
        }
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

/// One past the closing quote of the string whose content starts at `buf[from]`.
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
