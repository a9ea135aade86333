//! `attenu-hook completions SHELL` and `attenu-hook man`: generated from the CLI's own
//! definition, so they cannot drift from it.

use super::{fail, Cli, Exit};

pub fn completions(shell: clap_complete::Shell) -> Exit {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "attenu-hook", &mut std::io::stdout());
    Exit::Success
}

pub fn man() -> Exit {
    let cmd = <Cli as clap::CommandFactory>::command();
    match clap_mangen::Man::new(cmd).render(&mut std::io::stdout()) {
        Ok(()) => Exit::Success,
        Err(e) => fail(e),
    }
}
