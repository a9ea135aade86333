//! Every command's `--help`, pinned: `attenu-hook --help` and each command's (and each
//! subcommand's) as `tests/snapshots/help*.txt`. The commands are read from the help itself,
//! so a new command without a snapshot fails, and so does a snapshot of a command that is gone.
//! After a deliberate change, `UPDATE_SNAPSHOTS=1 cargo test --test help` rewrites them
//! (review the diff).

mod common;
use common::*;
use std::path::Path;

/// The commands a help text lists under `Commands:` (clap's own `help` left out).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The snapshot of `attenu-hook <path…> --help`: `help.txt`, `help-verify.txt`,
/// `help-reconcile-resolve.txt`.
fn snapshot_name(path: &[String]) -> String {
    path.iter().fold("help".to_string(), |n, c| n + "-" + c) + ".txt"
}

/// `--help` of the command at `path` and of every command below it, as (snapshot, text).
fn every_help(path: Vec<String>, out: &mut Vec<(String, String)>) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let run = cli(&args);
    assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
    for command in commands(&run.stdout) {
        let mut below = path.clone();
        below.push(command);
        every_help(below, out);
    }
    out.push((snapshot_name(&path), run.stdout));
}

#[test]
fn the_command_scanner_reads_the_commands_section() {
    let help = "About\n\nUsage: x [COMMAND]\n\nCommands:\n  list     Show\n  resolve  Close\n  help     Print\n\nOptions:\n  -h, --help  Print help\n";
    assert_eq!(commands(help), vec!["list", "resolve"]);
    assert_eq!(commands("Usage: x\n\nOptions:\n"), Vec::<String>::new());
    assert_eq!(
        snapshot_name(&["reconcile".into(), "list".into()]),
        "help-reconcile-list.txt"
    );
}

#[test]
fn every_commands_help_is_pinned() {
    let mut helps = Vec::new();
    every_help(Vec::new(), &mut helps);
    assert!(
        helps.len() > 15,
        "only {} help texts were found",
        helps.len()
    );
    let mut drifted = Vec::new();
    for (name, text) in &helps {
        if std::panic::catch_unwind(|| assert_snapshot(name, text)).is_err() {
            drifted.push(name.as_str());
        }
    }
    assert!(
        drifted.is_empty(),
        "--help differs from its snapshot (each shown above): {drifted:?}"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let mut orphans: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|f| f == "help.txt" || f.starts_with("help-"))
        .filter(|f| !helps.iter().any(|(name, _)| name == f))
        .collect();
    orphans.sort();
    assert!(
        orphans.is_empty(),
        "snapshots of commands that are gone; delete them: {orphans:?}"
    );
}
