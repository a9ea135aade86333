//! Step (10): execution binding (schema version 2). Call ids, the allow/deny/outcome record
//! rules ([`super::records`]), one outcome per call, bound to its allow on the same node,
//! after it, with matching argument commitments; each allowed call is reported observed,
//! unobserved or unaccounted.

use super::json::{event_of, get, is_lower_hex, is_number, json_eq, note_revoked, num_f64};
use super::json::{seq_value, truthy, value_eq};
use super::records::{check_allow, check_deny, check_outcome, Record};
use super::report::{CallSummary, Failure, OpenCall};
use super::shown::{seq_text, shown, shown_opt, shown_str};
use super::{version, Bundle, FailureName, Log, Obj, Value, PARALLEL_FROM};
use crate::json::canonical;
use std::collections::{HashMap, HashSet};
use std::thread::{Scope, ScopedJoinHandle};

/// The binding level (`clean`, `incomplete`, `failed` or `not applicable`) and the calls.
pub(super) type Binding = (&'static str, CallSummary);

/// Execution binding running on its own thread, with the failures it logged.
pub(super) type Early<'scope> = ScopedJoinHandle<'scope, (Binding, Vec<Failure>)>;

/// Execution binding reads the entries only and logs into its own list, so on a long chain it
/// runs beside steps (1) to (9); [`check`] puts its findings back where step (10) reports them,
/// so the report is the one a single thread writes. It starts before the versions are judged,
/// and its result is dropped when they are found unsound.
pub(super) fn start_early<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    bundle: &'env Bundle<'env>,
) -> Option<Early<'scope>> {
    (bundle.v == Some(2) && bundle.entries.len() >= PARALLEL_FROM).then(|| {
        let entries = &bundle.entries;
        scope.spawn(move || {
            let mut own = Log::new(entries);
            let result = execution_binding(entries, &mut own);
            (result, own.failures)
        })
    })
}

/// Step (10), only when the versions are sound: on a version 1 chain, that no entry carries a
/// version 2 field; on a version 2 chain, execution binding (joined from [`start_early`] when
/// it ran there).
pub(super) fn check(
    bundle: &Bundle<'_>,
    version_ok: bool,
    early: Option<Early<'_>>,
    log: &mut Log<'_>,
) -> Binding {
    if !version_ok {
        return not_applicable();
    }
    if bundle.v == Some(1) {
        version::v2_fields_on_v1(bundle, log);
        return not_applicable();
    }
    if let Some(h) = early {
        let (result, failures) = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        log.failures.extend(failures);
        return result;
    }
    execution_binding(&bundle.entries, log)
}

pub(super) fn not_applicable() -> Binding {
    (
        "not applicable",
        CallSummary {
            params_coverage: "none",
            ..CallSummary::default()
        },
    )
}

/// How `duplicate-call-id` compares call ids: a string, a number (by value) or a boolean;
/// anything else is compared by nothing (its record check reports it).
/// A call id as the reference keys it: strings, booleans and numbers are distinct kinds, and a
/// number is keyed by its canonical form (so 1 and 1.0 are one id).
#[derive(PartialEq, Eq, Hash)]
enum CallKey<'a> {
    Str(&'a str),
    Bool(bool),
    Num(String),
}

fn call_id_key<'a>(v: Option<&'a Value<'a>>) -> Option<CallKey<'a>> {
    match v? {
        Value::String(s) => Some(CallKey::Str(s)),
        Value::Bool(b) => Some(CallKey::Bool(*b)),
        Value::Number(n) => Some(CallKey::Num(
            match canonical::to_string(&serde_json::Value::Number(n.clone())) {
                Ok(c) => c,
                Err(_) => n.to_string(),
            },
        )),
        _ => None,
    }
}

/// An insertion-ordered map (a Python dict): re-inserting a key keeps its first position.
/// Keys borrow from the entries, which outlive it.
#[derive(Default)]
struct Ordered<'a, V> {
    order: Vec<&'a str>,
    map: HashMap<&'a str, V>,
}

impl<'a, V> Ordered<'a, V> {
    fn insert(&mut self, k: &'a str, v: V) {
        if self.map.insert(k, v).is_none() {
            self.order.push(k);
        }
    }
    fn get(&self, k: &str) -> Option<&V> {
        self.map.get(k)
    }
    fn iter(&self) -> impl Iterator<Item = (&'a str, &V)> + '_ {
        self.order.iter().map(|k| (*k, &self.map[k]))
    }
}

/// One walk over the entries (call ids, record rules, one outcome per call), then each outcome
/// bound to its allow, then each allowed call's state, then the level (`failed` as soon as
/// anything here was logged).
fn execution_binding<'a>(entries: &[Option<&'a Obj<'a>>], log: &mut Log<'_>) -> Binding {
    let before = log.len();
    let mut walk = Walk::default();
    for (i, e) in entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.map(|e| (i, e)))
    {
        let ev = event_of(e);
        walk.node_event(e, ev, i, log);
        walk.call_event(entries, e, ev, i, log);
    }
    let bound_ok = walk.bind_outcomes(entries, log);
    let (summary, pending) = walk.summarize(entries, &bound_ok);
    let level = walk.level(log.len() > before, &summary, &pending);
    (["clean", "incomplete", "failed"][level as usize], summary)
}

/// What one walk over the ledger collects. Keys borrow from the entries.
#[derive(Default)]
struct Walk<'a> {
    /// Every call id an allow or deny used, and where first.
    seen: HashMap<CallKey<'a>, usize>,
    /// Valid allows and outcomes by call id, in ledger order.
    allows: Ordered<'a, usize>,
    outcomes: Ordered<'a, usize>,
    invalid_allow_ids: HashSet<&'a str>,
    /// Nodes defined by a root or spawn, in ledger order.
    nodes: Vec<&'a str>,
    /// Nodes with a `done`.
    finalized: HashSet<&'a str>,
    revoked: HashMap<String, usize>,
    /// Each node's `agent`, as its first root or spawn names it (allows do not carry it).
    agents: HashMap<&'a str, &'a str>,
}

impl<'a> Walk<'a> {
    /// Roots, spawns, dones and kills: the nodes, and the root's salt and kill's pending list.
    fn node_event(&mut self, e: &'a Obj<'a>, ev: Option<&str>, i: usize, log: &mut Log<'_>) {
        let node = e.get("node").and_then(Value::as_str);
        match ev {
            Some("root") => {
                self.define(e, node);
                let salt_ok = e
                    .get("params_salt")
                    .and_then(Value::as_str)
                    .is_some_and(|s| is_lower_hex(s, 32));
                if !salt_ok {
                    log.at(
                        FailureName::InvalidParamsSalt,
                        i,
                        format!(
                            "the v2 root's params_salt {} is not 32 lowercase hex characters; every argument commitment \
                             of the chain is salted with it",
                            shown_opt(e.get("params_salt"))
                        ),
                    );
                }
            }
            Some("spawn") => self.define(e, node),
            Some("done") => {
                if let Some(n) = node {
                    self.finalized.insert(n);
                }
            }
            Some("kill") => {
                note_revoked(e, i, &mut self.revoked);
                let ok = match e.get("pending_at_kill") {
                    None => true,
                    Some(Value::Array(list)) => list
                        .iter()
                        .all(|c| c.as_str().is_some_and(|c| is_lower_hex(c, 32))),
                    Some(_) => false,
                };
                if !ok {
                    log.at(
                        FailureName::InvalidPendingAtKill,
                        i,
                        format!(
                            "pending_at_kill {} is not a list of call ids",
                            shown_opt(e.get("pending_at_kill"))
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    fn define(&mut self, e: &'a Obj<'a>, node: Option<&'a str>) {
        if let Some(n) = node {
            if !self.nodes.contains(&n) {
                self.nodes.push(n);
            }
            if let Some(agent) = e.get("agent").and_then(Value::as_str) {
                self.agents.entry(n).or_insert(agent);
            }
        }
    }

    /// Allows, denies and outcomes: call ids, the record rules, one outcome per call.
    fn call_event(
        &mut self,
        entries: &[Option<&'a Obj<'a>>],
        e: &'a Obj<'a>,
        ev: Option<&str>,
        i: usize,
        log: &mut Log<'_>,
    ) {
        match ev {
            Some(evs @ ("allow" | "deny")) => self.authorization(entries, e, evs, i, log),
            Some("outcome") => self.outcome(e, i, log),
            _ => {}
        }
    }

    fn authorization(
        &mut self,
        entries: &[Option<&'a Obj<'a>>],
        e: &'a Obj<'a>,
        evs: &str,
        i: usize,
        log: &mut Log<'_>,
    ) {
        let cid = e.get("call_id");
        if let Some(k) = call_id_key(cid) {
            if let Some(&prior) = self.seen.get(&k) {
                let prior_e = entries[prior].expect("an object");
                log.at(
                    FailureName::DuplicateCallId,
                    i,
                    format!(
                        "call_id {} on this {evs} was already used by the {} at entry {prior}; a call id binds one \
                         authorization to one invocation, so the binding is ambiguous",
                        shown_opt(cid),
                        shown_opt(prior_e.get("event"))
                    ),
                );
            } else {
                self.seen.insert(k, i);
            }
        }
        if evs == "deny" {
            if let Err(p) = check_deny(e) {
                invalid_record(&p, evs, i, log);
            }
            return;
        }
        let valid = match check_allow(e) {
            Ok(()) => true,
            Err(p) => {
                invalid_record(&p, evs, i, log);
                false
            }
        };
        if let Some(c) = cid.and_then(Value::as_str) {
            if valid {
                self.allows.insert(c, i);
            } else {
                self.invalid_allow_ids.insert(c);
            }
        }
    }

    fn outcome(&mut self, e: &'a Obj<'a>, i: usize, log: &mut Log<'_>) {
        if let Err(p) = check_outcome(e) {
            invalid_record(&p, "outcome", i, log);
            return;
        }
        let cid = e.get("call_id").and_then(Value::as_str).expect("validated");
        if let Some(&first) = self.outcomes.get(cid) {
            log.at(
                FailureName::DuplicateOutcome,
                i,
                format!(
                    "call {} already has an outcome at entry {first}; a call ends once (a second outcome is a \
                     replayed or double-counted record)",
                    shown_str(cid)
                ),
            );
            return;
        }
        self.outcomes.insert(cid, i);
    }

    /// Binds each outcome to its allow; returns the calls whose outcome is on the allow's node
    /// and after it.
    fn bind_outcomes(
        &self,
        entries: &[Option<&'a Obj<'a>>],
        log: &mut Log<'_>,
    ) -> HashSet<&'a str> {
        let mut bound_ok: HashSet<&str> = HashSet::new();
        for (cid, &oi) in self.outcomes.iter() {
            let oc = entries[oi].expect("an object");
            let Some(&ai) = self.allows.get(cid) else {
                log.at(
                    FailureName::OutcomeWithoutAllow,
                    oi,
                    format!("the outcome of call {} has no valid allow in this chain: a call ran under no authorization on record", shown_str(cid)),
                );
                continue;
            };
            let al = entries[ai].expect("an object");
            if bind_one(cid, al, ai, oc, oi, log) {
                bound_ok.insert(cid);
            }
        }
        bound_ok
    }

    /// Each valid allow: observed, unobserved or unaccounted; and the unaccounted calls of
    /// each node.
    fn summarize(
        &self,
        entries: &[Option<&'a Obj<'a>>],
        bound_ok: &HashSet<&str>,
    ) -> (CallSummary, HashMap<Option<&'a str>, usize>) {
        let mut summary = CallSummary::default();
        let mut pending: HashMap<Option<&str>, usize> = HashMap::new();
        let (mut total, mut both) = (0usize, 0usize);
        for (cid, &ai) in self.allows.iter() {
            if self.invalid_allow_ids.contains(cid) {
                continue;
            }
            let al = entries[ai].expect("an object");
            total += 1;
            if truthy(al.get("authorized_params_hash"))
                && self.outcomes.get(cid).is_some_and(|&oi| {
                    truthy(entries[oi].expect("an object").get("invoked_params_hash"))
                })
            {
                both += 1;
            }
            if bound_ok.contains(cid) {
                summary.observed += 1;
                continue;
            }
            let capture = get(al, "capture");
            let state =
                if capture.is_none() || capture.and_then(Value::as_str) == Some("pre_hook_only") {
                    summary.unobserved += 1;
                    "unobserved"
                } else {
                    summary.unaccounted += 1;
                    *pending
                        .entry(al.get("node").and_then(Value::as_str))
                        .or_default() += 1;
                    "unaccounted"
                };
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
            summary.open.push(OpenCall {
                call_id: cid.to_string(),
                state,
                node: text(al.get("node")),
                tool: text(al.get("tool")),
                agent: al
                    .get("node")
                    .and_then(Value::as_str)
                    .and_then(|n| self.agents.get(n))
                    .map(|a| a.to_string()),
                tool_use_id: text(
                    al.get("context")
                        .and_then(Value::as_object)
                        .and_then(|c| c.get("tool_use_id")),
                ),
                index: ai,
                seq: seq_value(al.get("seq")),
            });
        }
        summary.params_coverage = if total == 0 || both == 0 {
            "none"
        } else if both == total {
            "complete"
        } else {
            "partial"
        };
        (summary, pending)
    }

    /// The aggregate level: 0 clean < 1 incomplete < 2 failed.
    fn level(
        &self,
        logged: bool,
        summary: &CallSummary,
        pending: &HashMap<Option<&str>, usize>,
    ) -> u8 {
        let mut level = 0u8;
        if logged {
            level = 2;
        }
        for n in &self.nodes {
            let has_pending = pending.get(&Some(*n)).is_some_and(|c| *c > 0);
            if self.finalized.contains(n) {
                if has_pending {
                    level = level.max(2);
                }
            } else if !self.revoked.contains_key(*n) || has_pending {
                level = level.max(1);
            }
        }
        if summary.unobserved > 0 {
            level = level.max(1);
        }
        level
    }
}

fn invalid_record(p: &impl Record, event: &str, i: usize, log: &mut Log<'_>) {
    log.at(p.name(), i, format!("invalid {event} record: {p}"));
}

/// The outcome at `oi` against its allow at `ai`: the same node, after it, with the same
/// argument commitment. True when node and order hold (a params mismatch is logged only).
fn bind_one(
    cid: &str,
    al: &Obj<'_>,
    ai: usize,
    oc: &Obj<'_>,
    oi: usize,
    log: &mut Log<'_>,
) -> bool {
    let node_ok = json_eq(al.get("node"), oc.get("node"));
    if !node_ok {
        log.at(
            FailureName::OutcomeOnOtherNode,
            oi,
            format!(
                "call {} was allowed on node {} (entry {ai}) but its outcome is recorded on node {}",
                shown_str(cid),
                shown_opt(al.get("node")),
                shown_opt(oc.get("node"))
            ),
        );
    }
    let order_ok = match (num_f64(oc.get("seq")), num_f64(al.get("seq"))) {
        (Some(o), Some(a)) => is_number(oc.get("seq")) && o > a,
        _ => false,
    };
    if !order_ok {
        log.at(
            FailureName::OutcomeBeforeAllow,
            oi,
            format!(
                "the outcome of call {} (seq {}) is not after its allow (entry {ai}, seq {}): it was reported \
                 finished before it was authorized",
                shown_str(cid),
                seq_text(oc),
                seq_text(al)
            ),
        );
    }
    if let (Some(ah), Some(ih)) = (
        get(al, "authorized_params_hash"),
        get(oc, "invoked_params_hash"),
    ) {
        if !value_eq(ah, ih) {
            log.at(
                FailureName::ParamsMismatch,
                oi,
                format!(
                    "call {} ran with arguments {} but was authorized for {} (entry {ai}): the arguments were \
                     changed between authorization and invocation",
                    shown_str(cid),
                    shown(ih),
                    shown(ah)
                ),
            );
        }
    }
    node_ok && order_ok
}
