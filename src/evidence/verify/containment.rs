//! Step (9): containment. Every `allow` that claims authority was on a known, unrevoked node
//! and within that node's authority; an allow marked `"policy": "unlisted"` claims none and is
//! counted as ungated instead.

use super::authority::{Authority, Outside};
use super::json::{event_of, kind, note_revoked, truthy};
use super::records::known_policy;
use super::shown::{shown_opt, shown_str};
use super::{Bundle, FailureName, Log, Obj, Value};
use crate::ledger::fields::{context, event, field};
use std::collections::{HashMap, HashSet};

/// What step (9) found.
pub(super) struct Containment {
    pub(super) ok: bool,
    /// Allows that claim authority, measured.
    pub(super) actions: usize,
    /// Allows marked as never gated.
    pub(super) ungated: usize,
    /// Denials.
    pub(super) denied: usize,
    /// Of the denials, Claude Code's own refusals and interruptions.
    pub(super) refused_by_claude_code: usize,
}

pub(super) fn check(
    bundle: &Bundle<'_>,
    auth: &HashMap<&str, Authority>,
    log: &mut Log<'_>,
) -> Containment {
    let mut out = Containment {
        ok: true,
        actions: 0,
        ungated: 0,
        denied: 0,
        refused_by_claude_code: 0,
    };
    let mut known: HashSet<&str> = HashSet::new();
    let mut killed_at: HashMap<String, usize> = HashMap::new();
    for (i, e) in bundle.objects() {
        match event_of(e) {
            Some(event::ROOT | event::SPAWN) => {
                if let Some(n) = e.get(field::NODE).and_then(Value::as_str) {
                    known.insert(n);
                }
                continue;
            }
            Some(event::KILL) => {
                note_revoked(e, i, &mut killed_at);
                continue;
            }
            Some(event::ALLOW) => {}
            Some(event::DENY) => {
                out.denied += 1;
                out.refused_by_claude_code += usize::from(by_claude_code(e));
                continue;
            }
            _ => continue,
        }
        if known_policy(e.get(field::POLICY)) {
            out.ungated += 1;
            continue;
        }
        out.actions += 1;
        let node = e.get(field::NODE);
        let node_str = node.and_then(Value::as_str);
        let a = node_str
            .filter(|n| known.contains(n))
            .and_then(|n| auth.get(n));
        let Some(a) = a else {
            out.ok = false;
            log.at(
                FailureName::AllowOnUnknownNode,
                i,
                format!(
                    "an action was allowed on node {}, which no earlier root or spawn defines with a readable \
                     authority",
                    shown_opt(node)
                ),
            );
            continue;
        };
        let node_str = node_str.expect("known node");
        out.ok &= allow_within(e, i, node_str, a, &killed_at, log);
    }
    out
}

/// The allow at `i` on the known node `node` is after no kill of it and within `a`.
fn allow_within(
    e: &Obj<'_>,
    i: usize,
    node: &str,
    a: &Authority,
    killed_at: &HashMap<String, usize>,
    log: &mut Log<'_>,
) -> bool {
    if let Some(&k) = killed_at.get(node) {
        log.at(
            FailureName::AllowAfterRevoke,
            i,
            format!(
                "{} was allowed on node {} after the node was revoked (entry {k}); a revoked node holds nothing",
                shown_opt(e.get(field::SCOPE)),
                shown_str(node)
            ),
        );
        return false;
    }
    let Err(why) = action_within(e, a) else {
        return true;
    };
    log.at(
        FailureName::NotContained,
        i,
        format!(
            "{} was allowed on node {} outside the authority it was granted: {why}",
            shown_opt(e.get(field::SCOPE)),
            shown_str(node)
        ),
    );
    false
}

/// The action's scope and context, measured against `a`. An empty or absent context is none.
pub(super) fn action_within<'a>(e: &Obj<'_>, a: &'a Authority) -> Result<(), Outside<'a>> {
    let empty = Obj::new();
    let ctx = if truthy(e.get(field::CONTEXT)) {
        e.get(field::CONTEXT).and_then(Value::as_object)
    } else {
        Some(&empty)
    };
    match (e.get(field::SCOPE).and_then(Value::as_str), ctx) {
        (Some(scope), Some(ctx)) => a.permits(scope, ctx),
        (None, _) => Err(Outside::ScopeNotAString(shown_opt(e.get(field::SCOPE)))),
        (_, None) => Err(Outside::ContextNotAnObject(kind(e.get(field::CONTEXT)))),
    }
}

/// A `deny` Claude Code made itself, not the hook (`crate::ledger::refusal`).
pub(super) fn by_claude_code(e: &super::Obj<'_>) -> bool {
    e.get(field::CONTEXT)
        .and_then(|c| c.as_object())
        .and_then(|c| c.get(context::REFUSED_BY))
        .and_then(|r| r.as_str())
        == Some(crate::ledger::refusal::BY_CLAUDE_CODE)
}
