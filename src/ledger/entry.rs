//! Ledger entries for what the hook saw, as types, in the attenu-guard schema version 2 format.
//!
//! Each type serializes to the members its entry has on the ledger; the store adds `v`,
//! `c14n`, `seq`, `prev_hash` and `hash`, and writes the RFC 8785 form, so member order here
//! does not matter but presence does: a member that is always written (possibly as `null`)
//! is a plain field, one written only sometimes is skipped when absent.
//!
//! Everything here is pure: the clock reading and fresh ids arrive as arguments. Raw tool
//! arguments, results and error text never go into an entry: they are committed (see
//! [`super::commitment`]) unless `[privacy] raw_capture` is on.

use super::commitment::{commit, RawCopy};
use crate::clock;
use crate::config::Config;
use crate::derive::rules::{Rules, SettingsRule};
use crate::derive::Roster;
use crate::ledger::store::ChainInfo;
use crate::policy::{GateRecord, Ruling};
use crate::protocol::payload::Payload;
use crate::reason::{Code, Reason};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

mod outcome;
pub use outcome::{
    done_entry, outcome_entry, reconciled_outcome, BodyState, Done, Outcome, Reconciled,
};

pub const PRODUCER: &str = "attenu-hook";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One entry the hook writes, tagged by its `event`.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Entry<'a> {
    Root(Root<'a>),
    Spawn(Spawn<'a>),
    Allow(Allow<'a>),
    Deny(Deny<'a>),
    Outcome(Outcome<'a>),
    Done(Done<'a>),
    /// Claude Code's own refusal or interruption, as a `deny` ([`super::refusal`]).
    #[serde(rename = "deny")]
    Refused(super::refusal::Refused<'a>),
}

impl Entry<'_> {
    /// The entry as the JSON object the store seals.
    pub fn into_object(self) -> Map<String, Value> {
        match serde_json::to_value(&self) {
            Ok(Value::Object(m)) => m,
            // Every variant is a struct of strings, numbers and JSON values, and its keys are
            // strings: serde_json cannot fail on it nor give anything but an object.
            other => unreachable!("an entry serializes to an object, not {other:?}"),
        }
    }
}

/// Where an entry goes: its chain, the node it is recorded on, and the chain's salt.
#[derive(Debug, Clone, Copy)]
pub struct Position<'a> {
    pub chain_id: &'a str,
    pub node: &'a str,
    pub salt: &'a str,
}

/// A node's authority in the reference wire form.
#[derive(Debug, Serialize)]
pub struct Authority<'a> {
    scopes: &'a BTreeSet<String>,
    constraints: [(); 0],
    ttl: Option<()>,
}

impl<'a> Authority<'a> {
    fn of(scopes: &'a BTreeSet<String>) -> Self {
        Authority {
            scopes,
            constraints: [],
            ttl: None,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Root<'a> {
    ts: u64,
    chain_id: String,
    node: String,
    agent: &'static str,
    task: &'static str,
    authority: Authority<'a>,
    params_salt: String,
    context: RootContext<'a>,
}

#[derive(Debug, Serialize)]
struct RootContext<'a> {
    producer: Producer,
    session_id: &'a str,
    hook_event: &'a str,
    digest: &'a str,
    at: String,
    /// `null` on a session's first chain.
    previous_chain: Option<PreviousChain<'a>>,
    unrepresented: &'a [String],
    problems: &'a [String],
    /// The reference's authority has no exclusions: the narrower denials go beside it.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    excluded: &'a BTreeSet<String>,
    /// Scope → the rules the session holds it under (every declaration of it has arguments):
    /// beside the authority, which names the scope whole, as the exclusions are.
    #[serde(skip_serializing_if = "Rules::is_empty")]
    rules: &'a Rules,
    /// The settings' deny rules with arguments and ask rules, which bind every subagent.
    #[serde(skip_serializing_if = "<[SettingsRule]>::is_empty")]
    settings_rules: &'a [SettingsRule],
    /// Who and where (`crate::trust::identity`): signer, user, host, repository, harness.
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct Producer {
    name: &'static str,
    version: &'static str,
}

/// The chain a new one follows: its id, head hash and last `seq`.
#[derive(Debug, Serialize)]
pub struct PreviousChain<'a> {
    pub chain_id: &'a str,
    pub head: &'a str,
    pub seq: u64,
}

impl<'a> PreviousChain<'a> {
    pub fn of(c: &'a ChainInfo) -> Self {
        PreviousChain {
            chain_id: &c.chain_id,
            head: &c.head,
            seq: c.entries.saturating_sub(1),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Spawn<'a> {
    ts: u64,
    chain_id: String,
    parent: String,
    node: String,
    agent: &'a str,
    task: String,
    requested: Authority<'a>,
    granted: Authority<'a>,
    context: SpawnContext<'a>,
}

#[derive(Debug, Serialize)]
struct SpawnContext<'a> {
    declared_in: &'a str,
    /// `null` for a usable declaration.
    invalid: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    excluded: &'a BTreeSet<String>,
    /// Scope → the rules the agent holds it under (`tools: Bash(git tag:*)`).
    #[serde(skip_serializing_if = "Rules::is_empty")]
    rules: &'a Rules,
}

/// A newly opened chain: its id, and its root entry.
pub struct OpenedChain<'a> {
    pub chain_id: String,
    pub entries: Vec<Entry<'a>>,
}

impl OpenedChain<'_> {
    /// Agent name → node id of the nodes the opening defines: the session root, under "".
    pub fn nodes(&self) -> std::collections::BTreeMap<String, String> {
        std::iter::once((String::new(), format!("{}:n0", self.chain_id))).collect()
    }
}

/// What opening a chain needs from outside: the clock, a fresh salt, and the chain it follows.
pub struct Opening<'a> {
    pub now_ms: u64,
    pub salt: String,
    pub previous: Option<&'a ChainInfo>,
    /// Who and where, read at the edge.
    pub identity: Option<serde_json::Value>,
}

/// The root entry that opens a new chain for `roster`. Agents' spawns are not part of the
/// opening: each is written by [`spawn_entry`] when the agent is first seen on the chain, so a
/// chain's opening costs the same whatever the number of agents declared.
pub fn open_chain<'a>(
    roster: &'a Roster,
    session_name: &str,
    p: &'a Payload,
    opening: Opening<'a>,
) -> OpenedChain<'a> {
    let index = opening.previous.map_or(1, |p| p.index + 1);
    let chain_id = format!("cc-{session_name}-{}-{index}", &roster.digest[..12]);
    let root_node = format!("{chain_id}:n0");
    let now = opening.now_ms;
    let root = Entry::Root(Root {
        ts: now,
        chain_id: chain_id.clone(),
        node: root_node,
        agent: "session",
        task: "claude-code session",
        authority: Authority::of(&roster.root),
        params_salt: opening.salt,
        context: RootContext {
            producer: Producer {
                name: PRODUCER,
                version: VERSION,
            },
            session_id: &p.session_id,
            hook_event: p.event.name(),
            digest: &roster.digest,
            at: clock::rfc3339_ms(now),
            previous_chain: opening.previous.map(PreviousChain::of),
            unrepresented: &roster.unrepresented,
            problems: &roster.problems,
            excluded: &roster.root_excluded,
            rules: &roster.root_rules,
            settings_rules: &roster.settings_rules,
            identity: opening.identity,
        },
    });
    OpenedChain {
        chain_id,
        entries: vec![root],
    }
}

/// The node of declared agent `agent` on chain `chain_id`: `n<i+1>` for the `i`th agent of
/// the roster in name order, whenever its spawn is written, so a node's id depends only on the
/// roster. `None` for a name the roster does not declare.
pub fn agent_node(roster: &Roster, chain_id: &str, agent: &str) -> Option<String> {
    let i = roster.agents.keys().position(|k| k == agent)?;
    Some(format!("{chain_id}:n{}", i + 1))
}

/// The spawn that defines declared agent `agent`'s node on chain `chain_id`, granted what the
/// roster derives for it, from the chain's root. The reference verifier reads a spawn anywhere
/// in a chain after its parent, and an action only after the spawn of its node.
pub fn spawn_entry<'a>(
    roster: &'a Roster,
    chain_id: &str,
    agent: &str,
    now_ms: u64,
) -> Option<Entry<'a>> {
    let node = agent_node(roster, chain_id, agent)?;
    let (name, a) = roster.agents.get_key_value(agent)?;
    Some(Entry::Spawn(Spawn {
        ts: now_ms,
        chain_id: chain_id.to_string(),
        parent: format!("{chain_id}:n0"),
        node,
        agent: name,
        task: format!("subagent:{name}"),
        requested: Authority::of(&a.scopes),
        granted: Authority::of(&a.scopes),
        context: SpawnContext {
            declared_in: &a.source,
            invalid: a.invalid.as_deref(),
            excluded: &a.excluded,
            rules: &a.rules,
        },
    }))
}

/// The context every tool-event entry carries: who called, in which session, when.
#[derive(Debug, Serialize)]
pub(super) struct CallContext<'a> {
    session_id: &'a str,
    hook_event: &'a str,
    at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_use_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_mode: Option<&'a str>,
}

impl<'a> CallContext<'a> {
    pub(super) fn of(p: &'a Payload, now: u64) -> Self {
        CallContext {
            session_id: &p.session_id,
            hook_event: p.event.name(),
            at: clock::rfc3339_ms(now),
            agent_id: p.agent_id.as_deref(),
            agent_type: p.agent_type.as_deref(),
            tool_use_id: p.tool_use_id.as_deref(),
            permission_mode: p.permission_mode.as_deref(),
        }
    }
}

/// The adapter that captured an allowed call, in the reference's form.
#[derive(Debug, Serialize)]
struct Adapter {
    module: &'static str,
    version: &'static str,
    hook_path: &'static str,
}

/// The members an allow and a deny both start with: the call, where and in which mode it was
/// decided.
#[derive(Debug, Serialize)]
struct Decided<'a> {
    ts: u64,
    chain_id: &'a str,
    node: &'a str,
    scope: &'a str,
    tool: &'a str,
    call_id: String,
    mode: &'static str,
}

/// An allowed call: held, or refused but not enforced (shadow and observe modes, the main
/// thread without `enforce_main_thread`).
#[derive(Debug, Serialize)]
pub struct Allow<'a> {
    #[serde(flatten)]
    decided: Decided<'a>,
    capture: &'static str,
    adapter: Adapter,
    #[serde(skip_serializing_if = "Option::is_none")]
    authorized_params_hash: Option<String>,
    /// Set when the arguments have no RFC 8785 form.
    #[serde(skip_serializing_if = "Option::is_none")]
    params_hash_reason: Option<&'static str>,
    /// `unlisted` when the chain did not authorize the call (it ran unenforced): the verifier
    /// counts it as ungated.
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<&'static str>,
    context: DecisionContext<'a>,
}

/// An enforced refusal.
#[derive(Debug, Serialize)]
pub struct Deny<'a> {
    #[serde(flatten)]
    decided: Decided<'a>,
    /// The reference's reason vocabulary.
    reason: &'static str,
    reasons: [ReasonRecord; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    disposition: Option<&'static str>,
    context: DecisionContext<'a>,
}

#[derive(Debug, Serialize)]
struct ReasonRecord {
    code: &'static str,
    message: String,
}

#[derive(Debug, Serialize)]
struct DecisionContext<'a> {
    #[serde(flatten)]
    call: CallContext<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_input: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_input_json: Option<String>,
    /// `[privacy] record = "summary"`: the command or path, secrets redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<&'a GateRecord>,
    /// Absent for a held call; `false` for a refusal that was not enforced, `true` for a deny.
    #[serde(skip_serializing_if = "Option::is_none")]
    enforced: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    would_deny: Option<WouldDeny<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason_code: Option<&'static str>,
}

/// What an unenforced refusal would have been.
#[derive(Debug, Serialize)]
struct WouldDeny<'a> {
    code: &'static str,
    message: &'a str,
    disposition: Option<&'static str>,
}

/// What a decision entry needs besides the ruling: the call, the configuration, where it goes,
/// the clock reading and a fresh call id.
pub struct DecisionInput<'a> {
    pub payload: &'a Payload,
    pub config: &'a Config,
    pub at: Position<'a>,
    pub now_ms: u64,
    pub call_id: String,
}

/// The entry for one PreToolUse ruling.
pub fn decision_entry<'a>(ruling: &'a Ruling, input: DecisionInput<'a>) -> Entry<'a> {
    let p = input.payload;
    let d = &ruling.decision;
    let raw = if input.config.privacy.raw_capture {
        RawCopy::of(&p.tool_input)
    } else {
        RawCopy::default()
    };
    let mut context = DecisionContext {
        call: CallContext::of(p, input.now_ms),
        tool_input: raw.value,
        tool_input_json: raw.json,
        summary: (input.config.privacy.record == crate::config::Record::Summary)
            .then(|| super::summary::of_call(&p.tool_input))
            .flatten(),
        gate: ruling.gate.as_ref(),
        enforced: None,
        would_deny: None,
        reason_code: None,
    };
    let decided = Decided {
        ts: input.now_ms,
        chain_id: input.at.chain_id,
        node: input.at.node,
        scope: &d.scope,
        tool: &p.tool_name,
        call_id: input.call_id,
        mode: input.config.mode.as_str(),
    };
    if d.held || !d.enforced {
        let hash = commit(&p.tool_input, input.at.salt);
        if let Some(r) = &d.reason {
            context.enforced = Some(false);
            context.would_deny = Some(WouldDeny {
                code: r.code.as_str(),
                message: &r.message,
                disposition: r.code.disposition(),
            });
        }
        let (capture, hook_path) = super::refusal::capture_of(&p.event);
        return Entry::Allow(Allow {
            decided,
            capture,
            adapter: Adapter {
                module: PRODUCER,
                version: VERSION,
                hook_path,
            },
            params_hash_reason: hash.is_none().then_some("unsupported"),
            authorized_params_hash: hash,
            policy: d.reason.as_ref().map(|_| "unlisted"),
            context,
        });
    }
    let r = refusal(d);
    context.enforced = Some(true);
    context.reason_code = Some(r.code.as_str());
    Entry::Deny(Deny {
        decided,
        reason: match r.code {
            Code::OutOfAuthority | Code::Unresolved | Code::SelfProtection => "scope_not_granted",
            _ => "no_authority",
        },
        reasons: [ReasonRecord {
            code: r.code.as_str(),
            message: r.message.clone(),
        }],
        disposition: r.code.disposition(),
        context,
    })
}

/// The reason of an enforced refusal. A refusal always has one (`Decision::reason` is set
/// exactly when the scope is not held); this keeps the entry well-formed if it ever had not.
fn refusal(d: &crate::policy::Decision) -> std::borrow::Cow<'_, Reason> {
    match &d.reason {
        Some(r) => std::borrow::Cow::Borrowed(r),
        None => std::borrow::Cow::Owned(Reason::new(
            Code::InternalError,
            "a refusal was recorded without its reason",
        )),
    }
}
