//! The file names in any tool's arguments: an MCP server's `path`, `paths` or `uri`, the LSP
//! tool's `filePath`, a resource's `file://` URI, nested in objects and arrays. Self-protection
//! judges each by the file it reaches, as it judges a built-in tool's `file_path`.
//!
//! A string is taken as a file name when its key says so (`path`, `*_path`, `filePath`, `uri`,
//! `cwd`, `directory`, `source`, `destination`, …, and every string of an array under such a
//! key), or when its value looks like one wherever it is (`/…`, `~/…`, `./…`, `file:…`, or a
//! word naming `.attenu` or `.claude`). Pure: no I/O. The walk is bounded; past the bounds
//! the call is marked [`PathArgs::overflow`] and refused (see docs/SELF-PROTECTION.md).

use serde_json::Value;

/// How deep in the arguments strings are looked for.
pub const MAX_DEPTH: usize = 32;
/// How many file names one call may carry before it is refused rather than resolved.
pub const MAX_PATHS: usize = 64;
/// The longest string read as a file name (`PATH_MAX`); a longer one opens no file.
const MAX_LEN: usize = 4096;

/// The file names found in a call's arguments.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PathArgs {
    /// Each as it would be opened: a `file:` URI decoded to its path.
    pub spelled: Vec<String>,
    /// Nested deeper than [`MAX_DEPTH`] or more than [`MAX_PATHS`] names: not judged, refused.
    pub overflow: bool,
}

/// The file names in `input`. `skip` names top-level keys another check owns (a shell
/// tool's `command`).
pub fn path_args(input: &Value, skip: &[&str]) -> PathArgs {
    let mut out = PathArgs::default();
    walk(input, false, 0, skip, &mut out);
    out
}

fn walk(v: &Value, named: bool, depth: usize, skip: &[&str], out: &mut PathArgs) {
    if out.overflow {
        return;
    }
    if depth > MAX_DEPTH {
        out.overflow = true;
        return;
    }
    match v {
        Value::String(s) if named || looks_like_a_path(s) => push(s, out),
        Value::Array(items) => items
            .iter()
            .for_each(|i| walk(i, named, depth + 1, skip, out)),
        Value::Object(m) => {
            for (k, v) in m {
                if depth == 0 && skip.contains(&k.as_str()) {
                    continue;
                }
                walk(v, names_a_file(k), depth + 1, skip, out);
            }
        }
        _ => {}
    }
}

fn push(s: &str, out: &mut PathArgs) {
    if s.is_empty() || s.len() > MAX_LEN {
        return;
    }
    let mut add = |p: String| {
        if !out.spelled.contains(&p) {
            out.spelled.push(p);
        }
    };
    match file_uri_path(s) {
        Some(paths) => paths.into_iter().for_each(&mut add),
        None => add(s.to_string()),
    }
    if out.spelled.len() > MAX_PATHS {
        out.overflow = true;
    }
}

/// Whether key `k` names a file, however it is cased or joined (`file_path`, `filePath`,
/// `notebook-path`, `sourceUri`).
fn names_a_file(k: &str) -> bool {
    let k: String = k
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    const ENDINGS: &[&str] = &[
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "filenames",
        "dir",
        "dirs",
        "directory",
        "directories",
        "folder",
        "folders",
        "uri",
        "uris",
        "url",
        "urls",
    ];
    const WHOLE: &[&str] = &[
        "cwd",
        "source",
        "sources",
        "destination",
        "destinations",
        "dest",
        "src",
        "target",
        "targets",
        "root",
        "roots",
        "from",
        "to",
        "location",
        "workdir",
    ];
    ENDINGS.iter().any(|e| k.ends_with(e)) || WHOLE.contains(&k.as_str())
}

/// A string that is a file name wherever it stands: absolute, home- or dot-relative, a
/// `file:` URI, or a word (no white space) naming the hook's state or Claude Code's settings.
fn looks_like_a_path(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let word = !s.chars().any(char::is_whitespace);
    s.starts_with('/')
        || s.starts_with("~/")
        || s.starts_with("./")
        || s.starts_with("../")
        || lower.starts_with("file:")
        || word && (lower.contains(".attenu") || lower.contains(".claude"))
}

/// The paths a `file:` URI opens (`file:///p/x`, `file://localhost/p/x`, `file:/p/x`),
/// percent-decoded; with and without a `?query` or `#fragment`, since a server may read either.
/// `None` for anything else; a URI of another scheme (`https:`) names no local file.
fn file_uri_path(s: &str) -> Option<Vec<String>> {
    let scheme = s.get(..5)?;
    if !scheme.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = &s[5..];
    let path = match rest.strip_prefix("//") {
        // An authority: `localhost`, empty, or a host whose path is still read locally by
        // some servers; the path starts at its first `/`.
        Some(auth) => auth.find('/').map_or("/", |i| &auth[i..]),
        None => rest,
    };
    let whole = percent_decode(path);
    let mut out = vec![whole];
    if let Some(cut) = path.find(['?', '#']) {
        out.push(percent_decode(&path[..cut]));
    }
    Some(out)
}

/// `%XX` escapes decoded; an invalid escape is kept as written, and bytes that are not UTF-8
/// are replaced (such a name reaches no file the hook guards by name, and links are resolved).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Tools that only read what their arguments name: the state's secrets are refused to them,
/// the wiring is not. Every other tool, an MCP server's included, may write what it names.
pub fn reads_only(tool: &str) -> bool {
    matches!(
        tool,
        "LSP" | "ReadMcpResourceTool" | "ListMcpResourcesTool" | "WebFetch" | "WebSearch"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_names_are_found_by_key_by_shape_and_nested() {
        for (input, want) in [
            (
                json!({"path": ".attenu/anchor.key"}),
                vec![".attenu/anchor.key"],
            ),
            (json!({"paths": ["a.txt", "b/c"]}), vec!["a.txt", "b/c"]),
            (json!({"filePath": "src/x.rs", "line": 3}), vec!["src/x.rs"]),
            (
                json!({"uri": "file:///p/.attenu/anchor.key"}),
                vec!["/p/.attenu/anchor.key"],
            ),
            (
                json!({"uri": "file://localhost/p/a%20b?x#y"}),
                vec!["/p/a b?x#y", "/p/a b"],
            ),
            (
                json!({"uri": "https://example.com/x"}),
                vec!["https://example.com/x"],
            ),
            (
                json!({"edits": [{"target": "t"}, {"q": "/etc/x"}]}),
                vec!["t", "/etc/x"],
            ),
            (json!({"query": "find the .attenu key"}), vec![]),
            (
                json!({"q": ".claude/settings.json"}),
                vec![".claude/settings.json"],
            ),
            (json!({"content": "hello", "n": 1, "ok": true}), vec![]),
            (json!({"command": "/bin/true"}), vec![]),
        ] {
            let got = path_args(&input, &["command"]);
            assert!(!got.overflow, "{input}");
            assert_eq!(got.spelled, want, "{input}");
        }
    }

    #[test]
    fn past_its_bounds_the_walk_overflows() {
        let many: Vec<String> = (0..=MAX_PATHS).map(|i| format!("/f{i}")).collect();
        assert!(path_args(&json!({"paths": many}), &[]).overflow);
        let mut deep = json!("/x");
        for _ in 0..=MAX_DEPTH {
            deep = json!([deep]);
        }
        assert!(path_args(&json!({ "a": deep }), &[]).overflow);
        let few: Vec<String> = (0..MAX_PATHS).map(|i| format!("/f{i}")).collect();
        assert!(!path_args(&json!({ "paths": few }), &[]).overflow);
    }

    #[test]
    fn key_names_are_read_however_they_are_spelled() {
        for k in [
            "path",
            "file_path",
            "filePath",
            "notebook-path",
            "sourceUri",
            "CWD",
            "Directory",
        ] {
            assert!(names_a_file(k), "{k}");
        }
        for k in ["content", "query", "pattern", "old_string", "command"] {
            assert!(!names_a_file(k), "{k}");
        }
    }
}
