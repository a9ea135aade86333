//! What is queued in the outbox for a ledger, as object keys of docs/SHIPPING.md: a chain's
//! signed checkpoint with the entries added since its last one, the closing bundles, and the
//! signer's certificate. The hook queues them as a session goes (`crate::hook::checkpoint`);
//! the shipper queues them for a ledger recorded before shipping was on
//! (`crate::ship::backfill`). Both hold the ledger's lock.

use super::bundle::Written;
use super::checkpoint::{self, ObjectNames};
use super::outbox;
use crate::ledger::store::{CheckpointMark, Ledger};
use crate::trust::Signer;
use std::path::Path;

/// Signs chain `index`'s checkpoint and queues it, with the entries since its last one, then
/// records it as queued in the sealed state.
pub fn chain(
    attenu: &Path,
    ledger: &mut Ledger,
    signer: &Signer,
    index: usize,
) -> Result<(), String> {
    let key = &signer.key;
    let chain = ledger.state.chains[index].clone();
    if chain.checkpointed.is_none() {
        // A chain's first checkpoint brings the certificate that vouches for its key.
        certificate(attenu, signer)?;
    }
    let (size, root) = (chain.tree.size(), chain.tree.root());
    let from = chain.checkpointed.unwrap_or(CheckpointMark {
        size: 0,
        offset: chain.start,
    });
    // A chain ends where the next one starts.
    let end = ledger
        .state
        .chains
        .get(index + 1)
        .map_or(ledger.state.stamp.len, |next| next.start);
    let entries = ledger
        .read_range(from.offset, end)
        .map_err(|e| e.to_string())?;
    let signed = checkpoint::sign(key, &chain.chain_id, size, &root).map_err(|e| e.to_string())?;
    let names = ObjectNames {
        kid: &key.kid,
        session: &ledger.paths.name,
        chain_id: &chain.chain_id,
    };
    // Entries first: a checkpoint in the store always has the entries it commits to beside it.
    if size > from.size {
        outbox::put(attenu, &names.entries(from.size, size, &root), &entries)
            .map_err(|e| e.to_string())?;
    }
    outbox::put(attenu, &names.checkpoint(size, &root), signed.as_bytes())
        .map_err(|e| e.to_string())?;
    ledger.mark_checkpointed(index, CheckpointMark { size, offset: end });
    Ok(())
}

/// Queues the bundles just exported. Returns a warning for each that could not be queued.
pub fn bundles(
    attenu: &Path,
    ledger: &Ledger,
    signer: &Signer,
    written: &[Written],
) -> Vec<String> {
    let key = &signer.key;
    let mut warnings: Vec<String> = certificate(attenu, signer).err().into_iter().collect();
    for w in written {
        let names = ObjectNames {
            kid: &key.kid,
            session: &ledger.paths.name,
            chain_id: &w.chain_id,
        };
        let queued = std::fs::read(&w.path).and_then(|bytes| {
            outbox::put(attenu, &names.bundle(w.entries as u64, &w.root), &bytes)
        });
        if let Err(e) = queued {
            warnings.push(format!(
                "bundle {} could not be queued for shipping ({e}); run `attenu-hook ship` after fixing it",
                w.path.display()
            ));
        }
    }
    warnings
}

/// Queues the signer's certificate (content-named, so queueing it again ships nothing new);
/// an uncertified signer has none.
pub fn certificate(attenu: &Path, signer: &Signer) -> Result<(), String> {
    let Some(cert) = &signer.cert else {
        return Ok(());
    };
    let text = format!("{}\n", cert.line);
    outbox::put(
        attenu,
        &checkpoint::certificate_name(&signer.key.kid, text.as_bytes()),
        text.as_bytes(),
    )
    .map_err(|e| format!("the signing certificate could not be queued: {e}"))
}
