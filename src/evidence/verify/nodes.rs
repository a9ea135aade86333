//! Step (7): the authority of every node, read from the root or spawn that defines it.

use super::authority::Authority;
use super::json::event_of;
use super::shown::{shown_opt, shown_str};
use super::{Bundle, FailureName, Log, Obj, Value};
use crate::ledger::fields::{event, field};
use std::collections::{HashMap, HashSet};

/// Every node with a readable authority, by node id.
pub(super) struct Nodes<'a> {
    pub(super) authorities: HashMap<&'a str, Authority>,
    /// Some root or spawn defines no node, or an authority that cannot be read.
    pub(super) unreadable: bool,
}

pub(super) fn read<'a>(bundle: &Bundle<'a>, log: &mut Log<'_>) -> Nodes<'a> {
    let mut nodes = Nodes {
        authorities: HashMap::new(),
        unreadable: false,
    };
    let mut defined_by: HashSet<&str> = HashSet::new();
    for (i, e) in bundle.objects() {
        let ev = event_of(e);
        if !matches!(ev, Some(event::ROOT | event::SPAWN)) {
            continue;
        }
        let Some(node) = e.get(field::NODE).and_then(Value::as_str) else {
            nodes.unreadable = true;
            let name = definition_failure(ev);
            log.at(
                name,
                i,
                format!(
                    "the {} entry's node {} is not a string, so it defines no node",
                    ev.unwrap_or(""),
                    shown_opt(e.get(field::NODE))
                ),
            );
            continue;
        };
        if !defined_by.insert(node) {
            continue; // defined twice: reported by monotonicity
        }
        read_one(&mut nodes, e, ev, node, i, log);
    }
    nodes
}

/// A root carries its `authority`, a spawn the authority it was `granted`.
fn definition_failure(ev: Option<&str>) -> FailureName {
    if ev == Some(event::ROOT) {
        FailureName::UnreadableAuthority
    } else {
        FailureName::UnreadableGrant
    }
}

fn read_one<'a>(
    nodes: &mut Nodes<'a>,
    e: &'a Obj<'a>,
    ev: Option<&str>,
    node: &'a str,
    i: usize,
    log: &mut Log<'_>,
) {
    let member = if ev == Some(event::ROOT) {
        field::AUTHORITY
    } else {
        field::GRANTED
    };
    match Authority::from_wire(e.get(member), member) {
        Ok(a) => {
            nodes.authorities.insert(node, a);
        }
        Err(why) => {
            nodes.unreadable = true;
            log.at(
                definition_failure(ev),
                i,
                format!(
                    "the {member} of node {} cannot be read ({why}); delegations from it and actions on it cannot \
                     be measured",
                    shown_str(node)
                ),
            );
        }
    }
}
