//! `attenu-hook revoke`: the operator's live narrowing, written to `.attenu/revoke`
//! ([`crate::derive::revoke`]), in force from the next hook call of every running session.

use super::project::state_root;
use super::{fail, Exit};
use crate::derive::revoke::{self, FILE};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The subagent type to revoke (`*`: every subagent)
    #[arg(required_unless_present_any = ["list", "restore"])]
    agent: Option<String>,
    /// Revoke only these tools of it, written as in an agent's `tools` (default: every tool)
    tools: Vec<String>,
    /// Remove every revocation of AGENT (`*`: the whole file)
    #[arg(long, value_name = "AGENT", conflicts_with_all = ["agent", "list"])]
    restore: Option<String>,
    /// Print the revocations in force
    #[arg(long)]
    list: bool,
    /// The project whose revocations to change or list
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
}

pub fn run(a: Args) -> Exit {
    let root = match state_root(&a.project) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let path = root.join(".attenu").join(FILE);
    let text = match crate::fs::read_owned(&path, revoke::MAX_BYTES) {
        Ok(bytes) => bytes
            .map(|(b, _)| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default(),
        Err(e) => return fail(format!("{e}; remove .attenu/{FILE} and revoke again")),
    };
    if a.list {
        print!("{text}");
        return Exit::Success;
    }
    let new = match (&a.restore, &a.agent) {
        (Some(r), _) if r == "*" => String::new(),
        (Some(r), _) => text
            .lines()
            .filter(|l| l.split(['#', ':']).next().unwrap_or("").trim() != r)
            .map(|l| format!("{l}\n"))
            .collect(),
        (None, Some(agent)) => {
            if agent.contains([':', '#', '\n']) || agent.trim().is_empty() {
                return fail(format!("'{agent}' is not a subagent type"));
            }
            let line = match a.tools.as_slice() {
                [] => agent.trim().to_string(),
                tools => format!("{}: {}", agent.trim(), tools.join(", ")),
            };
            format!(
                "{text}{}{line}\n",
                if text.ends_with('\n') || text.is_empty() {
                    ""
                } else {
                    "\n"
                }
            )
        }
        (None, None) => return fail("name a subagent type, --restore or --list"),
    };
    if let Err(e) = crate::fs::write_atomic(&path, new.as_bytes(), true) {
        return fail(format!("cannot write {}: {e}", path.display()));
    }
    eprintln!(
        "{} now holds {} line(s); every hook call reads it, starting with the next",
        path.display(),
        new.lines().filter(|l| !l.trim().is_empty()).count()
    );
    Exit::Success
}
