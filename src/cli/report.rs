//! `attenu-hook report BUNDLE|AUDIT.json… [--pub FILE] --out report.html`: one self-contained
//! HTML page for a reviewer (`crate::report`). Each bundle is verified as `verify` verifies it,
//! under the same key choice; an audit's JSON is shown as the audit said it. Exit 0 when every
//! bundle is valid under the pinned key and every audited session complete or open, 1 when a
//! bundle is invalid or a session fails, 3 when valid only under a key read beside a bundle,
//! 2 when an input or the key file cannot be used or the page cannot be written (no page).

use super::{fail, Exit};
use crate::evidence::keys;
use crate::evidence::verify::{parse_anchor_pub, AnchorKey};
use crate::report::model::KeyUsed;
use crate::report::{read_input, Page};
use ed25519_dalek::VerifyingKey;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bundles (bundle-<session>.json, one per chain) and audit JSON (`audit --json`), any mix
    #[arg(required = true, value_name = "BUNDLE|AUDIT.json")]
    inputs: Vec<PathBuf>,
    /// The anchor public key to pin (anchor.pub, or 64 hex characters in a file)
    #[arg(long = "pub", value_name = "FILE")]
    pub_key: Option<PathBuf>,
    /// Where to write the page (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(a: Args) -> Exit {
    let pinned = match &a.pub_key {
        Some(p) => match load_key(p) {
            Ok(k) => Some((k, p.clone())),
            Err(e) => {
                return fail(format!(
                    "cannot use the key file {}: {e}. Pass the anchor.pub you trust (JSON with \"public_key\", or 64 hex characters)",
                    p.display()
                ))
            }
        },
        None => None,
    };
    let mut page = Page::default();
    for path in &a.inputs {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return fail(format!("cannot read {}: {e}", path.display())),
        };
        let (key, used) = match choose_key(path, pinned.as_ref()) {
            Ok(k) => k,
            Err(e) => return fail(e),
        };
        match read_input(&path.display().to_string(), &bytes, &key, used) {
            Ok(input) => page.inputs.push(input),
            Err(e) => return fail(format!("{}: {e}", path.display())),
        }
    }
    let html = page.render();
    let written = if a.out == Path::new("-") {
        use std::io::Write as _;
        std::io::stdout().write_all(html.as_bytes())
    } else {
        crate::fs::write_atomic(&a.out, html.as_bytes(), false)
    };
    if let Err(e) = written {
        return fail(format!("cannot write {}: {e}", a.out.display()));
    }
    page.exit()
}

/// The key for one bundle, as `verify` chooses it: `--pub`, else an `anchor.pub` beside the
/// bundle (reported as not pinned), else none (the anchor is not checked: invalid).
fn choose_key(
    bundle: &Path,
    pinned: Option<&(VerifyingKey, PathBuf)>,
) -> Result<(AnchorKey, KeyUsed), String> {
    let used = |k: &VerifyingKey, p: &Path| KeyUsed {
        file: Some(p.display().to_string()),
        kid: Some(keys::kid_for(k)),
    };
    if let Some((k, p)) = pinned {
        return Ok((AnchorKey::Pinned(*k), used(k, p)));
    }
    let dir = match bundle.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let side = dir.join("anchor.pub");
    if !side.exists() {
        return Ok((AnchorKey::None, KeyUsed::default()));
    }
    match load_key(&side) {
        Ok(k) => Ok((AnchorKey::FromBundleSide(k), used(&k, &side))),
        Err(e) => Err(format!(
            "the key file {} beside {} cannot be used: {e}. Pass the key you trust with --pub FILE",
            side.display(),
            bundle.display()
        )),
    }
}

fn load_key(path: &Path) -> Result<VerifyingKey, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it ({e})"))?;
    parse_anchor_pub(&text).map_err(|e| e.to_string())
}
