//! Unit tests of the verifier, with the fixtures they share: a small honest chain, signed.

mod authority;
mod bundle;
mod input;
mod stream;

use super::authority::Authority;
use super::*;
use crate::ledger::chain::{self, seal, GENESIS};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

const CID_A: &str = "0123456789abcdef0123456789abcdef";
const CID_B: &str = "fedcba9876543210fedcba9876543210";
const PARAMS: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

pub(crate) fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

pub(crate) fn tiny_entries() -> Vec<Value> {
    vec![
        json!({"event": "root", "node": "c:n0", "agent": "main", "params_salt": "00112233445566778899aabbccddeeff",
               "authority": {"scopes": ["fs.*", "exec.bash"], "constraints": [{"key": "max_rows", "max": 100}], "ttl": 3600}}),
        json!({"event": "spawn", "node": "c:n1", "parent": "c:n0", "agent": "reviewer",
               "granted": {"scopes": ["fs.read"], "constraints": [{"key": "max_rows", "max": 10}], "ttl": 600}}),
        json!({"event": "allow", "node": "c:n1", "scope": "fs.read", "tool": "Read", "call_id": CID_A,
               "capture": "framework_post_hook", "authorized_params_hash": PARAMS, "context": {"rows": 3},
               "adapter": {"module": "attenu-hook", "version": "0.1.0", "hook_path": "PreToolUse"}}),
        json!({"event": "outcome", "node": "c:n1", "call_id": CID_A, "body_state": "returned", "duration_ms": 5,
               "invoked_params_hash": PARAMS}),
        json!({"event": "deny", "node": "c:n1", "scope": "exec.bash", "tool": "Bash", "call_id": CID_B,
               "reason": "scope_not_granted", "disposition": "out_of_authority"}),
        json!({"event": "done", "node": "c:n1"}),
        json!({"event": "done", "node": "c:n0"}),
    ]
}

/// Seals `bodies` into a chain "c" and signs an anchor over its head with `signer`.
pub(crate) fn signed_bundle(bodies: Vec<Value>, signer: &SigningKey) -> Value {
    let mut prev = GENESIS.to_string();
    let mut entries = Vec::new();
    for (i, body) in bodies.into_iter().enumerate() {
        let mut e = body.as_object().unwrap().clone();
        e.insert("v".into(), json!(2));
        e.insert("c14n".into(), json!("JCS"));
        e.insert("seq".into(), json!(i));
        e.insert("ts".into(), json!(i + 1));
        e.insert("chain_id".into(), json!("c"));
        prev = seal(&mut e, &prev).unwrap();
        entries.push(Value::Object(e));
    }
    let bundle = json!({"v": 2, "c14n": "JCS", "chain_id": "c", "entries": entries});
    resign(bundle, signer)
}

/// Replaces the bundle's anchor with one over its current head, signed by `signer`.
fn resign(mut bundle: Value, signer: &SigningKey) -> Value {
    let entries = bundle["entries"].as_array().unwrap();
    let last = entries.last().unwrap();
    let mut anchor = json!({"v": 2, "c14n": "JCS", "chain_id": "c", "seq": last["seq"], "head": last["hash"], "ts": 0})
        .as_object()
        .unwrap()
        .clone();
    let sig = signer.sign(&anchor_signing_input(&anchor).unwrap());
    anchor.insert("kid".into(), json!("attenu-local-1"));
    anchor.insert("sig".into(), json!(chain::hex(&sig.to_bytes())));
    anchor.insert("verified".into(), json!(true));
    bundle["anchor"] = Value::Object(anchor);
    bundle
}

fn rehash(bundle: &mut Value) {
    let mut prev = GENESIS.to_string();
    for e in bundle["entries"].as_array_mut().unwrap() {
        prev = seal(e.as_object_mut().unwrap(), &prev).unwrap();
    }
}

/// The full verifier's report on `bundle`, once the streaming pass was run on the same bundle
/// as bytes: when it answers at all, its report must be the full one, byte for byte.
fn verify_bundle(bundle: &Value, key: &AnchorKey) -> Report {
    let full = super::verify_bundle(bundle, key);
    let bytes = serde_json::to_vec(bundle).unwrap();
    assert_stream_agrees(&bytes, key, &full);
    full
}

/// The streaming pass answers only with the full verifier's report.
fn assert_stream_agrees(bytes: &[u8], key: &AnchorKey, full: &Report) {
    let Some(streamed) = verify_clean_stream(bytes, key) else {
        return;
    };
    assert_eq!(
        serde_json::to_string_pretty(&streamed).unwrap(),
        serde_json::to_string_pretty(full).unwrap(),
        "the streaming pass and the full verifier disagree"
    );
}

fn names(r: &Report) -> Vec<&'static str> {
    r.failures.iter().map(|f| f.name.as_str()).collect()
}

fn pinned(k: &SigningKey) -> AnchorKey {
    AnchorKey::Pinned(k.verifying_key())
}

/// The verifier's own reading of a `Value`, owning its strings.
fn owned(v: &Value) -> Json<'static> {
    match v {
        Value::String(s) => Json::String(s.clone().into()),
        Value::Array(a) => Json::Array(a.iter().map(owned).collect()),
        Value::Object(m) => Json::Object(Members::from_document_order(
            m.iter()
                .map(|(k, v)| (k.clone().into(), owned(v)))
                .collect(),
            true,
        )),
        Value::Number(n) => Json::Number(n.clone()),
        Value::Bool(b) => Json::Bool(*b),
        Value::Null => Json::Null,
    }
}

fn authority(v: Value) -> Authority {
    Authority::from_wire(Some(&owned(&v)), "authority").unwrap()
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn scratch_dir() -> std::path::PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("attenu-verify-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
