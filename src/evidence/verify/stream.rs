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

use super::fold::Fold;
use super::report::Log;
use super::{anchor, chain_id, envelopes, tree, unreadable, version};
use super::{AnchorKey, Bundle, Checks, Json, Obj, Report, Value};
use crate::evidence::doc::Members;
use crate::evidence::strict::{self, MemberSeed};
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

/// Verifies the bundle `reader` yields, if it is clean; `None` when the full verifier must
/// decide (see the module documentation).
pub fn verify_clean_stream(reader: impl std::io::Read, key: &AnchorKey) -> Option<Report> {
    let mut read = Pass::default();
    let mut de = serde_json::Deserializer::from_reader(reader);
    Top(&mut read).deserialize(&mut de).ok()?;
    de.end().ok()?;
    finish(read, key)
}

/// What the pass read: the fold over the entries, the other members, the first and last entry.
#[derive(Default)]
struct Pass {
    fold: Option<Fold>,
    members: Vec<(Cow<'static, str>, Json<'static>)>,
    first: Option<Box<RawValue>>,
    last: Option<Box<RawValue>>,
}

/// The top-level object: `entries` folded one by one, every other member kept.
struct Top<'r>(&'r mut Pass);

// Read from an `io::Read`, nothing borrows from the input: the tree is `'static`.
impl DeserializeSeed<'static> for Top<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'static>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl Visitor<'static> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a bundle object")
    }
    fn visit_map<A: MapAccess<'static>>(self, mut map: A) -> Result<(), A::Error> {
        let mut names = HashSet::new();
        let dup = RefCell::new(None);
        while let Some(name) = map.next_key::<String>()? {
            if !names.insert(name.clone()) {
                return Err(A::Error::custom("a repeated member"));
            }
            if name == "entries" {
                map.next_value_seed(Entries(self.0))?;
                continue;
            }
            let value: Json<'static> = map.next_value_seed(MemberSeed(&dup))?;
            if dup.borrow().is_some() {
                return Err(A::Error::custom("a repeated member"));
            }
            self.0.members.push((Cow::Owned(name), value));
        }
        Ok(())
    }
}

/// The `entries` array, each element folded as it arrives.
struct Entries<'r>(&'r mut Pass);

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an entries array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let read = self.0;
        let fold = read.fold.insert(Fold::new());
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            if !fold.entry(raw.get()) {
                return Err(A::Error::custom("left to the full verifier"));
            }
            if read.first.is_none() {
                read.first = Some(raw);
            } else {
                read.last = Some(raw);
            }
        }
        Ok(())
    }
}

/// The whole-bundle steps, on the members with the first and last entry; the report when
/// nothing failed.
fn finish(read: Pass, key: &AnchorKey) -> Option<Report> {
    let fold = read.fold?;
    let first = strict::parse_one(read.first.as_ref()?.get()).ok()?.value;
    let last = match &read.last {
        Some(raw) => Some(strict::parse_one(raw.get()).ok()?.value),
        None => None,
    };
    let mut members = read.members;
    let ends: Vec<Json<'_>> = std::iter::once(first).chain(last).collect();
    members.push((Cow::Borrowed("entries"), Json::Array(ends)));
    let top = Json::Object(Members::from_document_order(members, false));
    if !unreadable::problems(&top).is_empty() {
        return None;
    }
    let members: &Obj = top.as_object()?;
    let bundle = Bundle::read(members);
    if bundle.v != Some(2)
        || members.get("chain_id").and_then(Value::as_str) != fold.chain_id.as_deref()
    {
        return None;
    }
    whole_bundle_steps(&bundle, &fold, key)
}

fn whole_bundle_steps(bundle: &Bundle<'_>, fold: &Fold, key: &AnchorKey) -> Option<Report> {
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
    let (nodes, actions_checked, ungated) = fold.counts();
    Some(Report {
        valid: true,
        checks: Checks {
            integrity: anchor_status != "failed",
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
        key: key.label(),
        chain_id: bundle
            .members
            .get("chain_id")
            .map_or(serde_json::Value::Null, Json::to_value),
        entries: fold.count,
        nodes,
        actions_checked,
        ungated,
        calls,
        failures: Vec::new(),
    })
}
