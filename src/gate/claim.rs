//! Claiming an authorization: its atomic consumption in PreToolUse.
//!
//! [`claim`] runs one `BEGIN IMMEDIATE` transaction that reserves the `tool_use_id` (a replay
//! is refused), finds an authorization whose signature, tool, digest, expiry and bindings all
//! hold, and consumes one use. Uses are never given back: an error after consumption is a
//! denial, not a refund. In shadow mode the same search runs as a read ([`Use::DryRun`]):
//! nothing is reserved or consumed.

use super::authz::{canonical_input, input_commitment, reviewer_key, ReviewerError};
use super::db::{self, DbError};
use crate::clock as time;
use crate::config::Config;
use crate::ledger::chain::unhex;
use crate::reason::{Code, Reason};
use ed25519_dalek::Signature;
use rusqlite::{params, TransactionBehavior};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// Why one stored authorization does not allow the call (the claim goes on to the next).
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error(transparent)]
    Reviewer(#[from] ReviewerError),
    #[error("its signed salt is not hex")]
    SaltNotHex,
    #[error("signature is not 64 bytes of hex")]
    SignatureNotHex,
    #[error("signature does not verify with the reviewer's configured key")]
    BadSignature,
    #[error("signed document unreadable")]
    Unreadable,
    #[error("the stored row does not match what the reviewer signed")]
    RowChanged,
    #[error("the signed document has no use count")]
    NoUseCount,
    #[error("its signed use count is {signed}, {used} already used, but the database says {left} left; the row was changed")]
    UsesChanged { signed: i64, used: i64, left: i64 },
}

/// What the gate decided for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed {
        authorization_id: String,
        reviewer: String,
        uses_left: i64,
    },
    Denied(Reason),
}

pub struct ClaimCall<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    pub tool_use_id: Option<&'a str>,
    pub session_id: &'a str,
    pub agent_type: Option<&'a str>,
}

/// What a claim does with the authorization it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Enforce mode: reserve the tool_use_id and consume one use, atomically.
    Consume,
    /// Shadow mode: find what a claim would decide, changing nothing.
    DryRun,
}

/// Reserves the call's tool_use_id and consumes one use of a valid authorization, atomically
/// (or, with [`Use::DryRun`], only says whether it would). `busy` bounds the wait for another
/// process's write lock on the database.
pub fn claim(
    attenu_dir: &Path,
    config: &Config,
    call: &ClaimCall<'_>,
    how: Use,
    busy: Duration,
) -> Verdict {
    match claim_inner(attenu_dir, config, call, how, busy) {
        Ok(v) => v,
        Err(e) => Verdict::Denied(Reason::new(Code::GateStoreFailed, format!("the gate could not decide ({e}); denying. Its state is .attenu/gate.sqlite: a lock held by another process clears when that process ends; a file that is not a database has to be moved aside"))),
    }
}

fn claim_inner(
    attenu_dir: &Path,
    config: &Config,
    call: &ClaimCall<'_>,
    how: Use,
    busy: Duration,
) -> Result<Verdict, DbError> {
    let Some(tool_use_id) = call.tool_use_id else {
        return Ok(Verdict::Denied(Reason::new(
            Code::GateAuthorizationRequired,
            "a gated call must carry a tool_use_id to be reserved; this one has none",
        )));
    };
    let jcs = match canonical_input(call.input) {
        Ok(j) => j,
        // Not a store failure: no authorization can ever be bound to such an input.
        Err(e) => {
            return Ok(Verdict::Denied(Reason::new(
                Code::GateAuthorizationRequired,
                format!("{e}, so no authorization can be bound to it"),
            )))
        }
    };
    let now = time::now_ms() as i64;
    let mut conn = db::open_waiting(attenu_dir, busy)?;
    let tx = conn.transaction_with_behavior(match how {
        Use::Consume => TransactionBehavior::Immediate,
        Use::DryRun => TransactionBehavior::Deferred,
    })?;
    if replayed(&tx, how, tool_use_id, call.session_id, now)? {
        drop(tx);
        return Ok(Verdict::Denied(Reason::new(
            Code::GateReplay,
            format!("tool_use_id {tool_use_id} was already presented to the gate; a replayed call is never authorized twice"),
        )));
    }
    let mut refusals = Vec::new();
    for c in candidates(&tx, call, now)? {
        match check_candidate(&tx, config, call, &jcs, now, &c)? {
            Check::OtherInput => {}
            Check::Refused(why) => refusals.push((c.id, why)),
            Check::Valid if how == Use::DryRun => {
                return Ok(Verdict::Allowed {
                    authorization_id: c.id,
                    reviewer: c.reviewer,
                    uses_left: c.uses_left,
                });
            }
            Check::Valid => {
                if consume(&tx, &c.id, tool_use_id)? {
                    tx.commit()?;
                    return Ok(Verdict::Allowed {
                        authorization_id: c.id,
                        reviewer: c.reviewer,
                        uses_left: c.uses_left - 1,
                    });
                }
            }
        }
    }
    // Which refusal it is, when an authorization nearly allows the call; one refused for
    // another reason (a signature) is named as it is.
    let near = match refusals.is_empty() {
        true => super::refusal::explain(&tx, call, &jcs, now)?,
        false => None,
    };
    if how == Use::Consume {
        tx.execute(
            "UPDATE claims SET result = 'denied' WHERE tool_use_id = ?1",
            params![tool_use_id],
        )?;
        tx.commit()?;
    }
    Ok(near.map_or_else(|| no_authorization(call.tool, &refusals), Verdict::Denied))
}

/// The denial when no authorization allows a call to `tool`, naming why each one for its
/// input was refused.
fn no_authorization(tool: &str, refusals: &[(String, Refusal)]) -> Verdict {
    let detail = if refusals.is_empty() {
        String::new()
    } else {
        let each: Vec<String> = refusals
            .iter()
            .map(|(id, why)| format!("{id}: {why}"))
            .collect();
        format!(" (refused: {})", each.join("; "))
    };
    Verdict::Denied(Reason::new(
        Code::GateAuthorizationRequired,
        format!(
            "{tool} is gated and no valid, unexpired, unused authorization by a configured reviewer matches this exact tool and input{detail}. The host issues one with `attenu-hook authorize`"
        ),
    ))
}

/// Whether `tool_use_id` was presented before. Consuming reserves it in the same step (as
/// pending), so two processes with one id cannot both go on; a dry run only looks.
fn replayed(
    tx: &rusqlite::Transaction<'_>,
    how: Use,
    tool_use_id: &str,
    session_id: &str,
    now: i64,
) -> Result<bool, DbError> {
    Ok(match how {
        Use::Consume => {
            tx.execute(
                "INSERT INTO claims (tool_use_id, session_id, claimed_ms, result) VALUES (?1, ?2, ?3, 'pending') ON CONFLICT (tool_use_id) DO NOTHING",
                params![tool_use_id, session_id, now],
            )?
                == 0
        }
        Use::DryRun => tx
            .prepare("SELECT 1 FROM claims WHERE tool_use_id = ?1")
            .and_then(|mut st| st.exists(params![tool_use_id]))?,
    })
}

/// One stored authorization that may allow the call, as its row says (nothing in it is
/// trusted before [`check_signed`]).
struct Candidate {
    id: String,
    reviewer: String,
    signed: String,
    sig: String,
    uses_left: i64,
    input_digest: String,
}

/// Every live authorization of this tool and these bindings; which of them is for this
/// input only its own salt can tell.
fn candidates(
    tx: &rusqlite::Transaction<'_>,
    call: &ClaimCall<'_>,
    now: i64,
) -> Result<Vec<Candidate>, DbError> {
    let mut stmt = tx.prepare(
        "SELECT id, reviewer, signed, sig, uses_left, input_digest FROM authorizations
                 WHERE tool = ?1 AND uses_left > 0 AND expires_ms > ?2
                   AND (session_id IS NULL OR session_id = ?3) AND (agent_type IS NULL OR agent_type = ?4)
                 ORDER BY expires_ms, id",
    )?;
    let rows = stmt.query_map(
        params![
            call.tool,
            now,
            call.session_id,
            call.agent_type.unwrap_or("")
        ],
        |r| {
            Ok(Candidate {
                id: r.get(0)?,
                reviewer: r.get(1)?,
                signed: r.get(2)?,
                sig: r.get(3)?,
                uses_left: r.get(4)?,
                input_digest: r.get(5)?,
            })
        },
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What one candidate says about the call.
enum Check {
    /// It is bound to another input.
    OtherInput,
    /// It is for this input but does not allow the call, for this reason.
    Refused(Refusal),
    /// It allows the call.
    Valid,
}

/// Checks candidate `c` against the call whose canonical input is `jcs`.
fn check_candidate(
    tx: &rusqlite::Transaction<'_>,
    config: &Config,
    call: &ClaimCall<'_>,
    jcs: &[u8],
    now: i64,
    c: &Candidate,
) -> Result<Check, DbError> {
    // Read before its signature is checked only to find the salt; nothing is trusted
    // until `check_signed` has verified the bytes it was parsed from.
    let doc: Value = serde_json::from_str(&c.signed).unwrap_or(Value::Null);
    let salt = doc.get("input_salt").and_then(Value::as_str);
    let Some(digest) = input_commitment(jcs, salt) else {
        return Ok(Check::Refused(Refusal::SaltNotHex));
    };
    if digest != c.input_digest {
        return Ok(Check::OtherInput);
    }
    let used: i64 = tx.query_row(
        "SELECT COUNT(*) FROM claims WHERE authorization_id = ?1 AND result = 'allowed'",
        params![c.id],
        |r| r.get(0),
    )?;
    Ok(
        match check_signed(config, c, &doc, call, &digest, now, used) {
            Ok(()) => Check::Valid,
            Err(why) => Check::Refused(why),
        },
    )
}

/// Consumes one use of authorization `id` for `tool_use_id`; false when another claim took
/// its last use first.
fn consume(tx: &rusqlite::Transaction<'_>, id: &str, tool_use_id: &str) -> Result<bool, DbError> {
    let n = tx.execute(
        "UPDATE authorizations SET uses_left = uses_left - 1 WHERE id = ?1 AND uses_left > 0",
        params![id],
    )?;
    if n != 1 {
        return Ok(false);
    }
    tx.execute(
        "UPDATE claims SET authorization_id = ?1, result = 'allowed' WHERE tool_use_id = ?2",
        params![id, tool_use_id],
    )?;
    Ok(true)
}

/// Whether candidate `c` (its signed document parsed as `doc`, `used` times on record)
/// allows `call`, whose input commits to `digest`.
fn check_signed(
    config: &Config,
    c: &Candidate,
    doc: &Value,
    call: &ClaimCall<'_>,
    digest: &str,
    now: i64,
    used: i64,
) -> Result<(), Refusal> {
    let Candidate {
        id,
        reviewer,
        signed,
        sig,
        uses_left,
        ..
    } = c;
    let uses_left = *uses_left;
    let key = reviewer_key(config, reviewer)?;
    let sig_bytes: [u8; 64] = unhex(sig)
        .and_then(|b| b.try_into().ok())
        .ok_or(Refusal::SignatureNotHex)?;
    key.verify_strict(signed.as_bytes(), &Signature::from_bytes(&sig_bytes))
        .map_err(|_| Refusal::BadSignature)?;
    // `doc` is `signed` as parsed by the caller (Null when it did not parse).
    if doc.is_null() {
        return Err(Refusal::Unreadable);
    }
    let same = doc["type"] == json!("attenu-hook.authorization")
        && matches!(doc["v"].as_i64(), Some(1 | 2))
        && doc["id"] == json!(id)
        && doc["reviewer"] == json!(reviewer)
        && doc["tool"] == json!(call.tool)
        && doc["input_digest"] == json!(digest)
        && doc["expires_ms"].as_i64().is_some_and(|e| e > now)
        && (doc["session_id"].is_null() || doc["session_id"] == json!(call.session_id))
        && (doc["agent_type"].is_null() || doc["agent_type"].as_str() == call.agent_type);
    if !same {
        return Err(Refusal::RowChanged);
    }
    // The count of uses is what the reviewer signed, not what the row says: a counter raised
    // in the database, or one whose earlier uses are on record as claims, gives no more.
    let signed_uses = doc["uses"].as_i64().ok_or(Refusal::NoUseCount)?;
    if uses_left > signed_uses || used >= signed_uses {
        return Err(Refusal::UsesChanged {
            signed: signed_uses,
            used,
            left: uses_left,
        });
    }
    Ok(())
}

/// Whether the gate allowed `tool_use_id` in `session_id`: a PostToolUse whose allow the
/// ledger no longer holds still finishes a gated call, whose outcome must not go unrecorded.
/// A project without a gate database has allowed nothing (and this does not create one).
pub fn allowed_claim(
    attenu_dir: &Path,
    session_id: &str,
    tool_use_id: &str,
    busy: Duration,
) -> Result<bool, DbError> {
    if !crate::fs::check_regular_file(&attenu_dir.join(db::FILE))? {
        return Ok(false);
    }
    let conn = db::open_waiting(attenu_dir, busy)?;
    conn.prepare(
        "SELECT 1 FROM claims WHERE tool_use_id = ?1 AND session_id = ?2 AND result = 'allowed'",
    )
    .and_then(|mut st| st.exists(params![tool_use_id, session_id]))
    .map_err(DbError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::authz::input_digest;

    #[test]
    fn a_refusal_names_the_counts_it_found() {
        let e = Refusal::UsesChanged {
            signed: 1,
            used: 0,
            left: 5,
        };
        assert_eq!(
            e.to_string(),
            "its signed use count is 1, 0 already used, but the database says 5 left; the row was changed"
        );
        assert_eq!(
            input_digest(&json!({"a": 1}), Some("zz"))
                .unwrap_err()
                .to_string(),
            "the salt is not hex"
        );
    }
}
