//! One chain's status, from its objects alone (pure: no I/O, the time of "now" passed in).
//!
//! 1. Every object is checked on its own ([`super::objects`]); one that fails is a finding
//!    `unverifiable` and is not used as evidence. Without a pinned key for the project,
//!    nothing is.
//! 2. The entries of bundles and entries objects build the chain's [`Histories`]; an entries
//!    object must attach where its `from` says and reach the root its name says.
//! 3. Every verified checkpoint and bundle is a commitment `(size, root)`. For two of them,
//!    the smaller must be a prefix of the larger's history: two checkpoints of one size with
//!    different roots are `forked`; any other pair that is not is `rewritten`. A checkpoint
//!    with no history in the store to check it against is `unverifiable`.
//! 4. The closing bundle (the largest verified) must reach every checkpoint: one larger that
//!    the store received before it (or at the same time) makes the chain `truncated`; one
//!    received after it means the chain went on (`open`). Otherwise the chain is `complete`;
//!    without a bundle, `open`.

use super::history::Histories;
use super::names::{self, Kind};
use super::objects::{self, Expect};
use super::read::{ChainObjects, Stored};
use super::report::{ChainReport, CheckpointView, Finding, Status};
use crate::clock::rfc3339_ms;
use crate::ledger::chain::hex;
use crate::tlog::Hash;
use ed25519_dalek::VerifyingKey;

/// A verified checkpoint or bundle: what it commits to, and where its history is.
#[derive(Debug, Clone)]
struct Commitment<'a> {
    key: &'a str,
    bundle: bool,
    size: u64,
    root: Hash,
    stored_ms: u64,
    /// The history ending at it, when the store holds its entries.
    node: Option<usize>,
}

impl Commitment<'_> {
    /// `checkpoint 6 (root 127f78a39622…, stored <time>)`: enough to find the object.
    fn what(&self) -> String {
        let kind = if self.bundle { "bundle" } else { "checkpoint" };
        format!(
            "{kind} {} (root {}…, stored {})",
            self.size,
            short(&self.root),
            rfc3339_ms(self.stored_ms)
        )
    }
}

fn short(root: &Hash) -> String {
    hex(&root[..6])
}

/// Judges one chain. `key` is the trusted key of its signer, or why no key is trusted
/// (`crate::audit::trust::key_for`).
pub fn judge_chain(
    chain: &ChainObjects,
    key: Result<&VerifyingKey, &str>,
    now_ms: u64,
) -> ChainReport {
    let mut findings = Vec::new();
    let mut commitments = Vec::new();
    let mut histories = Histories::new();
    match key {
        Ok(key) => {
            let expect = Expect {
                kid: &chain.kid,
                chain_id: &chain.chain_id,
                key,
            };
            read_objects(
                chain,
                expect,
                &mut histories,
                &mut commitments,
                &mut findings,
            );
        }
        Err(why) => findings.push(Finding {
            status: Status::Unverifiable,
            why: why.to_string(),
            objects: Vec::new(),
        }),
    }
    compare(&histories, &commitments, &mut findings);
    let base = closing(&commitments, now_ms, chain.times_trusted, &mut findings);
    finish(chain, &commitments, base, findings)
}

/// Step 1 and 2: checks every object, fills the histories and the commitments.
fn read_objects<'a>(
    chain: &'a ChainObjects,
    expect: Expect<'_>,
    histories: &mut Histories,
    commitments: &mut Vec<Commitment<'a>>,
    findings: &mut Vec<Finding>,
) {
    let mut segments = Vec::new();
    let mut losses = Losses::new();
    for o in &chain.objects {
        let Some(bytes) = o.bytes.as_deref() else {
            findings.push(unverifiable(
                o,
                o.skipped.as_deref().unwrap_or(
                    "was listed by the store, which then returned nothing for it (deleted meanwhile?)",
                ),
            ));
            continue;
        };
        let kind = names::parse(&o.key).and_then(|k| k.kind);
        let checked = match kind {
            None => Err(objects::ObjectProblem::NotALayoutName),
            Some(Kind::Checkpoint { size, root }) => {
                objects::check_note(bytes, expect, size, &root)
                    .map(|()| commitments.push(commit(o, false, size, root, None)))
            }
            Some(Kind::Bundle { size, root }) => objects::check_bundle(bytes, expect, size, &root)
                .map(|b| {
                    note_losses(&mut losses, &b.losses, o);
                    let node = histories.extend(0, &b.hashes, o.stored_ms);
                    commitments.push(commit(o, true, size, root, node));
                }),
            Some(Kind::Entries { from, to, root }) => {
                segments.push((from, to, root, o, bytes));
                Ok(())
            }
        };
        if let Err(why) = checked {
            findings.push(unverifiable(o, &why.to_string()));
        }
    }
    // A segment extends the history its `from` ends, which an earlier segment (or a bundle)
    // put in the tree: in order of `from`, each one's parent is there before it.
    segments.sort_by_key(|s| (s.0, s.1));
    let mut ends = Vec::new();
    for (from, to, root, o, bytes) in segments {
        match objects::check_entries(bytes, expect.chain_id, from, to).and_then(|seg| {
            note_losses(&mut losses, &seg.losses, o);
            place(histories, &seg, from, &root, o.stored_ms)
        }) {
            Ok(end) => ends.push((end, o)),
            Err(why) => findings.push(unverifiable(o, &why.to_string())),
        }
    }
    // Checkpoints were read before the entries that reach them.
    for c in commitments.iter_mut().filter(|c| c.node.is_none()) {
        c.node = histories.with_root(c.size, &c.root);
    }
    unsigned_branches(histories, commitments, &ends, findings);
    findings.extend(lost_states(&losses));
}

/// The seqs of entries that record a lost sealed state, and the objects that hold each.
type Losses = std::collections::BTreeMap<u64, Vec<String>>;

fn note_losses(losses: &mut Losses, seqs: &[u64], o: &Stored) {
    for s in seqs {
        losses.entry(*s).or_default().push(o.key.clone());
    }
}

/// One `notice` for every entry shipped that records a lost sealed state: the ledger says the
/// hook found its sealed state missing or broken, so entries before it may have been cut
/// off before any left the machine (the `NOTICE checkpoint-lost` of `verify`).
fn lost_states(losses: &Losses) -> Option<Finding> {
    let seqs: Vec<String> = losses.keys().map(u64::to_string).collect();
    if seqs.is_empty() {
        return None;
    }
    let mut objects: Vec<String> = losses.values().flatten().cloned().collect();
    objects.sort();
    objects.dedup();
    Some(Finding {
        status: Status::Notice,
        why: format!(
            "entry {} records that the hook found the ledger's sealed state lost \
             (checkpoint-lost, as `verify` notices): entries before it verify, but some may \
             have been cut off before they were shipped; compare with checkpoints shipped \
             earlier or another copy of the ledger",
            seqs.join(", ")
        ),
        objects,
    })
}

/// An entries object is signed through the checkpoints whose history holds it. One that ends
/// on no signed history (a hook that died between queueing entries and their checkpoint
/// leaves one that a later checkpoint covers) is a branch nothing signed vouches for.
fn unsigned_branches(
    histories: &Histories,
    commitments: &[Commitment<'_>],
    ends: &[(usize, &Stored)],
    findings: &mut Vec<Finding>,
) {
    let signed: std::collections::HashSet<usize> = commitments
        .iter()
        .filter_map(|c| c.node)
        .flat_map(|n| histories.path(n))
        .collect();
    for (end, o) in ends.iter().filter(|(end, _)| !signed.contains(end)) {
        findings.push(unverifiable(o, &format!(
            "reaches size {}, where no checkpoint or bundle signed by the pinned key leads (if a shipper is still draining, audit again)",
            histories.node(*end).size
        )));
    }
}

fn commit(o: &Stored, bundle: bool, size: u64, root: Hash, node: Option<usize>) -> Commitment<'_> {
    Commitment {
        key: &o.key,
        bundle,
        size,
        root,
        stored_ms: o.stored_ms,
        node,
    }
}

/// An object that cannot be used, named by its place in the chain's directory.
fn unverifiable(o: &Stored, why: &str) -> Finding {
    let mut parts = o.key.rsplitn(3, '/');
    let (file, dir) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    Finding {
        status: Status::Unverifiable,
        why: format!("{dir}/{file} (stored {}) {why}", rfc3339_ms(o.stored_ms)),
        objects: vec![o.key.clone()],
    }
}

/// Puts a checked segment into the tree if it attaches at `from` and reaches `root`.
fn place(
    histories: &mut Histories,
    seg: &objects::Segment,
    from: u64,
    root: &Hash,
    stored_ms: u64,
) -> Result<usize, objects::ObjectProblem> {
    use objects::ObjectProblem;
    let parent = histories
        .at(from, &seg.first_prev)
        .ok_or_else(|| ObjectProblem::Unattached {
            from,
            last: seg.first_prev.clone(),
        })?;
    // The root is checked before anything is added, so a wrong segment leaves no trace.
    let mut tree = histories.node(parent).tree.clone();
    for h in &seg.hashes {
        tree.append(crate::evidence::checkpoint::leaf_of_hash(h).ok_or(ObjectProblem::NotAHash)?);
    }
    if tree.root() != *root {
        return Err(ObjectProblem::OtherRoot {
            found: short(&tree.root()),
            named: short(root),
        });
    }
    histories
        .extend(parent, &seg.hashes, stored_ms)
        .ok_or(ObjectProblem::NotAHash)
}

/// Step 3: every pair of commitments must lie on one history.
fn compare(histories: &Histories, commitments: &[Commitment<'_>], findings: &mut Vec<Finding>) {
    let mut order: Vec<&Commitment> = commitments.iter().collect();
    order.sort_by_key(|c| (c.size, c.stored_ms, c.bundle));
    for c in order.iter().filter(|c| c.node.is_none() && !c.bundle) {
        findings.push(Finding {
            status: Status::Unverifiable,
            why: format!(
                "{} has no entries in the store that lead to it, so its history cannot be checked (if a shipper is still draining, audit again)",
                c.what()
            ),
            objects: vec![c.key.to_string()],
        });
    }
    for (j, y) in order.iter().enumerate() {
        let path = y.node.map(|n| histories.path(n));
        for x in &order[..j] {
            let consistent = match &path {
                Some(path) => histories.root_at(path, x.size) == Some(x.root),
                None if x.size == y.size => x.root == y.root,
                None => continue,
            };
            if !consistent {
                findings.push(inconsistent(x, y));
            }
        }
    }
}

/// The finding for two commitments that cannot both be prefixes of one history; `x` is not
/// larger than `y`.
fn inconsistent(x: &Commitment<'_>, y: &Commitment<'_>) -> Finding {
    if x.size == y.size && !x.bundle && !y.bundle {
        let (a, b) = if x.stored_ms <= y.stored_ms {
            (x, y)
        } else {
            (y, x)
        };
        return Finding {
            status: Status::Forked,
            why: format!(
                "{} and {} are both signed by the project's key for size {} with different roots: two histories of this chain were signed",
                a.what(), b.what(), a.size
            ),
            objects: vec![a.key.to_string(), b.key.to_string()],
        };
    }
    let why = if y.stored_ms >= x.stored_ms {
        format!(
            "{} does not begin with {}: some of the first {} entries were changed after the store had received them",
            y.what(),
            x.what(),
            x.size
        )
    } else {
        format!(
            "{} is not a prefix of {}, which the store received earlier: the chain was rewritten after it had reached {} entries",
            x.what(),
            y.what(),
            y.size
        )
    };
    Finding {
        status: Status::Rewritten,
        why,
        objects: vec![x.key.to_string(), y.key.to_string()],
    }
}

/// Step 4: the closing bundle against the checkpoints. Returns the chain's status when no
/// finding is worse, and its sentence.
fn closing(
    commitments: &[Commitment<'_>],
    now_ms: u64,
    times_trusted: bool,
    findings: &mut Vec<Finding>,
) -> Finding {
    let checkpoints: Vec<&Commitment> = commitments.iter().filter(|c| !c.bundle).collect();
    let bundles = commitments.iter().filter(|c| c.bundle);
    let last = bundles.clone().max_by_key(|b| (b.size, b.stored_ms));
    let mut went_on = None;
    for b in bundles {
        let is_last = last.is_some_and(|l| std::ptr::eq(l, b));
        for c in checkpoints.iter().filter(|c| c.size > b.size) {
            if !times_trusted {
                // Before or after the end is told by the store's times alone, and these are
                // the shipping machine's (a `file://` store): either way is a claim.
                findings.push(Finding {
                    status: Status::Unverifiable,
                    why: format!(
                        "{} is longer than the closing {}, and this store's times are set by the machines that ship to it, so whether the chain went on after its end or was cut off cannot be told; audit a store whose server sets the times (S3)",
                        c.what(),
                        b.what()
                    ),
                    objects: vec![b.key.to_string(), c.key.to_string()],
                });
                continue;
            }
            // A tie in store time counts as before for the closing bundle: the store did not
            // receive the longer history after the end, so the end does not reach it.
            let before = c.stored_ms < b.stored_ms || (is_last && c.stored_ms == b.stored_ms);
            if before {
                findings.push(Finding {
                    status: Status::Truncated,
                    why: format!(
                        "the closing {} ends before {}, which the store received {}: entries {} to {} were cut off after they were shipped",
                        b.what(),
                        c.what(),
                        if c.stored_ms == b.stored_ms { "at the same time" } else { "earlier" },
                        b.size,
                        c.size - 1
                    ),
                    objects: vec![b.key.to_string(), c.key.to_string()],
                });
            } else if is_last && went_on.is_none_or(|w: &Commitment| w.size < c.size) {
                went_on = Some(*c);
            }
        }
    }
    match (last, went_on) {
        (Some(b), Some(c)) => Finding {
            status: Status::Open,
            why: format!(
                "the chain went on after its {}: {}, {} ago, is not covered by a bundle yet",
                b.what(),
                c.what(),
                age(now_ms.saturating_sub(c.stored_ms))
            ),
            objects: vec![b.key.to_string(), c.key.to_string()],
        },
        (Some(b), None) => Finding {
            status: Status::Complete,
            why: format!(
                "{} verifies under the pinned key and extends all {} checkpoint(s) shipped",
                b.what(),
                checkpoints.len()
            ),
            objects: vec![b.key.to_string()],
        },
        (None, _) => open_without_bundle(&checkpoints, now_ms),
    }
}

fn open_without_bundle(checkpoints: &[&Commitment<'_>], now_ms: u64) -> Finding {
    let last = checkpoints.iter().max_by_key(|c| (c.stored_ms, c.size));
    match last {
        Some(c) => Finding {
            status: Status::Open,
            why: format!(
                "no closing bundle yet; the last is {}, {} ago (a session still running, abandoned, or deleted on its machine looks the same in the store)",
                c.what(),
                age(now_ms.saturating_sub(c.stored_ms)),
            ),
            objects: vec![c.key.to_string()],
        },
        None => Finding {
            status: Status::Unverifiable,
            why: "the store holds no checkpoint or bundle of this chain that verifies".into(),
            objects: Vec::new(),
        },
    }
}

/// `12 s`, `5 min`, `3 h`, `2 d`.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

/// The report: the worst finding decides, the base status when none is worse.
fn finish(
    chain: &ChainObjects,
    commitments: &[Commitment<'_>],
    base: Finding,
    mut findings: Vec<Finding>,
) -> ChainReport {
    findings.push(base);
    // Stable: of equally bad findings, the first found (the earliest object) comes first.
    findings.sort_by_key(|f| std::cmp::Reverse(f.status));
    findings.dedup();
    let verified = |size: u64, root: &Hash, bundle: bool| {
        commitments
            .iter()
            .any(|c| c.bundle == bundle && c.size == size && c.root == *root)
    };
    let mut checkpoints = Vec::new();
    let mut bundle: Option<CheckpointView> = None;
    for o in &chain.objects {
        let view = |size, root: Hash, bundle| CheckpointView {
            size,
            root: hex(&root),
            stored: rfc3339_ms(o.stored_ms),
            verified: verified(size, &root, bundle),
        };
        match names::parse(&o.key).and_then(|k| k.kind) {
            Some(Kind::Checkpoint { size, root }) => checkpoints.push(view(size, root, false)),
            Some(Kind::Bundle { size, root }) => {
                let v = view(size, root, true);
                let better = bundle
                    .as_ref()
                    .is_none_or(|b| (v.verified, v.size) > (b.verified, b.size));
                if better {
                    bundle = Some(v);
                }
            }
            _ => {}
        }
    }
    checkpoints.sort_by(|a, b| (a.size, &a.stored).cmp(&(b.size, &b.stored)));
    ChainReport {
        chain_id: chain.chain_id.clone(),
        status: findings[0].status,
        why: findings[0].why.clone(),
        checkpoints,
        bundle,
        findings,
        last_stored_ms: chain.objects.iter().map(|o| o.stored_ms).max().unwrap_or(0),
    }
}
