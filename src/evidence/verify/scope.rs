//! The scope grammar and `x.*` wildcards (attenu-guard authority.py, profile -01).

/// The scope grammar: lowercase dot-separated segments, at least two, `*` only as the whole
/// last segment.
pub(super) fn valid_scope(s: &str) -> bool {
    let segments: Vec<&str> = s.split('.').collect();
    if segments.len() < 2 {
        return false;
    }
    let word = |w: &str| {
        let mut b = w.bytes();
        matches!(b.next(), Some(c) if c.is_ascii_lowercase())
            && b.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
    };
    let (last, init) = segments.split_last().expect("two segments");
    init.iter().all(|w| word(w)) && (*last == "*" || word(last))
}

/// Does the held scope cover the requested one: equal, or a terminal `x.*` covering every
/// scope below `x.` (never `x` itself, never `xy.z`).
pub fn scope_covers(held: &str, requested: &str) -> bool {
    held == requested
        || held
            .strip_suffix('*')
            .is_some_and(|prefix| prefix.ends_with('.') && requested.starts_with(prefix))
}
