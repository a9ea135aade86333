//! Ledger entries for what the hook saw, in the attenu-guard schema version 2 format.
//!
//! Raw tool arguments, results and error text never go into an entry: arguments are committed
//! as `SHA-256(params_salt || JCS(tool_input))` (the reference's `params_c14n_v1`), results and
//! error text likewise as salted commitments in `context`, unless `[privacy] raw_capture` is on.

use crate::config::Config;
use crate::decide::Decision;
use crate::derive::Roster;
use crate::hook::payload::Payload;
use crate::hook::time;
use crate::ledger::canonical;
use crate::ledger::chain::{hex, sha256_hex, unhex};
use crate::ledger::store::ChainInfo;
use crate::reason::Code;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

pub const PRODUCER: &str = "attenu-hook";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The authority object of a node, in the reference wire form.
fn authority<'a>(scopes: impl IntoIterator<Item = &'a String>) -> Value {
    json!({"scopes": scopes.into_iter().collect::<Vec<_>>(), "constraints": [], "ttl": Value::Null})
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("entry builders build objects"),
    }
}

/// A fresh random hex string of `n` bytes (call ids, salts).
pub fn random_hex(n: usize) -> Result<String, String> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(|e| format!("no randomness available: {e}"))?;
    Ok(hex(&b))
}

/// `params_c14n_v1`: `SHA-256(raw_salt || JCS(value))`, or `None` outside the JCS domain.
pub fn commit(value: &Value, salt_hex: &str) -> Option<String> {
    let salt = unhex(salt_hex)?;
    let body = canonical::to_vec(value).ok()?;
    let mut h = Sha256::new();
    h.update(&salt);
    h.update(&body);
    Some(hex(&h.finalize()))
}

/// A commitment to free text or a result, bound to the chain's salt, domain-separated from
/// argument commitments so one can never be replayed as the other.
pub fn commit_labeled(label: &str, value: &Value, salt_hex: &str) -> Option<String> {
    let body = canonical::to_vec(value).ok()?;
    let mut h = Sha256::new();
    h.update(unhex(salt_hex)?);
    h.update(label.as_bytes());
    h.update([0]);
    h.update(&body);
    Some(hex(&h.finalize()))
}

/// The root and spawn entries that open a new chain for `roster`, and the chain's id.
pub fn open_chain(
    roster: &Roster,
    session_name: &str,
    p: &Payload,
    previous: Option<&ChainInfo>,
) -> Result<(String, Vec<Map<String, Value>>), String> {
    let index = previous.map_or(1, |p| p.index + 1);
    let chain_id = format!("cc-{session_name}-{}-{index}", &roster.digest[..12]);
    let root_node = format!("{chain_id}:n0");
    let now = time::now_ms();
    let mut entries = vec![obj(json!({
        "event": "root",
        "ts": now,
        "chain_id": chain_id,
        "node": root_node,
        "agent": "session",
        "task": "claude-code session",
        "authority": authority(&roster.root),
        "params_salt": random_hex(16)?,
        "context": {
            "producer": {"name": PRODUCER, "version": VERSION},
            "session_id": p.session_id,
            "hook_event": p.event.name(),
            "digest": roster.digest,
            "at": time::rfc3339_ms(now),
            "previous_chain": previous.map(|p| json!({"chain_id": p.chain_id, "head": p.head, "seq": p.entries - 1})),
            "unrepresented": roster.unrepresented,
            "problems": roster.problems,
        },
    }))];
    if !roster.root_excluded.is_empty() {
        // The reference's authority has no exclusions: the narrower denials go beside it.
        if let Some(Value::Object(c)) = entries[0].get_mut("context") {
            c.insert("excluded".into(), json!(roster.root_excluded));
        }
    }
    for (i, (name, agent)) in roster.agents.iter().enumerate() {
        let auth = authority(&agent.scopes);
        entries.push(obj(json!({
            "event": "spawn",
            "ts": now,
            "chain_id": chain_id,
            "parent": root_node,
            "node": format!("{chain_id}:n{}", i + 1),
            "agent": name,
            "task": format!("subagent:{name}"),
            "requested": auth,
            "granted": auth,
            "context": {"declared_in": agent.source, "invalid": agent.invalid},
        })));
        if !agent.excluded.is_empty() {
            if let Some(Value::Object(c)) = entries.last_mut().and_then(|e| e.get_mut("context")) {
                c.insert("excluded".into(), json!(agent.excluded));
            }
        }
    }
    Ok((chain_id, entries))
}

/// Node ids of a chain about to be opened (before its entries are appended).
pub fn nodes_of(entries: &[Map<String, Value>]) -> std::collections::BTreeMap<String, String> {
    entries
        .iter()
        .filter_map(|e| {
            let node = e.get("node")?.as_str()?.to_string();
            match e.get("event")?.as_str()? {
                "root" => Some((String::new(), node)),
                "spawn" => Some((e.get("agent")?.as_str()?.to_string(), node)),
                _ => None,
            }
        })
        .collect()
}

fn base_context(p: &Payload, now: u64) -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("session_id".into(), json!(p.session_id));
    c.insert("hook_event".into(), json!(p.event.name()));
    c.insert("at".into(), json!(time::rfc3339_ms(now)));
    for (k, v) in [
        ("agent_id", &p.agent_id),
        ("agent_type", &p.agent_type),
        ("tool_use_id", &p.tool_use_id),
        ("permission_mode", &p.permission_mode),
    ] {
        if let Some(v) = v {
            c.insert(k.into(), json!(v));
        }
    }
    c
}

/// The entry for one PreToolUse decision.
pub fn decision_entry(
    p: &Payload,
    d: &Decision,
    config: &Config,
    chain_id: &str,
    node: &str,
    salt: &str,
    extra_context: Vec<(&str, Value)>,
) -> Result<Map<String, Value>, String> {
    let now = time::now_ms();
    let mut ctx = base_context(p, now);
    if config.privacy.raw_capture {
        insert_raw(&mut ctx, "tool_input", &p.tool_input);
    }
    for (k, v) in extra_context {
        ctx.insert(k.into(), v);
    }
    let mut e = obj(json!({
        "ts": now,
        "chain_id": chain_id,
        "node": node,
        "scope": d.scope,
        "tool": p.tool_name,
        "call_id": random_hex(16)?,
        "mode": config.mode.as_str(),
    }));
    if d.held || !d.enforced {
        e.insert("event".into(), json!("allow"));
        e.insert("capture".into(), json!("framework_post_hook"));
        e.insert(
            "adapter".into(),
            json!({"module": PRODUCER, "version": VERSION, "hook_path": "PreToolUse"}),
        );
        match commit(&p.tool_input, salt) {
            Some(h) => e.insert("authorized_params_hash".into(), json!(h)),
            None => e.insert("params_hash_reason".into(), json!("unsupported")),
        };
        if let Some(r) = &d.reason {
            // Not held, not enforced: the call ran without the chain authorizing it. `policy`
            // says so (the verifier counts it as ungated), and the context says what the
            // decision would have been.
            e.insert("policy".into(), json!("unlisted"));
            ctx.insert("enforced".into(), json!(false));
            ctx.insert("would_deny".into(), json!({"code": r.code.as_str(), "message": r.message, "disposition": r.code.disposition()}));
        }
    } else {
        let r = d.reason.as_ref().expect("a refusal has a reason");
        e.insert("event".into(), json!("deny"));
        e.insert(
            "reason".into(),
            json!(match r.code {
                Code::OutOfAuthority | Code::Unresolved | Code::SelfProtection =>
                    "scope_not_granted",
                _ => "no_authority",
            }),
        );
        e.insert(
            "reasons".into(),
            json!([{"code": r.code.as_str(), "message": r.message}]),
        );
        if let Some(disp) = r.code.disposition() {
            e.insert("disposition".into(), json!(disp));
        }
        ctx.insert("enforced".into(), json!(true));
        ctx.insert("reason_code".into(), json!(r.code.as_str()));
    }
    e.insert("context".into(), Value::Object(ctx));
    Ok(e)
}

/// The `outcome` entry that binds a PostToolUse / PostToolUseFailure to its allowed call.
pub fn outcome_entry(
    p: &Payload,
    chain_id: &str,
    node: &str,
    call_id: &str,
    salt: &str,
    body_state: &str,
    raw_capture: bool,
) -> Map<String, Value> {
    let now = time::now_ms();
    let mut ctx = base_context(p, now);
    let mut e = obj(json!({
        "event": "outcome",
        "ts": now,
        "chain_id": chain_id,
        "node": node,
        "call_id": call_id,
        "body_state": body_state,
        "duration_ms": p.duration_ms.unwrap_or(0),
    }));
    if body_state == "raised" {
        e.insert("error_code".into(), json!("tool_error"));
    }
    match commit(&p.tool_input, salt) {
        Some(h) => e.insert("invoked_params_hash".into(), json!(h)),
        None => e.insert("params_hash_reason".into(), json!("unsupported")),
    };
    if let Some(resp) = &p.tool_response {
        ctx.insert(
            "result_commitment".into(),
            json!(commit_labeled("tool_response", resp, salt)),
        );
        if raw_capture {
            insert_raw(&mut ctx, "tool_response", resp);
        }
    }
    if let Some(err) = &p.error {
        ctx.insert(
            "error_commitment".into(),
            json!(commit_labeled("error", &json!(err), salt)),
        );
        if raw_capture {
            ctx.insert("error".into(), json!(err));
        }
    }
    if p.event == crate::hook::payload::Event::PostToolUseFailure {
        ctx.insert("side_effects".into(), json!("uncertain"));
    }
    e.insert("context".into(), Value::Object(ctx));
    e
}

/// How deep a raw copy may nest inside an entry. The payload was read with serde_json's limit
/// of 128 levels, but the entry puts a raw copy two levels down (entry, `context`), and a bundle
/// two more (bundle, `entries`): a value near the limit would be written to a line that no
/// JSON reader with that limit can read back, and every later call of the session would deny.
pub const MAX_RAW_NESTING: usize = 64;

/// An opt-in raw copy. A value with no RFC 8785 form (an integer beyond 2^53, say) would make
/// the whole entry unsealable, and so the decision unrecordable; a value nested deeper than
/// [`MAX_RAW_NESTING`] would make the ledger unreadable. Either is kept instead as its JSON text
/// under `<key>_json`, which is a string, so always readable and always canonical.
fn insert_raw(ctx: &mut Map<String, Value>, key: &str, v: &Value) {
    if nesting(v, MAX_RAW_NESTING + 1) <= MAX_RAW_NESTING && canonical::to_vec(v).is_ok() {
        ctx.insert(key.into(), v.clone());
    } else {
        ctx.insert(format!("{key}_json"), Value::String(v.to_string()));
    }
}

/// How many arrays and objects nest in `v` (a scalar is 0), counting no further than `cap`.
/// Recursion is bounded: `v` was parsed with serde_json's depth limit, and `cap` stops early.
fn nesting(v: &Value, cap: usize) -> usize {
    let inner = |items: &mut dyn Iterator<Item = &Value>| {
        if cap == 0 {
            return 1;
        }
        1 + items.map(|c| nesting(c, cap - 1)).max().unwrap_or(0)
    };
    match v {
        Value::Array(a) => inner(&mut a.iter()),
        Value::Object(o) => inner(&mut o.values()),
        _ => 0,
    }
}

/// A digest of arbitrary bytes for a record that must not carry them.
pub fn digest_text(s: &str) -> String {
    sha256_hex(s.as_bytes())
}
