//! `attenu-hook completions SHELL` and `attenu-hook man`: generated from the CLI's own
//! definition, so they cannot drift from it.

use super::{fail, Cli, Exit};

pub fn completions(shell: clap_complete::Shell) -> Exit {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "attenu-hook", &mut script);
    let mut script = String::from_utf8_lossy(&script).into_owned();
    if shell == clap_complete::Shell::Bash {
        script = bash_subcommands_fixed(&script);
    }
    print!("{script}");
    Exit::Success
}

/// clap_complete's bash script names a subcommand's state `attenu__hook__subcmd__log` where
/// it is found and `attenu__subcmd__hook__subcmd__log` where its flags are offered (the `-`
/// of the name is escaped twice), so no subcommand's flags ever completed: one spelling.
fn bash_subcommands_fixed(script: &str) -> String {
    script.replace("attenu__subcmd__hook", "attenu__hook")
}

/// The man page on stdout; with `dir`, it and one page per command written there, which
/// `man` then finds (the single page's SUBCOMMANDS section names them).
pub fn man(dir: Option<&std::path::Path>) -> Exit {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    if let Some(dir) = dir {
        cmd.build();
        let written = std::fs::create_dir_all(dir).and_then(|()| write_pages(&cmd, dir));
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
        std::io::Write::write_all(&mut out, super::man_extra::sections("attenu-hook").as_bytes())?;
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

/// `cmd`'s page and one per subcommand, as clap_mangen's `generate_to` names them, each with
/// the examples and exit codes `--help` leaves out.
fn write_pages(cmd: &clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    page.extend_from_slice(super::man_extra::sections(name).as_bytes());
    std::fs::write(dir.join(format!("{name}.1")), page)
}
