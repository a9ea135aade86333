//! What the page shows of one bundle, built from the verifier's [`Report`] and the bundle as
//! the verifier's own reader ([`crate::json::strict`]) parsed it: the verdict, checks,
//! failures and open calls are the verifier's, never recomputed here; the tree, the timeline
//! and the denials are the entries as written, which the page calls proven only when the
//! verdict is valid.

use crate::evidence::verify::{CallState, Report};
use crate::json::tree::{Json, Members};
use crate::ledger::fields::{event, field};
use crate::ledger::read::{context as ctx, reconciliation};
use crate::ledger::refusal::BY_CLAUDE_CODE;
use std::collections::{BTreeMap, HashMap};

/// Calls listed one by one; every call is still counted.
pub const MAX_LISTED_CALLS: usize = 2_000;
/// Calls listed under one group of denials; the group still counts them all.
pub const MAX_LISTED_PER_GROUP: usize = 20;

/// One input file and what was computed from it here (not claimed by it).
#[derive(Debug, Clone)]
pub struct Source {
    pub path: String,
    pub bytes: u64,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
}

/// The key the anchor was checked with.
#[derive(Debug, Clone, Default)]
pub struct KeyUsed {
    /// The key file, when there was one.
    pub file: Option<String>,
    /// The kid computed from the key (`attenu-hook-<16 hex>`).
    pub kid: Option<String>,
    /// Where the key came from, for the page's words about it.
    pub origin: KeyOrigin,
}

/// Where the key the anchor was checked with came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KeyOrigin {
    /// A key file: passed with `--pub`, or `anchor.pub` beside the bundle.
    #[default]
    File,
    /// The signer certificate the bundle carries (its OpenSSH key id), which no pinned CA
    /// vouched for.
    CarriedCertificate { key_id: String },
    /// The signer certificate the bundle carries, vouched for by the CA files the reviewer
    /// passed with `--ca` (as shown) at the anchor's signing time.
    TeamCa { key_id: String, ca: String },
}

/// One bundle on the page.
#[derive(Debug, Clone)]
pub struct BundleView {
    pub source: Source,
    pub report: Report,
    pub key: KeyUsed,
    pub chain: ChainInfo,
    pub nodes: Vec<NodeView>,
    /// The first [`MAX_LISTED_CALLS`] decisions, in ledger order.
    pub calls: Vec<CallView>,
    pub totals: Totals,
    /// Denials by agent and reason code, in that order.
    pub denials: Vec<DenialGroup>,
    /// Outcomes written by `reconcile resolve`.
    pub resolutions: Vec<Resolution>,
    /// Undeclared agent types seen on the root: (type, allowed, denied).
    pub undeclared: Vec<(String, usize, usize)>,
}

/// What the bundle says about its chain and session.
#[derive(Debug, Clone, Default)]
pub struct ChainInfo {
    pub chain_id: Option<String>,
    pub session: Option<String>,
    /// `chain.index`, bound to the chain id by the verifier.
    pub index: Option<i64>,
    /// `chain.of`: not bound by anything in the chain.
    pub of: Option<i64>,
    /// The kid the anchor names.
    pub anchor_kid: Option<String>,
    /// `producer` at the bundle's top level: outside the signature.
    pub producer: Option<String>,
    /// Rules the hook left to Claude Code (`context.unrepresented` of the root).
    pub unrepresented: Vec<String>,
    /// Problems the hook found in the declarations (`context.problems` of the root).
    pub problems: Vec<String>,
    pub first_at: Option<String>,
    pub last_at: Option<String>,
    /// Who and where, as the root recorded it (`context.identity`), in one line.
    pub identity: Option<String>,
}

/// One node of the session tree: the root (main thread) or a declared subagent.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub id: String,
    pub agent: String,
    pub parent: Option<String>,
    pub scopes: Vec<String>,
    pub declared_in: Option<String>,
    pub invalid: Option<String>,
    pub done: bool,
    pub allowed: usize,
    pub denied: usize,
}

impl NodeView {
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }
}

/// An `allow` or a `deny`, with its outcome when one is bound by call id.
#[derive(Debug, Clone)]
pub struct CallView {
    pub index: usize,
    pub seq: Option<i64>,
    pub at: Option<String>,
    pub node: Option<String>,
    /// Who made it, as a reviewer reads it ([`who`]).
    pub who: String,
    pub tool: String,
    /// The arguments' redacted summary (`[privacy] record = "summary"`), when recorded.
    pub summary: Option<String>,
    pub scope: String,
    pub decision: Decision,
    /// Reason code and sentence: the deny's, or what an unenforced allow would have been.
    pub reason: Option<(String, String)>,
    pub call_id: Option<String>,
    pub outcome: Option<OutcomeView>,
    /// The verifier's state for an allowed call with no bound outcome.
    pub open: Option<CallState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Allowed without a claim of authority (`policy: "unlisted"`: shadow, observe, main thread).
    AllowUnenforced,
    Deny,
}

#[derive(Debug, Clone)]
pub struct OutcomeView {
    pub body_state: String,
    pub duration_ms: Option<i64>,
    pub error_code: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub calls: usize,
    pub allowed: usize,
    pub unenforced: usize,
    pub denied: usize,
    /// Of `denied`, refused (or interrupted) by Claude Code itself (`crate::ledger::refusal`).
    pub refused_by_claude_code: usize,
}

#[derive(Debug, Clone)]
pub struct DenialGroup {
    pub who: String,
    pub code: String,
    pub count: usize,
    /// Up to [`MAX_LISTED_PER_GROUP`] of them: (index in the bundle, tool, sentence).
    pub examples: Vec<(usize, String, String)>,
}

#[derive(Debug, Clone)]
pub struct Resolution {
    pub index: usize,
    pub call_id: Option<String>,
    pub outcome: String,
    pub evidence: String,
    pub marker: String,
}

/// The view of one verified bundle. `bundle` is the tree the verifier's reader built from the
/// same bytes `report` was computed from.
pub fn bundle_view(source: Source, report: Report, key: KeyUsed, bundle: &Json) -> BundleView {
    let empty = Members::new();
    let top = bundle.as_object().unwrap_or(&empty);
    let entries: Vec<&Members> = match top.get("entries") {
        Some(Json::Array(items)) => items.iter().filter_map(Json::as_object).collect(),
        _ => Vec::new(),
    };
    let indexed: Vec<(usize, &Members)> = match top.get("entries") {
        Some(Json::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_object().map(|e| (i, e)))
            .collect(),
        _ => Vec::new(),
    };
    let mut nodes = read_nodes(&entries);
    let open: HashMap<&str, CallState> = report
        .calls
        .open
        .iter()
        .map(|c| (c.call_id.as_str(), c.state))
        .collect();
    let read = read_calls(&indexed, &mut nodes, &open);
    BundleView {
        chain: chain_info(top, &entries),
        resolutions: read_resolutions(&indexed),
        source,
        report,
        key,
        nodes,
        calls: read.calls,
        totals: read.totals,
        denials: read.denials,
        undeclared: read
            .undeclared
            .into_iter()
            .map(|(t, (a, d))| (t, a, d))
            .collect(),
    }
}

fn string(o: &Members, key: &str) -> Option<String> {
    o.get(key).and_then(Json::as_str).map(str::to_string)
}

fn context<'m, 'a>(o: &'m Members<'a>) -> Option<&'m Members<'a>> {
    o.get(field::CONTEXT).and_then(Json::as_object)
}

fn ctx_string(o: &Members, key: &str) -> Option<String> {
    context(o).and_then(|c| string(c, key))
}

fn strings(v: Option<&Json>) -> Vec<String> {
    match v {
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn chain_info(top: &Members, entries: &[&Members]) -> ChainInfo {
    let chain = top.get("chain").and_then(Json::as_object);
    let root = entries
        .iter()
        .find(|e| e.get(field::EVENT).and_then(Json::as_str) == Some(event::ROOT));
    let root_ctx = root.and_then(|r| context(r));
    let ats: Vec<String> = entries
        .iter()
        .filter_map(|e| ctx_string(e, ctx::AT))
        .collect();
    ChainInfo {
        chain_id: string(top, field::CHAIN_ID),
        session: root.and_then(|r| ctx_string(r, ctx::SESSION_ID)),
        index: chain.and_then(|c| c.get("index")).and_then(Json::as_i64),
        of: chain.and_then(|c| c.get("of")).and_then(Json::as_i64),
        anchor_kid: top
            .get("anchor")
            .and_then(Json::as_object)
            .and_then(|a| string(a, "kid")),
        producer: top.get("producer").and_then(Json::as_object).map(|p| {
            format!(
                "{} {}",
                string(p, "name").unwrap_or_default(),
                string(p, "version").unwrap_or_default()
            )
        }),
        unrepresented: strings(root_ctx.and_then(|c| c.get("unrepresented"))),
        problems: strings(root_ctx.and_then(|c| c.get("problems"))),
        first_at: ats.first().cloned(),
        last_at: ats.last().cloned(),
        identity: root_ctx
            .and_then(|c| c.get(ctx::IDENTITY))
            .and_then(Json::as_object)
            .map(identity_line),
    }
}

/// `certificate alice@laptop, tester@vm, app.git@0123456789ab (main)`: the root's identity.
fn identity_line(id: &Members) -> String {
    let mut parts = Vec::new();
    let signer = id.get("signer").and_then(Json::as_object);
    let cert = signer
        .and_then(|s| s.get("certificate"))
        .and_then(Json::as_object);
    if let Some(key_id) = cert.and_then(|c| string(c, "key_id")) {
        parts.push(format!("certificate {key_id}"));
    }
    let (user, host) = (string(id, "user"), string(id, "host"));
    if let (Some(u), Some(h)) = (user, host) {
        parts.push(format!("{u}@{h}"));
    }
    if let Some(git) = id.get("git").and_then(Json::as_object) {
        let remote = string(git, "remote").unwrap_or_default();
        let commit = string(git, "commit").unwrap_or_default();
        let mut g = format!("{remote}@{}", &commit[..commit.len().min(12)]);
        if let Some(b) = string(git, "branch") {
            g.push_str(&format!(" ({b})"));
        }
        parts.push(g);
    }
    parts.join(", ")
}

fn read_nodes(entries: &[&Members]) -> Vec<NodeView> {
    let mut nodes: Vec<NodeView> = Vec::new();
    for e in entries {
        let event = e.get(field::EVENT).and_then(Json::as_str);
        let (authority, parent) = match event {
            Some(event::ROOT) => (field::AUTHORITY, None),
            Some(event::SPAWN) => (
                field::GRANTED,
                Some(string(e, field::PARENT).unwrap_or_default()),
            ),
            Some(event::DONE) => {
                let id = string(e, field::NODE);
                if let Some(n) = nodes.iter_mut().find(|n| Some(&n.id) == id.as_ref()) {
                    n.done = true;
                }
                continue;
            }
            _ => continue,
        };
        let scopes = e
            .get(authority)
            .and_then(Json::as_object)
            .map(|a| strings(a.get("scopes")))
            .unwrap_or_default();
        nodes.push(NodeView {
            id: string(e, field::NODE).unwrap_or_default(),
            agent: string(e, field::AGENT).unwrap_or_default(),
            parent,
            scopes,
            declared_in: ctx_string(e, "declared_in"),
            invalid: context(e)
                .and_then(|c| c.get("invalid"))
                .filter(|v| !v.is_null())
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)),
            done: false,
            allowed: 0,
            denied: 0,
        });
    }
    nodes
}

/// Who made a call: the subagent of its node, or on the root the main thread, or the
/// undeclared agent type Claude Code named (recorded on the root, holding nothing).
fn who(e: &Members, node: Option<&NodeView>) -> String {
    let agent_type = ctx_string(e, ctx::AGENT_TYPE);
    match (node, agent_type) {
        (Some(n), _) if !n.is_root() => n.agent.clone(),
        (_, Some(t)) => format!("{t} (undeclared)"),
        (Some(_), None) => "main thread".into(),
        (None, _) => "(unknown node)".into(),
    }
}

#[derive(Default)]
struct CallsRead {
    calls: Vec<CallView>,
    totals: Totals,
    denials: Vec<DenialGroup>,
    undeclared: BTreeMap<String, (usize, usize)>,
}

fn read_calls(
    entries: &[(usize, &Members)],
    nodes: &mut [NodeView],
    open: &HashMap<&str, CallState>,
) -> CallsRead {
    let mut read = CallsRead::default();
    let node_at: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.clone(), i))
        .collect();
    let mut by_call_id: HashMap<String, usize> = HashMap::new();
    let mut groups: BTreeMap<(String, String), DenialGroup> = BTreeMap::new();
    for &(index, e) in entries {
        let event = e.get(field::EVENT).and_then(Json::as_str);
        if event == Some(event::OUTCOME) {
            bind_outcome(e, &by_call_id, &mut read.calls);
            continue;
        }
        let Some(decision) = decision_of(e) else {
            continue;
        };
        let node_id = string(e, field::NODE);
        let node = node_id
            .as_ref()
            .and_then(|id| node_at.get(id))
            .map(|&i| &mut nodes[i]);
        let who = who(e, node.as_deref());
        tally(&mut read, node, e, decision);
        let reason = reason_of(e, decision);
        let tool = string(e, field::TOOL).unwrap_or_default();
        if decision == Decision::Deny {
            group_denial(&mut groups, &who, index, &tool, reason.clone());
        }
        if read.calls.len() == MAX_LISTED_CALLS {
            continue;
        }
        let call_id = string(e, field::CALL_ID);
        if let Some(id) = &call_id {
            by_call_id.entry(id.clone()).or_insert(read.calls.len());
        }
        read.calls.push(CallView {
            index,
            seq: e.get(field::SEQ).and_then(Json::as_i64),
            at: ctx_string(e, ctx::AT),
            node: node_id,
            who,
            tool,
            summary: ctx_string(e, ctx::SUMMARY),
            scope: string(e, field::SCOPE).unwrap_or_default(),
            decision,
            reason,
            open: match (decision, &call_id) {
                (Decision::Deny, _) | (_, None) => None,
                (_, Some(id)) => open.get(id.as_str()).copied(),
            },
            call_id,
            outcome: None,
        });
    }
    read.denials = groups.into_values().collect();
    read
}

fn decision_of(e: &Members) -> Option<Decision> {
    match e.get(field::EVENT).and_then(Json::as_str) {
        Some(event::ALLOW) if e.get(field::POLICY).and_then(Json::as_str) == Some("unlisted") => {
            Some(Decision::AllowUnenforced)
        }
        Some(event::ALLOW) => Some(Decision::Allow),
        Some(event::DENY) => Some(Decision::Deny),
        _ => None,
    }
}

/// Counts a decision for the whole chain, its node and, on the root, its undeclared type.
fn tally(read: &mut CallsRead, node: Option<&mut NodeView>, e: &Members, decision: Decision) {
    let denied = decision == Decision::Deny;
    if let Some(n) = node {
        if n.is_root() {
            if let Some(t) = ctx_string(e, ctx::AGENT_TYPE) {
                let c = read.undeclared.entry(t).or_default();
                *(if denied { &mut c.1 } else { &mut c.0 }) += 1;
            }
        }
        *(if denied {
            &mut n.denied
        } else {
            &mut n.allowed
        }) += 1;
    }
    let t = &mut read.totals;
    t.calls += 1;
    match decision {
        Decision::Allow => t.allowed += 1,
        Decision::AllowUnenforced => t.unenforced += 1,
        Decision::Deny => {
            t.denied += 1;
            let by = e
                .get(field::CONTEXT)
                .and_then(Json::as_object)
                .and_then(|c| c.get(ctx::REFUSED_BY));
            t.refused_by_claude_code +=
                usize::from(by.and_then(Json::as_str) == Some(BY_CLAUDE_CODE));
        }
    }
}

fn group_denial(
    groups: &mut BTreeMap<(String, String), DenialGroup>,
    who: &str,
    index: usize,
    tool: &str,
    reason: Option<(String, String)>,
) {
    let (code, message) = reason.unwrap_or_default();
    let g = groups
        .entry((who.to_string(), code.clone()))
        .or_insert_with(|| DenialGroup {
            who: who.to_string(),
            code,
            count: 0,
            examples: Vec::new(),
        });
    g.count += 1;
    if g.examples.len() < MAX_LISTED_PER_GROUP {
        g.examples.push((index, tool.to_string(), message));
    }
}

/// The deny's first reason, or the would-deny of an unenforced allow.
fn reason_of(e: &Members, decision: Decision) -> Option<(String, String)> {
    let pair = |o: &Members| {
        (
            string(o, "code").unwrap_or_default(),
            string(o, "message").unwrap_or_default(),
        )
    };
    match decision {
        Decision::Deny => match e.get(field::REASONS) {
            Some(Json::Array(rs)) => rs.iter().filter_map(Json::as_object).map(pair).next(),
            _ => None,
        }
        .or_else(|| ctx_string(e, ctx::REASON_CODE).map(|c| (c, String::new()))),
        Decision::AllowUnenforced => context(e)
            .and_then(|c| c.get(ctx::WOULD_DENY))
            .and_then(Json::as_object)
            .map(pair),
        Decision::Allow => None,
    }
}

/// An outcome's body state on the allow with its call id (the first outcome only: the
/// verifier reports a second one as a failure).
fn bind_outcome(e: &Members, by_call_id: &HashMap<String, usize>, calls: &mut [CallView]) {
    let Some(i) = string(e, field::CALL_ID).and_then(|id| by_call_id.get(&id).copied()) else {
        return;
    };
    let call = &mut calls[i];
    if call.outcome.is_some() || call.decision == Decision::Deny {
        return;
    }
    call.outcome = Some(OutcomeView {
        body_state: string(e, field::BODY_STATE).unwrap_or_default(),
        duration_ms: e.get(field::DURATION_MS).and_then(Json::as_i64),
        error_code: string(e, field::ERROR_CODE),
    });
}

fn read_resolutions(entries: &[(usize, &Members)]) -> Vec<Resolution> {
    entries
        .iter()
        .filter(|(_, e)| e.get(field::EVENT).and_then(Json::as_str) == Some(event::OUTCOME))
        .filter_map(|&(index, e)| {
            let r = context(e)?.get(ctx::RECONCILIATION)?.as_object()?;
            let field = |k: &str| {
                r.get(k)
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .unwrap_or_default()
            };
            Some(Resolution {
                index,
                call_id: string(e, field::CALL_ID),
                outcome: field(reconciliation::OUTCOME),
                evidence: field(reconciliation::EVIDENCE),
                marker: field(reconciliation::MARKER),
            })
        })
        .collect()
}
