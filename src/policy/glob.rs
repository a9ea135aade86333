//! The few glob forms a file filter can use (`*`, `?`, `[...]`, `{a,b}`, `\\` escapes),
//! matched without backtracking, so a hostile pattern costs linear time.

/// The end of the `[...]` class opening at `at`, if it is one (a `]` first, or after `!`/`^`,
/// is a member, as in every glob dialect).
fn class_end(g: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    if matches!(g.get(i), Some(b'!' | b'^')) {
        i += 1;
    }
    if g.get(i) == Some(&b']') {
        i += 1;
    }
    g[i.min(g.len())..]
        .iter()
        .position(|&b| b == b']')
        .map(|k| i + k)
}

/// Every spelling a filter's `{a,b}` alternatives (nested too) stand for, or `None` when they
/// are unbalanced or stand for more than 256. Braces inside a `[...]` class are members.
pub(crate) fn expand_braces(g: &str) -> Option<Vec<String>> {
    const MAX_SPELLINGS: usize = 256;
    let mut done = Vec::new();
    let mut todo = vec![g.to_string()];
    while let Some(g) = todo.pop() {
        let b = g.as_bytes();
        // The first group: its `{`, its matching `}`, and the commas at its own depth.
        let (mut open, mut depth, mut commas) = (None, 0usize, Vec::new());
        let mut close = None;
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'[' => {
                    if let Some(end) = class_end(b, i) {
                        i = end;
                    }
                }
                b'{' => {
                    if open.is_none() {
                        open = Some(i);
                    }
                    depth += 1;
                }
                b'}' if open.is_some() => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                b'}' => return None,
                b',' if depth == 1 => commas.push(i),
                _ => {}
            }
            i += 1;
        }
        match (open, close) {
            (None, _) => done.push(g),
            (Some(_), None) => return None,
            // Byte offsets of ASCII delimiters are always character boundaries.
            (Some(open), Some(close)) => {
                let bounds = std::iter::once(open)
                    .chain(commas)
                    .chain(std::iter::once(close))
                    .collect::<Vec<_>>();
                for w in bounds.windows(2) {
                    todo.push(format!(
                        "{}{}{}",
                        &g[..open],
                        &g[w[0] + 1..w[1]],
                        &g[close + 1..]
                    ));
                }
            }
        }
        if done.len() + todo.len() > MAX_SPELLINGS {
            return None;
        }
    }
    Some(done)
}

/// A glob token of one path component.
enum Token<'a> {
    Any,
    One,
    Class { set: &'a [u8], negated: bool },
    Byte(u8),
}

fn tokens(p: &[u8]) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'*' => {
                if !matches!(out.last(), Some(Token::Any)) {
                    out.push(Token::Any);
                }
                i += 1;
            }
            b'?' => {
                out.push(Token::One);
                i += 1;
            }
            b'[' => match class_end(p, i) {
                Some(end) => {
                    let mut set = &p[i + 1..end];
                    let negated = matches!(set.first(), Some(b'!' | b'^'));
                    if negated {
                        set = &set[1..];
                    }
                    out.push(Token::Class { set, negated });
                    i = end + 1;
                }
                None => {
                    out.push(Token::Byte(b'['));
                    i += 1;
                }
            },
            b'\\' if i + 1 < p.len() => {
                out.push(Token::Byte(p[i + 1]));
                i += 2;
            }
            b => {
                out.push(Token::Byte(b));
                i += 1;
            }
        }
    }
    out
}

fn class_has(set: &[u8], c: u8) -> bool {
    let mut i = 0;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == b'-' {
            if set[i] <= c && c <= set[i + 2] {
                return true;
            }
            i += 3;
        } else {
            if set[i] == c {
                return true;
            }
            i += 1;
        }
    }
    false
}

/// One path component against a glob of `*`, `?`, `[...]` (ranges, `!`/`^`) and `\` escapes.
/// A table over (token, position in `s`): linear in the pattern for a short `s`, whatever the
/// pattern, where backtracking is exponential in its stars.
pub(crate) fn glob_match(p: &[u8], s: &[u8]) -> bool {
    // reach[j]: the tokens so far can match exactly s[..j].
    let mut reach = vec![false; s.len() + 1];
    reach[0] = true;
    for t in tokens(p) {
        let mut next = vec![false; s.len() + 1];
        for j in 0..=s.len() {
            if !reach[j] {
                continue;
            }
            match t {
                Token::Any => next[j..].iter_mut().for_each(|r| *r = true),
                Token::One => {
                    if j < s.len() {
                        next[j + 1] = true;
                    }
                }
                Token::Class { set, negated } => {
                    if j < s.len() && class_has(set, s[j]) != negated {
                        next[j + 1] = true;
                    }
                }
                Token::Byte(b) => {
                    if j < s.len() && s[j] == b {
                        next[j + 1] = true;
                    }
                }
            }
        }
        reach = next;
    }
    reach[s.len()]
}
