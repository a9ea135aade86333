//! What is queued in the outbox for a ledger, as object keys of docs/SHIPPING.md: a chain's
//! signed checkpoint with the entries added since its last one, the closing bundles, and the
//! signer's certificate. The hook queues them as a session goes (`crate::hook::checkpoint`);
//! the shipper queues them for a ledger recorded before shipping was on
//! (`crate::ship::backfill`). Both hold the ledger's lock.

use super::bundle::Written;
use super::checkpoint::{self, CheckpointError, ObjectNames};
use super::outbox;
use crate::ledger::store::{CheckpointMark, Ledger, StoreError};
use crate::trust::signer::SignerError;
use crate::trust::Signer;
use std::io;
use std::path::{Path, PathBuf};

/// Why something could not be queued for shipping. Nothing is marked as queued then, so the
/// next event (or `attenu-hook ship`) tries again.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error(transparent)]
    Signer(#[from] SignerError),
    #[error("the entries since the chain's last checkpoint cannot be read: {0}")]
    Read(#[from] StoreError),
    #[error(transparent)]
    Sign(#[from] CheckpointError),
    #[error(
        "the outbox cannot be written ({0}); check the space and permissions of .attenu/outbox/"
    )]
    Outbox(#[source] io::Error),
    #[error("the signing certificate could not be queued: {0}")]
    Certificate(#[source] io::Error),
    #[error("bundle {} could not be queued for shipping ({source}); run `attenu-hook ship` after fixing it", .path.display())]
    Bundle {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Signs chain `index`'s checkpoint and queues it, with the entries since its last one, then
/// records it as queued in the sealed state.
pub fn chain(
    attenu: &Path,
    ledger: &mut Ledger,
    signer: &Signer,
    index: usize,
) -> Result<(), QueueError> {
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
    let entries = ledger.read_range(from.offset, end)?;
    let signed = checkpoint::sign(key, &chain.chain_id, size, &root)?;
    let names = ObjectNames {
        kid: &key.kid,
        session: &ledger.paths.name,
        chain_id: &chain.chain_id,
    };
    // Entries first: a checkpoint in the store always has the entries it commits to beside it.
    if size > from.size {
        outbox::put(attenu, &names.entries(from.size, size, &root), &entries)
            .map_err(QueueError::Outbox)?;
    }
    outbox::put(attenu, &names.checkpoint(size, &root), signed.as_bytes())
        .map_err(QueueError::Outbox)?;
    ledger.mark_checkpointed(index, CheckpointMark { size, offset: end });
    Ok(())
}

/// Queues the bundles just exported. Returns why for each that could not be queued.
pub fn bundles(
    attenu: &Path,
    ledger: &Ledger,
    signer: &Signer,
    written: &[Written],
) -> Vec<QueueError> {
    let key = &signer.key;
    let mut warnings: Vec<QueueError> = certificate(attenu, signer).err().into_iter().collect();
    for w in written {
        let names = ObjectNames {
            kid: &key.kid,
            session: &ledger.paths.name,
            chain_id: &w.chain_id,
        };
        let queued = std::fs::read(&w.path).and_then(|bytes| {
            outbox::put(attenu, &names.bundle(w.entries as u64, &w.root), &bytes)
        });
        if let Err(source) = queued {
            warnings.push(QueueError::Bundle {
                path: w.path.clone(),
                source,
            });
        }
    }
    warnings
}

/// Queues the signer's certificate (content-named, so queueing it again ships nothing new);
/// an uncertified signer has none.
pub fn certificate(attenu: &Path, signer: &Signer) -> Result<(), QueueError> {
    let Some(cert) = &signer.cert else {
        return Ok(());
    };
    let text = format!("{}\n", cert.line);
    outbox::put(
        attenu,
        &checkpoint::certificate_name(&signer.key.kid, text.as_bytes()),
        text.as_bytes(),
    )
    .map_err(QueueError::Certificate)
}
