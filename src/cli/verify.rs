//! `attenu-hook verify BUNDLE`: verifies a bundle offline.

use super::Exit;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    bundle: PathBuf,
    /// The anchor public key to pin (anchor.pub, or 64 hex characters in a file)
    #[arg(long = "pub", value_name = "FILE")]
    pub_key: Option<PathBuf>,
    /// The full report as JSON
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Exit {
    Exit::from_code(crate::evidence::verify::run(
        &a.bundle,
        a.pub_key.as_deref(),
        a.json,
    ))
}
