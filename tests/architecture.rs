//! The architecture, enforced: the pure modules (the decision, the derivation's cores, the
//! ledger's entries and hashes, the JSON layer, the verifier's checks, the transparency log's
//! maths) reach for no file system, environment, clock or network; and no source file passes
//! 600 lines. docs/ARCHITECTURE.md says why; this test says where.

use std::path::{Path, PathBuf};

/// Files and directories (under `src/`) that must stay pure. A directory covers every `.rs`
/// file below it.
const PURE: &[&str] = &[
    "policy",
    "json",
    "tlog",
    "reason.rs",
    "ledger/entry.rs",
    "ledger/chain.rs",
    "ledger/commitment.rs",
    "ledger/fields.rs",
    "derive/frontmatter.rs",
    "derive/scopes.rs",
    "derive/resolve.rs",
    "derive/roster.rs",
    "derive/readable.rs",
    "derive/explain.rs",
    "derive/rules",
    "evidence/verify",
];

/// The verifier's edges: its command and its file readers, which are allowed I/O.
const PURE_EXCEPT: &[&str] = &["evidence/verify/run.rs", "evidence/verify/stream.rs"];

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

/// The names from [`IMPURE`] that `text` uses outside comments and its `#[cfg(test)]` tail,
/// with their line numbers.
fn impure_uses(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code == "#[cfg(test)]" {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or(code);
        for name in IMPURE {
            if code.contains(name) {
                found.push((i + 1, *name));
            }
        }
    }
    found
}

#[test]
fn the_scanner_finds_what_it_looks_for() {
    let text = "use std::fs;\n// std::env is named in a comment\nlet t = std::time::Instant::now();\n#[cfg(test)]\nmod tests { use std::net; }\n";
    assert_eq!(impure_uses(text), vec![(1, "std::fs"), (3, "Instant")]);
}

#[test]
fn pure_modules_reach_for_no_file_system_environment_clock_or_network() {
    let root = src();
    let mut offences = Vec::new();
    for pure in PURE {
        let mut files = Vec::new();
        let path = root.join(pure);
        assert!(
            path.exists(),
            "src/{pure} is listed as pure but does not exist"
        );
        rust_files(&path, &mut files);
        for file in files {
            let rel = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if is_test_file(&rel) || PURE_EXCEPT.contains(&rel.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, name) in impure_uses(&text) {
                offences.push(format!("src/{rel}:{line}: {name}"));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "a pure module reaches outside itself; pass what it needs in as an argument, \
         or move the I/O to an edge (docs/ARCHITECTURE.md):\n{}",
        offences.join("\n")
    );
}

#[test]
fn no_source_file_passes_600_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} has {n} lines", f.display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "split these by concern (CONTRIBUTING.md):\n{}",
        long.join("\n")
    );
}
