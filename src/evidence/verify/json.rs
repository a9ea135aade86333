//! Reading JSON values the way the reference does: null reads as absent, numbers compare by
//! value, truthiness is Python's.

use super::{Obj, Value};
use crate::json::canonical;
use crate::ledger::fields::field;
use serde_json::Number;
use std::collections::HashMap;

/// A present, non-null member (`dict.get` in the reference reads null and absent alike).
pub(super) fn get<'a>(e: &'a Obj<'a>, k: &str) -> Option<&'a Value<'a>> {
    e.get(k).filter(|v| !v.is_null())
}

pub(super) fn present_but_null(e: &Obj, k: &str) -> bool {
    matches!(e.get(k), Some(Value::Null))
}

pub(super) fn event_of<'a>(e: &'a Obj<'a>) -> Option<&'a str> {
    e.get(field::EVENT).and_then(Value::as_str)
}

pub(super) fn kind(v: Option<&Value>) -> &'static str {
    match v {
        None | Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

/// The integer a `seq` or `v` is, by the reference's rule: an integral number, never a bool.
/// (A float beyond ±2^100 is read as no integer; no honest ledger carries one.)
pub(super) fn integral(v: Option<&Value>) -> Option<i128> {
    let n = match v {
        Some(Value::Number(n)) => n,
        _ => return None,
    };
    if let Some(i) = n.as_i64() {
        return Some(i as i128);
    }
    if let Some(u) = n.as_u64() {
        return Some(u as i128);
    }
    let f = n.as_f64()?;
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1.0e30 {
        Some(f as i128)
    } else {
        None
    }
}

/// A `seq` as the report carries it: an integer within the safe range, else none.
pub(super) fn seq_value(v: Option<&Value>) -> Option<i64> {
    integral(v)
        .filter(|i| i.unsigned_abs() <= canonical::MAX_SAFE_INTEGER as u128)
        .map(|i| i as i64)
}

/// Two `v` (or `seq`) values are the same: equal integers when either is integral, otherwise
/// the same JSON value (null and absent alike).
pub(super) fn same_number(a: Option<&Value>, b: Option<&Value>) -> bool {
    let (ia, ib) = (integral(a), integral(b));
    if ia.is_some() || ib.is_some() {
        return ia == ib;
    }
    json_eq(a, b)
}

pub(super) fn num_eq(a: &Number, b: &Number) -> bool {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

/// JSON equality with numbers compared by value (`1` is `1.0`) and null equal to absent.
pub(super) fn json_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => value_eq(x, y),
        _ => false,
    }
}

pub(super) fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_eq(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| value_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| value_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Python truthiness of a JSON value.
pub(super) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

pub(super) fn non_empty_str(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str).is_some_and(|s| !s.is_empty())
}

pub(super) fn is_number(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Number(_)))
}

pub(super) fn num_f64(v: Option<&Value>) -> Option<f64> {
    match v {
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    }
}

pub(super) fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The first kill of each node, node -> index of that kill.
pub(super) fn note_revoked(e: &Obj, index: usize, revoked: &mut HashMap<String, usize>) {
    if let Some(Value::Array(list)) = e.get(field::REVOKED) {
        for n in list.iter().filter_map(Value::as_str) {
            revoked.entry(n.to_string()).or_insert(index);
        }
    }
}
