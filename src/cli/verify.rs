//! `attenu-hook verify FILE`: verifies a bundle, or a one-entry proof from `prove`, offline.

use super::{fail, Exit};
use crate::evidence::{keys, prove};
use crate::ledger::fields::field;
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

pub fn run(a: Args) -> Exit {
    if is_proof(&a.bundle) {
        return match std::fs::read(&a.bundle) {
            Ok(bytes) => verify_proof(&a.bundle, &bytes, a.pub_key.as_deref(), a.json),
            Err(e) => fail(format!("cannot read {}: {e}", a.bundle.display())),
        };
    }
    use crate::evidence::verify::Pin;
    let ca = if a.ca.is_empty() {
        None
    } else {
        match crate::trust::CaPin::load(&a.ca, a.revoked.as_deref()) {
            Ok(pin) => Some(pin),
            Err(e) => return fail(e),
        }
    };
    let pin = match (&ca, a.pub_key.as_deref()) {
        (Some(ca), _) => Pin::Ca(ca),
        (None, Some(key)) => Pin::Key(key),
        (None, None) => Pin::Nothing,
    };
    crate::evidence::verify::run(&a.bundle, pin, a.json)
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
