//! The streaming pass: verifies a bundle read from a reader entry by entry, in memory that
//! does not grow with the number of entries (only with nodes, calls still open, and 32 bytes
//! per call id), for the large clean bundle `attenu-hook verify` is mostly given.
//!
//! It answers only "clean": a report with no failure, which is what the full verifier
//! ([`super::verify_bundle_bytes`]) reports for the same bundle. On anything else (a syntax
//! error, a repeated member name, a failure of any check, or a shape [`super::fold`] does not
//! handle) it answers `None`, and the caller runs the full verifier, which is then the only
//! source of the verdict and its report. `tests/` holds the two equal on every bundle they
//! verify, and on the reference's vectors (`tests/conformance.rs`).
//!
//! Each entry is read as raw text and parsed on its own by [`strict::parse_one`], exactly as
//! the full reader parses each entry; the members other than `entries` are read as the full
//! reader reads them. What only the whole bundle decides (the anchor over the last entry,
//! the checkpoint over the tree, the versions, the chain id, the chain's position) is then
//! checked by the full verifier's own steps, run on the bundle's members with `entries`
//! holding only its first and last entry.

use super::fold::{prepare, Fold};
use super::report::{Found, Log};
use super::status::AnchorStatus;
use super::{anchor, chain_id, envelopes, tree, unreadable, version};
use super::{AnchorKey, Bundle, Checks, Json, Obj, Report, Value, PARALLEL_FROM};
use crate::json::split::{self, GiveUp, Sink, Splitter};
use crate::json::strict::{self, MemberSeed};
use crate::json::tree::Members;
use crate::ledger::fields::field;
use serde::de::DeserializeSeed;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::ops::Range;

/// Verifies the bundle `input` holds, if it is clean; `None` when the full verifier must
/// decide (see the module documentation).
///
/// The input is read and split on a thread of its own, a few chunks ahead, so that finding
/// where each entry ends overlaps parsing and folding them. Entries are cut where they most
/// likely end ([`Sink::entries`]); in the rare input where that guess cannot be mended in
/// place (a `},{` inside a string where a chunk ends), it is read once more, scanned exactly.
pub fn verify_clean_stream(input: impl Input, key: &AnchorKey) -> Option<Report> {
    match one_pass(input.open()?, true) {
        Pass {
            misguessed: true, ..
        } => finish(one_pass(input.open()?, false), key),
        pass => finish(pass, key),
    }
}

/// A bundle the pass can read from its start, and again if it must ([`verify_clean_stream`]).
pub trait Input {
    type Reader: std::io::Read + Send;
    fn open(&self) -> Option<Self::Reader>;
}

impl<'a> Input for &'a [u8] {
    type Reader = &'a [u8];
    fn open(&self) -> Option<&'a [u8]> {
        Some(self)
    }
}

/// A regular file, by its path.
impl Input for &std::path::Path {
    type Reader = std::io::BufReader<std::fs::File>;
    fn open(&self) -> Option<Self::Reader> {
        let file = std::fs::File::open(self).ok()?;
        file.metadata().ok().filter(|m| m.is_file())?;
        Some(std::io::BufReader::with_capacity(1 << 20, file))
    }
}

/// Reads the whole input through the pass; `fold` is `None` when it gave up.
fn one_pass(reader: impl std::io::Read + Send, guess: bool) -> Pass {
    let mut pass = Pass::default();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(2);
    let read = std::thread::scope(|s| {
        let splitter = s.spawn(move || {
            let mut ahead = Ahead(tx);
            let end = Splitter::new(reader, guess).run(&mut ahead);
            // Gone only when the pass already gave up.
            let _ = ahead.0.send(Piece::End(end.is_ok()));
        });
        let read = pass.take(rx);
        splitter.join().ok()?;
        read
    });
    if read.is_none() {
        pass.fold = None;
    }
    pass
}

/// What the splitting thread hands over, in input order.
enum Piece {
    Name(String),
    Member(String, String),
    /// A copy of the input holding whole entries, each one's range in it, and whether the
    /// ranges were guessed ([`Sink::entries`]).
    Entries(Vec<u8>, Vec<Range<usize>>, bool),
    /// The input ended: true when it was read to its end as one object.
    End(bool),
}

/// The splitting thread's sink: everything is sent on, and a closed channel (the pass gave
/// up) stops the splitting.
struct Ahead(std::sync::mpsc::SyncSender<Piece>);

impl Ahead {
    fn send(&self, piece: Piece) -> Result<(), GiveUp> {
        self.0.send(piece).map_err(|_| GiveUp)
    }
}

impl Sink for Ahead {
    fn name(&mut self, name: &str) -> Result<(), GiveUp> {
        self.send(Piece::Name(name.to_string()))
    }

    fn member(&mut self, name: String, value: &str) -> Result<(), GiveUp> {
        self.send(Piece::Member(name, value.to_string()))
    }

    fn entries(
        &mut self,
        span: &[u8],
        batch: &[Range<usize>],
        guessed: bool,
    ) -> Result<(), GiveUp> {
        self.send(Piece::Entries(span.to_vec(), batch.to_vec(), guessed))
    }
}

/// What the pass read: the fold over the entries, the other members, the first and last entry.
#[derive(Default)]
struct Pass {
    names: HashSet<String>,
    fold: Option<Fold>,
    members: Vec<(String, serde_json::Value)>,
    first: Option<String>,
    last: Option<String>,
    /// A guessed cut could not be mended in place: read again without guessing.
    misguessed: bool,
}

impl Pass {
    /// Takes the pieces in order until the input ends; `None` when the pass gives up (which
    /// closes the channel, and so stops the splitting).
    fn take(&mut self, pieces: std::sync::mpsc::Receiver<Piece>) -> Option<()> {
        for piece in pieces {
            match piece {
                Piece::Name(name) => self.name(&name).ok()?,
                Piece::Member(name, value) => self.member(name, &value).ok()?,
                Piece::Entries(span, batch, guessed) => {
                    self.entries(&span, &batch, guessed).ok()?
                }
                Piece::End(true) => return Some(()),
                Piece::End(false) => return None,
            }
        }
        None
    }

    fn name(&mut self, name: &str) -> Result<(), GiveUp> {
        if self.names.insert(name.to_string()) {
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    /// Read as the full reader reads a member: inside the bundle's object (so as deep), with
    /// a repeated name noted.
    fn member(&mut self, name: String, value: &str) -> Result<(), GiveUp> {
        let wrapped = format!("[{value}]");
        let dup = RefCell::new(None);
        let mut de = serde_json::Deserializer::from_str(&wrapped);
        let read = MemberSeed(&dup).deserialize(&mut de).map_err(|_| GiveUp)?;
        de.end().map_err(|_| GiveUp)?;
        match (read, dup.into_inner()) {
            (Json::Array(a), None) if a.len() == 1 => {
                self.members.push((name, a[0].to_value()));
                Ok(())
            }
            _ => Err(GiveUp),
        }
    }

    /// Folds the entries of `span` in order, each prepared on any core. Of guessed ranges,
    /// the first one that is not one entry and everything after it are split again exactly
    /// and folded here (see [`Sink::entries`]).
    fn entries(
        &mut self,
        span: &[u8],
        batch: &[Range<usize>],
        guessed: bool,
    ) -> Result<(), GiveUp> {
        let texts: Vec<&[u8]> = batch.iter().map(|r| &span[r.clone()]).collect();
        let fold = self.fold.get_or_insert_with(Fold::new);
        let mut folded = 0;
        let mut not_one_entry = None;
        // Folded in order while the other cores still prepare what follows.
        let all = crate::par::map_into(
            &texts,
            PARALLEL_FROM,
            |text| prepare(text),
            |p| {
                if p.is_none() {
                    not_one_entry = Some(folded);
                    return false;
                }
                folded += 1;
                fold.entry(p.as_ref())
            },
        );
        let mut ends = (texts.first().copied(), texts.last().copied());
        if !all {
            let at = not_one_entry.filter(|_| guessed).ok_or(GiveUp)?;
            let rest = &span[batch[at].start..];
            let exact = split::elements(rest).inspect_err(|_| self.misguessed = true)?;
            for r in &exact {
                if !fold.entry(prepare(&rest[r.clone()]).as_ref()) {
                    return Err(GiveUp);
                }
            }
            let text = |r: Option<&Range<usize>>| r.map(|r| &rest[r.clone()]);
            if at == 0 {
                ends.0 = text(exact.first());
            }
            ends.1 = text(exact.last());
        }
        let text = |t: &[u8]| {
            std::str::from_utf8(t)
                .map(str::to_string)
                .map_err(|_| GiveUp)
        };
        if let (None, Some(first)) = (&self.first, ends.0) {
            self.first = Some(text(first)?);
        }
        if let Some(last) = ends.1 {
            self.last = Some(text(last)?);
        }
        Ok(())
    }
}

/// The whole-bundle steps, on the members with the first and last entry; the report when
/// nothing failed.
fn finish(read: Pass, key: &AnchorKey) -> Option<Report> {
    let mut fold = read.fold?;
    if !fold.ids_unique() {
        return None;
    }
    let first_text = read.first?;
    let last_text = read.last.filter(|_| fold.count > 1);
    let first = strict::parse_one(&first_text).ok()?.value;
    let last = match &last_text {
        Some(text) => Some(strict::parse_one(text).ok()?.value),
        None => None,
    };
    let mut members: Vec<(Cow<str>, Json)> = read
        .members
        .iter()
        .map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::from_value(v)))
        .collect();
    let ends: Vec<Json<'_>> = std::iter::once(first).chain(last).collect();
    members.push((Cow::Borrowed("entries"), Json::Array(ends)));
    let top = Json::Object(Members::from_document_order(members, false));
    if !unreadable::problems(&top).is_empty() {
        return None;
    }
    let members: &Obj = top.as_object()?;
    let bundle = Bundle::read(members);
    if bundle.v != Some(2)
        || members.get(field::CHAIN_ID).and_then(Value::as_str) != fold.chain_id.as_deref()
    {
        return None;
    }
    whole_bundle_steps(&bundle, &mut fold, key)
}

fn whole_bundle_steps(bundle: &Bundle<'_>, fold: &mut Fold, key: &AnchorKey) -> Option<Report> {
    let mut log = Log::new(&bundle.entries);
    let versions = version::check(bundle, &mut log);
    let chain_id = chain_id::check(bundle, &mut log);
    let anchor_status = anchor::check(key, bundle, true, chain_id.anchor_reported, &mut log);
    envelopes::check(bundle.members, &mut log);
    let frontier = fold.tree.clone();
    let checkpoint = tree::check_checkpoint_over(key, bundle, || Ok(frontier), &mut log);
    tree::check_position(bundle, &mut log);
    anchor::refuse_without_key(key, &mut log);
    if !log.failures.is_empty() {
        return None;
    }
    let (eb_status, calls) = fold.calls()?;
    let found = Found {
        checks: Checks {
            integrity: anchor_status != AnchorStatus::Failed,
            monotonicity: true,
            containment: true,
            execution_binding: eb_status,
            anchor: anchor_status,
            version: versions.ok,
            chain_id: chain_id.ok,
            root: versions.root_ok,
            ledger_fields: true,
            checkpoint,
        },
        entries: fold.count,
        counts: fold.counts(),
        calls,
        failures: Vec::new(),
        // An entry recording a lost sealed state ends the pass (`fold.rs`).
        notices: Vec::new(),
        recorded: fold.recorded.clone(),
    };
    Some(Report::new(key, bundle.members.get(field::CHAIN_ID), found))
}
