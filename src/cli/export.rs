//! `attenu-hook export`: writes the signed evidence bundle(s) of a session.

use super::project::SessionArgs;
use super::{fail, Exit};
use crate::evidence::bundle;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    at: SessionArgs,
    /// Where to write the bundle (further chains get .chain<k> before the extension)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(a: Args) -> Exit {
    let session = match a.at.session() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    match bundle::export_session(&a.at.state_dir(), session.as_deref(), a.out.as_deref()) {
        Ok(written) if written.is_empty() => {
            eprintln!("attenu-hook: the session's ledger has no entries yet; nothing to export");
            Exit::Success
        }
        Ok(written) => {
            for w in written {
                println!("{}", w.path.display());
            }
            Exit::Success
        }
        Err(e) => fail(e),
    }
}
