//! `attenu-hook export`: writes the signed evidence bundle(s) of a session.

use super::project::state_project_dir;
use super::{fail, Exit};
use crate::evidence::bundle;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// Session id (default: the most recently written session)
    #[arg(long)]
    session: Option<String>,
    /// Where to write the bundle (further chains get .chain<k> before the extension)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(a: Args) -> Exit {
    match bundle::export_session(
        &state_project_dir(&a.project),
        a.session.as_deref(),
        a.out.as_deref(),
    ) {
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
