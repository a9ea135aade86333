//! `attenu-hook audit URL (--pub FILE… | --ca FILE… [--revoked FILE]) [--json]`: judges every
//! session an object store holds (`crate::audit`). Exit 0 when every session is complete or
//! open and the fleet has no finding, 1 otherwise, 2 when the store or a key file cannot be
//! read.

use super::terminal::Terminal;
use super::{fail, Exit};
use crate::audit::trust::Pinning;
use crate::audit::{self, Keys};
use crate::evidence::keys::{self, KeyFileError};
use crate::ship::{Store, Target};
use crate::trust::CaPinError;
use std::path::PathBuf;
use std::sync::Arc;

/// Why the command line does not say what to audit against what.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error("pass the anchor.pub of each project to trust with --pub FILE, or the team's CA with --ca FILE")]
    NothingPinned,
    #[error("pass the store's URL (s3://bucket/prefix or file:///dir)")]
    NoUrl,
    #[error("pass one store's URL, not {}", .0.join(", "))]
    SeveralUrls(Vec<String>),
    #[error(transparent)]
    Key(#[from] KeyFileError),
    #[error(transparent)]
    Ca(#[from] CaPinError),
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: s3://bucket/prefix (endpoint and credentials from AWS_*) or file:///dir
    url: Option<String>,
    /// The anchor.pub of each project to trust (repeat, or list several; the URL may follow)
    #[arg(long = "pub", value_name = "FILE", num_args = 1.., required_unless_present = "ca", conflicts_with = "ca")]
    pub_keys: Vec<PathBuf>,
    /// The team's OpenSSH CA public key file(s): trust every signing key it certified for
    /// the attenu-hook principal (`ssh-keygen -s CA -n attenu-hook`)
    #[arg(long, value_name = "FILE", num_args = 1..)]
    ca: Vec<PathBuf>,
    /// Certificates the team took back: lines `id:<key id>`, `serial:<n>` or a public key
    #[arg(long, value_name = "FILE", requires = "ca")]
    revoked: Option<PathBuf>,
    /// The report as JSON
    #[arg(long)]
    json: bool,
}

/// The URL: `--pub` and `--ca` take several values, so in `audit --pub KEY URL` the URL went
/// with them; a value with `://` is the URL, wherever it stands. Returns it and the files.
fn url_and_files(a: &Args) -> Result<(String, Vec<PathBuf>, Vec<PathBuf>), ArgsError> {
    let is_url = |p: &&PathBuf| p.to_string_lossy().contains("://");
    let mut urls: Vec<String> = a
        .pub_keys
        .iter()
        .chain(&a.ca)
        .filter(is_url)
        .map(|u| u.to_string_lossy().into())
        .collect();
    urls.extend(a.url.clone());
    let files = |v: &[PathBuf]| v.iter().filter(|p| !is_url(p)).cloned().collect::<Vec<_>>();
    let (keys, cas) = (files(&a.pub_keys), files(&a.ca));
    if keys.is_empty() && cas.is_empty() {
        return Err(ArgsError::NothingPinned);
    }
    match urls.as_slice() {
        [url] => Ok((url.clone(), keys, cas)),
        [] => Err(ArgsError::NoUrl),
        several => Err(ArgsError::SeveralUrls(several.to_vec())),
    }
}

/// What the reviewer pinned, read from the files named.
fn pinning(
    keys_files: &[PathBuf],
    ca_files: &[PathBuf],
    revoked: Option<&PathBuf>,
) -> Result<Pinning, ArgsError> {
    if ca_files.is_empty() {
        let mut pinned = Keys::new();
        for path in keys_files {
            let k = keys::load_pinned(path)?;
            pinned.insert(k.kid, k.key);
        }
        return Ok(Pinning::Keys(pinned));
    }
    Ok(Pinning::Ca(crate::trust::CaPin::load(
        ca_files,
        revoked.map(PathBuf::as_path),
    )?))
}

pub fn run(a: Args) -> Exit {
    let (url, key_files, ca_files) = match url_and_files(&a) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let pinned = match pinning(&key_files, &ca_files, a.revoked.as_ref()) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let target = match Target::parse(&url) {
        Ok(t) => t,
        Err(e) => return fail(format!("the audit's URL {:?} {}", e.url, e.problem)),
    };
    let cannot_read = |e: &dyn std::fmt::Display| {
        fail(format!(
            "cannot read the store: {e}. Check the URL ({}), the endpoint (AWS_ENDPOINT_URL, AWS_REGION, AWS_ALLOW_HTTP for http://) and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), which need read and list rights",
            url
        ))
    };
    let store = match Store::from_env(&url, &target) {
        Ok(s) => s,
        Err(e) => return cannot_read(&e),
    };
    let runtime = match crate::ship::runtime() {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot start the audit's runtime: {e}")),
    };
    let now = crate::clock::now_ms();
    let report = match runtime.block_on(audit::audit(&store, Arc::new(pinned), now)) {
        Ok(r) => r,
        Err(e) => return cannot_read(&e),
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serializes")
        );
    } else {
        print!(
            "{}",
            audit::render::render_text(&report, &url, Terminal::stdout().width_or(100))
        );
    }
    if report.passes() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}
