//! `attenu-hook report BUNDLE|AUDIT.json… [--pub FILE | --ca FILE… [--revoked FILE]] --out
//! report.html`: one self-contained
//! HTML page for a reviewer (`crate::report`). Each bundle is verified as `verify` verifies it,
//! under the same key choice (`--ca` as `verify --ca`: the key a bundle's signer certificate
//! certifies, trusted when the pinned CA vouched for it); an audit's JSON is shown as the audit
//! said it. Exit 0 when every bundle is valid under the pinned key and every audited session
//! complete or open, 1 when a bundle is invalid, its signer not certified by the pinned CA
//! (no page), or a session fails, 3 when valid only under a key read beside a bundle, 2 when an
//! input or the key file cannot be used or the page cannot be written (no page).

use super::{fail, Exit};
use crate::evidence::keys::{self, KeyChoice};
use crate::report::model::{KeyOrigin, KeyUsed};
use crate::report::{read_input, Page};
use crate::trust::CaPin;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bundles (bundle-<session>.json, one per chain) and audit JSON (`audit --json`), any mix
    #[arg(required = true, value_name = "BUNDLE|AUDIT.json")]
    inputs: Vec<PathBuf>,
    /// The anchor public key to pin (anchor.pub, or 64 hex characters in a file)
    #[arg(long = "pub", value_name = "FILE", conflicts_with = "ca")]
    pub_key: Option<PathBuf>,
    /// The team's OpenSSH CA public key file(s): trust a bundle's signer when its certificate
    /// is signed by one of them for the attenu-hook principal
    #[arg(long, value_name = "FILE", num_args = 1..)]
    ca: Vec<PathBuf>,
    /// Certificates the team took back: lines `id:<key id>`, `serial:<n>` or a public key
    #[arg(long, value_name = "FILE", requires = "ca")]
    revoked: Option<PathBuf>,
    /// Where to write the page (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(a: Args) -> Exit {
    let pinned = match a.pub_key.as_deref().map(keys::load_pinned).transpose() {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    let ca = if a.ca.is_empty() {
        None
    } else {
        match CaPin::load(&a.ca, a.revoked.as_deref()) {
            Ok(pin) => Some(pin),
            Err(e) => return fail(e),
        }
    };
    let mut page = Page::default();
    for path in &a.inputs {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return fail(format!("cannot read {}: {e}", path.display())),
        };
        let choice = match choose(path, &bytes, pinned.as_ref(), ca.as_ref()) {
            Ok(k) => k,
            Err(exit) => return exit,
        };
        let used = key_used(&choice);
        let key = choice.anchor_key();
        match read_input(&path.display().to_string(), &bytes, &key, used) {
            Ok(input) => page.inputs.push(input),
            Err(e) => return fail(format!("{}: {e}", path.display())),
        }
    }
    let html = page.render();
    let to_stdout = a.out == Path::new("-");
    let written = if to_stdout {
        use std::io::Write as _;
        std::io::stdout().write_all(html.as_bytes())
    } else {
        crate::fs::write_atomic(&a.out, html.as_bytes(), false)
    };
    if let Err(e) = written {
        return fail(format!("cannot write {}: {e}", a.out.display()));
    }
    if !to_stdout {
        // The page's verdict, so a terminal or a CI log says it without opening the page.
        let title = crate::report::escape::plain(&page.title());
        eprintln!("wrote {}: {title}", a.out.display());
    }
    page.exit()
}

/// The key for one input, chosen as `verify` chooses it. Under `--ca`, a bundle with no signer
/// certificate is refused (exit 2) and one the CA does not vouch for is invalid (exit 1); an
/// audit's JSON, which no key checks, is read as without a pin.
fn choose(
    path: &Path,
    bytes: &[u8],
    pinned: Option<&keys::PinnedKey>,
    ca: Option<&CaPin>,
) -> Result<KeyChoice, Exit> {
    let plain = KeyChoice::for_bundle(path, pinned).map_err(fail)?;
    let Some(ca) = ca else { return Ok(plain) };
    if !matches!(plain, KeyChoice::Certified { .. }) && is_audit_json(bytes) {
        return Ok(plain);
    }
    match KeyChoice::under_ca(path, ca) {
        Ok(choice) => Ok(choice),
        Err(e @ keys::KeyFileError::NotCertified { .. }) => {
            eprintln!(
                "attenu-hook report: INVALID (signer not certified): {e}. No page was written."
            );
            Err(Exit::CheckFailed)
        }
        Err(e) => Err(fail(e)),
    }
}

/// An audit's output, as the page tells it (`sessions`, no `entries`).
fn is_audit_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .is_some_and(|o| {
            o.get("sessions").is_some_and(|s| s.is_array()) && !o.contains_key("entries")
        })
}

/// The key as the page names it.
fn key_used(choice: &KeyChoice) -> KeyUsed {
    match (choice.key(), choice.certificate()) {
        (Some(k), _) => KeyUsed {
            file: Some(k.path.display().to_string()),
            kid: Some(k.kid.clone()),
            origin: KeyOrigin::File,
        },
        (None, Some(c)) => KeyUsed {
            file: None,
            origin: match c.through {
                Some(ca) => KeyOrigin::TeamCa {
                    key_id: c.view.key_id.clone(),
                    ca,
                },
                None => KeyOrigin::CarriedCertificate {
                    key_id: c.view.key_id.clone(),
                },
            },
            kid: Some(c.kid),
        },
        (None, None) => KeyUsed::default(),
    }
}
