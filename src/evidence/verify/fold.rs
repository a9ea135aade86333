//! The streaming pass's step per entry ([`super::stream`]): every check of steps (3) to (10)
//! applied to one entry, with the state they carry across entries kept small (the previous
//! hash, a tree frontier, each node's authority and agent, the call ids used, and the allows
//! still waiting for their outcome).
//!
//! The pass only ever answers "clean": [`Fold::entry`] returns false on anything a check would
//! report, and on anything it does not handle (a kill, a second root, a non-string call id, a
//! float `seq`...), and the caller then runs the full verifier for the verdict. Where a step has
//! a per-entry rule, the fold calls it (with a scratch log: anything logged ends the pass);
//! what is left here is the state the steps keep across entries, held small, and the shapes the
//! fold declines, so each rule is the full verifier's own or a stricter one, never a looser one.

use super::authority::Authority;
use super::binding::{self, AllowSide, Tally};
use super::json::{event_of, get, is_lower_hex, truthy};
use super::records::{check_allow, check_deny, check_outcome, known_policy};
use super::report::{CallSummary, Counts, OpenCall};
use super::status::Binding;
use super::{containment, fields, policy, Log, Obj, Value};
use crate::evidence::checkpoint::leaf_of_hash;
use crate::json::{exact_tree, strict, tree};
use crate::ledger::chain::{self, GENESIS};
use crate::ledger::fields::{event, field};
use crate::tlog::{self, Frontier, Hash};
use serde_json::Number;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// An entry parsed, every check that reads it alone passed, its own hash (over its own
/// `prev_hash`) and its leaf in the tree.
pub(super) struct Prepared<'a> {
    value: tree::Json<'a>,
    own: String,
    leaf: Hash,
}

/// Parses one entry's text as the full reader does, runs the checks that need no other entry,
/// and hashes it; `None` when any of that fails. Independent of the other entries, so run on
/// every core.
pub(super) fn prepare(text: &[u8]) -> Option<Prepared<'_>> {
    // Export copies the ledger's lines verbatim, so an entry is mostly in exact canonical
    // form already: then one pass reads it, and its hash is over its own bytes.
    if let Some((layout, value)) = exact_tree::read(text) {
        let prev = value.as_object()?.get(field::PREV_HASH)?.as_str()?;
        let digest = layout.digest_over(text, prev)?;
        return checked(value, chain::hex(&digest), tlog::leaf_hash(&digest));
    }
    let parsed = strict::parse_one(std::str::from_utf8(text).ok()?).ok()?;
    if parsed.duplicate.is_some() {
        return None;
    }
    let own = tree::own_hash(&parsed.value)?;
    let leaf = leaf_of_hash(&own)?;
    checked(parsed.value, own, leaf)
}

/// The entry with its hash and leaf, once the checks that read it alone passed.
fn checked<'a>(value: tree::Json<'a>, own: String, leaf: Hash) -> Option<Prepared<'a>> {
    if !alone(value.as_object()?) {
        return None;
    }
    Some(Prepared { value, own, leaf })
}

/// Steps (1), (3), (4), the v2 policy rule and the record rules of step (10): a known event
/// and fields, version 2, a string chain id and node id, a well-formed allow, deny or outcome.
fn alone(e: &Obj<'_>) -> bool {
    let mut scratch = Log::new(&[]);
    if !fields::known_event(e, Some(2), 0, &mut scratch)
        || !fields::known_fields(e, 0, &mut scratch)
    {
        return false;
    }
    if !matches!(e.get(field::V), Some(Value::Number(n)) if n.as_u64() == Some(2)) {
        return false;
    }
    if !e.get(field::CHAIN_ID).is_some_and(Value::is_string) {
        return false;
    }
    if !fields::node_id(e, 0, &mut scratch) || !policy::entry(e, Some(2), 0, &mut scratch) {
        return false;
    }
    let ev = event_of(e);
    // A recorded sealed state loss is a notice, which only the full verifier reports.
    let context = e.get(field::CONTEXT).and_then(Value::as_object);
    if context.is_some_and(|c| c.contains_key(crate::ledger::store::CHECKPOINT_LOST)) {
        return false;
    }
    match ev {
        Some(event::ALLOW) => check_allow(e).is_ok(),
        Some(event::DENY) => check_deny(e).is_ok(),
        Some(event::OUTCOME) => check_outcome(e).is_ok(),
        _ => true,
    }
}

/// An allow waiting for its outcome: what binding compares ([`binding::bind_one`]) and what the
/// report shows of it if none comes ([`binding::open_call`]; its agent is filled in then).
struct Waiting {
    open: OpenCall,
    /// `authorized_params_hash`, when present and not null (a string: the record rules hold).
    authorized: Option<String>,
    authorized_truthy: bool,
}

/// What the pass carries from one entry to the next.
pub(super) struct Fold {
    pub(super) count: usize,
    prev_hash: String,
    pub(super) tree: Frontier,
    /// The first entry's `chain_id`; every entry names the same one.
    pub(super) chain_id: Option<String>,
    /// What the root recorded of who and where.
    pub(super) recorded: Option<crate::trust::identity::Recorded>,
    authorities: HashMap<String, Authority>,
    /// Nodes in the order they were defined, and each one's agent as its definition names it.
    nodes: Vec<String>,
    agents: HashMap<String, String>,
    finalized: HashSet<String>,
    /// Every call id an allow or deny used: 32 lowercase hex digits as their 16 bytes, any
    /// other string as its SHA-256 (a repeat, or a collision, ends the pass).
    seen_hex: Vec<u128>,
    seen: Vec<[u8; 32]>,
    waiting: HashMap<String, Waiting>,
    actions: usize,
    ungated: usize,
    denied: usize,
    refused_by_claude_code: usize,
    /// The allows already bound to their outcome.
    tally: Tally,
}

impl Fold {
    pub(super) fn new() -> Self {
        Fold {
            count: 0,
            prev_hash: GENESIS.to_string(),
            tree: Frontier::new(),
            chain_id: None,
            recorded: None,
            authorities: HashMap::new(),
            nodes: Vec::new(),
            agents: HashMap::new(),
            finalized: HashSet::new(),
            seen_hex: Vec::new(),
            seen: Vec::new(),
            waiting: HashMap::new(),
            actions: 0,
            ungated: 0,
            denied: 0,
            refused_by_claude_code: 0,
            tally: Tally::default(),
        }
    }

    /// The next entry as [`prepare`] read it; false when the pass must give up.
    pub(super) fn entry(&mut self, prepared: Option<&Prepared<'_>>) -> bool {
        let Some(p) = prepared else {
            return false;
        };
        let Some(e) = p.value.as_object() else {
            return false;
        };
        let i = self.count;
        let ok = self.same_chain(e) && self.link(e, &p.own, p.leaf, i) && self.event(e, i);
        self.count += 1;
        ok
    }

    /// Step (5): every entry names the first one's chain.
    fn same_chain(&mut self, e: &Obj<'_>) -> bool {
        let Some(chain_id) = e.get(field::CHAIN_ID).and_then(Value::as_str) else {
            return false;
        };
        match &self.chain_id {
            Some(c) => c == chain_id,
            None => {
                self.chain_id = Some(chain_id.to_string());
                true
            }
        }
    }

    /// Step (6): seq is the position, prev_hash the previous hash, hash the entry's own; and
    /// the entry's leaf for the tree checkpoint.
    fn link(&mut self, e: &Obj<'_>, own: &str, leaf: Hash, i: usize) -> bool {
        let seq = match e.get(field::SEQ) {
            // Integers only (`1.0` is left to the full verifier).
            Some(Value::Number(n)) if n.as_u64().is_some() => n,
            _ => return false,
        };
        let links = chain::Links {
            seq: Some(seq),
            prev_hash: e.get(field::PREV_HASH).and_then(Value::as_str),
            hash: e.get(field::HASH).and_then(Value::as_str),
        };
        if links.follow(i, &self.prev_hash, Some(own)).is_err() {
            return false;
        }
        self.tree.append(leaf);
        // Into the same buffer: `own` belongs to the thread that prepared it.
        self.prev_hash.clear();
        self.prev_hash.push_str(own);
        true
    }

    /// Steps (7) to (10) for the entry's event.
    fn event(&mut self, e: &Obj<'_>, i: usize) -> bool {
        match event_of(e) {
            Some(event::ROOT) => i == 0 && self.root(e),
            Some(event::SPAWN) => self.spawn(e),
            Some(event::ALLOW) => self.allow(e, i),
            Some(event::DENY) => {
                self.denied += 1;
                self.refused_by_claude_code += usize::from(super::containment::by_claude_code(e));
                self.call_id_unused(e.get(field::CALL_ID))
            }
            Some(event::OUTCOME) => self.outcome(e),
            Some(event::DONE) => {
                if let Some(n) = e.get(field::NODE).and_then(Value::as_str) {
                    self.finalized.insert(n.to_string());
                }
                true
            }
            Some(event::SPAWN_DENIED) => true,
            // A kill revokes a node for the checks after it: left to the full verifier.
            _ => false,
        }
    }

    fn root(&mut self, e: &Obj<'_>) -> bool {
        self.recorded = super::recorded_by(e);
        binding::salt_ok(e) && self.define(e, field::AUTHORITY, None)
    }

    /// A spawn names an earlier node as its parent, and is granted no more than it holds.
    fn spawn(&mut self, e: &Obj<'_>) -> bool {
        let Some(parent) = e.get(field::PARENT).and_then(Value::as_str) else {
            return false;
        };
        if !self.authorities.contains_key(parent) {
            return false;
        }
        self.define(e, field::GRANTED, Some(parent.to_string()))
    }

    /// A root or spawn defines a node not defined before, with a readable authority.
    fn define(&mut self, e: &Obj<'_>, member: &'static str, parent: Option<String>) -> bool {
        let Some(node) = e.get(field::NODE).and_then(Value::as_str) else {
            return false;
        };
        if self.authorities.contains_key(node) {
            return false;
        }
        let Ok(a) = Authority::from_wire(e.get(member), member) else {
            return false;
        };
        if let Some(p) = parent {
            if a.narrower_than(&self.authorities[&p]).is_err() {
                return false;
            }
        }
        self.authorities.insert(node.to_string(), a);
        self.nodes.push(node.to_string());
        if let Some(agent) = e.get(field::AGENT).and_then(Value::as_str) {
            self.agents.insert(node.to_string(), agent.to_string());
        }
        true
    }

    /// Notes a call id, which must be used by no other allow or deny (absent is none; only
    /// strings are handled). Repeats are looked for once, at the end ([`Fold::ids_unique`]):
    /// sorting a list costs less than a hash set's insert per entry, and holds half the memory.
    fn call_id_unused(&mut self, cid: Option<&Value<'_>>) -> bool {
        match cid {
            None => true,
            Some(Value::String(s)) if is_lower_hex(s, 32) => match u128::from_str_radix(s, 16) {
                Ok(n) => {
                    self.seen_hex.push(n);
                    true
                }
                Err(_) => false,
            },
            Some(Value::String(s)) => {
                self.seen.push(Sha256::digest(s.as_bytes()).into());
                true
            }
            Some(_) => false,
        }
    }

    /// No call id was used twice (nor two of other forms share a SHA-256).
    pub(super) fn ids_unique(&mut self) -> bool {
        self.seen_hex.sort_unstable();
        self.seen.sort_unstable();
        !self.seen_hex.windows(2).any(|w| w[0] == w[1])
            && !self.seen.windows(2).any(|w| w[0] == w[1])
    }

    /// Containment, then the allow's record and call id; it then waits for its outcome.
    fn allow(&mut self, e: &Obj<'_>, i: usize) -> bool {
        let Some(node) = e.get(field::NODE).and_then(Value::as_str) else {
            return false;
        };
        if known_policy(e.get(field::POLICY)) {
            self.ungated += 1;
        } else {
            self.actions += 1;
            let Some(a) = self.authorities.get(node) else {
                return false;
            };
            if containment::action_within(e, a).is_err() {
                return false;
            }
        }
        let Some(cid) = e.get(field::CALL_ID).and_then(Value::as_str) else {
            return false;
        };
        if !self.call_id_unused(e.get(field::CALL_ID)) {
            return false;
        }
        self.waiting.insert(
            cid.to_string(),
            Waiting {
                open: binding::open_call(cid, e, i, None),
                authorized: get(e, field::AUTHORIZED_PARAMS_HASH)
                    .and_then(Value::as_str)
                    .map(str::to_string),
                authorized_truthy: truthy(e.get(field::AUTHORIZED_PARAMS_HASH)),
            },
        );
        true
    }

    /// An outcome ends a waiting allow: on its node, after it, with the arguments it allowed
    /// ([`binding::bind_one`], which must log nothing).
    fn outcome(&mut self, e: &Obj<'_>) -> bool {
        let Some(cid) = e.get(field::CALL_ID).and_then(Value::as_str) else {
            return false;
        };
        // No allow waiting: none, or one already ended, or a later one; all are failures.
        let Some(al) = self.waiting.remove(cid) else {
            return false;
        };
        let node = al
            .open
            .node
            .as_deref()
            .map(|n| Value::String(Cow::Borrowed(n)));
        let seq = Value::Number(Number::from(al.open.index));
        let authorized = al.authorized.as_deref().map(|a| Value::String(a.into()));
        let side = AllowSide {
            node: node.as_ref(),
            seq: Some(&seq),
            authorized: authorized.as_ref(),
        };
        let mut scratch = Log::new(&[]);
        if !binding::bind_one(cid, &side, al.open.index, e, self.count, &mut scratch)
            || !scratch.failures.is_empty()
        {
            return false;
        }
        self.tally
            .observed(al.authorized_truthy && truthy(e.get(field::INVOKED_PARAMS_HASH)));
        true
    }

    /// How many nodes, allows measured, allows ungated and denials.
    pub(super) fn counts(&self) -> Counts {
        Counts {
            nodes: self.authorities.len(),
            actions_checked: self.actions,
            ungated: self.ungated,
            denied: self.denied,
            refused_by_claude_code: self.refused_by_claude_code,
        }
    }

    /// Execution binding's level and the calls, as [`super::binding`] reports them; `None`
    /// when the level is `failed` (the full verifier then says why).
    pub(super) fn calls(&mut self) -> Option<(Binding, CallSummary)> {
        let mut open: Vec<Waiting> = self.waiting.drain().map(|(_, w)| w).collect();
        open.sort_by_key(|w| w.open.index);
        let mut tally = std::mem::take(&mut self.tally);
        for w in open {
            let mut call = w.open;
            call.agent = call.node.as_ref().and_then(|n| self.agents.get(n)).cloned();
            // An open call's outcome never came, so it cannot carry both commitments.
            tally.open(call, false);
        }
        let summary = tally.finish();
        // No node is revoked here (a kill ends the pass).
        match binding::level(
            &self.nodes,
            |n| self.finalized.contains(n),
            |_| false,
            &summary,
            false,
        ) {
            Binding::Failed => None,
            level => Some((level, summary)),
        }
    }
}
