//! `attenu-hook log`: the decisions as a readable table (or JSON lines).

use super::project::SessionArgs;
use super::{fail, Exit};
use std::io::IsTerminal;

#[derive(clap::Args, Debug)]
// Here --session goes without a help text (in place: the completions keep their order).
#[command(mut_args(|a| if a.get_id() == "session" { a.help(None::<&str>) } else { a }))]
pub struct Args {
    #[command(flatten)]
    at: SessionArgs,
    /// Only this agent type ("main" for the main thread)
    #[arg(long)]
    agent: Option<String>,
    /// Only denials (enforced or not)
    #[arg(long)]
    denied: bool,
    /// One JSON object per line
    #[arg(long)]
    json: bool,
}

/// Exit 1 when a ledger shown cannot be verified.
pub fn run(a: Args) -> Exit {
    let read = match crate::evidence::log::rows(&a.at.state_dir(), a.at.session()) {
        Ok(read) => read,
        Err(e) => return fail(e),
    };
    let color = !a.json && std::io::stdout().is_terminal();
    for w in &read.unverified {
        eprintln!("attenu-hook: WARNING: {w}");
    }
    let rows: Vec<_> = read
        .rows
        .into_iter()
        .filter(|r| a.agent.as_deref().is_none_or(|agent| r.agent == agent))
        .filter(|r| !a.denied || r.decision == "DENY" || r.decision == "would-deny")
        .collect();
    print!("{}", crate::evidence::log::render(&rows, a.json, color));
    if read.unverified.is_empty() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}
