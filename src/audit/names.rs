//! The object keys of `docs/SHIPPING.md`, below the store's prefix:
//! `<kid>/<session>/<chain_id>/{checkpoint,entries,bundle}/<file>`. Numbers are exactly 20
//! decimal digits and roots 64 lowercase hex digits, so a name has one spelling.

use crate::tlog::Hash;

/// What an object's file name says it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `checkpoint/<size>-<root>.note`
    Checkpoint { size: u64, root: Hash },
    /// `entries/<from>-<to>-<root>.jsonl`: entries `from..to`; the tree at `to` has `root`.
    Entries { from: u64, to: u64, root: Hash },
    /// `bundle/<size>-<root>.json`
    Bundle { size: u64, root: Hash },
}

/// A key split into its session, its chain and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectKey {
    pub kid: String,
    pub session: String,
    pub chain_id: String,
    /// `None`: the file name is not one of the layout's.
    pub kind: Option<Kind>,
}

/// Splits `key`. `None` when it is not below a chain's directory at all (fewer than five
/// components); a file there whose name is not of the layout has `kind: None`.
pub fn parse(key: &str) -> Option<ObjectKey> {
    let parts: Vec<&str> = key.split('/').collect();
    let [kid, session, chain_id, dir, file] = parts.as_slice() else {
        return None;
    };
    if [kid, session, chain_id].iter().any(|c| c.is_empty()) {
        return None;
    }
    Some(ObjectKey {
        kid: kid.to_string(),
        session: session.to_string(),
        chain_id: chain_id.to_string(),
        kind: kind(dir, file),
    })
}

/// The kid of a certificate object, `<kid>/certificate/<64 hex>.pub`
/// (`crate::evidence::checkpoint::certificate_name`).
pub fn certificate_of(key: &str) -> Option<&str> {
    let mut parts = key.split('/');
    let (kid, dir, file) = (parts.next()?, parts.next()?, parts.next()?);
    let ok = parts.next().is_none()
        && !kid.is_empty()
        && dir == "certificate"
        && file.strip_suffix(".pub").and_then(root_hex).is_some();
    ok.then_some(kid)
}

/// The (kid, session) of a key with at least two components, for a key that belongs to a
/// session but not to the layout.
pub fn session_of(key: &str) -> Option<(String, String)> {
    let mut parts = key.split('/');
    let (kid, session) = (parts.next()?, parts.next()?);
    (parts.next().is_some() && !kid.is_empty() && !session.is_empty())
        .then(|| (kid.to_string(), session.to_string()))
}

fn kind(dir: &str, file: &str) -> Option<Kind> {
    match dir {
        "checkpoint" => {
            let (size, root) = size_root(file.strip_suffix(".note")?)?;
            Some(Kind::Checkpoint { size, root })
        }
        "bundle" => {
            let (size, root) = size_root(file.strip_suffix(".json")?)?;
            Some(Kind::Bundle { size, root })
        }
        "entries" => {
            let stem = file.strip_suffix(".jsonl")?;
            let (from, rest) = stem.split_once('-')?;
            let (to, root) = size_root(rest)?;
            Some(Kind::Entries {
                from: number(from)?,
                to,
                root,
            })
        }
        _ => None,
    }
}

fn size_root(s: &str) -> Option<(u64, Hash)> {
    let (size, root) = s.split_once('-')?;
    Some((number(size)?, root_hex(root)?))
}

fn number(s: &str) -> Option<u64> {
    (s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// 64 lowercase hex digits.
pub fn root_hex(s: &str) -> Option<Hash> {
    if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    crate::ledger::chain::unhex(s)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::checkpoint::ObjectNames;

    #[test]
    fn reads_back_the_names_the_hook_writes() {
        let names = ObjectNames {
            kid: "attenu-hook-0123456789abcdef",
            session: "s1",
            chain_id: "cc-s1-abc-1",
        };
        let root = [7u8; 32];
        let k = parse(&names.checkpoint(12, &root)).unwrap();
        assert_eq!(
            (k.kid.as_str(), k.session.as_str(), k.chain_id.as_str()),
            ("attenu-hook-0123456789abcdef", "s1", "cc-s1-abc-1")
        );
        assert_eq!(k.kind, Some(Kind::Checkpoint { size: 12, root }));
        assert_eq!(
            parse(&names.entries(4, 12, &root)).unwrap().kind,
            Some(Kind::Entries {
                from: 4,
                to: 12,
                root
            })
        );
        assert_eq!(
            parse(&names.bundle(12, &root)).unwrap().kind,
            Some(Kind::Bundle { size: 12, root })
        );
    }

    #[test]
    fn other_spellings_are_not_names() {
        let hex = "ab".repeat(32);
        for bad in [
            format!("k/s/c/checkpoint/12-{hex}.note"),
            format!(
                "k/s/c/checkpoint/00000000000000000012-{}.note",
                hex.to_uppercase()
            ),
            format!("k/s/c/checkpoint/00000000000000000012-{hex}.json"),
            format!("k/s/c/other/00000000000000000012-{hex}.note"),
            format!("k/s/c/entries/00000000000000000012-{hex}.jsonl"),
        ] {
            assert_eq!(parse(&bad).unwrap().kind, None, "{bad}");
        }
        assert_eq!(parse("k/s/c/x"), None);
        assert_eq!(session_of("k/s/x"), Some(("k".into(), "s".into())));
        assert_eq!(session_of("k/s"), None);
    }
}
