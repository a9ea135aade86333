//! `attenu-hook log`: the decisions as a readable table (or JSON lines).

use super::project::state_project_dir;
use super::{fail, Exit};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    #[arg(long)]
    session: Option<String>,
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
    let read =
        match crate::evidence::log::rows(&state_project_dir(&a.project), a.session.as_deref()) {
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
