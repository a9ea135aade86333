//! The command line: one file per command, each with its arguments and a `run` that returns
//! the typed [`Exit`]. `attenu-hook` with no arguments is hook mode ([`crate::hook`]); the exit
//! codes of both are [`crate::protocol::exit`].

mod audit;
mod authorize;
pub mod derive;
mod derive_human;
mod docs;
mod doctor;
mod enroll;
mod export;
mod install;
mod keygen;
mod log;
mod man_extra;
mod project;
mod prove;
mod receipt;
mod reconcile;
mod report;
mod revoke;
mod ship;
pub mod shipper;
mod terminal;
mod verify;

pub use crate::protocol::Exit;
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "attenu-hook",
    version,
    about = "Claude Code hook: derive each subagent's authority, deny what it does not hold, keep a signed hash-chained ledger",
    long_about = "With no arguments, attenu-hook runs in hook mode: it reads one Claude Code hook event on stdin and answers on stdout. Wire it with the block in settings.snippet.json (or `attenu-hook install`)."
)]
pub struct Cli {
    /// The same as the `derive` command (kept for scripts): the permission sets derived from DIR (default: .)
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub derive: Option<PathBuf>,
    /// With --derive: a readable table
    #[arg(long, requires = "derive")]
    pub human: bool,
    /// With --derive: JSON even on a terminal
    #[arg(long, requires = "derive", conflicts_with = "human")]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the permission sets derived from the project: a table on a terminal, else JSON
    Derive(DeriveArgs),
    /// Write the signed evidence bundle(s) of a session
    Export(export::Args),
    /// Verify a bundle offline: integrity, monotonicity, containment, execution binding.
    /// Exit 0 valid, 1 invalid, 2 unusable input, 3 valid only under the anchor.pub found
    /// beside the bundle (pass --pub to pin the key you trust), 4 valid with a NOTICE (the
    /// ledger records a lost sealed state). Also checks a one-entry proof from `prove`
    Verify(verify::Args),
    /// Print a C2SP tlog-proof that one entry is in its chain's signed checkpoint
    Prove(prove::Args),
    /// Write a new Ed25519 reviewer key (0600); prints its public key on the last line
    Keygen(keygen::Args),
    /// Create (or reuse) this user's signing key outside any clone and print its public key
    /// for the team's CA; with --cert, install the certificate the CA signed
    Enroll(enroll::Args),
    /// Host only: issue a signed authorization for one exact tool call (gated scopes)
    Authorize(authorize::Args),
    /// Host only: record a verified business receipt for a call
    Receipt(receipt::Args),
    /// Wire the hook into DIR/.claude/settings.json (idempotent; keeps every other setting)
    Install(install::Args),
    /// Check the wiring, the command, permissions, configuration and ledgers
    Doctor(doctor::Args),
    /// Host only: take authority from a subagent in every running session at once
    /// (.attenu/revoke); --restore gives it back, --list shows what is revoked
    Revoke(revoke::Args),
    /// Print shell completions
    Completions {
        /// The shell to print them for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write it and one page per command into --dir
    Man {
        /// Write attenu-hook.1 and attenu-hook-<command>.1 here (e.g. ~/.local/share/man/man1)
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Reconciliation markers left by outcomes that could not be recorded
    Reconcile {
        #[command(subcommand)]
        action: reconcile::Action,
    },
    /// The decisions as a table fitted to the terminal; --sessions lists sessions, --summary tallies each agent
    Log(log::Args),
    /// Write one self-contained HTML page for a reviewer from bundles (each verified, as
    /// `verify` does) and audit JSON. Exit 0 valid under the pinned key, 1 invalid (or a
    /// session fails the audit), 2 unusable input, 3 valid only under the anchor.pub beside a
    /// bundle
    Report(report::Args),
    /// Drain the outbox to [ship] url: exit 0 when it is empty afterwards, 1 when not, 2 when
    /// shipping is not configured
    Ship(ship::Args),
    /// Judge every session an object store holds: exit 0 when each is complete or open, 1
    /// when one is rewritten, forked, truncated or unverifiable, 2 when the store cannot be read
    Audit(audit::Args),
}

/// `attenu-hook derive [DIR] [--human|--json]`.
#[derive(clap::Args, Debug)]
pub struct DeriveArgs {
    /// The project, or a directory inside it
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// A readable table, even when not on a terminal
    #[arg(long)]
    human: bool,
    /// JSON, even on a terminal
    #[arg(long, conflicts_with = "human")]
    json: bool,
}

/// Entry point of the binary: hook mode without arguments, the CLI with them. Returns the
/// process's exit code.
pub fn main() -> u8 {
    if std::env::args_os().len() <= 1 {
        return crate::hook::run().code();
    }
    let cli = Cli::parse_from(derive_dir_first(std::env::args_os().collect()));
    exit_2_when_output_fails();
    run(cli).code()
}

/// `--derive --json DIR` as `--derive DIR --json`: `--derive` takes an optional value, so
/// clap would read `--json` as the end of it and `DIR` as a stray argument.
fn derive_dir_first(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(at) = args.iter().position(|a| a == "--derive") else {
        return args;
    };
    let flags = args[at + 1..]
        .iter()
        .take_while(|a| *a == "--json" || *a == "--human")
        .count();
    let dir = at + 1 + flags;
    if flags > 0
        && args
            .get(dir)
            .is_some_and(|a| !a.to_string_lossy().starts_with('-'))
    {
        let d = args.remove(dir);
        args.insert(at + 1, d);
    }
    args
}

/// `println!` panics when stdout cannot be written (`attenu-hook doctor | head -1` closes the
/// pipe; `> /dev/full` has no room), which would end the command with a panic message and exit
/// 101. Such a command exits 2 instead, saying why unless the reader simply went away.
fn exit_2_when_output_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") {
            if !msg.contains("Broken pipe") {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "attenu-hook: cannot write the output ({msg})"
                );
            }
            std::process::exit(i32::from(Exit::Unusable.code()));
        }
        default(info);
    }));
}

/// A command that cannot do what it was asked: the message on stderr, exit 2.
pub(crate) fn fail(msg: impl std::fmt::Display) -> Exit {
    eprintln!("attenu-hook: {msg}");
    Exit::Unusable
}

/// Runs one command line.
pub fn run(cli: Cli) -> Exit {
    if let Some(dir) = &cli.derive {
        return derive::run(
            dir,
            cli.human || (!cli.json && std::io::stdout().is_terminal()),
        );
    }
    let Some(command) = cli.command else {
        return fail("nothing to do; run without arguments only as a hook (see --help)");
    };
    match command {
        Command::Derive(a) => derive::run(
            &a.dir,
            a.human || (!a.json && std::io::stdout().is_terminal()),
        ),
        Command::Export(a) => export::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Prove(a) => prove::run(a),
        Command::Keygen(a) => keygen::run(a),
        Command::Enroll(a) => enroll::run(a),
        Command::Authorize(a) => authorize::run(a),
        Command::Receipt(a) => receipt::run(a),
        Command::Install(a) => install::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Revoke(a) => revoke::run(a),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { dir } => docs::man(dir.as_deref()),
        Command::Reconcile { action } => reconcile::run(action),
        Command::Log(a) => log::run(a),
        Command::Report(a) => report::run(a),
        // In the sibling binary (see `shipper`), so the hook's own stays lean.
        Command::Ship(_) | Command::Audit(_) => shipper::forward(),
    }
}

#[cfg(test)]
mod tests {
    use super::derive_dir_first;

    /// Regression (issue 41): several `--help` entries had no description.
    #[test]
    fn every_argument_and_command_has_a_description() {
        fn walk(c: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in c.get_arguments() {
                let id = a.get_id().as_str();
                if !matches!(id, "help" | "version") && a.get_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for s in c.get_subcommands() {
                let at = format!("{path} {}", s.get_name());
                if s.get_about().is_none() {
                    missing.push(at.clone());
                }
                walk(s, &at, missing);
            }
        }
        let mut cmd = <super::Cli as clap::CommandFactory>::command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "attenu-hook", &mut missing);
        assert!(missing.is_empty(), "no description: {missing:#?}");
    }

    #[test]
    fn the_derive_directory_may_follow_the_format_flags() {
        let of = |v: &[&str]| -> Vec<String> {
            derive_dir_first(v.iter().map(|s| s.into()).collect())
                .into_iter()
                .map(|s| s.into_string().unwrap())
                .collect()
        };
        for (given, read) in [
            (
                &["x", "--derive", "--json", "d"][..],
                &["x", "--derive", "d", "--json"][..],
            ),
            (
                &["x", "--derive", "--human", "--json", "d"],
                &["x", "--derive", "d", "--human", "--json"],
            ),
            (
                &["x", "--derive", "d", "--json"],
                &["x", "--derive", "d", "--json"],
            ),
            (&["x", "--derive", "--json"], &["x", "--derive", "--json"]),
            (
                &["x", "--derive", "--json", "--x"],
                &["x", "--derive", "--json", "--x"],
            ),
            (
                &["x", "verify", "b", "--json"],
                &["x", "verify", "b", "--json"],
            ),
        ] {
            assert_eq!(of(given), read, "{given:?}");
        }
    }
}
