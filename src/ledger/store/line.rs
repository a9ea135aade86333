//! Reading one ledger line for a re-verify, fast: when the line is exactly the RFC 8785 form
//! the hook writes (checked byte by byte by [`crate::json::exact`]), the
//! entry's hash is the SHA-256 of its prev_hash and the line's own bytes without the `hash`
//! member, and only the few members the verified state needs are parsed. Any line outside
//! that subset (a float, a `\u` escape that is not a control character, a non-ASCII key,
//! white space, a duplicate or unsorted key) takes the slow path: parsed whole and
//! canonicalized, exactly as before, so the verdict is the same either way.

use crate::json::exact;
use crate::ledger::chain;
use crate::ledger::fields::field;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One parsed line: the members the state needs (or all of them, on the slow path), and its
/// hash over its own `prev_hash`, when it could be computed.
pub(super) struct Parsed {
    pub entry: Map<String, Value>,
    pub computed: Option<String>,
}

/// Why a line is not an entry at all.
pub(super) enum LineError {
    NotJson(serde_json::Error),
    NotAnObject,
}

/// Top-level members the verified state reads (`ChainInfo`, `track_pending`, the links).
const NEEDED: &[&str] = &[
    field::AGENT,
    field::AUTHORIZED_PARAMS_HASH,
    field::CALL_ID,
    field::CHAIN_ID,
    field::EVENT,
    field::HASH,
    field::NODE,
    field::PARAMS_SALT,
    field::PREV_HASH,
    field::SEQ,
    field::TOOL,
];

/// The `context` members the state reads.
#[derive(Deserialize)]
struct SlimContext {
    tool_use_id: Option<Value>,
    digest: Option<Value>,
    previous_chain: Option<Value>,
    checkpoint_lost: Option<Value>,
}

/// Parses `line` (without its newline).
pub(super) fn parse(line: &[u8]) -> Result<Parsed, LineError> {
    if let Some(p) = fast(line) {
        return Ok(p);
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(entry)) => {
            let prev = entry
                .get(field::PREV_HASH)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let computed = chain::entry_hash_of(&prev, &entry).ok();
            Ok(Parsed { entry, computed })
        }
        Ok(_) => Err(LineError::NotAnObject),
        Err(e) => Err(LineError::NotJson(e)),
    }
}

fn fast(line: &[u8]) -> Option<Parsed> {
    let exact = exact::exact(line)?;
    let mut entry = Map::new();
    for m in &exact.members {
        let key = std::str::from_utf8(&line[m.key.clone()]).ok()?;
        let raw = &line[m.value.clone()];
        if key == field::CONTEXT && raw.first() == Some(&b'{') {
            let c: SlimContext = serde_json::from_slice(raw).ok()?;
            let mut slim = Map::new();
            for (k, v) in [
                ("tool_use_id", c.tool_use_id),
                ("digest", c.digest),
                ("previous_chain", c.previous_chain),
                ("checkpoint_lost", c.checkpoint_lost),
            ] {
                if let Some(v) = v {
                    slim.insert(k.into(), v);
                }
            }
            entry.insert(key.into(), Value::Object(slim));
        } else if NEEDED.contains(&key) {
            entry.insert(key.into(), serde_json::from_slice(raw).ok()?);
        }
    }
    let prev = entry
        .get(field::PREV_HASH)
        .and_then(Value::as_str)
        .unwrap_or("");
    // No own hash to compare with: the slow path reports it as it always did.
    let computed = Some(exact.hash_over(line, prev)?);
    Some(Parsed { entry, computed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealed(mut e: Map<String, Value>) -> Vec<u8> {
        chain::seal(&mut e, chain::GENESIS).unwrap();
        crate::json::canonical::to_vec(&Value::Object(e)).unwrap()
    }

    #[test]
    fn the_fast_path_computes_the_same_hash_as_canonicalizing() {
        let entries = [
            json!({"event": "allow", "seq": 0, "context": {"tool_use_id": "t1", "x": [1, -2, true, null, "a\u{1}\"\\\n"]}, "call_id": "c", "z": "é\u{2028}"}),
            json!({"seq": 0, "a": {}}),
            json!({"seq": 0, "event": "root", "context": {"digest": "d", "previous_chain": null}}),
        ];
        for e in entries {
            let Value::Object(m) = e else { unreachable!() };
            let line = sealed(m);
            let fast = fast(&line).expect("canonical lines take the fast path");
            let slow: Value = serde_json::from_slice(&line).unwrap();
            let slow = slow.as_object().unwrap();
            assert_eq!(fast.computed.as_deref(), slow["hash"].as_str());
            for k in NEEDED {
                assert_eq!(fast.entry.get(*k), slow.get(*k), "{k}");
            }
        }
    }

    #[test]
    fn anything_not_canonical_takes_the_slow_path() {
        let line = sealed(json!({"seq": 0, "n": 1}).as_object().unwrap().clone());
        let text = String::from_utf8(line).unwrap();
        for other in [
            text.replace("\"n\":1", "\"n\":1.0"),
            text.replace("\"n\":1", "\"n\": 1"),
            text.replace("\"n\":1", "\"n\":\"\\u0041\""),
            text.replace("\"n\":1", "\"n\":\"\\/\""),
            text.replace("\"n\":1", "\"n\":-0"),
            text.replace("\"n\":1", "\"n\":1,\"n\":2"),
            text.replace("\"n\":1", "\"é\":1"),
            text.replace("\"n\":1", "\"n\":1e3"),
            text.replace("\"n\":1", "\"n\":1234567890123456"),
        ] {
            assert!(fast(other.as_bytes()).is_none(), "{other}");
            // The slow path still reads it, and the hash it computes is the canonical one.
            assert!(parse(other.as_bytes()).is_ok(), "{other}");
        }
        let invalid = text.replace("\"n\":1", "\"n\":01");
        assert!(fast(invalid.as_bytes()).is_none());
        assert!(matches!(
            parse(invalid.as_bytes()),
            Err(LineError::NotJson(_))
        ));
    }
}
