//! `attenu-hook verify FILE`: verifies a bundle, or a one-entry proof from `prove`, offline.
//!
//! The command around the verifier (`crate::evidence::verify`, which returns a report and
//! neither prints nor exits): the arguments, which key checks the anchor ([`KeyChoice`]), the
//! report printed as text or JSON, and its verdict's exit ([`exit_of`]).

use super::{fail, Exit};
use crate::evidence::keys::{self, KeyChoice};
use crate::evidence::prove;
use crate::evidence::verify::{
    render_text, verify_clean_stream, verify_parsed, Input, Report, Verdict,
};
use crate::ledger::fields::field;
use crate::trust::CaPin;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The bundle (bundle-<session>.json) or a one-entry proof from `prove`
    bundle: PathBuf,
    /// The anchor public key to pin (anchor.pub, or 64 hex characters in a file)
    #[arg(long = "pub", value_name = "FILE", conflicts_with = "ca")]
    pub_key: Option<PathBuf>,
    /// The team's OpenSSH CA public key file(s): trust the bundle's signer when its
    /// certificate is signed by one of them for the attenu-hook principal
    #[arg(long, value_name = "FILE", num_args = 1..)]
    ca: Vec<PathBuf>,
    /// Certificates the team took back: lines `id:<key id>`, `serial:<n>` or a public key
    #[arg(long, value_name = "FILE", requires = "ca")]
    revoked: Option<PathBuf>,
    /// The full report as JSON
    #[arg(long)]
    json: bool,
}

/// A proof goes to [`verify_proof`]; a bundle, under what `--pub` or `--ca` pins, to
/// [`verify_bundle_file`].
pub fn run(a: Args) -> Exit {
    if is_proof(&a.bundle) {
        return match std::fs::read(&a.bundle) {
            Ok(bytes) => verify_proof(&a.bundle, &bytes, a.pub_key.as_deref(), a.json),
            Err(e) => fail(format!("cannot read {}: {e}", a.bundle.display())),
        };
    }
    let ca = if a.ca.is_empty() {
        None
    } else {
        match CaPin::load(&a.ca, a.revoked.as_deref()) {
            Ok(pin) => Some(pin),
            Err(e) => return fail(e),
        }
    };
    let pin = match (&ca, a.pub_key.as_deref()) {
        (Some(ca), _) => Pin::Ca(ca),
        (None, Some(key)) => Pin::Key(key),
        (None, None) => Pin::Nothing,
    };
    verify_bundle_file(&a.bundle, pin, a.json)
}

/// `attenu-hook verify BUNDLE [--pub FILE | --ca FILE…] [--json]`. Returns the exit of the
/// report's verdict ([`exit_of`]), or [`Exit::Unusable`] when the bundle or the key file cannot
/// be used at all.
///
/// With `--ca`, the key is the one the bundle's signer certificate certifies, trusted when the
/// pinned CA vouched for it when the bundle was signed. Without a pin, that certificate's key,
/// else an `anchor.pub` in the bundle's directory, is used and reported as not pinned; without
/// either, the anchor is not checked and the verdict is invalid (`anchor-not-checked`).
fn verify_bundle_file(bundle_path: &Path, pin: Pin<'_>, json: bool) -> Exit {
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
enum Pin<'a> {
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
fn exit_of(verdict: Verdict) -> Exit {
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

/// The file starts like a tlog-proof. Only its first line is read: a bundle is read once,
/// by the verifier.
fn is_proof(path: &Path) -> bool {
    use std::io::Read;
    let header = crate::tlog::proof::HEADER.as_bytes();
    let mut head = vec![0u8; header.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == header)
}

/// A proof is checked only against a key the reviewer pins: the proof carries its own
/// checkpoint, and nothing beside it is trusted.
fn verify_proof(path: &Path, bytes: &[u8], pub_key: Option<&Path>, json: bool) -> Exit {
    let Some(pub_key) = pub_key else {
        return fail(format!(
            "{} is a one-entry proof; pass the project's anchor.pub with --pub FILE to check it",
            path.display()
        ));
    };
    let pinned = match keys::load_pinned(pub_key) {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return fail(format!("{} is not UTF-8 text", path.display()));
    };
    let kid = pinned.kid;
    let result = prove::verify_proof(text, &kid, pinned.key);
    let shown = match &result {
        Ok(p) => {
            json!({"valid": true, "index": p.index, "size": p.size, "log": p.origin, "entry": Value::Object(p.entry.clone())})
        }
        Err(e) => json!({"valid": false, "error": e.to_string()}),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&shown).expect("JSON"));
    } else {
        match &result {
            Ok(p) => {
                let member = |k: &str| {
                    p.entry
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("-")
                        .to_string()
                };
                println!(
                    "VALID: entry {} of {} in {}, under the checkpoint signed by {kid}: {} {} scope {} call {}",
                    p.index, p.size, p.origin, member(field::EVENT), member(field::TOOL), crate::derive::readable::scope(&member(field::SCOPE)), member(field::CALL_ID)
                );
            }
            Err(e) => println!("INVALID: {e}"),
        }
    }
    if result.is_ok() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::verify::tests::{key, scratch_dir, signed_bundle, tiny_entries};
    use crate::ledger::chain;

    /// Each pin, a key file that cannot be used, a bundle that cannot be read or parsed, and a
    /// bundle that verifies only under the key beside it (never 0 for a script).
    #[test]
    fn run_exit_codes() {
        let k = key(1);
        let dir = scratch_dir();
        let bundle_path = dir.join("bundle-s.json");
        let text = serde_json::to_string(&signed_bundle(tiny_entries(), &k)).unwrap();
        std::fs::write(&bundle_path, &text).unwrap();
        let pub_hex = chain::hex(k.verifying_key().as_bytes());
        let pub_json = dir.join("trusted.pub");
        let doc = json!({"alg": "EdDSA", "kid": "attenu-local-1", "public_key": pub_hex});
        std::fs::write(&pub_json, doc.to_string()).unwrap();
        let pub_bare = dir.join("bare.pub");
        std::fs::write(&pub_bare, format!("{pub_hex}\n")).unwrap();
        let bad = dir.join("bad.pub");
        std::fs::write(&bad, "not a key").unwrap();
        let run = verify_bundle_file;

        let no_key = run(&bundle_path, Pin::Nothing, false);
        assert_eq!(no_key, Exit::CheckFailed, "no key anywhere: invalid");
        assert_eq!(run(&bundle_path, Pin::Key(&pub_json), false), Exit::Success);
        assert_eq!(run(&bundle_path, Pin::Key(&pub_bare), true), Exit::Success);
        assert_eq!(run(&bundle_path, Pin::Key(&bad), false), Exit::Unusable);
        let missing_key = dir.join("missing.pub");
        assert_eq!(
            run(&bundle_path, Pin::Key(&missing_key), false),
            Exit::Unusable
        );
        let missing = dir.join("missing.json");
        assert_eq!(run(&missing, Pin::Key(&pub_json), false), Exit::Unusable);
        std::fs::copy(&pub_json, dir.join("anchor.pub")).unwrap();
        assert_eq!(
            run(&bundle_path, Pin::Nothing, false),
            Exit::ValidUnpinned,
            "the bundle-side key verifies, reported as not pinned, and a script cannot take it for 0"
        );
        assert_eq!(run(&bundle_path, Pin::Nothing, true), Exit::ValidUnpinned);
        assert_eq!(run(&bundle_path, Pin::Key(&pub_bare), false), Exit::Success);

        let not_json = dir.join("garbage.json");
        std::fs::write(&not_json, "{\"v\": 2,").unwrap();
        assert_eq!(run(&not_json, Pin::Key(&pub_json), false), Exit::Unusable);
        // Too deep for the reader is unusable input too.
        let deep = format!("{{\"x\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        std::fs::write(&not_json, deep).unwrap();
        assert_eq!(run(&not_json, Pin::Key(&pub_json), false), Exit::Unusable);
        // A member named twice is a failed check, not unusable input.
        let dup = dir.join("dup.json");
        std::fs::write(&dup, text.replacen('{', "{\"v\":2,", 1)).unwrap();
        assert_eq!(run(&dup, Pin::Key(&pub_json), false), Exit::CheckFailed);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each verdict has one exit, and the codes are the ones scripts read.
    #[test]
    fn each_verdict_exits_with_its_code() {
        for (verdict, code) in [
            (Verdict::Valid, 0),
            (Verdict::Invalid, 1),
            (Verdict::ValidUnpinned, 3),
            (Verdict::ValidWithNotice, 4),
        ] {
            assert_eq!(exit_of(verdict).code(), code, "{verdict:?}");
        }
    }
}
