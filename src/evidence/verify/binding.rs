//! Step (10): execution binding (schema version 2). Call ids, the allow/deny/outcome record
//! rules ([`super::records`]), one outcome per call, bound to its allow on the same node,
//! after it, with matching argument commitments; each allowed call is reported observed,
//! unobserved or unaccounted.

use super::json::{event_of, get, is_lower_hex, is_number, json_eq, note_revoked, num_f64};
use super::json::{seq_value, truthy, value_eq};
use super::records::{check_allow, check_deny, check_outcome, Record};
use super::report::{CallSummary, Failure, OpenCall};
use super::shown::{seq_text, shown, shown_opt, shown_str};
use super::status::{Binding, CallState, ParamsCoverage};
use super::{version, Bundle, FailureName, Log, Obj, Value, PARALLEL_FROM};
use crate::json::canonical;
use crate::ledger::fields::{context, event, field};
use std::collections::{HashMap, HashSet};
use std::thread::{Scope, ScopedJoinHandle};

/// The binding level and the calls.
pub(super) type Bound = (Binding, CallSummary);

/// Execution binding running on its own thread, with the failures it logged.
pub(super) type Early<'scope> = ScopedJoinHandle<'scope, (Bound, Vec<Failure>)>;

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
) -> Bound {
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

pub(super) fn not_applicable() -> Bound {
    (Binding::NotApplicable, CallSummary::default())
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
fn execution_binding<'a>(entries: &[Option<&'a Obj<'a>>], log: &mut Log<'_>) -> Bound {
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
    let summary = walk.summarize(entries, &bound_ok);
    let level = level(
        &walk.nodes,
        |n| walk.finalized.contains(n),
        |n| walk.revoked.contains_key(n),
        &summary,
        log.len() > before,
    );
    (level, summary)
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
        let node = e.get(field::NODE).and_then(Value::as_str);
        match ev {
            Some(event::ROOT) => {
                self.define(e, node);
                if !salt_ok(e) {
                    log.at(
                        FailureName::InvalidParamsSalt,
                        i,
                        format!(
                            "the v2 root's params_salt {} is not 32 lowercase hex characters; every argument commitment \
                             of the chain is salted with it",
                            shown_opt(e.get(field::PARAMS_SALT))
                        ),
                    );
                }
            }
            Some(event::SPAWN) => self.define(e, node),
            Some(event::DONE) => {
                if let Some(n) = node {
                    self.finalized.insert(n);
                }
            }
            Some(event::KILL) => {
                note_revoked(e, i, &mut self.revoked);
                let ok = match e.get(field::PENDING_AT_KILL) {
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
                            shown_opt(e.get(field::PENDING_AT_KILL))
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
            if let Some(agent) = e.get(field::AGENT).and_then(Value::as_str) {
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
            Some(evs @ (event::ALLOW | event::DENY)) => self.authorization(entries, e, evs, i, log),
            Some(event::OUTCOME) => self.outcome(e, i, log),
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
        let cid = e.get(field::CALL_ID);
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
                        shown_opt(prior_e.get(field::EVENT))
                    ),
                );
            } else {
                self.seen.insert(k, i);
            }
        }
        if evs == event::DENY {
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
        let cid = e
            .get(field::CALL_ID)
            .and_then(Value::as_str)
            .expect("validated");
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
            let al = AllowSide::of(entries[ai].expect("an object"));
            if bind_one(cid, &al, ai, oc, oi, log) {
                bound_ok.insert(cid);
            }
        }
        bound_ok
    }

    /// Each valid allow: observed, unobserved or unaccounted.
    fn summarize(&self, entries: &[Option<&'a Obj<'a>>], bound_ok: &HashSet<&str>) -> CallSummary {
        let mut tally = Tally::default();
        for (cid, &ai) in self.allows.iter() {
            if self.invalid_allow_ids.contains(cid) {
                continue;
            }
            let al = entries[ai].expect("an object");
            let both = truthy(al.get(field::AUTHORIZED_PARAMS_HASH))
                && self.outcomes.get(cid).is_some_and(|&oi| {
                    truthy(
                        entries[oi]
                            .expect("an object")
                            .get(field::INVOKED_PARAMS_HASH),
                    )
                });
            if bound_ok.contains(cid) {
                tally.observed(both);
                continue;
            }
            let agent = al
                .get(field::NODE)
                .and_then(Value::as_str)
                .and_then(|n| self.agents.get(n))
                .map(|a| a.to_string());
            tally.open(open_call(cid, al, ai, agent), both);
        }
        tally.finish()
    }
}

/// How an allowed call with no bound outcome is reported: `unobserved` when the allow
/// promised none (`capture` absent or `pre_hook_only`), else `unaccounted`.
pub(super) fn call_state(al: &Obj<'_>) -> CallState {
    let capture = get(al, field::CAPTURE);
    if capture.is_none() || capture.and_then(Value::as_str) == Some("pre_hook_only") {
        CallState::Unobserved
    } else {
        CallState::Unaccounted
    }
}

/// What the report shows of the allow at `index` if no outcome is bound to it: its call id,
/// node, tool and Claude Code's `tool_use_id`, and the node's `agent`.
pub(super) fn open_call(cid: &str, al: &Obj<'_>, index: usize, agent: Option<String>) -> OpenCall {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    OpenCall {
        call_id: cid.to_string(),
        state: call_state(al),
        node: text(al.get(field::NODE)),
        tool: text(al.get(field::TOOL)),
        agent,
        tool_use_id: text(
            al.get(field::CONTEXT)
                .and_then(Value::as_object)
                .and_then(|c| c.get(context::TOOL_USE_ID)),
        ),
        index,
        seq: seq_value(al.get(field::SEQ)),
    }
}

/// The calls counted as the report shows them: every valid allow once, observed or open (in
/// ledger order), and whether it carries both argument commitments.
#[derive(Default)]
pub(super) struct Tally {
    summary: CallSummary,
    allows: usize,
    both: usize,
}

impl Tally {
    pub(super) fn observed(&mut self, both: bool) {
        self.count(both);
        self.summary.observed += 1;
    }

    pub(super) fn open(&mut self, call: OpenCall, both: bool) {
        self.count(both);
        match call.state {
            CallState::Unobserved => self.summary.unobserved += 1,
            CallState::Unaccounted => self.summary.unaccounted += 1,
        }
        self.summary.open.push(call);
    }

    fn count(&mut self, both: bool) {
        self.allows += 1;
        self.both += usize::from(both);
    }

    pub(super) fn finish(mut self) -> CallSummary {
        self.summary.params_coverage = ParamsCoverage::of(self.allows, self.both);
        self.summary
    }
}

/// The aggregate level: `failed` when anything was `logged` or a finished node has an
/// unaccounted call; else `incomplete` when a call is unobserved, or a node (in definition
/// order) neither finished nor was revoked, or was revoked with a call unaccounted; else
/// `clean`.
pub(super) fn level(
    nodes: &[impl AsRef<str>],
    finalized: impl Fn(&str) -> bool,
    revoked: impl Fn(&str) -> bool,
    summary: &CallSummary,
    logged: bool,
) -> Binding {
    let pending: HashSet<&str> = summary
        .open
        .iter()
        .filter(|c| c.state == CallState::Unaccounted)
        .filter_map(|c| c.node.as_deref())
        .collect();
    let mut level = if logged {
        Binding::Failed
    } else if summary.unobserved > 0 {
        Binding::Incomplete
    } else {
        Binding::Clean
    };
    for n in nodes.iter().map(AsRef::as_ref) {
        let has_pending = pending.contains(n);
        if finalized(n) {
            if has_pending {
                level = Binding::Failed;
            }
        } else if (!revoked(n) || has_pending) && level == Binding::Clean {
            level = Binding::Incomplete;
        }
    }
    level
}

/// A v2 root's `params_salt` is 32 lowercase hex characters.
pub(super) fn salt_ok(root: &Obj<'_>) -> bool {
    root.get(field::PARAMS_SALT)
        .and_then(Value::as_str)
        .is_some_and(|s| is_lower_hex(s, 32))
}

fn invalid_record(p: &impl Record, event: &str, i: usize, log: &mut Log<'_>) {
    log.at(p.name(), i, format!("invalid {event} record: {p}"));
}

/// What an outcome is bound against: its allow's `node`, `seq` and `authorized_params_hash`.
pub(super) struct AllowSide<'v> {
    pub(super) node: Option<&'v Value<'v>>,
    pub(super) seq: Option<&'v Value<'v>>,
    /// Present and not null.
    pub(super) authorized: Option<&'v Value<'v>>,
}

impl<'v> AllowSide<'v> {
    pub(super) fn of(al: &'v Obj<'v>) -> Self {
        AllowSide {
            node: al.get(field::NODE),
            seq: al.get(field::SEQ),
            authorized: get(al, field::AUTHORIZED_PARAMS_HASH),
        }
    }
}

/// The outcome at `oi` against its allow at `ai`: the same node, after it, with the same
/// argument commitment. True when node and order hold (a params mismatch is logged only).
pub(super) fn bind_one(
    cid: &str,
    al: &AllowSide<'_>,
    ai: usize,
    oc: &Obj<'_>,
    oi: usize,
    log: &mut Log<'_>,
) -> bool {
    let node_ok = json_eq(al.node, oc.get(field::NODE));
    if !node_ok {
        log.at(
            FailureName::OutcomeOnOtherNode,
            oi,
            format!(
                "call {} was allowed on node {} (entry {ai}) but its outcome is recorded on node {}",
                shown_str(cid),
                shown_opt(al.node),
                shown_opt(oc.get(field::NODE))
            ),
        );
    }
    let order_ok = match (num_f64(oc.get(field::SEQ)), num_f64(al.seq)) {
        (Some(o), Some(a)) => is_number(oc.get(field::SEQ)) && o > a,
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
                shown_opt(al.seq)
            ),
        );
    }
    if let (Some(ah), Some(ih)) = (al.authorized, get(oc, field::INVOKED_PARAMS_HASH)) {
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
