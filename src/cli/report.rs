//! `attenu-hook report BUNDLE|AUDIT.json… [--pub FILE] --out report.html`: one self-contained
//! HTML page for a reviewer (`crate::report`). Each bundle is verified as `verify` verifies it,
//! under the same key choice; an audit's JSON is shown as the audit said it. Exit 0 when every
//! bundle is valid under the pinned key and every audited session complete or open, 1 when a
//! bundle is invalid or a session fails, 3 when valid only under a key read beside a bundle,
//! 2 when an input or the key file cannot be used or the page cannot be written (no page).

use super::{fail, Exit};
use crate::evidence::keys::{self, KeyChoice};
use crate::report::model::KeyUsed;
use crate::report::{read_input, Page};
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
    let pinned = match a.pub_key.as_deref().map(keys::load_pinned).transpose() {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    let mut page = Page::default();
    for path in &a.inputs {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => return fail(format!("cannot read {}: {e}", path.display())),
        };
        let choice = match KeyChoice::for_bundle(path, pinned.as_ref()) {
            Ok(k) => k,
            Err(e) => return fail(e),
        };
        let used = match (choice.key(), choice.certificate()) {
            (Some(k), _) => KeyUsed {
                file: Some(k.path.display().to_string()),
                kid: Some(k.kid.clone()),
            },
            (None, Some(c)) => KeyUsed {
                file: Some(format!(
                    "named by the signer certificate it carries, key id {:?}",
                    c.view.key_id
                )),
                kid: Some(c.kid),
            },
            (None, None) => KeyUsed::default(),
        };
        let key = choice.anchor_key();
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
