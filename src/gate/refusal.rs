//! Why no authorization allows a gated call, when one nearly does: it was used up, it expired,
//! it is bound to another session or agent type, or it is for another input (and which of the
//! input's fields differ, by name only). Read in the claim's transaction; the decision is the
//! claim's, this only says which refusal it is.
//!
//! The fields are told apart by per-field commitments stored beside the authorization
//! (`field_digests`, salted with its input salt). They are not signed and decide nothing: a
//! changed one can only change which field a refusal names.

use super::authz::input_commitment;
use super::claim::ClaimCall;
use super::db::DbError;
use crate::clock as time;
use crate::json::canonical;
use crate::ledger::chain::{hex, unhex};
use crate::reason::{Code, Reason};
use rusqlite::params;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The commitment to each top-level field of `input` (an object), salted with `salt_hex`,
/// as the JSON text stored in `authorizations.field_digests`; `None` for another input.
pub fn field_digests(input: &Value, salt_hex: &str) -> Option<String> {
    let salt = unhex(salt_hex)?;
    let fields: BTreeMap<&str, String> = input
        .as_object()?
        .iter()
        .map(|(k, v)| Some((k.as_str(), field_commitment(&salt, k, v)?)))
        .collect::<Option<_>>()?;
    serde_json::to_string(&fields).ok()
}

fn field_commitment(salt: &[u8], name: &str, value: &Value) -> Option<String> {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(b"attenu-hook.field\0");
    h.update(name.as_bytes());
    h.update([0]);
    h.update(canonical::to_vec(value).ok()?);
    Some(hex(&h.finalize()))
}

/// One authorization of the call's tool, as its row says.
struct Row {
    id: String,
    signed: String,
    uses_left: i64,
    expires_ms: i64,
    session_id: Option<String>,
    agent_type: Option<String>,
    input_digest: String,
    field_digests: Option<String>,
}

/// The most specific refusal for `call` (canonical input `jcs`) when no authorization allowed
/// it and none for its input was refused for another reason; `None` when no authorization of
/// its tool comes near (then it is `gate-authorization-required`).
pub(super) fn explain(
    tx: &rusqlite::Transaction<'_>,
    call: &ClaimCall<'_>,
    jcs: &[u8],
    now: i64,
) -> Result<Option<Reason>, DbError> {
    let mut stmt = tx.prepare(
        "SELECT id, signed, uses_left, expires_ms, session_id, agent_type, input_digest, field_digests
           FROM authorizations WHERE tool = ?1 ORDER BY created_ms DESC, id LIMIT 1000",
    )?;
    let rows: Vec<Row> = stmt
        .query_map(params![call.tool], |r| {
            Ok(Row {
                id: r.get(0)?,
                signed: r.get(1)?,
                uses_left: r.get(2)?,
                expires_ms: r.get(3)?,
                session_id: r.get(4)?,
                agent_type: r.get(5)?,
                input_digest: r.get(6)?,
                field_digests: r.get(7)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let salt = |r: &Row| -> Option<String> {
        let doc: Value = serde_json::from_str(&r.signed).ok()?;
        doc.get("input_salt")?.as_str().map(str::to_string)
    };
    let bound_here = |r: &Row| binding_elsewhere(r, call).is_none();
    let live = |r: &Row| r.uses_left > 0 && r.expires_ms > now;
    // An authorization for this exact input: why it did not allow the call.
    for r in &rows {
        if input_commitment(jcs, salt(r).as_deref()).as_deref() != Some(r.input_digest.as_str()) {
            continue;
        }
        if r.uses_left <= 0 {
            return Ok(Some(used_up(tx, call.tool, r)?));
        }
        if r.expires_ms <= now {
            return Ok(Some(Reason::new(
                Code::GateAuthorizationExpired,
                format!(
                    "{} is gated, and authorization {} for this exact input expired at {}. The host issues a new one with `attenu-hook authorize` (`attenu-hook authorize --list` shows the ones that stand)",
                    call.tool,
                    r.id,
                    time::rfc3339_ms(r.expires_ms.max(0) as u64)
                ),
            )));
        }
        if let Some(why) = binding_elsewhere(r, call) {
            return Ok(Some(Reason::new(
                Code::GateAuthorizationBoundElsewhere,
                format!(
                    "{} is gated, and authorization {} for this exact input is bound to {why}. The host issues one for this call with `attenu-hook authorize` (--session, --agent)",
                    call.tool, r.id
                ),
            )));
        }
    }
    // One for another input that would otherwise allow the call: which fields differ.
    let near: Vec<&Row> = rows.iter().filter(|r| live(r) && bound_here(r)).collect();
    Ok(input_differs(call, jcs, &near, salt))
}

/// The refusal naming the fields in which the call's input differs from the nearest of
/// `near` (usable authorizations of its tool for other inputs); `None` when there is none.
fn input_differs(
    call: &ClaimCall<'_>,
    jcs: &[u8],
    near: &[&Row],
    salt: impl Fn(&Row) -> Option<String>,
) -> Option<Reason> {
    let input = serde_json::from_slice::<Value>(jcs).unwrap_or(Value::Null);
    let nearest = near
        .iter()
        .map(|r| (differing_fields(r, salt(r).as_deref(), &input), r))
        .min_by_key(|(fields, _)| fields.as_ref().map_or(usize::MAX, Vec::len));
    nearest.map(|(fields, r)| {
        let which = match fields {
            Some(f) if !f.is_empty() => format!(
                "its {} differ{} (the values are not shown)",
                f.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                if f.len() == 1 { "s" } else { "" }
            ),
            _ => "it was issued for another input".to_string(),
        };
        Reason::new(
            Code::GateInputDiffers,
            format!(
                "{} is gated, and authorization {} is for another input: {which}. An authorization binds the exact tool_input; the host issues one for this input with `attenu-hook authorize`",
                call.tool, r.id
            ),
        )
    })
}

/// The refusal for an authorization of this input whose uses are all gone.
fn used_up(tx: &rusqlite::Transaction<'_>, tool: &str, r: &Row) -> Result<Reason, DbError> {
    let used: i64 = tx.query_row(
        "SELECT COUNT(*) FROM claims WHERE authorization_id = ?1 AND result = 'allowed'",
        params![r.id],
        |row| row.get(0),
    )?;
    Ok(Reason::new(
        Code::GateAuthorizationUsedUp,
        format!(
            "{tool} is gated, and authorization {} for this exact input was used up: {used} earlier call{} took its use{}. The host issues a new one with `attenu-hook authorize` (`attenu-hook authorize --list` shows the ones that stand)",
            r.id,
            if used == 1 { "" } else { "s" },
            if used == 1 { "" } else { "s" }
        ),
    ))
}

/// What an authorization is bound to that this call is not, by field.
fn binding_elsewhere(r: &Row, call: &ClaimCall<'_>) -> Option<String> {
    if let Some(s) = r.session_id.as_deref().filter(|s| *s != call.session_id) {
        return Some(format!(
            "another session (session_id {s}; this call is in {})",
            call.session_id
        ));
    }
    match (r.agent_type.as_deref(), call.agent_type) {
        (Some(a), Some(b)) if a == b => None,
        (Some(a), other) => Some(format!(
            "another caller (agent_type '{a}'; this call is by {})",
            other.map_or("the main thread".to_string(), |o| format!("'{o}'"))
        )),
        (None, _) => None,
    }
}

/// The names of the top-level fields in which `input` differs from what authorization `r`
/// was issued for (missing or extra ones included), sorted; `None` when it stored none.
fn differing_fields(r: &Row, salt: Option<&str>, input: &Value) -> Option<Vec<String>> {
    let stored: BTreeMap<String, String> =
        serde_json::from_str(r.field_digests.as_deref()?).ok()?;
    let salt = unhex(salt?)?;
    let here = input.as_object()?;
    let mut names: Vec<String> = stored
        .iter()
        .filter(|(k, d)| {
            here.get(k.as_str())
                .and_then(|v| field_commitment(&salt, k, v))
                .as_ref()
                != Some(*d)
        })
        .map(|(k, _)| k.clone())
        .chain(here.keys().filter(|k| !stored.contains_key(*k)).cloned())
        .collect();
    names.sort();
    names.dedup();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fields_that_differ_are_named_and_no_value_is() {
        let salt = "00112233445566778899aabbccddeeff";
        let row = Row {
            id: "a".into(),
            signed: String::new(),
            uses_left: 1,
            expires_ms: 0,
            session_id: None,
            agent_type: None,
            input_digest: String::new(),
            field_digests: field_digests(
                &json!({"command": "deploy --prod", "timeout": 5, "description": "d"}),
                salt,
            ),
        };
        let names = differing_fields(
            &row,
            Some(salt),
            &json!({"command": "deploy --prod --force", "timeout": 5, "run_in_background": true}),
        );
        assert_eq!(
            names.unwrap(),
            ["command", "description", "run_in_background"]
        );
        assert!(!row.field_digests.unwrap().contains("deploy"));
    }
}
