//! Offline verification of an evidence bundle (`attenu-hook verify`): a library that returns a
//! [`Report`], and neither prints nor chooses an exit code. The command around it (arguments,
//! the key's choice, printing, the verdict's exit) is `crate::cli::verify`.
//!
//! The input is the bundle alone, plus the key the reviewer chooses to trust. Nothing from the
//! process that wrote the ledger is consulted. The checks and their verdicts follow
//! `attenu_guard.evidence.verify_bundle` 0.21.0, so that a bundle the reference accepts is
//! accepted here and a bundle it rejects is rejected here; `tests/conformance.rs` holds that
//! against the reference's own vectors.
//!
//! What is checked:
//!
//! * **shape and version**: the bundle is an object, `v` is 1 or 2, the anchor and the root
//!   entry declare the same `v` and no entry declares another; exactly one `root`; the bundle,
//!   every entry and the anchor name one `chain_id`; every entry is an object carrying only the
//!   ledger's field names and one of its event names (`outcome` only on v2);
//! * **integrity**: the hash chain from [`GENESIS`](crate::ledger::chain::GENESIS), seq 0, 1, 2…,
//!   and the signed anchor over the last entry (signature over [`anchor_signing_input`], head,
//!   seq and chain id);
//! * **monotonicity**: every `spawn` names a parent defined earlier and not revoked, and grants
//!   an authority no wider than that parent's in scopes (with `x.*` wildcards), ceilings and ttl;
//! * **containment**: every `allow` that claims authority was on a known, unrevoked node and
//!   within that node's authority; an allow marked `"policy": "unlisted"` claims none and is
//!   counted as ungated instead;
//! * **execution binding** (v2): call ids, the allow/deny/outcome record rules, one outcome per
//!   call, bound to its allow on the same node, after it, with matching argument commitments;
//!   each allowed call is reported observed, unobserved or unaccounted.
//!
//! Every problem is a [`Failure`] with a stable name of ours ([`FailureName`]), the entry it is
//! about, and a sentence a reviewer can act on. [`FailureName::reference_reason`] gives the
//! reason token the reference reports for the same problem.
//!
//! # Where this verifier is stricter than the reference, on purpose
//!
//! * **No key, no verdict of valid.** Without a key the anchor signature proves nothing, and the
//!   reference still answers `ok`. Here the report carries `anchor-not-checked` and is invalid:
//!   a bundle that was rewritten from the first entry, anchor included, would otherwise pass.
//! * **A key read next to the bundle is reported as not pinned.** It verifies the signature, and
//!   the verdict can be valid, but the report says `key: "bundle-side"` and the text output says
//!   in plain words that whoever rewrote the bundle could have replaced that file too.
//! * **Duplicate member names** in the bundle file ([`verify_bundle_bytes`]) are a failure: JSON
//!   parsers disagree about which of two members wins, so two readers could see two ledgers.
//! * **Observer envelopes** are not evaluated: a bundle carrying any is reported
//!   `envelopes-not-verified`, which is what the reference answers when no witness key is
//!   trusted (its default).
//! * **An allow-list, deny-list or prefix ceiling must read the same context field** in the
//!   child as in the parent; the reference compares only the bound, so a child could move its
//!   bound onto a field no call carries.
//! * Ed25519 signatures are checked with `verify_strict`, and hex is read without whitespace.
//!
//! # Where each check lives
//!
//! [`verify_bundle`] runs the steps below in order; each file holds one of them, and the
//! report lists failures in this order.
//!
//! | step | file | check |
//! |------|------|-------|
//! | (0)  | `unreadable.rs` | a bundle that cannot be read at all |
//! | (1), (2) | `version.rs` | schema versions, exactly one root |
//! | (3), (4) | `fields.rs` | entries read whole: event, field names, node ids |
//! | (5)  | `chain_id.rs` | one chain id |
//! | (6)  | `integrity.rs`, `anchor.rs` | the hash chain, the signed anchor over its head |
//! | (7)  | `nodes.rs` | every node's authority (`authority.rs`, `ceiling.rs`, `ceiling_wire.rs`, `scope.rs`) |
//! | (8)  | `monotonicity.rs` | every spawn within its parent |
//! | (9)  | `containment.rs` | every allow within its node |
//! | (10) | `binding.rs`, `records.rs`, `policy.rs` | execution binding and the v2 record rules (on v1, no v2 field: `version.rs`), policy markers |
//! | (11) | `envelopes.rs` | observer envelopes refused |
//! | (12) | `anchor.rs` | no key, no verdict of valid |
//! | (13) | `tree.rs` | the signed tree checkpoint and the chain's position, when present |
//!
//! After them, `notices.rs` lists what the ledger records about its own history (a lost
//! sealed state), which changes no verdict but the exit code.
//!
//! `attenu-hook verify` first tries a streaming pass (`stream.rs`, reading with `crate::json::split`,
//! each entry folded by `fold.rs`) that holds memory to the nodes and open calls, not the
//! entries, and answers only for a clean bundle, with the report the steps above give; on
//! anything else it gives up and the steps above decide. The fold is a second driver of the
//! same rules, not a copy of them: for each entry it calls the steps' own per-entry functions
//! (`fields::known_event`, `known_fields`, `node_id`, `policy::entry`, the record rules,
//! `chain::Links::follow`, `binding::salt_ok`, `Authority::narrower_than`,
//! `containment::action_within`, `binding::bind_one`) with a scratch log, and gives up when one
//! logs; the calls it reports go through the same `binding::open_call`, `Tally` and `level`. The
//! whole-bundle steps (versions, chain id, anchor, checkpoint, position, no key) run on the
//! members with the first and last entry. Every report, from either pass or from step (0), is
//! made by `Report::new`, with the typed statuses of `status.rs`. The unit tests and
//! `tests/evidence.rs` hold the two reports equal.
//!
//! Around them: `report.rs` (the report and failure names), `status.rs` (the statuses and the
//! verdict, each with its one word), `input.rs` (reading the bundle
//! file; key files are `crate::evidence::keys`), `render.rs` (the text output), `json.rs`,
//! `shown.rs` and `crate::ledger::fields` (reading values, printing them safely, the ledger's names). The
//! unit tests are in `tests/`.

mod anchor;
mod authority;
mod binding;
mod ceiling;
mod ceiling_wire;
mod chain_id;
mod containment;
mod envelopes;
mod fields;
mod fold;
mod input;
mod integrity;
mod json;
mod monotonicity;
mod nodes;
mod notices;
mod policy;
mod records;
mod render;
mod report;
mod scope;
mod shown;
mod status;
mod stream;
#[cfg(test)]
pub(crate) mod tests;
mod tree;
mod unreadable;
mod version;

pub use crate::ledger::fields::{LEDGER_EVENTS, LEDGER_FIELDS};
pub use anchor::anchor_signing_input;
pub use input::{verify_bundle_bytes, verify_parsed, InputError};
pub use notices::Notice;
pub use render::{render_text, signed_by_another_key};
pub use report::{AnchorKey, CallSummary, Checks, Failure, FailureName, OpenCall, Report};
pub use scope::scope_covers;
pub(crate) use shown::shown;
pub use status::{
    AnchorStatus, Binding, CallState, CheckpointStatus, KeyTrust, ParamsCoverage, Verdict,
};
pub use stream::{verify_clean_stream, Input};

use crate::json::tree::{Json, Members};
use crate::ledger::fields::{context, event, field};
use report::{Counts, Found, Log};

/// Below this many entries one thread is faster than starting another.
const PARALLEL_FROM: usize = 512;

// The checks read the bundle as `doc` holds it (strings borrowed from the file).
type Value<'a> = Json<'a>;
type Obj<'a> = Members<'a>;

/// The bundle as the checks read it: its members, and each entry as an object or not.
struct Bundle<'a> {
    members: &'a Obj<'a>,
    raw_entries: &'a [Value<'a>],
    entries: Vec<Option<&'a Obj<'a>>>,
    /// A non-empty anchor object.
    anchor: Option<&'a Obj<'a>>,
    /// The bundle's `v` as written, and as an integer when it is one.
    raw_v: Option<&'a Value<'a>>,
    v: Option<i128>,
}

impl<'a> Bundle<'a> {
    fn read(members: &'a Obj<'a>) -> Self {
        let raw_entries: &[Value] = match members.get("entries") {
            Some(Value::Array(a)) => a,
            _ => &[],
        };
        let raw_v = members.get(field::V);
        Bundle {
            members,
            raw_entries,
            entries: raw_entries.iter().map(Value::as_object).collect(),
            anchor: members
                .get("anchor")
                .and_then(Value::as_object)
                .filter(|a| !a.is_empty()),
            raw_v,
            v: json::integral(raw_v),
        }
    }

    /// The entries that are objects, with their positions.
    fn objects(&self) -> impl Iterator<Item = (usize, &'a Obj<'a>)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.map(|e| (i, e)))
    }
}

/// Verifies an evidence bundle from the bundle alone and the key the caller trusts.
///
/// Never panics on any JSON input; every problem is a [`Failure`]. See the module
/// documentation for what is checked and where this is stricter than the reference.
pub fn verify_bundle(bundle: &serde_json::Value, key: &AnchorKey) -> Report {
    verify_bundle_with(&Json::from_value(bundle), key, None)
}

/// [`verify_bundle`], with the entries' own hashes already computed by the reader.
fn verify_bundle_with(
    bundle: &Value,
    key: &AnchorKey,
    entry_hashes: Option<Vec<Option<String>>>,
) -> Report {
    // (0) a bundle this verifier cannot read at all is reported alone.
    let unreadable = unreadable::problems(bundle);
    if !unreadable.is_empty() {
        return unreadable::report(bundle, key, unreadable);
    }
    let bundle = Bundle::read(bundle.as_object().expect("checked above"));
    // On a long v2 chain execution binding runs on its own thread beside steps (1) to (9).
    std::thread::scope(|scope| {
        let early_binding = binding::start_early(scope, &bundle);
        run_checks(&bundle, key, entry_hashes, early_binding)
    })
}

/// Steps (1) to (12), in order, into one report.
fn run_checks(
    bundle: &Bundle<'_>,
    key: &AnchorKey,
    entry_hashes: Option<Vec<Option<String>>>,
    early_binding: Option<binding::Early<'_>>,
) -> Report {
    let mut log = Log::new(&bundle.entries);
    let versions = version::check(bundle, &mut log);
    let fields_ok = fields::check_entries(bundle, &mut log);
    fields::check_node_ids(bundle, &mut log);
    let chain_id = chain_id::check(bundle, &mut log);
    let chain_ok = integrity::check_chain(bundle, entry_hashes, &mut log);
    let anchor_status = anchor::check(key, bundle, chain_ok, chain_id.anchor_reported, &mut log);
    let nodes = nodes::read(bundle, &mut log);
    let monotonicity = monotonicity::check(bundle, &nodes.authorities, &mut log);
    let containment = containment::check(bundle, &nodes.authorities, &mut log);
    let (eb_status, calls) = binding::check(bundle, versions.ok, early_binding, &mut log);
    policy::check(bundle, &mut log);
    envelopes::check(bundle.members, &mut log);
    let checkpoint = tree::check_checkpoint(key, bundle, &mut log);
    tree::check_position(bundle, &mut log);
    anchor::refuse_without_key(key, &mut log);
    let found = Found {
        checks: Checks {
            integrity: chain_ok && anchor_status != AnchorStatus::Failed,
            monotonicity: monotonicity && !nodes.unreadable,
            containment: containment.ok,
            execution_binding: eb_status,
            anchor: anchor_status,
            version: versions.ok,
            chain_id: chain_id.ok,
            root: versions.root_ok,
            ledger_fields: fields_ok,
            checkpoint,
        },
        entries: bundle.raw_entries.len(),
        counts: Counts {
            nodes: nodes.authorities.len(),
            actions_checked: containment.actions,
            ungated: containment.ungated,
            denied: containment.denied,
            refused_by_claude_code: containment.refused_by_claude_code,
        },
        calls,
        failures: log.failures,
        notices: notices::collect(bundle),
        recorded: bundle.objects().find_map(|(_, e)| recorded_by(e)),
    };
    Report::new(key, bundle.members.get(field::CHAIN_ID), found)
}

/// The identity a root entry recorded, if `e` is one that recorded it.
fn recorded_by(e: &Obj<'_>) -> Option<crate::trust::identity::Recorded> {
    if e.get(field::EVENT).and_then(Value::as_str) != Some(event::ROOT) {
        return None;
    }
    let identity = e.get(field::CONTEXT)?.as_object()?.get(context::IDENTITY)?;
    Some(crate::trust::identity::Recorded::of(&identity.to_value()))
}
