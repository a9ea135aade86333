//! The network commands (`ship`, `audit`) live in a second binary, `attenu-hook-ship`,
//! installed beside `attenu-hook`. They link an object-store client and an async runtime that
//! would make every hook process start slower (a binary three times the size, with three times
//! the relocations to apply: about 0.2 ms a call here), and the hook never ships. `attenu-hook
//! ship` and `attenu-hook audit` run the sibling with the same arguments, so the command line
//! is one.

use super::{fail, Cli, Command, Exit};
use clap::Parser;

pub use crate::ship::spawn::{shipper_binary as sibling, SHIPPER};

/// Runs this command line in the sibling (replacing this process).
pub fn forward() -> Exit {
    use std::os::unix::process::CommandExt;
    let Some(shipper) = sibling() else {
        return fail(format!("{SHIPPER} is not installed beside attenu-hook or on PATH; `cargo install --locked --path .` installs both binaries"));
    };
    let err = std::process::Command::new(&shipper)
        .args(std::env::args_os().skip(1))
        .exec();
    fail(format!("cannot run {}: {err}", shipper.display()))
}

/// The entry of `attenu-hook-ship`: the same command line, of which it runs the network
/// commands; the others belong to `attenu-hook`.
pub fn main() -> u8 {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Ship(a)) => super::ship::run(a),
        Some(Command::Audit(a)) => super::audit::run(a),
        _ => fail(format!(
            "{SHIPPER} runs only `ship` and `audit`; run the others with attenu-hook"
        )),
    };
    code.code()
}
