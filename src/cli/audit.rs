//! `attenu-hook audit URL --pub FILE… [--json]`: judges every session an object store holds
//! (`crate::audit`). Exit 0 when every session is complete or open, 1 when one is not, 2 when
//! the store or a key file cannot be read.

use super::terminal::Terminal;
use super::{fail, Exit};
use crate::audit::{self, Keys};
use crate::evidence::keys;
use crate::ship::{Store, Target};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: s3://bucket/prefix (endpoint and credentials from AWS_*) or file:///dir
    url: String,
    /// The anchor.pub of each project to trust (repeat, or list several)
    #[arg(long = "pub", value_name = "FILE", required = true, num_args = 1..)]
    pub_keys: Vec<PathBuf>,
    /// The report as JSON
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Exit {
    let mut pinned = Keys::new();
    for path in &a.pub_keys {
        match keys::load_pinned(path) {
            Ok(k) => {
                pinned.insert(k.kid, k.key);
            }
            Err(e) => return fail(e),
        }
    }
    let target = match Target::parse(&a.url) {
        Ok(t) => t,
        Err(e) => return fail(e.replace("ship.url", "the audit's URL")),
    };
    let cannot_read = |e: &dyn std::fmt::Display| {
        fail(format!(
            "cannot read the store: {e}. Check the URL ({}), the endpoint (AWS_ENDPOINT_URL, AWS_REGION, AWS_ALLOW_HTTP for http://) and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), which need read and list rights",
            a.url
        ))
    };
    let store = match Store::from_env(&a.url, &target) {
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
                a.url
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
            audit::render::render_text(&report, &a.url, Terminal::stdout().width_or(100))
        );
    }
    if report.passes() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}
