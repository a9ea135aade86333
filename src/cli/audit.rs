//! `attenu-hook audit URL --pub FILE… [--json]`: judges every session an object store holds
//! (`crate::audit`). Exit 0 when every session is complete or open, 1 when one is not, 2 when
//! the store or a key file cannot be read.

use super::{fail, Exit};
use crate::audit::{self, Keys};
use crate::evidence::keys;
use crate::ship::{Store, Target};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: s3://bucket/prefix (endpoint and credentials from AWS_*) or file:///dir
    url: Option<String>,
    /// The anchor.pub of each project to trust (repeat, or list several; the URL may follow)
    #[arg(long = "pub", value_name = "FILE", required = true, num_args = 1..)]
    pub_keys: Vec<PathBuf>,
    /// The report as JSON
    #[arg(long)]
    json: bool,
}

/// The URL and the key files: `--pub` takes several values, so in `audit --pub KEY URL` it
/// took the URL too; a value with `://` is the URL, wherever it stands.
fn url_and_keys(a: &Args) -> Result<(String, Vec<PathBuf>), String> {
    let (urls, keys): (Vec<&PathBuf>, Vec<&PathBuf>) = a
        .pub_keys
        .iter()
        .partition(|p| p.to_string_lossy().contains("://"));
    let mut urls: Vec<String> = urls.iter().map(|u| u.to_string_lossy().into()).collect();
    urls.extend(a.url.clone());
    match (urls.as_slice(), keys.is_empty()) {
        (_, true) => Err("pass the anchor.pub of each project to trust with --pub FILE".into()),
        ([url], false) => Ok((url.clone(), keys.into_iter().cloned().collect())),
        ([], false) => Err("pass the store's URL (s3://bucket/prefix or file:///dir)".into()),
        (several, false) => Err(format!("pass one store's URL, not {}", several.join(", "))),
    }
}

pub fn run(a: Args) -> Exit {
    let (url, pub_keys) = match url_and_keys(&a) {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    let mut pinned = Keys::new();
    for path in &pub_keys {
        match keys::read_public(path) {
            Ok(key) => {
                pinned.insert(keys::kid_for(&key), key);
            }
            Err(e) => return fail(e),
        }
    }
    let target = match Target::parse(&url) {
        Ok(t) => t,
        Err(e) => return fail(e.replace("ship.url", "the audit's URL")),
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
    let pinned = Arc::new(pinned);
    let report = match runtime.block_on(audit::audit(&store, Arc::clone(&pinned), now)) {
        Ok(r) => r,
        Err(e) => return cannot_read(&e),
    };
    for kid in pinned.keys() {
        if !report.sessions.iter().any(|s| &s.project == kid) {
            eprintln!(
                "attenu-hook: note: the store holds no session of {kid} under {}",
                url
            );
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("the report serializes")
        );
    } else {
        print!(
            "{}",
            audit::render::render_text(&report, &url, audit::render::terminal_width())
        );
    }
    if report.passes() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}
