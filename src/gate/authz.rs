//! Host-signed, one-use authorizations: issuing them, and what they are bound to.
//!
//! `attenu-hook authorize` (run by the host, never by the model) writes an authorization bound
//! to the exact tool name and the SHA-256 of the complete RFC 8785 canonical `tool_input`, with
//! a use count, an expiry, optional session and agent bindings, and the reviewer's name, signed
//! by that reviewer's Ed25519 key, whose public half must be configured in `[gate] reviewers`.
//! Their consumption in PreToolUse is [`super::claim`], re-exported here.

use super::db::{self, DbError};
use crate::clock as time;
use crate::config::Config;
use crate::evidence::keys;
use crate::json::canonical;
use crate::ledger::chain::{hex, unhex};
use ed25519_dalek::VerifyingKey;
use rusqlite::params;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

pub use super::claim::{allowed_claim, claim, ClaimCall, Use, Verdict};

/// Why a tool input has no commitment an authorization can be bound to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    #[error("the tool input has no canonical form: {0}")]
    NotCanonical(#[source] canonical::CanonicalError),
    #[error("the salt is not hex")]
    SaltNotHex,
}

/// Why `--expires-in` is not a validity an authorization may have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("'{0}' is not a duration (use seconds, or 90s, 10m, 2h, 1d)")]
    NotADuration(String),
    #[error("'{0}' has an unknown unit (use s, m, h or d)")]
    UnknownUnit(String),
    #[error("an authorization must be valid for at least one second")]
    Zero,
    #[error(
        "'{0}' is longer than an authorization may last (366d); issue a new one when it runs out"
    )]
    TooLong(String),
}

/// Why a reviewer's configured public key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReviewerError {
    #[error("'{name}' is not a reviewer in [gate] reviewers of .attenu/config.toml")]
    NotConfigured { name: String },
    #[error("bad reviewer key")]
    BadKey,
    #[error("reviewer '{name}' has an invalid public key: {source}")]
    InvalidKey {
        name: String,
        #[source]
        source: ed25519_dalek::SignatureError,
    },
}

/// Why `attenu-hook authorize` stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    #[error(transparent)]
    Reviewer(#[from] ReviewerError),
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    #[error("the key in {} is not reviewer '{reviewer}''s configured key; nothing was authorized", .key_path.display())]
    NotReviewersKey { key_path: PathBuf, reviewer: String },
    #[error("--uses must be at least 1")]
    ZeroUses,
    #[error("an authorization must be valid for between 1 second and 366 days")]
    Validity,
    /// No randomness for the id or the salt.
    #[error("{0}")]
    Randomness(#[from] crate::random::NoRandomness),
    #[error(transparent)]
    Digest(#[from] DigestError),
    /// The authorization document has no canonical form to sign.
    #[error(transparent)]
    Canonical(#[from] canonical::CanonicalError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("cannot store the authorization: {0}")]
    Store(#[source] rusqlite::Error),
}

/// The canonical (RFC 8785) form of a tool input, which an authorization is bound to.
pub(super) fn canonical_input(tool_input: &Value) -> Result<Vec<u8>, DigestError> {
    canonical::to_vec(tool_input).map_err(DigestError::NotCanonical)
}

/// The commitment an authorization stores: `SHA-256(salt || JCS(tool_input))` with the
/// authorization's own random salt (the ledger's `params_c14n_v1` construction), so the
/// database does not give away a small input (`{"command": "deploy"}`) to anyone who tries
/// candidates. Authorizations of the first format (v1, no salt) are `SHA-256(JCS(tool_input))`.
pub(super) fn input_commitment(jcs: &[u8], salt_hex: Option<&str>) -> Option<String> {
    let mut h = Sha256::new();
    if let Some(salt) = salt_hex {
        h.update(unhex(salt)?);
    }
    h.update(jcs);
    Some(hex(&h.finalize()))
}

/// An authorization's commitment to `tool_input` under its salt (none: the v1 format).
pub fn input_digest(tool_input: &Value, salt_hex: Option<&str>) -> Result<String, DigestError> {
    input_commitment(&canonical_input(tool_input)?, salt_hex).ok_or(DigestError::SaltNotHex)
}

/// `90s`, `10m`, `2h`, `1d`, or plain seconds → milliseconds.
pub fn parse_duration(s: &str) -> Result<u64, DurationError> {
    let s = s.trim();
    let (num, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| DurationError::NotADuration(s.to_string()))?;
    let mult = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(DurationError::UnknownUnit(s.to_string())),
    };
    if n == 0 {
        return Err(DurationError::Zero);
    }
    match n.checked_mul(mult) {
        Some(ms) if ms <= MAX_VALIDITY_MS => Ok(ms),
        _ => Err(DurationError::TooLong(s.to_string())),
    }
}

/// The longest an authorization may be valid: a grant meant to be used once should not
/// outlive the reviewer's memory of it, and every expiry stays far from integer limits.
pub const MAX_VALIDITY_MS: u64 = 366 * 86_400_000;

pub struct Request<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    pub reviewer: &'a str,
    pub key_path: &'a Path,
    pub uses: u32,
    pub expires_in_ms: u64,
    pub session: Option<&'a str>,
    pub agent: Option<&'a str>,
}

pub(super) fn reviewer_key(config: &Config, name: &str) -> Result<VerifyingKey, ReviewerError> {
    let hex_key = config
        .gate
        .reviewers
        .get(name)
        .ok_or_else(|| ReviewerError::NotConfigured {
            name: name.to_string(),
        })?;
    let bytes: [u8; 32] = unhex(hex_key)
        .and_then(|b| b.try_into().ok())
        .ok_or(ReviewerError::BadKey)?;
    VerifyingKey::from_bytes(&bytes).map_err(|source| ReviewerError::InvalidKey {
        name: name.to_string(),
        source,
    })
}

/// Creates and stores an authorization; returns its id and when it expires (ms).
pub fn authorize(
    project: &Path,
    config: &Config,
    req: &Request<'_>,
) -> Result<(String, u64), AuthorizeError> {
    let expected = reviewer_key(config, req.reviewer)?;
    let key = keys::load(req.key_path)?;
    if key.verifying() != expected {
        return Err(AuthorizeError::NotReviewersKey {
            key_path: req.key_path.to_path_buf(),
            reviewer: req.reviewer.to_string(),
        });
    }
    if req.uses == 0 {
        return Err(AuthorizeError::ZeroUses);
    }
    if req.expires_in_ms == 0 || req.expires_in_ms > MAX_VALIDITY_MS {
        return Err(AuthorizeError::Validity);
    }
    let now = time::now_ms();
    let expires_ms = now + req.expires_in_ms;
    let id = crate::random::random_hex(16)?;
    let salt = crate::random::random_hex(16)?;
    let digest = input_digest(req.input, Some(&salt))?;
    let doc = json!({
        "v": 2,
        "type": "attenu-hook.authorization",
        "id": id,
        "tool": req.tool,
        "input_salt": salt,
        "input_digest": digest,
        "uses": req.uses,
        "expires_ms": expires_ms,
        "session_id": req.session,
        "agent_type": req.agent,
        "reviewer": req.reviewer,
        "created_ms": now,
    });
    let signed = canonical::to_string(&doc)?;
    let sig = hex(&key.sign(signed.as_bytes()));
    let conn = db::open(&project.join(".attenu"))?;
    conn.execute(
        "INSERT INTO authorizations (id, reviewer, tool, input_digest, uses_left, expires_ms, session_id, agent_type, created_ms, signed, sig, field_digests)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![id, req.reviewer, req.tool, doc["input_digest"].as_str(), req.uses, expires_ms as i64, req.session, req.agent, now as i64, signed, sig, super::refusal::field_digests(req.input, &salt)],
    )
    .map_err(AuthorizeError::Store)?;
    Ok((id, expires_ms))
}

/// One stored authorization as `authorize --list` shows it (never its input: only the tool).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Standing {
    pub id: String,
    pub tool: String,
    pub reviewer: String,
    /// The uses the reviewer signed, and those the database has left.
    pub uses: i64,
    pub uses_left: i64,
    pub expires_ms: i64,
    pub session_id: Option<String>,
    pub agent_type: Option<String>,
    pub created_ms: i64,
}

impl Standing {
    /// `usable`, `used up` or `expired`, at `now`.
    pub fn state(&self, now: i64) -> &'static str {
        if self.uses_left <= 0 {
            "used up"
        } else if self.expires_ms <= now {
            "expired"
        } else {
            "usable"
        }
    }
}

/// Every authorization in the project's gate database, newest first; none when there is no
/// database yet (and this does not create one).
pub fn list(project: &Path) -> Result<Vec<Standing>, DbError> {
    let attenu = project.join(".attenu");
    if !crate::fs::check_regular_file(&attenu.join(db::FILE))? {
        return Ok(vec![]);
    }
    let conn = db::open(&attenu)?;
    let mut stmt = conn.prepare(
        "SELECT id, tool, reviewer, signed, uses_left, expires_ms, session_id, agent_type, created_ms
           FROM authorizations ORDER BY created_ms DESC, id",
    )?;
    let rows = stmt.query_map([], |r| {
        let signed: String = r.get(3)?;
        let uses = serde_json::from_str::<Value>(&signed)
            .ok()
            .and_then(|d| d["uses"].as_i64())
            .unwrap_or(0);
        Ok(Standing {
            id: r.get(0)?,
            tool: r.get(1)?,
            reviewer: r.get(2)?,
            uses,
            uses_left: r.get(4)?,
            expires_ms: r.get(5)?,
            session_id: r.get(6)?,
            agent_type: r.get(7)?,
            created_ms: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed errors print what the `String` errors they replaced printed.
    #[test]
    fn duration_errors_say_what_to_write() {
        let text = |s: &str| parse_duration(s).unwrap_err().to_string();
        assert_eq!(text(" 5x "), "'5x' has an unknown unit (use s, m, h or d)");
        assert_eq!(
            text("m"),
            "'m' is not a duration (use seconds, or 90s, 10m, 2h, 1d)"
        );
        assert_eq!(
            text("0m"),
            "an authorization must be valid for at least one second"
        );
        assert_eq!(
            text("367d"),
            "'367d' is longer than an authorization may last (366d); issue a new one when it runs out"
        );
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
    }
}
