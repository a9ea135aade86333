//! A file rule's path (`Read(./src/**)`, `Edit(//etc/hosts)`), read with Claude Code's path
//! forms and gitignore's matching:
//!
//! | form | anchored at |
//! |---|---|
//! | `//p` | the file system's root: `/p` |
//! | `~/p` | the home directory |
//! | `/p` | the project root (Claude Code: the directory of the settings file's project) |
//! | `./p`, or `p` with a `/` inside | the project root |
//! | `p` with no `/` inside (`*.env`, `secrets/`) | any directory under the project root |
//!
//! `*` and `?` match within one path segment, `[…]` one character of a class, `**` any
//! number of segments. As in gitignore, a pattern that matches a directory matches everything
//! inside it. Paths are compared as the bytes they are, after `.` and `..` are resolved.

use std::path::{Component, Path, PathBuf};

/// Where a rule's path is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    FileSystemRoot,
    Home,
    ProjectRoot,
}

/// One file rule's path pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    pub base: Base,
    /// Matched at any depth below the base (a gitignore pattern with no inner `/`).
    pub any_depth: bool,
    /// The pattern's segments.
    pub segments: Vec<String>,
}

/// What a path pattern is matched in: the directories its forms are anchored at.
#[derive(Debug, Clone, Copy)]
pub struct PathContext<'a> {
    pub project_root: &'a Path,
    pub home: Option<&'a Path>,
}

impl PathPattern {
    /// Reads a file rule's specifier. `None` for an empty one.
    pub fn parse(spec: &str) -> Option<PathPattern> {
        let spec = spec.trim();
        let (base, rest, anchored) = if let Some(r) = spec.strip_prefix("//") {
            (Base::FileSystemRoot, r, true)
        } else if let Some(r) = spec.strip_prefix("~/") {
            (Base::Home, r, true)
        } else if let Some(r) = spec.strip_prefix('/') {
            (Base::ProjectRoot, r, true)
        } else if let Some(r) = spec.strip_prefix("./") {
            (Base::ProjectRoot, r, true)
        } else {
            (Base::ProjectRoot, spec, false)
        };
        // A trailing `/` means the directory; what is inside it matches as it does anyway.
        let body = rest.trim_end_matches('/');
        if body.is_empty() {
            return (anchored && !spec.is_empty()).then(|| PathPattern {
                base,
                any_depth: false,
                segments: vec!["**".into()],
            });
        }
        let segments: Vec<String> = body
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .map(str::to_string)
            .collect();
        let any_depth = !anchored && !body.contains('/');
        Some(PathPattern {
            base,
            any_depth,
            segments,
        })
    }

    /// Whether the absolute, normalized `path` (or a directory it is inside) matches.
    pub fn matches(&self, path: &Path, cx: PathContext<'_>) -> bool {
        let base = match self.base {
            Base::FileSystemRoot => Path::new("/"),
            Base::Home => match cx.home {
                Some(h) => h,
                None => return false,
            },
            Base::ProjectRoot => cx.project_root,
        };
        let (Some(path), Some(base)) = (normalize(path), normalize(base)) else {
            return false;
        };
        let Ok(rel) = path.strip_prefix(&base) else {
            return false;
        };
        let rel: Vec<&[u8]> = rel
            .components()
            .map(|c| c.as_os_str().as_encoded_bytes())
            .collect();
        let lead: &[u8] = b"**";
        let pat: Vec<&[u8]> = self
            .any_depth
            .then_some(lead)
            .into_iter()
            .chain(self.segments.iter().map(|s| s.as_bytes()))
            .collect();
        prefix_matches(&pat, &rel)
    }
}

/// `path` with `.` and `..` resolved lexically; `None` if it is relative or climbs above `/`.
pub fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    Some(out)
}

/// Whether the pattern's segments match the path's first `k` segments for some `k >= 1` (the
/// path, or a directory it is inside), `**` standing for any number of segments. A table of
/// `pattern × path` positions: no pattern of stars can make it take longer than that.
fn prefix_matches(pat: &[&[u8]], path: &[&[u8]]) -> bool {
    let (np, nq) = (pat.len(), path.len());
    // `row[j]`: `pat[i..]` matches from `path[j..]`, for the row `i` being computed.
    let mut next: Vec<bool> = (0..=nq).map(|j| j >= 1).collect();
    for i in (0..np).rev() {
        let mut row = vec![false; nq + 1];
        for j in (0..=nq).rev() {
            row[j] = if pat[i] == b"**" && i + 1 == np {
                // A trailing `**` is what is inside: at least one more segment.
                j < nq
            } else if pat[i] == b"**" {
                next[j] || (j < nq && row[j + 1])
            } else {
                j < nq && next[j + 1] && segment_matches(pat[i], path[j])
            };
        }
        next = row;
    }
    next[0]
}

/// One segment against one glob segment: `*`, `?`, `[…]` (`[!…]`, `[^…]`), `\x`.
pub fn segment_matches(pat: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pat.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => class(pat, p, name[n]),
            Some(b'\\') if p + 1 < pat.len() => (pat[p + 1] == name[n]).then_some(p + 2),
            Some(c) => (*c == name[n]).then_some(p + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                p = next;
                n += 1;
            }
            (None, Some((sp, sn))) => {
                p = sp + 1;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    pat[p..].iter().all(|c| *c == b'*')
}

/// A `[…]` class at `pat[at]` against `c`: where the pattern goes on if it matches. An unclosed
/// `[` is a literal.
fn class(pat: &[u8], at: usize, c: u8) -> Option<usize> {
    let mut i = at + 1;
    let negated = matches!(pat.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let start = i;
    let mut hit = false;
    while i < pat.len() && (pat[i] != b']' || i == start) {
        if i + 2 < pat.len() && pat[i + 1] == b'-' && pat[i + 2] != b']' {
            hit |= pat[i] <= c && c <= pat[i + 2];
            i += 3;
        } else {
            hit |= pat[i] == c;
            i += 1;
        }
    }
    if i >= pat.len() {
        return (c == b'[').then_some(at + 1);
    }
    (hit != negated).then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rule: &str, path: &str) -> bool {
        let cx = PathContext {
            project_root: Path::new("/p"),
            home: Some(Path::new("/home/u")),
        };
        PathPattern::parse(rule)
            .unwrap()
            .matches(Path::new(path), cx)
    }

    #[test]
    fn every_path_form_is_anchored_where_claude_code_anchors_it() {
        for (rule, path, want) in [
            ("./src/**", "/p/src/a/b.rs", true),
            ("./src/**", "/p/srcx/a", false),
            ("./src/**", "/q/src/a", false),
            ("src/**", "/p/src/a", true),
            ("src/*.rs", "/p/src/a.rs", true),
            ("src/*.rs", "/p/src/x/a.rs", false),
            ("/src/**", "/p/src/a", true),
            ("/src/**", "/src/a", false),
            ("//etc/hosts", "/etc/hosts", true),
            ("//etc/**", "/etc/ssh/sshd_config", true),
            ("//etc/hosts", "/p/etc/hosts", false),
            ("~/.ssh/**", "/home/u/.ssh/id_ed25519", true),
            ("~/.ssh/**", "/p/.ssh/id", false),
            ("*.env", "/p/.env", true),
            ("*.env", "/p/a.env", true),
            ("*.env", "/p/deep/er/prod.env", true),
            (".env", "/p/sub/.env", true),
            ("./.env", "/p/sub/.env", false),
            ("./.env", "/p/.env", true),
            ("secrets", "/p/secrets/key.pem", true),
            ("./secrets/", "/p/secrets/key.pem", true),
            ("./secrets/**", "/p/secrets", false),
            ("./src/**", "/p/src/../.attenu/anchor.key", false),
            ("./docs/[a-c]*.md", "/p/docs/b1.md", true),
            ("./docs/[!a-c]*.md", "/p/docs/b1.md", false),
            ("./a?c", "/p/abc", true),
        ] {
            assert_eq!(m(rule, path), want, "{rule} ~ {path}");
        }
        assert!(PathPattern::parse("").is_none());
    }

    #[test]
    fn without_a_home_a_home_rule_matches_nothing() {
        let cx = PathContext {
            project_root: Path::new("/p"),
            home: None,
        };
        let p = PathPattern::parse("~/x").unwrap();
        assert!(!p.matches(Path::new("/home/u/x"), cx));
    }

    #[test]
    fn hostile_segments_stay_cheap() {
        let pat = format!("./{}/**", "*a".repeat(500));
        assert!(!m(&pat, &format!("/p/{}", "b".repeat(4000))));
        let deep = format!("./{}", "**/".repeat(30));
        let _ = m(&deep, &format!("/p/{}", "a/".repeat(40)));
    }
}
