//! The command: `attenu-hook verify BUNDLE [--pub FILE] [--json]`.

use super::input::verify_parsed;
use super::{render_text, verify_clean_stream, AnchorKey, Input, Report};
use crate::evidence::keys::{self, KeyChoice};
use std::path::{Path, PathBuf};

/// `attenu-hook verify BUNDLE [--pub FILE] [--json]`. Returns the exit code: 0 valid under a
/// pinned key, 1 invalid, 2 when the bundle or the key file cannot be used at all, 3 valid under
/// a key read from beside the bundle ([`EXIT_VALID_KEY_NOT_PINNED`]), 4 valid under a pinned
/// key with a notice ([`EXIT_VALID_WITH_NOTICE`]).
///
/// Without `--pub`, an `anchor.pub` in the bundle's directory is used and the key is reported
/// as not pinned; without either, the anchor is not checked and the verdict is invalid
/// (`anchor-not-checked`).
pub fn run(bundle_path: &Path, pub_path: Option<&Path>, json: bool) -> i32 {
    // A regular file is first read in one streaming pass, in small memory; the pass answers
    // only for a clean bundle, and everything else gets the full verifier's verdict.
    if Input::open(&bundle_path).is_none() {
        return run_full(bundle_path, pub_path, json);
    }
    let Some((key, key_file)) = choose_key(bundle_path, pub_path) else {
        return 2;
    };
    match verify_clean_stream(bundle_path, &key) {
        Some(report) => emit(&report, key_file.as_deref(), json),
        None => full(bundle_path, &key, key_file.as_deref(), json),
    }
}

/// The full verifier, reading the whole file first (as before the key).
fn run_full(bundle_path: &Path, pub_path: Option<&Path>, json: bool) -> i32 {
    let Some(bytes) = read_bundle(bundle_path) else {
        return 2;
    };
    let Some((key, key_file)) = choose_key(bundle_path, pub_path) else {
        return 2;
    };
    verify_bytes(bundle_path, &bytes, &key, key_file.as_deref(), json)
}

fn full(bundle_path: &Path, key: &AnchorKey, key_file: Option<&Path>, json: bool) -> i32 {
    let Some(bytes) = read_bundle(bundle_path) else {
        return 2;
    };
    verify_bytes(bundle_path, &bytes, key, key_file, json)
}

fn read_bundle(bundle_path: &Path) -> Option<Vec<u8>> {
    std::fs::read(bundle_path)
        .map_err(|e| {
            eprintln!(
                "attenu-hook verify: cannot read {}: {e}. Pass the path of a bundle file (`attenu-hook export` \
                 writes .attenu/bundle-<session>.json).",
                bundle_path.display()
            );
        })
        .ok()
}

fn verify_bytes(
    bundle_path: &Path,
    bytes: &[u8],
    key: &AnchorKey,
    key_file: Option<&Path>,
    json: bool,
) -> i32 {
    let (report, tree) = match verify_parsed(bytes, key) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("attenu-hook verify: {}: {e}", bundle_path.display());
            return 2;
        }
    };
    // The process ends right after the report; freeing a large bundle's tree node by node
    // would only add time (about 20 ms for 10,000 entries).
    std::mem::forget(tree);
    emit(&report, key_file, json)
}

/// Prints the report and returns the exit code.
fn emit(report: &Report, key_file: Option<&Path>, json: bool) -> i32 {
    if json {
        match serde_json::to_string_pretty(report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("attenu-hook verify: cannot write the report: {e}");
                return 2;
            }
        }
    } else {
        print!("{}", render_text(report, key_file));
    }
    exit_code(report)
}

/// The exit code of a bundle that verifies only under the `anchor.pub` found beside it. Whoever
/// rewrote the bundle could have re-signed it and replaced that file, so a script that checks
/// `attenu-hook verify B && ...` must not read this as 0; a reviewer pins the key with `--pub`.
pub const EXIT_VALID_KEY_NOT_PINNED: i32 = 3;

/// The exit code of a valid bundle (under a pinned key) whose ledger records a lost or broken
/// checkpoint (a NOTICE): what it holds is intact and signed, but entries before the notice
/// may have been cut off unnoticed, so `verify B && ...` must not pass it silently.
pub const EXIT_VALID_WITH_NOTICE: i32 = 4;

fn exit_code(report: &Report) -> i32 {
    match (report.valid, report.key) {
        (true, "bundle-side") => EXIT_VALID_KEY_NOT_PINNED,
        (true, _) if !report.notices.is_empty() => EXIT_VALID_WITH_NOTICE,
        (true, _) => 0,
        (false, _) => 1,
    }
}

/// The key to check the anchor with and the file it came from ([`KeyChoice::for_bundle`]).
/// `None` when a key file cannot be used (said on stderr).
fn choose_key(bundle_path: &Path, pub_path: Option<&Path>) -> Option<(AnchorKey, Option<PathBuf>)> {
    let chosen = match pub_path {
        Some(p) => keys::load_pinned(p)
            .and_then(|pinned| KeyChoice::for_bundle(bundle_path, Some(&pinned))),
        None => KeyChoice::for_bundle(bundle_path, None),
    };
    match chosen {
        Ok(choice) => Some((choice.anchor_key(), choice.key().map(|k| k.path.clone()))),
        Err(e) => {
            eprintln!("attenu-hook verify: {e}.");
            None
        }
    }
}
