//! `attenu-hook log`: the decisions as a readable table fitted to the terminal (or JSON
//! lines), a list of sessions, or a per-agent summary.

use super::project::SessionArgs;
use super::{fail, Exit};
use std::io::IsTerminal;

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
    let read = match crate::evidence::log::rows(&a.at.state_dir(), session.as_deref()) {
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
    use crate::evidence::log;
    let text = if a.summary {
        log::render_summary(&rows, a.json)
    } else if a.sessions {
        log::render_sessions(&rows, a.json)
    } else {
        log::render(&rows, a.json, color, width())
    };
    print!("{text}");
    if read.unverified.is_empty() {
        Exit::Success
    } else {
        Exit::CheckFailed
    }
}

/// The width to fit the table to: `COLUMNS` when set, else the terminal's (`stty size`), else
/// 80 on a terminal; `None` (one line per row) when stdout is not a terminal.
fn width() -> Option<usize> {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok());
    if let Some(c) = columns.filter(|&c: &usize| c > 0) {
        return Some(c);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let asked = std::fs::File::open("/dev/tty").ok().and_then(|tty| {
        std::process::Command::new("stty")
            .arg("size")
            .stdin(tty)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    });
    let cols = asked.and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
    });
    Some(cols.filter(|&c: &usize| c > 0).unwrap_or(80))
}
