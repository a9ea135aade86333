//! `attenu-hook log`: the decisions as a readable table fitted to the terminal (or JSON
//! lines), a list of sessions, or a per-agent summary.

mod table;

use super::project::SessionArgs;
use super::terminal::Terminal;
use super::{fail, Exit};

#[derive(clap::Args, Debug)]
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
    /// One line per session: its whole id, first and last time, calls, allows, denials, agents
    #[arg(long, conflicts_with = "summary")]
    sessions: bool,
    /// Per agent: calls, allows, and denials by reason code
    #[arg(long)]
    summary: bool,
}

/// Exit 1 when a ledger shown cannot be verified.
pub fn run(a: Args) -> Exit {
    let session = match a.at.session() {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let read = match table::rows(&a.at.state_dir(), session.as_deref()) {
        Ok(read) => read,
        Err(e) => return fail(e),
    };
    let terminal = Terminal::stdout();
    let color = !a.json && terminal.colour;
    for w in &read.unverified {
        eprintln!("attenu-hook: WARNING: {w}");
    }
    let rows: Vec<_> = read
        .rows
        .into_iter()
        .filter(|r| a.agent.as_deref().is_none_or(|agent| r.agent == agent))
        .filter(|r| {
            !a.denied
                || matches!(
                    r.decision.as_str(),
                    "DENY" | "would-deny" | table::CC_REFUSED
                )
        })
        .collect();
    let text = if a.summary {
        table::render_summary(&rows, a.json)
    } else if a.sessions {
        table::render_sessions(&rows, &read.who, a.json)
    } else {
        table::render(&rows, a.json, color, terminal.table_width())
    };
    print!("{text}");
    if read.unverified.is_empty() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}
