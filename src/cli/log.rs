//! `attenu-hook log`: the decisions as a readable table fitted to the terminal (or JSON
//! lines), a list of sessions, or a per-agent summary.

mod read;
mod table;

use super::project::SessionArgs;
use super::terminal::Terminal;
use super::{fail, Exit};
use std::io::Write;

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
    match show(&a) {
        Ok(true) => Exit::Success,
        Ok(false) => Exit::CheckFailed,
        Err(Failed::ReaderGone) => Exit::Unusable,
        Err(e) => fail(e),
    }
}

/// Prints what `a` asks for; whether every ledger shown verifies. The ledgers are streamed
/// (`read.rs`): the summary and the sessions hold a tally per key, the JSON lines nothing,
/// and the table reads them twice, to measure its columns and then to print its rows.
fn show(a: &Args) -> Result<bool, Failed> {
    let session = a.at.session()?;
    let files = read::ledgers(&a.at.state_dir(), session.as_deref())?;
    let keep = |r: &table::Row| {
        a.agent.as_deref().is_none_or(|agent| r.agent == agent)
            && (!a.denied
                || matches!(
                    r.decision.as_str(),
                    "DENY" | "would-deny" | table::CC_REFUSED
                ))
    };
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    let mut tallies = table::Tallies::default();
    let mut widths = table::Widths::default();
    let mut written = Ok(());
    let tables = !a.summary && !a.sessions;
    let read = read::rows(&files, tables, &mut |r| {
        if !keep(&r) {
        } else if a.summary {
            tallies.add(&r.agent, &r);
        } else if a.sessions {
            tallies.add(&r.session, &r);
        } else if a.json {
            if written.is_ok() {
                written = out.write_all(table::json_line(&r).as_bytes());
            }
        } else {
            widths.add(&r);
        }
    })?;
    for w in &read.unverified {
        eprintln!("attenu-hook: WARNING: {w}");
    }
    if a.summary {
        written = written
            .and_then(|()| out.write_all(table::render_summary(tallies.done(), a.json).as_bytes()));
    } else if a.sessions {
        let text = table::render_sessions(tallies.done(), &read.who, a.json);
        written = written.and_then(|()| out.write_all(text.as_bytes()));
    } else if !a.json {
        let terminal = Terminal::stdout();
        let t = table::Table::new(widths, terminal.colour, terminal.table_width());
        crate::hook::faults::pause("ATTENU_TEST_PAUSE_BETWEEN_LOG_PASSES");
        written = written.and_then(|()| out.write_all(t.header().as_bytes()));
        read::again(&files, &read.read, &mut |r| {
            if keep(&r) && written.is_ok() {
                written = out.write_all(t.line(&r).as_bytes());
            }
        })?;
    }
    match written.and_then(|()| out.flush()) {
        Ok(()) => Ok(read.unverified.is_empty()),
        // A reader that stopped reading (`| head`) has what it wanted: exit 2 without a word,
        // as every command does (`super::exit_2_when_output_fails`).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failed::ReaderGone),
        Err(e) => Err(table::LogError::Output(e).into()),
    }
}

/// Why `log` shows nothing.
#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error(transparent)]
    At(#[from] super::project::ProjectError),
    #[error(transparent)]
    Log(#[from] table::LogError),
    #[error("the output's reader went away")]
    ReaderGone,
}
