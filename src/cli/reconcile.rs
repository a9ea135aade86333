//! `attenu-hook reconcile list|resolve`: the markers left by outcomes that could not be
//! recorded, and their resolution by a person.

use super::project::state_root;
use super::{fail, Exit};
use crate::clock;
use crate::gate::{reconcile, Resolution};
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Show open markers
    List {
        /// The project, or a directory inside it
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// Include resolved markers
        #[arg(long)]
        all: bool,
    },
    /// Close one marker with what was found
    Resolve {
        /// The marker's id, from `reconcile list`
        id: i64,
        /// The project, or a directory inside it
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// What became of the call
        #[arg(long, value_parser = ["executed", "not-executed", "unknown"])]
        outcome: String,
        /// What shows it (a log line, a ticket, who checked)
        #[arg(long)]
        evidence: String,
        /// When the call is no longer open on the ledger: close the marker in the gate
        /// database only, marked as not on the ledger
        #[arg(long)]
        unbound: bool,
    },
}

pub fn run(action: Action) -> Exit {
    match action {
        Action::List { project, all } => list(&project, all),
        Action::Resolve {
            id,
            project,
            outcome,
            evidence,
            unbound,
        } => resolve(id, &project, &outcome, &evidence, unbound),
    }
}

fn list(project: &std::path::Path, all: bool) -> Exit {
    let attenu = match state_root(project) {
        Ok(root) => root.join(".attenu"),
        Err(e) => return fail(e),
    };
    let markers = match reconcile::list(&attenu, all) {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    if markers.is_empty() {
        println!(
            "no {}reconciliation markers",
            if all { "" } else { "open " }
        );
        return Exit::Success;
    }
    println!(
        "{:<4} {:<24} {:<38} {:<28} {:<12} cause",
        "id", "time", "session", "tool_use_id", "tool"
    );
    for m in markers {
        println!(
            "{:<4} {:<24} {:<38} {:<28} {:<12} {}{}",
            m.id,
            clock::rfc3339_ms(m.created_ms.max(0) as u64),
            m.session_id,
            m.tool_use_id.as_deref().unwrap_or("-"),
            m.tool,
            m.cause,
            match (m.outcome, m.binding.as_deref()) {
                (None, _) => String::new(),
                (Some(o), Some(b)) if b.starts_with("unbound") =>
                    format!(" [resolved: {o}; not on the ledger, {b}]"),
                (Some(o), _) => format!(" [resolved: {o}]"),
            }
        );
    }
    Exit::Success
}

fn resolve(
    id: i64,
    project: &std::path::Path,
    outcome: &str,
    evidence: &str,
    unbound: bool,
) -> Exit {
    let root = match state_root(project) {
        Ok(root) => root,
        Err(e) => return fail(e),
    };
    match crate::gate::resolve_marker(&root, id, outcome, evidence, unbound) {
        Ok(Resolution::OnLedger) => {
            println!("marker {id} resolved as {outcome}; the resolution is on the ledger");
        }
        Ok(Resolution::AlreadyOnLedger) => {
            println!("marker {id} resolved as {outcome}; its resolution was already on the ledger from an earlier attempt");
        }
        Ok(Resolution::Unbound(why)) => {
            println!("marker {id} resolved as {outcome} in .attenu/gate.sqlite only; it is not on the ledger ({why})");
        }
        Err(e) => return fail(e),
    }
    Exit::Success
}
