//! Step (5): one chain id, the bundle's, on every entry and on the anchor.

use super::json::json_eq;
use super::shown::shown_opt;
use super::{Bundle, FailureName, Log};
use crate::ledger::fields::field;

/// What step (5) found.
pub(super) struct ChainIds {
    pub(super) ok: bool,
    /// The anchor names another chain; the anchor check does not report it a second time.
    pub(super) anchor_reported: bool,
}

pub(super) fn check(bundle: &Bundle<'_>, log: &mut Log<'_>) -> ChainIds {
    let bundle_chain_id = bundle.members.get(field::CHAIN_ID);
    let foreign = bundle
        .objects()
        .find(|(_, e)| !json_eq(e.get(field::CHAIN_ID), bundle_chain_id));
    if let Some((i, e)) = foreign {
        log.at(
            FailureName::ChainIdMismatch,
            i,
            format!(
                "the entry names chain {} but the bundle is chain {}: entries of another chain were mixed in",
                shown_opt(e.get(field::CHAIN_ID)),
                shown_opt(bundle_chain_id)
            ),
        );
    }
    let mut anchor_reported = false;
    if let Some(a) = bundle.anchor {
        if !json_eq(a.get(field::CHAIN_ID), bundle_chain_id) {
            anchor_reported = true;
            log.chain(
                FailureName::AnchorChainIdMismatch,
                format!(
                    "the anchor commits to chain {} but the bundle is chain {}: the anchor belongs to another chain",
                    shown_opt(a.get(field::CHAIN_ID)),
                    shown_opt(bundle_chain_id)
                ),
            );
        }
    }
    ChainIds {
        ok: foreign.is_none() && !anchor_reported,
        anchor_reported,
    }
}
