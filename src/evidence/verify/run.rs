//! The command: `attenu-hook verify BUNDLE [--pub FILE] [--json]`.

use super::input::verify_parsed;
use super::{render_text, verify_clean_stream, AnchorKey, Input, Report, Verdict};
use crate::evidence::keys::{self, KeyChoice};
use crate::protocol::Exit;
use std::path::{Path, PathBuf};

/// `attenu-hook verify BUNDLE [--pub FILE] [--json]`. Returns the exit ([`exit_of`]), or
/// [`Exit::Unusable`] when the bundle or the key file cannot be used at all.
///
/// Without `--pub`, an `anchor.pub` in the bundle's directory is used and the key is reported
/// as not pinned; without either, the anchor is not checked and the verdict is invalid
/// (`anchor-not-checked`).
pub fn run(bundle_path: &Path, pub_path: Option<&Path>, json: bool) -> Exit {
    // A regular file is first read in one streaming pass, in small memory; the pass answers
    // only for a clean bundle, and everything else gets the full verifier's verdict.
    if Input::open(&bundle_path).is_none() {
        return run_full(bundle_path, pub_path, json);
    }
    let Some((key, key_file)) = choose_key(bundle_path, pub_path) else {
        return Exit::Unusable;
    };
    match verify_clean_stream(bundle_path, &key) {
        Some(report) => emit(&report, key_file.as_deref(), json),
        None => full(bundle_path, &key, key_file.as_deref(), json),
    }
}

/// The full verifier, reading the whole file first (as before the key).
fn run_full(bundle_path: &Path, pub_path: Option<&Path>, json: bool) -> Exit {
    let Some(bytes) = read_bundle(bundle_path) else {
        return Exit::Unusable;
    };
    let Some((key, key_file)) = choose_key(bundle_path, pub_path) else {
        return Exit::Unusable;
    };
    verify_bytes(bundle_path, &bytes, &key, key_file.as_deref(), json)
}

fn full(bundle_path: &Path, key: &AnchorKey, key_file: Option<&Path>, json: bool) -> Exit {
    let Some(bytes) = read_bundle(bundle_path) else {
        return Exit::Unusable;
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
) -> Exit {
    let (report, tree) = match verify_parsed(bytes, key) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("attenu-hook verify: {}: {e}", bundle_path.display());
            return Exit::Unusable;
        }
    };
    // The process ends right after the report; freeing a large bundle's tree node by node
    // would only add time (about 20 ms for 10,000 entries).
    std::mem::forget(tree);
    emit(&report, key_file, json)
}

/// Prints the report and returns the exit code.
fn emit(report: &Report, key_file: Option<&Path>, json: bool) -> Exit {
    if json {
        match serde_json::to_string_pretty(report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("attenu-hook verify: cannot write the report: {e}");
                return Exit::Unusable;
            }
        }
    } else {
        print!("{}", render_text(report, key_file));
    }
    exit_of(report.verdict())
}

/// The exit of a verdict. A bundle that verifies only under the `anchor.pub` found beside it
/// exits [`Exit::ValidUnpinned`]: whoever rewrote the bundle could have re-signed it and
/// replaced that file, so a script that checks `attenu-hook verify B && ...` must not read it as
/// 0; a reviewer pins the key with `--pub`. A valid bundle (under a pinned key) whose ledger
/// records a lost or broken checkpoint (a NOTICE) exits [`Exit::ValidWithNotice`]: what it holds
/// is intact and signed, but entries before the notice may have been cut off unnoticed.
pub fn exit_of(verdict: Verdict) -> Exit {
    match verdict {
        Verdict::Valid => Exit::Success,
        Verdict::Invalid => Exit::CheckFailed,
        Verdict::ValidUnpinned => Exit::ValidUnpinned,
        Verdict::ValidWithNotice => Exit::ValidWithNotice,
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
