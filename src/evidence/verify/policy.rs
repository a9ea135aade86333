//! Step (10), second half: policy markers. Only an allow may carry `policy`, and only a value
//! the format defines (on a version 2 chain the allow and deny record checks own both shapes).

use super::json::event_of;
use super::records::known_policy;
use super::shown::shown_opt;
use super::{Bundle, FailureName, Log, Obj};
use crate::ledger::fields::{event, field};

pub(super) fn check(bundle: &Bundle<'_>, log: &mut Log<'_>) {
    for (i, e) in bundle.objects() {
        entry(e, bundle.v, i, log);
    }
}

/// The rule for the entry at `i` of a chain of version `v` (the streaming pass's too); false
/// when it logged.
pub(super) fn entry(e: &Obj<'_>, v: Option<i128>, i: usize, log: &mut Log<'_>) -> bool {
    if !e.contains_key(field::POLICY) {
        return true;
    }
    let ev = event_of(e);
    // On a version 2 chain the allow and deny record checks own these two shapes.
    if v == Some(2) && matches!(ev, Some(event::ALLOW | event::DENY)) {
        return true;
    }
    let before = log.len();
    if ev == Some(event::ALLOW) {
        if !known_policy(e.get(field::POLICY)) {
            log.at(
                FailureName::UnknownPolicy,
                i,
                format!(
                    "the allow carries policy {}, which the format does not define (only \"unlisted\"); it buys no \
                     exemption from containment",
                    shown_opt(e.get(field::POLICY))
                ),
            );
        }
    } else {
        log.at(
            FailureName::PolicyOnNonAllow,
            i,
            format!(
                "a {} entry carries `policy`, which only an allow may carry",
                shown_opt(e.get(field::EVENT))
            ),
        );
    }
    log.len() == before
}
