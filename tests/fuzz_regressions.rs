//! Replays every saved fuzz input through the same property functions as its fuzz target
//! (`fuzz/props.rs`), with plain `cargo test`: no cargo-fuzz, no nightly, no libFuzzer.
//!
//! `tests/fuzz_regressions/<target>/` holds the crash inputs `fuzz/run.sh` copied there (each
//! one a bug that was fixed) and hand-made nasty inputs; `fuzz/seeds/<target>/` holds the seed
//! corpus, replayed too so the seeds themselves satisfy the properties.

#[path = "../fuzz/props.rs"]
mod props;

use std::path::{Path, PathBuf};

/// The files of one directory, sorted, or none when it does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

/// Runs `check` on every file in `dirs`, each in its own catch_unwind so one failure names
/// its file and the rest still run. Returns how many files ran.
fn replay(target: &str, check: fn(&[u8]), dirs: &[PathBuf]) -> usize {
    let mut failed = Vec::new();
    let mut ran = 0;
    for dir in dirs {
        for file in inputs(dir) {
            let bytes = std::fs::read(&file).unwrap();
            ran += 1;
            if std::panic::catch_unwind(|| check(&bytes)).is_err() {
                failed.push(file.display().to_string());
            }
        }
    }
    assert!(
        failed.is_empty(),
        "fuzz target `{target}`: {} input(s) fail its properties (the panic is printed above):\n  {}",
        failed.len(),
        failed.join("\n  ")
    );
    ran
}

fn dirs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![
        root.join("tests/fuzz_regressions").join(target),
        root.join("fuzz/seeds").join(target),
    ]
}

fn run(target: &str) {
    let (_, check) = props::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .expect("a target of fuzz/props.rs");
    let regressions = inputs(&dirs(target)[0]).len();
    assert!(
        regressions > 0,
        "tests/fuzz_regressions/{target}/ is empty; it keeps at least the hand-made inputs"
    );
    let ran = replay(target, *check, &dirs(target));
    eprintln!("{target}: {ran} input(s), {regressions} of them regressions");
}

#[test]
fn payload() {
    run("payload");
}

#[test]
fn frontmatter() {
    run("frontmatter");
}

#[test]
fn settings() {
    run("settings");
}

#[test]
fn ledger_line() {
    run("ledger_line");
}

#[test]
fn bundle() {
    run("bundle");
}

#[test]
fn canonical() {
    run("canonical");
}

/// Every target in `fuzz/props.rs` has a test above and a directory of inputs, and every
/// directory under tests/fuzz_regressions/ is a target (a crash copied under a wrong name
/// would otherwise never run).
#[test]
fn every_target_is_replayed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names: Vec<&str> = props::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "payload",
            "frontmatter",
            "settings",
            "ledger_line",
            "bundle",
            "canonical"
        ]
    );
    for e in std::fs::read_dir(root.join("tests/fuzz_regressions"))
        .unwrap()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            names.contains(&name.as_str()),
            "tests/fuzz_regressions/{name} is not a fuzz target"
        );
    }
    for name in names {
        assert!(
            root.join("fuzz/fuzz_targets")
                .join(format!("{name}.rs"))
                .is_file(),
            "fuzz/fuzz_targets/{name}.rs is missing"
        );
    }
}
