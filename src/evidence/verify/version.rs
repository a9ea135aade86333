//! Steps (1) and (2): the schema version of the bundle, the anchor, the root and every entry,
//! and exactly one root. A version 1 chain carrying version 2 fields is reported here too.

use super::json::{event_of, same_number};
use super::shown::{shown_list, shown_opt};
use super::{Bundle, FailureName, Log};
use crate::ledger::fields::event;
use crate::ledger::fields::field;
use crate::ledger::fields::V2_ONLY_FIELDS;

/// What steps (1) and (2) found.
pub(super) struct Versions {
    /// The bundle, the anchor, the root and every entry declare one supported version.
    pub(super) ok: bool,
    /// Exactly one root.
    pub(super) root_ok: bool,
}

/// Runs steps (1) and (2) in the order the report lists their failures.
pub(super) fn check(bundle: &Bundle<'_>, log: &mut Log<'_>) -> Versions {
    let mut ok = bundle_and_anchor(bundle, log);
    let roots: Vec<usize> = bundle
        .objects()
        .filter(|(_, e)| event_of(e) == Some(event::ROOT))
        .map(|(i, _)| i)
        .collect();
    let root_ok = one_root(&roots, log);
    if let [root] = roots[..] {
        ok &= root_version(bundle, root, log);
    }
    ok &= entry_versions(bundle, log);
    Versions { ok, root_ok }
}

/// The bundle's own version is supported, and the anchor commits to the same one.
fn bundle_and_anchor(bundle: &Bundle<'_>, log: &mut Log<'_>) -> bool {
    let raw_v = bundle.raw_v;
    let mut ok = matches!(bundle.v, Some(1) | Some(2));
    if !ok {
        log.chain(
            FailureName::UnsupportedVersion,
            format!(
                "the bundle declares schema version {}; this verifier reads versions 1 and 2 only, so it will not \
                 guess at the meaning of this one",
                shown_opt(raw_v)
            ),
        );
    }
    if let Some(a) = bundle.anchor {
        if !same_number(a.get(field::V), raw_v) {
            ok = false;
            log.chain(
                FailureName::AnchorVersionMismatch,
                format!(
                    "the anchor commits to schema version {} but the bundle declares {}: the anchor belongs to \
                     another export",
                    shown_opt(a.get(field::V)),
                    shown_opt(raw_v)
                ),
            );
        }
    }
    ok
}

/// Step (2): exactly one root.
fn one_root(roots: &[usize], log: &mut Log<'_>) -> bool {
    match roots.len() {
        0 => log.chain(
            FailureName::MissingRoot,
            "the bundle has no root entry, so there is no authority to measure delegations and actions \
             against; the ledger is truncated or is not a whole chain"
                .into(),
        ),
        1 => {}
        n => log.at(
            FailureName::MultipleRoots,
            roots[1],
            format!(
                "the bundle has {n} root entries; a chain has exactly one, so a second chain was spliced in \
                 (a mid-session restart must start a new chain id)"
            ),
        ),
    }
    roots.len() == 1
}

fn root_version(bundle: &Bundle<'_>, root: usize, log: &mut Log<'_>) -> bool {
    let e = bundle.entries[root].expect("an object");
    if same_number(e.get(field::V), bundle.raw_v) {
        return true;
    }
    log.at(
        FailureName::RootVersionMismatch,
        root,
        format!(
            "the root declares schema version {} but the bundle declares {}; a chain is written at one \
             version",
            shown_opt(e.get(field::V)),
            shown_opt(bundle.raw_v)
        ),
    );
    false
}

/// Every entry declares the bundle's version; one failure lists every other version seen.
fn entry_versions(bundle: &Bundle<'_>, log: &mut Log<'_>) -> bool {
    let raw_v = bundle.raw_v;
    let mixed: Vec<usize> = bundle
        .objects()
        .filter(|(_, e)| !same_number(e.get(field::V), raw_v))
        .map(|(i, _)| i)
        .collect();
    let Some(&first) = mixed.first() else {
        return true;
    };
    let mut seen: Vec<String> = Vec::new();
    for &i in &mixed {
        let v = shown_opt(bundle.entries[i].and_then(|e| e.get(field::V)));
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    log.at(
        FailureName::MixedEntryVersions,
        first,
        format!(
            "{} entr{} declare schema version {} while the bundle declares {}; a chain never mixes versions",
            mixed.len(),
            if mixed.len() == 1 { "y" } else { "ies" },
            seen.join(", "),
            shown_opt(raw_v)
        ),
    );
    false
}

/// On a version 1 chain (whose versions are sound), no entry carries a version 2 field.
pub(super) fn v2_fields_on_v1(bundle: &Bundle<'_>, log: &mut Log<'_>) {
    for (i, e) in bundle.objects() {
        let mut leaked: Vec<&str> = e.keys().filter(|f| V2_ONLY_FIELDS.contains(f)).collect();
        if !leaked.is_empty() {
            leaked.sort();
            log.at(
                FailureName::V2FieldOnV1,
                i,
                format!(
                    "the entry carries version 2 field(s) {} on a version 1 chain; a chain never mixes versions",
                    shown_list(leaked)
                ),
            );
        }
    }
}
