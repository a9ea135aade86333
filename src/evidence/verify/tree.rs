//! Step (13): what binds the bundle beyond its anchor. The `checkpoint` member, when present,
//! must be the signed C2SP checkpoint of exactly this chain: origin `attenu-hook/<kid>/<chain
//! id>`, size the number of entries, root the RFC 6962 tree over the entries' hashes, signed by
//! the anchor key. The `chain` member's position must agree with what the entries themselves
//! hash: `index` with the chain id's last part and `previous_chain` with the root entry's
//! `context.previous_chain`. `of` (how many chains the session had when exported) is not bound
//! by anything in the chain and is shown as exported.

use super::json::kind;
use super::status::CheckpointStatus;
use super::{AnchorKey, Bundle, FailureName, Log, Value};
use crate::evidence::checkpoint::{leaf_of_hash, origin};
use crate::ledger::fields::{context, field};
use crate::tlog::{Checkpoint, Frontier, Note, VerifierKey};

/// Checks the `checkpoint` member. Returns `verified`, `failed`, `not-checked` (no Ed25519 key
/// to check its signature with; its size and root were still checked) or `absent`.
pub(super) fn check_checkpoint(
    key: &AnchorKey,
    bundle: &Bundle<'_>,
    log: &mut Log<'_>,
) -> CheckpointStatus {
    check_checkpoint_over(key, bundle, || tree_of(bundle), log)
}

/// [`check_checkpoint`] with the tree over the entries' hashes from `tree` (the streaming
/// pass builds it entry by entry; `bundle` then holds only some of the entries).
pub(super) fn check_checkpoint_over(
    key: &AnchorKey,
    bundle: &Bundle<'_>,
    tree: impl FnOnce() -> Result<Frontier, usize>,
    log: &mut Log<'_>,
) -> CheckpointStatus {
    let Some(member) = bundle.members.get("checkpoint") else {
        return CheckpointStatus::Absent;
    };
    let mut fail = |detail: String| {
        log.chain(FailureName::CheckpointInvalid, detail);
        CheckpointStatus::Failed
    };
    let Some(text) = member.as_str() else {
        return fail(format!(
            "the bundle's checkpoint is {}, not a signed note",
            kind(Some(member))
        ));
    };
    let note = match Note::parse(text) {
        Ok(n) => n,
        Err(e) => return fail(format!("the bundle's checkpoint is not a signed note: {e}")),
    };
    let body = match Checkpoint::parse(note.text()) {
        Ok(b) => b,
        Err(e) => {
            return fail(format!(
                "the bundle's checkpoint is not a tlog checkpoint: {e}"
            ))
        }
    };
    let kid = bundle
        .anchor
        .and_then(|a| a.get("kid"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let chain_id = bundle
        .members
        .get(field::CHAIN_ID)
        .and_then(Value::as_str)
        .unwrap_or("");
    let expected = origin(kid, chain_id);
    if body.origin != expected {
        return fail(format!(
            "the checkpoint names the log {:?}, not this chain's {expected:?}",
            body.origin
        ));
    }
    let tree = match tree() {
        Ok(t) => t,
        Err(index) => {
            return fail(format!(
                "entry {index} has no valid hash, so the checkpoint cannot be checked"
            ))
        }
    };
    if body.size != tree.size() || body.root != tree.root() {
        return fail(format!(
            "the checkpoint commits to {} entries with another root than the bundle's {} entries: it is not this chain's checkpoint",
            body.size,
            tree.size()
        ));
    }
    let public = match key {
        AnchorKey::Pinned(k) | AnchorKey::FromBundleSide(k) => *k,
        AnchorKey::Hmac(_) | AnchorKey::None => return CheckpointStatus::NotChecked,
    };
    let verifier = match VerifierKey::new(kid, public) {
        Ok(v) => v,
        Err(e) => return fail(format!("the anchor's kid cannot name a note key: {e}")),
    };
    match note.verify(&[verifier]) {
        Ok(_) => CheckpointStatus::Verified,
        Err(e) => fail(format!(
            "the checkpoint's signature does not verify under the anchor key: {e}"
        )),
    }
}

/// The tree over the entries' own hashes, or the index of the first entry without one.
fn tree_of(bundle: &Bundle<'_>) -> Result<Frontier, usize> {
    let mut tree = Frontier::new();
    for (i, e) in bundle.entries.iter().enumerate() {
        let leaf = e
            .and_then(|e| e.get(field::HASH))
            .and_then(Value::as_str)
            .and_then(leaf_of_hash)
            .ok_or(i)?;
        tree.append(leaf);
    }
    Ok(tree)
}

/// Checks the `chain` member against the entries. Absent, it binds nothing and is not required
/// (the reference's bundles have none).
pub(super) fn check_position(bundle: &Bundle<'_>, log: &mut Log<'_>) {
    let Some(position) = bundle.members.get("chain").and_then(Value::as_object) else {
        return;
    };
    let chain_id = bundle
        .members
        .get(field::CHAIN_ID)
        .and_then(Value::as_str)
        .unwrap_or("");
    // attenu-hook's chain ids end with the chain's position in the session.
    let from_id = chain_id
        .rsplit('-')
        .next()
        .and_then(|k| k.parse::<u64>().ok());
    let index = position.get("index").and_then(|v| match v {
        Value::Number(n) => n.as_u64(),
        _ => None,
    });
    if chain_id.starts_with("cc-") && from_id.is_some() && index != from_id {
        log.chain(
            FailureName::ChainPositionMismatch,
            format!(
                "the bundle says it is chain {} of its session, but its chain id {chain_id} (hashed into every entry) says {}",
                index.map_or("?".into(), |i| i.to_string()),
                from_id.unwrap_or(0)
            ),
        );
    }
    let claimed = position
        .get("previous_chain")
        .map(|v| v.to_value())
        .filter(|v| !v.is_null());
    let hashed = bundle
        .entries
        .first()
        .copied()
        .flatten()
        .and_then(|root| root.get(field::CONTEXT))
        .and_then(Value::as_object)
        .and_then(|c| c.get(context::PREVIOUS_CHAIN))
        .map(|v| v.to_value())
        .filter(|v| !v.is_null());
    if claimed != hashed {
        log.chain(
            FailureName::ChainPositionMismatch,
            "the bundle's chain.previous_chain differs from the root entry's context.previous_chain, which is what the chain's hashes commit to".into(),
        );
    }
}
