//! The architecture, enforced: the pure modules (the decision, the derivation's cores, the
//! ledger's entries and hashes, the JSON layer, the verifier's checks, the transparency log's
//! maths) reach for no file system, environment, clock or network; no source file passes
//! 600 lines, no function 80; no error is a bare string; and docs and comments name only
//! files and tests that exist.
//! docs/ARCHITECTURE.md says why; this test says where.

use std::path::{Path, PathBuf};

/// Files and directories (under `src/`) that must stay pure. A directory covers every `.rs`
/// file below it.
const PURE: &[&str] = &[
    "policy",
    "json",
    "tlog",
    "reason.rs",
    "ledger/entry.rs",
    "ledger/entry",
    "ledger/chain.rs",
    "ledger/commitment.rs",
    "ledger/fields.rs",
    "derive/frontmatter.rs",
    "derive/scopes.rs",
    "derive/resolve.rs",
    "derive/roster.rs",
    "derive/readable.rs",
    "derive/explain.rs",
    "derive/provenance.rs",
    "derive/error.rs",
    "derive/rules",
    "evidence/verify",
];

/// The verifier's edge: its file reader, which is allowed I/O.
const PURE_EXCEPT: &[&str] = &["evidence/verify/stream.rs"];

/// What a pure module must not name: the file system, the environment, the clock, the
/// network, processes, and this crate's own edges to them.
const IMPURE: &[&str] = &[
    "std::fs",
    "std::env",
    "std::net",
    "std::process",
    "SystemTime",
    "Instant",
    "crate::fs::",
    "clock::now",
    "File::",
];

const MAX_LINES: usize = 600;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A test file, or a directory of tests, is not part of the module it tests.
fn is_test_file(rel: &str) -> bool {
    rel.ends_with("/tests.rs") || rel.ends_with("_tests.rs") || rel.contains("/tests/")
}

/// Each Rust file under the folder `dir` of src/ (`""`: all of it) that is not a test file: its path
/// relative to src/, and its text.
fn sources_under(dir: &str) -> Vec<(String, String)> {
    let (root, mut files) = (src(), Vec::new());
    rust_files(&root.join(dir), &mut files);
    let rel = |f: &PathBuf| {
        f.strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let kept = files.iter().filter(|f| !is_test_file(&rel(f)));
    kept.map(|f| (rel(f), std::fs::read_to_string(f).unwrap()))
        .collect()
}

/// `found` is empty; else the test fails with `why` and each of them on a line.
#[track_caller]
fn assert_none(found: Vec<String>, why: &str) {
    assert!(found.is_empty(), "{why}:\n{}", found.join("\n"));
}

/// The names from [`IMPURE`] that `text` uses outside comments and `#[cfg(test)]` items,
/// with their line numbers; a grouped import (`use std::{fs, io}`) names each of its modules.
fn impure_uses(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    let mut group: Option<(usize, String)> = None;
    for (line, code) in code_lines(text) {
        found.extend(
            IMPURE
                .iter()
                .filter(|n| code.contains(*n))
                .map(|n| (line, *n)),
        );
        if let Some(at) = code.find("std::{") {
            group = Some((line, String::new()));
            group.as_mut().unwrap().1.push_str(&code[at + 5..]);
        } else if let Some((_, text)) = group.as_mut() {
            text.push_str(code);
        }
        if let Some((start, text)) = group.take_if(|(_, t)| braces_closed(t)) {
            found.extend(std_modules_in_group(&text).map(|n| (start, n)));
        }
    }
    found
}

/// Whether `text`, which opens with `{`, has closed it.
fn braces_closed(text: &str) -> bool {
    let opened = text.matches('{').count();
    opened > 0 && opened == text.matches('}').count()
}

/// The [`IMPURE`] `std::` names a group `{fs, io::Write, env::var}` imports.
fn std_modules_in_group(group: &str) -> impl Iterator<Item = &'static str> + '_ {
    let items = group.trim_matches(|c| "{};".contains(c)).split(',');
    // `fs as f` and `fs::File` both import from `fs`.
    let first = items.map(|i| {
        let path = i.split_whitespace().next().unwrap_or("");
        path.split("::").next().unwrap_or("").trim_matches('{')
    });
    first.filter_map(|m| {
        IMPURE
            .iter()
            .find(|n| n.strip_prefix("std::") == Some(m))
            .copied()
    })
}

/// The lines of `text` outside its `#[cfg(test)]` items, untrimmed, numbered from 1: a
/// one-line `#[cfg(test)] mod x;` and a `#[cfg(test)]` item's whole block (to the brace at
/// its indentation) are left out wherever they are, so code after a test module is scanned.
fn outside_tests(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let code = lines[i].trim_start();
        if code != "#[cfg(test)]" {
            out.push((i + 1, lines[i]));
            i += 1;
            continue;
        }
        let indent = &lines[i][..lines[i].len() - code.len()];
        let close = format!("{indent}}}");
        i = match lines.get(i + 1) {
            Some(next) if next.trim_end().ends_with(';') => i + 2,
            _ => match lines[i + 1..].iter().position(|l| *l == close) {
                Some(n) => i + n + 2,
                None => lines.len(),
            },
        };
    }
    out
}

/// The code lines of `text` a reader runs: [`outside_tests`], trimmed, without `//` comments.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines = outside_tests(text).into_iter();
    let code = lines.map(|(n, l)| (n, l.trim_start()));
    code.filter(|(_, c)| !c.starts_with("//"))
        .map(|(n, c)| (n, c.split(" //").next().unwrap_or(c)))
        .collect()
}

#[test]
fn the_scanner_finds_what_it_looks_for() {
    let text = "use std::fs;\n// std::env is named in a comment\nlet t = std::time::Instant::now();\n#[cfg(test)]\nmod tests { use std::net; }\n";
    assert_eq!(impure_uses(text), vec![(1, "std::fs"), (3, "Instant")]);
    let after =
        "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod t {\n    use std::net;\n}\nuse std::env;\n";
    assert_eq!(impure_uses(after), vec![(7, "std::env")]);
    let grouped = "use std::{\n    collections::BTreeMap,\n    fs, io,\n};\nuse std::{env::var, path::Path};\nuse std::{net as n};\n";
    let found = vec![(1, "std::fs"), (5, "std::env"), (6, "std::net")];
    assert_eq!(impure_uses(grouped), found);
}

#[test]
fn pure_modules_reach_for_no_file_system_environment_clock_or_network() {
    let mut offences = Vec::new();
    for except in PURE_EXCEPT {
        let exists = src().join(except).exists();
        assert!(exists, "src/{except} is excepted but does not exist");
    }
    for pure in PURE {
        let exists = src().join(pure).exists();
        assert!(exists, "src/{pure} is listed as pure but does not exist");
        for (rel, text) in sources_under(pure)
            .into_iter()
            .filter(|(rel, _)| !PURE_EXCEPT.contains(&rel.as_str()))
        {
            let uses = impure_uses(&text).into_iter();
            offences.extend(uses.map(|(line, name)| format!("src/{rel}:{line}: {name}")));
        }
    }
    let why = "a pure module reaches outside itself; pass what it needs in as an argument, \
               or move the I/O to an edge (docs/ARCHITECTURE.md)";
    assert_none(offences, why);
}

#[test]
fn no_source_file_passes_600_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let lines = |f: &PathBuf| std::fs::read_to_string(f).unwrap().lines().count();
    let long = files.iter().filter(|f| lines(f) > MAX_LINES);
    let mut long: Vec<String> = long
        .map(|f| format!("{} has {} lines", f.display(), lines(f)))
        .collect();
    long.sort();
    assert_none(long, "split these by concern (CONTRIBUTING.md)");
}

/// The folders a doc or comment names a path under, relative to the repository's root.
const TOP: &[&str] = &["src/", "tests/", "docs/", "bench/", "examples/", "fuzz/"];

/// Paths in a user's project that docs and comments give as examples (a `docs/x` linking
/// into `.attenu`), not files of this repository.
const EXAMPLES: &[&str] = &[
    "docs/x",
    "docs/x/anchor.key",
    "docs/x/*.key",
    "docs/*/anchor.key",
    "docs/state",
    "docs/key",
    "docs/dangling",
    "docs/me.md",
    "docs/link",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./*-".contains(c)
}

/// The paths under [`TOP`] that `text` names, as written (`src/json/` or `docs/*/x`).
fn top_paths(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (at, _) in text.char_indices() {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| is_path_char(c) || c == '/') {
            continue;
        }
        if !TOP.iter().any(|t| text[at..].starts_with(t)) {
            continue;
        }
        let end = text[at..]
            .find(|c: char| !is_path_char(c) && c != '/')
            .map_or(text.len(), |n| at + n);
        let path = text[at..end].trim_end_matches(['.', '-']);
        found.push(path);
    }
    found
}

/// The `.rs` paths `text` names in backticks without a [`TOP`] folder: `hook/process.rs`,
/// `roster.rs`, `cache.rs::load`.
fn ticked_rust_paths(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|t| t.split("::").next().unwrap_or(t))
        .filter(|t| t.ends_with(".rs") && !t.starts_with('.'))
        .filter(|t| t.chars().all(|c| is_path_char(c) || c == '/'))
        .filter(|t| !TOP.iter().any(|top| t.starts_with(top)))
        .collect()
}

/// The part of a path that must exist: a glob's folder before its first `*`.
fn fixed_part(path: &str) -> &str {
    let fixed = match path.find('*') {
        Some(star) => &path[..path[..star].rfind('/').unwrap_or(0)],
        None => path,
    };
    fixed.trim_end_matches('/')
}

/// Whether a path named under [`TOP`] is in the tree.
fn top_path_exists(path: &str) -> bool {
    root().join(fixed_part(path)).exists()
}

/// Whether a `.rs` path named in `file` is in the tree: a bare name anywhere among
/// `rust_names`, a relative path from the root, `src/`, `tests/` or a folder holding `file`.
fn ticked_path_exists(path: &str, file: &Path, rust_names: &[String]) -> bool {
    if !path.contains('/') {
        return rust_names.iter().any(|n| n == path);
    }
    let root = root();
    let mut bases = vec![root.clone(), root.join("src"), root.join("tests")];
    bases.extend(file.ancestors().skip(1).map(Path::to_path_buf));
    bases.iter().any(|b| b.join(fixed_part(path)).exists())
}

/// The text of `file` a reader takes as prose: all of a Markdown file, the `//` comments of
/// a Rust file.
fn prose_lines(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let rust = file.extension().is_some_and(|e| e == "rs");
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| match rust {
            false => Some((i + 1, line.to_string())),
            true => line.find("//").map(|at| (i + 1, line[at..].to_string())),
        })
        .collect()
}

/// The Markdown files people read, and every Rust file of the crate, its tests, examples and
/// fuzz targets.
fn prose_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = Vec::new();
    for dir in [&root, &root.join("docs")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    for readme in [
        "tests/README.md",
        "tests/support/README.md",
        "bench/README.md",
    ] {
        files.push(root.join(readme));
    }
    for dir in ["src", "tests", "examples", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
}

#[test]
fn the_path_scanners_find_what_they_look_for() {
    let text = "see `src/json/`, tests/ledger.rs. and docs/*/x (not a/src/b) `hook/x.rs::f` `y.rs`";
    assert_eq!(
        top_paths(text),
        vec!["src/json/", "tests/ledger.rs", "docs/*/x"]
    );
    assert_eq!(ticked_rust_paths(text), vec!["hook/x.rs", "y.rs"]);
    assert!(top_path_exists("tests/snapshots/*.txt"));
    assert!(!top_path_exists("tests/verify_vectors.rs"));
    assert!(!top_path_exists("src/fsutil.rs"));
}

/// The paths `text` (line `line` of `file`) names that are not in the tree.
fn stale_paths(file: &Path, text: &str, rust_names: &[String]) -> Vec<String> {
    let top = top_paths(text).into_iter();
    let top = top.filter(|p| !EXAMPLES.contains(p) && !top_path_exists(p));
    let ticked = ticked_rust_paths(text).into_iter();
    let ticked = ticked.filter(|p| !ticked_path_exists(p, file, rust_names));
    top.chain(ticked).map(str::to_string).collect()
}

#[test]
fn docs_and_comments_name_only_paths_that_exist() {
    let files = prose_files();
    let names = files
        .iter()
        .filter_map(|f| f.file_name()?.to_str().map(str::to_string));
    let rust_names: Vec<String> = names.filter(|n| n.ends_with(".rs")).collect();
    let mut stale = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        for (line, text) in prose_lines(file) {
            let paths = stale_paths(file, &text, &rust_names).into_iter();
            stale.extend(paths.map(|path| format!("{rel}:{line}: {path}")));
        }
    }
    let why = "these name a path that is not in the tree; name the file that holds it now \
               (or, for a path in a user's project, add it to EXAMPLES)";
    assert_none(stale, why);
}

/// The names of tests THREAT-MODEL.md gives as evidence: backticked snake_case names of four
/// words or more.
fn cited_tests(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.split('_').count() >= 4)
        .filter(|t| {
            t.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect()
}

#[test]
fn the_threat_models_evidence_names_tests_that_exist() {
    let root = root();
    let model = std::fs::read_to_string(root.join("THREAT-MODEL.md")).unwrap();
    let mut code = String::new();
    let mut files = Vec::new();
    for dir in ["src", "tests", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    for file in files {
        code += &std::fs::read_to_string(file).unwrap();
    }
    let cited = cited_tests(&model);
    assert!(cited.len() > 20, "the scanner found only {cited:?}");
    let missing: Vec<&str> = cited
        .into_iter()
        .filter(|name| !code.contains(&format!("fn {name}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "THREAT-MODEL.md cites tests that do not exist; name the test that holds the claim now:\n{}",
        missing.join("\n")
    );
}

/// Functions are kept under about 80 lines (CONTRIBUTING.md); past 80, the test fails.
const MAX_FN_LINES: usize = 80;

/// Each function of `text` outside its `#[cfg(test)]` items: its name, first line and length
/// (from `fn` to its closing brace at the same indentation, as rustfmt writes them).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let kept = outside_tests(text);
    let lines: Vec<&str> = kept.iter().map(|(_, l)| *l).collect();
    let end = lines.len();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let Some(at) = code.find("fn ") else { continue };
        let head = &code[..at];
        let qualifiers = head
            .split_whitespace()
            .all(|w| ["pub", "const", "async", "unsafe"].contains(&w) || w.starts_with("pub("));
        if !qualifiers || code.ends_with(';') {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        if let Some(n) = lines[i + 1..end].iter().position(|l| *l == close) {
            found.push((name, kept[i].0, n + 2));
        }
    }
    found
}

#[test]
fn the_function_scanner_measures_from_fn_to_its_brace() {
    let text = "pub fn a() {\n    x();\n}\n\nimpl S {\n    pub(crate) fn b(&self) -> u8 {\n        1\n    }\n    fn decl();\n}\n#[cfg(test)]\nfn t() {\n}\n";
    assert_eq!(
        functions(text),
        vec![("a".to_string(), 1, 3), ("b".to_string(), 6, 3)]
    );
}

#[test]
fn no_function_passes_80_lines() {
    let mut long = Vec::new();
    for (rel, text) in sources_under("") {
        let over = functions(&text)
            .into_iter()
            .filter(|(_, _, n)| *n > MAX_FN_LINES);
        long.extend(over.map(|(name, line, n)| format!("src/{rel}:{line}: {name} has {n} lines")));
    }
    assert_none(
        long,
        "split these into functions of about 80 lines (CONTRIBUTING.md)",
    );
}

/// Whether a line of code names `Result<_, String>`: an error that is only a string.
fn string_error(code: &str) -> bool {
    code.match_indices("Result<").any(|(at, m)| {
        let mut depth = 1;
        // A one-argument alias (`io::Result<String>`) has no error type to look at.
        let mut last = None;
        for (i, c) in code[at + m.len()..].char_indices() {
            let i = at + m.len() + i;
            match c {
                '<' | '(' | '[' => depth += 1,
                ',' if depth == 1 => last = Some(i + 1),
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return last.is_some_and(|l| code[l..i].trim() == "String");
                    }
                }
                _ => {}
            }
        }
        false
    })
}

#[test]
fn the_string_error_scanner_reads_the_error_type() {
    assert!(string_error("fn f() -> Result<(u8, String), String> {"));
    assert!(string_error(
        "fn f() -> std::result::Result<Vec<String>, String>"
    ));
    assert!(!string_error(
        "fn f() -> Result<Option<String>, ConfigError> {"
    ));
    assert!(!string_error("fn f() -> io::Result<String> {"));
}

#[test]
fn no_error_outside_tests_is_only_a_string() {
    let mut found = Vec::new();
    for (rel, text) in sources_under("") {
        let strings = code_lines(&text)
            .into_iter()
            .filter(|(_, code)| string_error(code));
        found.extend(strings.map(|(line, code)| format!("src/{rel}:{line}: {code}")));
    }
    let why = "an error type says what went wrong and what to do: use a thiserror enum \
               (CONTRIBUTING.md), not Result<_, String>";
    assert_none(found, why);
}

/// Lines of `text` that spell the ledger's `event` member as a string: a field name is
/// spelled once, in `src/ledger/fields.rs` (`field::EVENT`, `event::ROOT`...), and a command
/// reads entries through `crate::ledger::read`'s typed view.
fn event_spelled(text: &str) -> Vec<usize> {
    code_lines(text)
        .into_iter()
        .filter(|(_, code)| code.contains("\"event\""))
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn the_field_name_scanner_finds_what_it_looks_for() {
    let text = "let e = v.get(\"event\");\n// v[\"event\"] in a comment\nlet m = \"no \\\"event\\\" member\";\n#[cfg(test)]\nmod tests;\nx[\"event\"] = 1;\n#[cfg(test)]\nmod t { json!({\"event\": 1}) }\n";
    assert_eq!(event_spelled(text), vec![1, 6]);
}

#[test]
fn only_the_ledger_spells_the_event_member() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        if is_test_file(&rel) || rel.starts_with("ledger/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for line in event_spelled(&text) {
            found.push(format!("src/{rel}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "these spell \"event\"; use crate::ledger::fields::field::EVENT, or read the entry \
         through crate::ledger::read::EntryView (docs/ARCHITECTURE.md):\n{}",
        found.join("\n")
    );
}
