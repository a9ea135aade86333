//! Signed checkpoints at the hook's edge. When one is due, the chain's tree is signed and
//! queued in the outbox with the entries added since the last, and a detached shipper is
//! started. The decision is already recorded and answered by then, so a failure here never
//! changes the answer: nothing is marked as queued, and the next event tries again.

use super::context::Ctx;
use crate::evidence::bundle::Written;
use crate::evidence::queue::QueueError;
use crate::ledger::store::Ledger;
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
        .map_err(QueueError::from)
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

/// Signs chain `index`'s checkpoint and queues it with its entries (`crate::evidence::queue`).
fn queue(
    ctx: &Ctx<'_>,
    ledger: &mut Ledger,
    signer: &Signer,
    index: usize,
) -> Result<(), QueueError> {
    crate::evidence::queue::chain(ctx.attenu, ledger, signer, index)
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
    let warnings = crate::evidence::queue::bundles(ctx.attenu, ledger, signer, written);
    let _ = crate::ship::spawn_detached(ctx.project);
    warnings.iter().map(ToString::to_string).collect()
}
