//! `attenu-hook keygen`: writes a new Ed25519 reviewer key.

use super::{fail, Exit};
use crate::evidence::keys;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to write the private key (0600); its public key is printed
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(a: Args) -> Exit {
    match keys::generate_to(&a.out) {
        Ok(key) => {
            eprintln!(
                "wrote {} (keep it where no agent can read it)",
                a.out.display()
            );
            println!("{}", crate::ledger::chain::hex(key.verifying().as_bytes()));
            Exit::Success
        }
        Err(e) => fail(e),
    }
}
