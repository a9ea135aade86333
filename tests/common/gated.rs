//! Helpers of the gate tests (gate, reconciliation).
use super::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A project whose Bash is gated, with reviewer alice; returns (project, alice's key file).
pub fn gated(tag: &str) -> (TempDir, std::path::PathBuf) {
    gated_project(tag, "Read, Bash")
}

pub fn bash(p: &Path, session: &str, agent: Option<&str>, input: &Value, id: &str) -> Out {
    hook(p, &pre(session, p, agent, "Bash", input.clone(), id))
}

/// `receipt --project DIR --call CALL --receipt-id ID --observer OBSERVER` (and `extra`).
pub fn receipt(dir: &str, call: &str, id: &str, observer: &str, extra: &[&str]) -> Out {
    let mut args = vec!["receipt", "--project", dir, "--call", call];
    args.extend(["--receipt-id", id, "--observer", observer]);
    args.extend(extra);
    cli(&args)
}

/// The ops subagent's Bash with `input` in session s1.
/// Moves session s1's ledger aside and puts a directory in its place, so that no outcome can
/// be written: the ledger's path, and where it went.
pub fn block_ledger(p: &Path) -> (PathBuf, PathBuf) {
    let ledger = p.ledger("s1");
    let aside = p.join("ledger.aside");
    std::fs::rename(&ledger, &aside).unwrap();
    std::fs::create_dir(&ledger).unwrap();
    (ledger, aside)
}

pub fn ops_bash(p: &TempDir, input: &Value, id: &str) -> Out {
    p.subagent("ops", "Bash").input(input.clone()).id(id).run()
}
