//! Step (6), second half, and step (12): the signed anchor over the chain's head. The
//! signature is checked over [`anchor_signing_input`] under the key the reviewer chose, then
//! that the anchor commits to this chain's id, last seq and head hash. Without a key nothing is
//! verified and the report is invalid (`anchor-not-checked`).

use super::json::{integral, json_eq, truthy};
use super::shown::{shown_list, shown_opt};
use super::status::AnchorStatus;
use super::{AnchorKey, Bundle, FailureName, Log, Obj, Value};
use crate::json::canonical::{self, CanonicalError};
use crate::ledger::chain;
use crate::ledger::fields::field;
use ed25519_dalek::Signature;
use serde_json::Map;

/// The bytes the anchor signature covers: RFC 8785 JSON of the anchor without its `kid`, `sig`
/// and `verified` members (the reference's `AuditLog.verify_anchor`). Export signs these bytes.
pub fn anchor_signing_input(
    anchor: &Map<String, serde_json::Value>,
) -> Result<Vec<u8>, CanonicalError> {
    let body: Map<String, serde_json::Value> = anchor
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "kid" | "sig" | "verified"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    canonical::to_vec(&serde_json::Value::Object(body))
}

/// How the anchor failure begins when it names another key than the pinned one; the verdict
/// line says so instead of "integrity FAILED".
pub const NOT_SIGNED_BY_THAT_KEY: &str = "this bundle was not signed by that key";

/// The anchor check failed; the reason is in the log.
struct Failed;

/// Checks the anchor: its signature under `key`, then that it commits to this chain's head.
pub(super) fn check(
    key: &AnchorKey,
    bundle: &Bundle<'_>,
    chain_ok: bool,
    chain_id_reported: bool,
    log: &mut Log<'_>,
) -> AnchorStatus {
    let (anchor, entries) = (bundle.anchor, &bundle.entries[..]);
    if matches!(key, AnchorKey::None) {
        unkeyed_head(anchor, entries, chain_ok, log);
        return AnchorStatus::NotChecked;
    }
    match verify(key, anchor, entries, chain_ok, chain_id_reported, log) {
        Ok(()) => AnchorStatus::Verified,
        Err(Failed) => AnchorStatus::Failed,
    }
}

/// The keyed checks in order; the first that fails is the one reported.
fn verify(
    key: &AnchorKey,
    anchor: Option<&Obj>,
    entries: &[Option<&Obj>],
    chain_ok: bool,
    chain_id_reported: bool,
    log: &mut Log<'_>,
) -> Result<(), Failed> {
    let a = present(anchor, log)?;
    complete(a, log)?;
    signature(key, a, log)?;
    if !chain_ok {
        log.chain(
            FailureName::AnchorOverBrokenChain,
            "the anchor's signature is genuine, but the entries under it do not reproduce their hash chain (see the \
             integrity failure), so the signed head vouches for a ledger that is not this one"
                .into(),
        );
        return Err(Failed);
    }
    head(a, entries, chain_id_reported, log)
}

/// Step (12): no key, no verdict of valid.
pub(super) fn refuse_without_key(key: &AnchorKey, log: &mut Log<'_>) {
    if matches!(key, AnchorKey::None) {
        log.chain(
            FailureName::AnchorNotChecked,
            "no key was given, so the anchor signature was not checked and a bundle rewritten from its first entry \
             would look consistent; pass the project's anchor.pub with --pub FILE"
                .into(),
        );
    }
}

/// Without a key the signature proves nothing, but an anchor over another head is still
/// evidence of a rewrite.
fn unkeyed_head(anchor: Option<&Obj>, entries: &[Option<&Obj>], chain_ok: bool, log: &mut Log<'_>) {
    if let (Some(a), true, Some(Some(last))) = (anchor, chain_ok, entries.last()) {
        if !commits_to(a, last) {
            log.chain(
                FailureName::AnchorHeadMismatch,
                head_mismatch_detail(a, last),
            );
        }
    }
}

fn present<'a>(anchor: Option<&'a Obj<'a>>, log: &mut Log<'_>) -> Result<&'a Obj<'a>, Failed> {
    anchor.ok_or_else(|| {
        log.chain(
            FailureName::AnchorMissing,
            "the bundle carries no anchor, so nothing signed commits to its head; re-export it (a stripped anchor \
             is how a rewritten bundle hides)"
                .into(),
        );
        Failed
    })
}

fn complete(a: &Obj, log: &mut Log<'_>) -> Result<(), Failed> {
    let missing: Vec<&str> = [field::V, field::CHAIN_ID, field::SEQ, "head", field::TS]
        .into_iter()
        .filter(|f| !a.contains_key(f))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    log.chain(
        FailureName::AnchorMissingField,
        format!(
            "the anchor lacks {}; it is not a signed commitment to a head",
            shown_list(missing)
        ),
    );
    Err(Failed)
}

/// The signature over [`anchor_signing_input`] holds under `key` (which is not `None`).
fn signature(key: &AnchorKey, a: &Obj, log: &mut Log<'_>) -> Result<(), Failed> {
    let signed = match anchor_signing_input(&a.to_map()) {
        Ok(bytes) => bytes,
        Err(e) => {
            log.chain(
                FailureName::AnchorSignatureInvalid,
                format!("the anchor cannot be canonicalized ({e}), so no signature can cover it"),
            );
            return Err(Failed);
        }
    };
    let sig = match a.get("sig") {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::String(s)) => chain::unhex(s),
        Some(_) => None,
    };
    let Some(sig) = sig else {
        log.chain(
            FailureName::AnchorSignatureNotHex,
            "the anchor's sig is not a hex string".into(),
        );
        return Err(Failed);
    };
    if signature_holds(key, &signed, &sig) {
        return Ok(());
    }
    // The anchor names its signer: another key than --pub is the usual mistake (the wrong
    // project's anchor.pub), which reads better as that than as tampering.
    if let (AnchorKey::Pinned(k), Some(Value::String(kid))) = (key, a.get("kid")) {
        let pinned = crate::evidence::keys::kid_for(k);
        if **kid != *pinned {
            log.chain(
                FailureName::AnchorSignatureInvalid,
                format!(
                    "{NOT_SIGNED_BY_THAT_KEY}: its anchor names key {kid}, and --pub holds key {pinned}. Pass the \
                     anchor.pub of the project that wrote it; if --pub is the key you trust, someone else signed it"
                ),
            );
            return Err(Failed);
        }
    }
    let whose = match key {
        AnchorKey::Pinned(_) => "the pinned key (--pub)",
        AnchorKey::FromBundleSide(_) => "the anchor.pub beside the bundle",
        _ => "the given key",
    };
    log.chain(
        FailureName::AnchorSignatureInvalid,
        format!(
            "the anchor's signature does not verify under {whose}: the anchor was altered, or signed with \
             another key (a rewritten bundle re-signed by someone else looks exactly like this)"
        ),
    );
    Err(Failed)
}

fn signature_holds(key: &AnchorKey, signed: &[u8], sig: &[u8]) -> bool {
    match key {
        AnchorKey::Pinned(k) | AnchorKey::FromBundleSide(k) => {
            Signature::from_slice(sig).is_ok_and(|s| k.verify_strict(signed, &s).is_ok())
        }
        AnchorKey::Hmac(secret) => {
            use hmac::Mac;
            let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(secret)
                .expect("HMAC takes any key length");
            mac.update(signed);
            mac.verify_slice(sig).is_ok()
        }
        AnchorKey::None => unreachable!("handled by the caller"),
    }
}

/// The anchor commits to this chain: its id, and the last entry's seq and hash (seq -1 when
/// there are no entries).
fn head(
    a: &Obj,
    entries: &[Option<&Obj>],
    chain_id_reported: bool,
    log: &mut Log<'_>,
) -> Result<(), Failed> {
    let Some(Some(last)) = entries.last() else {
        if integral(a.get(field::SEQ)) != Some(-1) {
            log.chain(
                FailureName::AnchorHeadMismatch,
                format!(
                    "the bundle has no entries but the anchor commits to seq {}",
                    shown_opt(a.get(field::SEQ))
                ),
            );
            return Err(Failed);
        }
        return Ok(());
    };
    let entry_chain_id = entries
        .iter()
        .flatten()
        .map(|e| e.get(field::CHAIN_ID))
        .find(|c| truthy(*c))
        .flatten();
    if !json_eq(a.get(field::CHAIN_ID), entry_chain_id) {
        if !chain_id_reported {
            log.chain(
                FailureName::AnchorChainIdMismatch,
                format!(
                    "the anchor commits to chain {} but the entries are chain {}",
                    shown_opt(a.get(field::CHAIN_ID)),
                    shown_opt(entry_chain_id)
                ),
            );
        }
        return Err(Failed);
    }
    if !commits_to(a, last) {
        log.chain(
            FailureName::AnchorHeadMismatch,
            head_mismatch_detail(a, last),
        );
        return Err(Failed);
    }
    Ok(())
}

fn commits_to(anchor: &Obj, last: &Obj) -> bool {
    json_eq(last.get(field::HASH), anchor.get("head"))
        && integral(last.get(field::SEQ)) == integral(anchor.get(field::SEQ))
}

fn head_mismatch_detail(anchor: &Obj, last: &Obj) -> String {
    format!(
        "the anchor commits to head {} at seq {}, but the last entry is {} at seq {}: the ledger was rewritten \
         (and re-hashed) or extended after the anchor was signed",
        shown_opt(anchor.get("head")),
        shown_opt(anchor.get(field::SEQ)),
        shown_opt(last.get(field::HASH)),
        shown_opt(last.get(field::SEQ))
    )
}
