//! Signed checkpoints at the hook's edge. When one is due, the chain's tree is signed and
//! queued in the outbox with the entries added since the last, and a detached shipper is
//! started. The decision is already recorded and answered by then, so a failure here never
//! changes the answer: nothing is marked as queued, and the next event tries again.

use super::context::Ctx;
use crate::evidence::bundle::Written;
use crate::evidence::checkpoint::{self, ObjectNames};
use crate::evidence::outbox;
use crate::ledger::store::{CheckpointMark, Ledger};
use crate::trust::Signer;

/// Why a checkpoint is made now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Occasion {
    /// SessionStart, SubagentStop, SessionEnd, a deny: always.
    Always,
    /// After a decision: once `[ship] checkpoint_every` entries were added since the last.
    IfDue,
}

/// Makes the current chain's checkpoint if shipping is on and `occasion` calls for one, and
/// the last checkpoint of any earlier chain that an agent edit closed with entries unshipped.
/// Returns a warning for the user when one could not be queued.
pub(super) fn make(ctx: &Ctx<'_>, ledger: &mut Ledger, occasion: Occasion) -> Option<String> {
    ctx.config.ship.url.as_ref()?;
    let last = ledger.state.chains.len().checked_sub(1)?;
    let mut due: Vec<usize> = (0..last)
        .filter(|&i| ledger.state.chains[i].unshipped() > 0)
        .collect();
    let current = &ledger.state.chains[last];
    if match occasion {
        Occasion::Always => current.unshipped() > 0 || current.checkpointed.is_none(),
        Occasion::IfDue => current.unshipped() >= u64::from(ctx.config.ship.checkpoint_every),
    } {
        due.push(last);
    }
    if due.is_empty() {
        return None;
    }
    let queued = crate::trust::signer::load(ctx.attenu)
        .map_err(|e| e.to_string())
        .and_then(|signer| {
            due.into_iter()
                .try_for_each(|i| queue(ctx, ledger, &signer, i))
        });
    match queued {
        Ok(()) => {
            // The shipper runs on its own; if it cannot start, the next event starts one.
            let _ = crate::ship::spawn_detached(ctx.project);
            None
        }
        Err(e) => Some(format!(
            "the checkpoint could not be queued for shipping ({e}); it is retried at the next event, and `attenu-hook ship` reports what is left"
        )),
    }
}

/// Signs chain `index`'s checkpoint and queues it, with the entries since its last one, then
/// records it as queued in the sealed state.
fn queue(ctx: &Ctx<'_>, ledger: &mut Ledger, signer: &Signer, index: usize) -> Result<(), String> {
    let key = &signer.key;
    let chain = ledger.state.chains[index].clone();
    if chain.checkpointed.is_none() {
        // A chain's first checkpoint brings the certificate that vouches for its key.
        queue_certificate(ctx, signer)?;
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
        outbox::put(ctx.attenu, &names.entries(from.size, size, &root), &entries)
            .map_err(|e| e.to_string())?;
    }
    outbox::put(
        ctx.attenu,
        &names.checkpoint(size, &root),
        signed.as_bytes(),
    )
    .map_err(|e| e.to_string())?;
    ledger.mark_checkpointed(index, CheckpointMark { size, offset: end });
    Ok(())
}

/// Queues the bundles just exported (SubagentStop, SessionEnd) for shipping, and starts the
/// shipper. Returns a warning for each that could not be queued.
pub(super) fn queue_bundles(
    ctx: &Ctx<'_>,
    ledger: &Ledger,
    signer: &Signer,
    written: &[Written],
) -> Vec<String> {
    if ctx.config.ship.url.is_none() {
        return Vec::new();
    }
    let key = &signer.key;
    let mut warnings: Vec<String> = queue_certificate(ctx, signer).err().into_iter().collect();
    for w in written {
        let names = ObjectNames {
            kid: &key.kid,
            session: &ledger.paths.name,
            chain_id: &w.chain_id,
        };
        let queued = std::fs::read(&w.path).and_then(|bytes| {
            outbox::put(ctx.attenu, &names.bundle(w.entries as u64, &w.root), &bytes)
        });
        if let Err(e) = queued {
            warnings.push(format!(
                "bundle {} could not be queued for shipping ({e}); run `attenu-hook ship` after fixing it",
                w.path.display()
            ));
        }
    }
    let _ = crate::ship::spawn_detached(ctx.project);
    warnings
}

/// Queues the signer's certificate (content-named, so queueing it again ships nothing new);
/// an uncertified signer has none.
fn queue_certificate(ctx: &Ctx<'_>, signer: &Signer) -> Result<(), String> {
    let Some(cert) = &signer.cert else {
        return Ok(());
    };
    let text = format!("{}\n", cert.line);
    outbox::put(
        ctx.attenu,
        &checkpoint::certificate_name(&signer.key.kid, text.as_bytes()),
        text.as_bytes(),
    )
    .map_err(|e| format!("the signing certificate could not be queued: {e}"))
}
