//! The command: `attenu-hook verify BUNDLE [--pub FILE | --ca FILE…] [--json]`.

use super::input::verify_parsed;
use super::{render_text, verify_clean_stream, Input, Report, Verdict};
use crate::evidence::keys::{self, KeyChoice};
use crate::protocol::Exit;
use crate::trust::CaPin;
use std::path::Path;

/// `attenu-hook verify BUNDLE [--pub FILE | --ca FILE…] [--json]`. Returns the exit of the
/// report's verdict ([`exit_of`]), or [`Exit::Unusable`] when the bundle or the key file cannot
/// be used at all.
///
/// With `--ca`, the key is the one the bundle's signer certificate certifies, trusted when the
/// pinned CA vouched for it when the bundle was signed. Without a pin, that certificate's key,
/// else an `anchor.pub` in the bundle's directory, is used and reported as not pinned; without
/// either, the anchor is not checked and the verdict is invalid (`anchor-not-checked`).
pub fn run(bundle_path: &Path, pin: Pin<'_>, json: bool) -> Exit {
    // A regular file is first read in one streaming pass, in small memory; the pass answers
    // only for a clean bundle, and everything else gets the full verifier's verdict.
    if Input::open(&bundle_path).is_none() {
        return run_full(bundle_path, pin, json);
    }
    let choice = match choose_key(bundle_path, pin, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match verify_clean_stream(bundle_path, &choice.anchor_key()) {
        Some(report) => emit(report, &choice, json),
        None => full(bundle_path, &choice, json),
    }
}

/// What the reviewer pinned: nothing, a key file (`--pub`), or a team CA (`--ca`).
#[derive(Clone, Copy)]
pub enum Pin<'a> {
    Nothing,
    Key(&'a Path),
    Ca(&'a CaPin),
}

/// The full verifier, reading the whole file first (as before the key).
fn run_full(bundle_path: &Path, pin: Pin<'_>, json: bool) -> Exit {
    let Some(bytes) = read_bundle(bundle_path) else {
        return Exit::Unusable;
    };
    let choice = match choose_key(bundle_path, pin, json) {
        Ok(c) => c,
        Err(code) => return code,
    };
    verify_bytes(bundle_path, &bytes, &choice, json)
}

fn full(bundle_path: &Path, choice: &KeyChoice, json: bool) -> Exit {
    let Some(bytes) = read_bundle(bundle_path) else {
        return Exit::Unusable;
    };
    verify_bytes(bundle_path, &bytes, choice, json)
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

fn verify_bytes(bundle_path: &Path, bytes: &[u8], choice: &KeyChoice, json: bool) -> Exit {
    let (report, tree) = match verify_parsed(bytes, &choice.anchor_key()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("attenu-hook verify: {}: {e}", bundle_path.display());
            return Exit::Unusable;
        }
    };
    // The process ends right after the report; freeing a large bundle's tree node by node
    // would only add time (about 20 ms for 10,000 entries).
    std::mem::forget(tree);
    emit(report, choice, json)
}

/// Prints the report and returns the exit code.
fn emit(mut report: Report, choice: &KeyChoice, json: bool) -> Exit {
    report.certificate = choice.certificate();
    let report = &report;
    let key_file = choice.key().map(|k| k.path.as_path());
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
/// records a lost or broken sealed state (a NOTICE) exits [`Exit::ValidWithNotice`]: what it holds
/// is intact and signed, but entries before the notice may have been cut off unnoticed.
pub fn exit_of(verdict: Verdict) -> Exit {
    match verdict {
        Verdict::Valid => Exit::Success,
        Verdict::Invalid => Exit::CheckFailed,
        Verdict::ValidUnpinned => Exit::ValidUnpinned,
        Verdict::ValidWithNotice => Exit::ValidWithNotice,
    }
}

/// The key to check the anchor with ([`KeyChoice`]), or the exit when there is none: unusable
/// when a key file or the bundle's certificate cannot be used (said on stderr), a failed check
/// when the pinned CA does not vouch for the signer (a verdict, on stdout).
fn choose_key(bundle_path: &Path, pin: Pin<'_>, json: bool) -> Result<KeyChoice, Exit> {
    let chosen = match pin {
        Pin::Key(p) => keys::load_pinned(p)
            .and_then(|pinned| KeyChoice::for_bundle(bundle_path, Some(&pinned))),
        Pin::Ca(ca) => KeyChoice::under_ca(bundle_path, ca),
        Pin::Nothing => KeyChoice::for_bundle(bundle_path, None),
    };
    match chosen {
        Ok(choice) => Ok(choice),
        Err(e @ keys::KeyFileError::NotCertified { .. }) => {
            if json {
                let shown =
                    serde_json::json!({"valid": false, "key": "ca", "error": e.to_string()});
                println!("{shown:#}");
            } else {
                println!("INVALID (signer not certified): {e}");
            }
            Err(Exit::CheckFailed)
        }
        Err(e) => {
            eprintln!("attenu-hook verify: {e}.");
            Err(Exit::Unusable)
        }
    }
}
