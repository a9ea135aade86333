//! Step (8): monotonicity. Every `spawn` names a parent defined earlier and not revoked, and
//! grants an authority no wider than that parent's; no node is defined twice.

use super::authority::Authority;
use super::json::{event_of, note_revoked};
use super::shown::{shown_opt, shown_str};
use super::{Bundle, FailureName, Log, Obj, Value};
use crate::ledger::fields::{event, field};
use std::collections::HashMap;

/// True when every child is within its parent, read in ledger order.
pub(super) fn check(
    bundle: &Bundle<'_>,
    auth: &HashMap<&str, Authority>,
    log: &mut Log<'_>,
) -> bool {
    let mut ok = true;
    let mut defined_at: HashMap<&str, usize> = HashMap::new();
    let mut revoked_at: HashMap<String, usize> = HashMap::new();
    for (i, e) in bundle.objects() {
        let ev = event_of(e);
        if ev == Some(event::KILL) {
            note_revoked(e, i, &mut revoked_at);
            continue;
        }
        if !matches!(ev, Some(event::ROOT | event::SPAWN)) {
            continue;
        }
        let Some(node) = e.get(field::NODE).and_then(Value::as_str) else {
            continue;
        };
        if let Some(&first) = defined_at.get(node) {
            ok = false;
            log.at(
                FailureName::NodeRedefined,
                i,
                format!(
                    "node {} is defined a second time (first at entry {first}); only one definition can hold, so \
                     the ledger is ambiguous about its authority",
                    shown_str(node)
                ),
            );
            continue;
        }
        if ev == Some(event::SPAWN) {
            let spawn = Spawn { e, i, node };
            ok &= spawn.check(&defined_at, &revoked_at, auth, log);
        }
        defined_at.insert(node, i);
    }
    ok
}

/// A spawn entry at `i`, defining `node`.
struct Spawn<'e, 'a> {
    e: &'e Obj<'a>,
    i: usize,
    node: &'e str,
}

impl Spawn<'_, '_> {
    /// The parent is known and unrevoked, and the child's grant is within the parent's.
    fn check(
        &self,
        defined_at: &HashMap<&str, usize>,
        revoked_at: &HashMap<String, usize>,
        auth: &HashMap<&str, Authority>,
        log: &mut Log<'_>,
    ) -> bool {
        let (i, node) = (self.i, self.node);
        let parent = self.e.get(field::PARENT);
        let pid = match parent.and_then(Value::as_str) {
            Some(pid) if defined_at.contains_key(pid) => pid,
            _ => {
                log.at(
                    FailureName::UnknownParent,
                    i,
                    format!(
                        "node {} names parent {}, which no earlier root or spawn defines, so its grant cannot be \
                         measured against anything",
                        shown_str(node),
                        shown_opt(parent)
                    ),
                );
                return false;
            }
        };
        if let Some(&k) = revoked_at.get(pid) {
            log.at(
                FailureName::SpawnFromRevoked,
                i,
                format!(
                    "node {} is spawned from {} after that parent was revoked (entry {k}); a revoked node \
                     holds nothing to delegate",
                    shown_str(node),
                    shown_str(pid)
                ),
            );
            return false;
        }
        let (Some(pa), Some(ca)) = (auth.get(pid), auth.get(node)) else {
            return true;
        };
        match ca.narrower_than(pa) {
            Ok(()) => true,
            Err(why) => {
                log.at(
                    FailureName::NotMonotonic,
                    i,
                    format!(
                        "node {} was granted more than its parent {} holds: {why}",
                        shown_str(node),
                        shown_str(pid)
                    ),
                );
                false
            }
        }
    }
}
