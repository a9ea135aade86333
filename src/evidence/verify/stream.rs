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
use super::report::Log;
use super::split::{GiveUp, Sink, Splitter};
use super::{anchor, chain_id, envelopes, tree, unreadable, version};
use super::{AnchorKey, Bundle, Checks, Json, Obj, Report, Value, PARALLEL_FROM};
use crate::evidence::doc::Members;
use crate::evidence::strict::{self, MemberSeed};
use serde::de::DeserializeSeed;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;

/// Verifies the bundle `reader` yields, if it is clean; `None` when the full verifier must
/// decide (see the module documentation).
pub fn verify_clean_stream(reader: impl std::io::Read, key: &AnchorKey) -> Option<Report> {
    let mut pass = Pass::default();
    Splitter::new(reader).run(&mut pass).ok()?;
    finish(pass, key)
}

/// What the pass read: the fold over the entries, the other members, the first and last entry.
#[derive(Default)]
struct Pass {
    names: HashSet<String>,
    fold: Option<Fold>,
    members: Vec<(String, serde_json::Value)>,
    first: Option<String>,
    last: Option<String>,
}

impl Sink for Pass {
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

    fn entries(&mut self, batch: &[&str]) -> Result<(), GiveUp> {
        let fold = self.fold.get_or_insert_with(Fold::new);
        let prepared = crate::par::map(batch, PARALLEL_FROM, |_, text| prepare(text));
        for p in prepared {
            if !fold.entry(p) {
                return Err(GiveUp);
            }
        }
        if let (None, Some(first)) = (&self.first, batch.first()) {
            self.first = Some(first.to_string());
        }
        if let Some(last) = batch.last() {
            self.last = Some(last.to_string());
        }
        Ok(())
    }
}

/// The whole-bundle steps, on the members with the first and last entry; the report when
/// nothing failed.
fn finish(read: Pass, key: &AnchorKey) -> Option<Report> {
    let fold = read.fold?;
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
        // An entry recording a lost checkpoint ends the pass (`fold.rs`).
        notices: Vec::new(),
    })
}
