//! `attenu-hook prove`: a C2SP tlog-proof for one entry, which `attenu-hook verify PROOF
//! --pub anchor.pub` checks without the rest of the session.

use super::project::{state_root, SessionArgs};
use super::{fail, Exit};
use crate::evidence::prove::{prove, Which};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    at: SessionArgs,
    /// The entry with this call_id (from `attenu-hook log --json`)
    #[arg(
        long,
        value_name = "CALL_ID",
        conflicts_with = "seq",
        required_unless_present = "seq"
    )]
    call: Option<String>,
    /// The entry at this seq of the session's last chain
    #[arg(long)]
    seq: Option<u64>,
    /// Write the proof here instead of stdout
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(a: Args) -> Exit {
    let root = match state_root(&a.at.project) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let which = match (&a.call, a.seq) {
        (Some(c), _) => Which::Call(c),
        (None, Some(s)) => Which::Seq(s),
        (None, None) => return fail("pass --call CALL_ID or --seq N"),
    };
    let session = match a.at.session() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let text = match prove(&root, session.as_deref(), which) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    match &a.out {
        Some(path) => match crate::fs::write_atomic(path, text.as_bytes(), true) {
            Ok(()) => {
                // The project's own key, wherever the command was run from.
                let key = root.join(".attenu").join("anchor.pub");
                eprintln!(
                    "wrote {}; check it with `attenu-hook verify {} --pub {}`",
                    path.display(),
                    path.display(),
                    key.display()
                );
                Exit::Success
            }
            Err(e) => fail(format!("cannot write {}: {e}", path.display())),
        },
        None => {
            print!("{text}");
            Exit::Success
        }
    }
}
