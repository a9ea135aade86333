//! `attenu-hook completions SHELL` and `attenu-hook man`: generated from the CLI's own
//! definition, so they cannot drift from it.

use super::{fail, Cli, Exit};

pub fn completions(shell: clap_complete::Shell) -> Exit {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "attenu-hook", &mut std::io::stdout());
    Exit::Success
}

/// The man page on stdout; with `dir`, it and one page per command written there, which
/// `man` then finds (the single page's SUBCOMMANDS section names them).
pub fn man(dir: Option<&std::path::Path>) -> Exit {
    let cmd = <Cli as clap::CommandFactory>::command();
    if let Some(dir) = dir {
        let written =
            std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(cmd, dir));
        return match written {
            Ok(()) => {
                println!(
                    "wrote attenu-hook.1 and a page per command (attenu-hook-log.1, ...) to {}; `man attenu-hook-log` finds them when that directory is a man1 directory on your MANPATH (~/.local/share/man/man1 is), or read one with `man -l {}/attenu-hook-log.1`",
                    dir.display(),
                    dir.display()
                );
                Exit::Success
            }
            Err(e) => fail(format!(
                "cannot write the man pages to {}: {e}",
                dir.display()
            )),
        };
    }
    let mut out = std::io::stdout();
    let rendered = clap_mangen::Man::new(cmd).render(&mut out).and_then(|()| {
        // The SUBCOMMANDS above name pages `man` finds only once they are written.
        std::io::Write::write_all(
            &mut out,
            b".SH \"COMMAND PAGES\"\nThe pages named under SUBCOMMANDS are written by \\fBattenu\\-hook man \\-\\-dir ~/.local/share/man/man1\\fR (then \\fBman attenu\\-hook\\-log\\fR); \\fBattenu\\-hook help\\fR \\fICOMMAND\\fR prints the same text.\n",
        )
    });
    match rendered {
        Ok(()) => Exit::Success,
        Err(e) => fail(e),
    }
}
