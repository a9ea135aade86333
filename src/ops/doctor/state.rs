//! The checks of the project's own state: the configuration, the derived roster, and what
//! `.attenu/` holds (its permissions and ledgers).

use super::{Check, CheckId, Severity};
use crate::config;
use crate::derive::derive_project;
use crate::ledger::read;
use crate::ledger::store::{self, SessionPaths};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every check of the project's state, in order: configuration, reviewers, derivation, then
/// `.attenu/`'s permissions and ledgers.
pub(super) fn checks(dir: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let attenu = dir.join(".attenu");
    let loaded = config::load(&attenu);
    match &loaded {
        Ok(c) => {
            out.push(Check::new(
                CheckId::Config,
                Severity::Ok,
                "valid (or defaults)",
            ));
            out.extend(reviewer_check(&attenu, c));
        }
        Err(e) => out.push(Check::new(
            CheckId::Config,
            Severity::Fail,
            format!("{e}; every call would be denied until it is fixed"),
        )),
    }
    // An invalid configuration is the config check's to report, once; the derivation is
    // still checked, without the configuration's [agents] and session pool.
    let (agents, pool, note) = match &loaded {
        Ok(c) => (c.agents.clone(), c.derive.session_pool.clone(), ""),
        Err(_) => (
            Default::default(),
            None,
            " (without the invalid configuration's [agents] and [derive])",
        ),
    };
    match derive_project(dir, &agents, pool.as_deref()) {
        Ok(r) if r.problems.is_empty() => out.push(Check::new(
            CheckId::Derive,
            Severity::Ok,
            format!(
                "{} agents, digest {}{note}",
                r.agents.len(),
                &r.digest[..12]
            ),
        )),
        Ok(r) => out.push(Check::new(
            CheckId::Derive,
            Severity::Warn,
            format!(
                "{} problem(s){note}: {}",
                r.problems.len(),
                r.problems.join("; ")
            ),
        )),
        Err(e) => out.push(Check::new(CheckId::Derive, Severity::Fail, e.to_string())),
    }
    if attenu.exists() {
        out.extend(permission_checks(&attenu));
        out.extend(git_check(dir));
        out.extend(ledger_checks(&attenu));
    } else {
        out.push(Check::new(
            CheckId::State,
            Severity::Ok,
            ".attenu/ does not exist yet; the first hook call creates it (0700)",
        ));
    }
    out
}

/// A reviewer whose key is the project's own anchor key: `.attenu/anchor.key` is readable by
/// the user Claude Code runs as, so anything that can read it could sign authorizations.
fn reviewer_check(attenu: &Path, c: &config::Config) -> Option<Check> {
    if c.gate.reviewers.is_empty() {
        return None;
    }
    let anchor = crate::evidence::keys::load(&attenu.join("anchor.key")).ok()?;
    let public = crate::ledger::chain::hex(anchor.verifying().as_bytes());
    let named: Vec<&str> = c
        .gate
        .reviewers
        .iter()
        .filter(|(_, k)| k.eq_ignore_ascii_case(&public))
        .map(|(n, _)| n.as_str())
        .collect();
    Some(if named.is_empty() {
        Check::new(
            CheckId::GateReviewers,
            Severity::Ok,
            format!(
                "{} reviewer key(s), none of them the project's anchor key",
                c.gate.reviewers.len()
            ),
        )
    } else {
        Check::new(
            CheckId::GateReviewers,
            Severity::Fail,
            format!(
                "[gate] reviewers {} is the project's own anchor key (.attenu/anchor.key), which anything running as this user can read, so anything could sign authorizations; make a reviewer key outside the project with `attenu-hook keygen --out FILE` and configure its public key instead",
                named.join(", ")
            ),
        )
    })
}

fn permission_checks(attenu: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .map(|m| (m.permissions().mode() & 0o777, m.file_type().is_symlink()))
    };
    let is_dir = std::fs::symlink_metadata(attenu).is_ok_and(|m| m.is_dir());
    let dir_check = |severity, detail: String| Check::new(CheckId::PermStateDir, severity, detail);
    out.push(match mode(attenu) {
        Ok((_, true)) => dir_check(
            Severity::Fail,
            ".attenu is a symlink; replace it with a real directory".into(),
        ),
        Ok(_) if !is_dir => dir_check(
            Severity::Fail,
            ".attenu is not a directory, so every hook call is denied; move it aside".into(),
        ),
        Ok((m, _)) if m & 0o077 != 0 => dir_check(
            Severity::Fail,
            format!(".attenu is {m:o}; run `chmod 700 .attenu`"),
        ),
        Ok(_) => dir_check(Severity::Ok, "0700".into()),
        Err(e) => dir_check(Severity::Fail, e.to_string()),
    });
    for e in std::fs::read_dir(attenu).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let secret = name == "anchor.key"
            || name.starts_with("ledger-")
            || name.starts_with("gate.sqlite")
            || name.starts_with("bundle-");
        if !secret {
            continue;
        }
        let detail = match mode(&e.path()) {
            Ok((_, true)) => format!("{name} is a symlink; move it aside"),
            Ok((m, _)) if m & 0o077 != 0 => {
                format!("{name} is {m:o}; run `chmod 600 .attenu/{name}`")
            }
            _ => continue,
        };
        out.push(Check::about(
            CheckId::PermFile,
            name,
            Severity::Fail,
            detail,
        ));
    }
    if out.len() == 1 && out[0].severity == Severity::Ok {
        out.push(Check::new(
            CheckId::PermFiles,
            Severity::Ok,
            "keys, ledgers, bundles and the gate database are 0600",
        ));
    }
    out
}

/// Whether git tracks `.attenu/anchor.key`: a committed anchor key lets anyone with the
/// repository sign bundles. Asked of git itself (`ls-files`), so its index format, worktrees
/// and `GIT_DIR` are git's business; outside a work tree there is nothing to say, and where
/// git cannot be run inside what looks like one the check is skipped with a note.
fn git_check(dir: &Path) -> Option<Check> {
    let run = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "-z", "--", ".attenu/anchor.key"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let check = |severity, detail: &str| Some(Check::new(CheckId::GitAnchorKey, severity, detail));
    match run {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => check(
            Severity::Fail,
            "git tracks .attenu/anchor.key, so anyone with the repository can sign bundles as this project: run `git rm --cached .attenu/anchor.key`, commit, and treat the key as leaked (move .attenu/anchor.key aside so a new one is made, and pin the new anchor.pub)",
        ),
        Ok(out) if out.status.success() => check(Severity::Ok, "not tracked by git"),
        // Not a work tree (git exits 128), or git refused: nothing git could commit.
        Ok(_) => None,
        Err(_) if dir.ancestors().any(|d| d.join(".git").exists()) => check(
            Severity::Warn,
            "git could not be run, so whether it tracks .attenu/anchor.key was not checked; make sure it is not committed",
        ),
        Err(_) => None,
    }
}

fn ledger_checks(attenu: &Path) -> Vec<Check> {
    // Loaded, never created: without the key no sealed state can be checked, only the chains.
    let mac_key = crate::evidence::keys::load(&attenu.join("anchor.key"))
        .ok()
        .map(|k| k.state_mac_key());
    read::sessions(attenu)
        .into_iter()
        .flatten()
        .filter_map(|f| ledger_check(&f.paths, mac_key.as_ref()))
        .collect()
}

/// The check of ledger `name`, or `None` when it is not there (or not a regular file) now.
fn ledger_check(paths: &SessionPaths, mac_key: Option<&[u8; 32]>) -> Option<Check> {
    let file_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let (name, state_name) = (file_name(&paths.ledger)?, file_name(&paths.state)?);
    // The sealed state before the ledger: a hook writes the ledger (and fsyncs it) before its
    // sealed state, so a ledger read after its sealed state is never older than it.
    let found = mac_key.map(|key| store::read_sealed_state(&paths.state, key));
    let sealed = match &found {
        Some(Ok(store::Found::Sealed(state))) => Some((**state).clone()),
        _ => None,
    };
    // Never through a symlink, never blocking on a FIFO.
    let ledger = match read::read_unlocked(&paths.ledger) {
        Ok(Some(l)) => l,
        Ok(None) => return None,
        Err(e) => {
            let detail = format!("cannot read: {e}");
            return Some(Check::about(CheckId::Ledger, name, Severity::Fail, detail));
        }
    };
    let (bytes, cut) = (ledger.bytes(), ledger.whole_lines().len());
    // The chain first (an edit is reported where it is), then whether the file still holds
    // what its sealed state recorded (a cut or an older copy, which verify as chains).
    let lost = sealed.filter(|c| !store::holds_sealed_prefix(c, bytes));
    let (severity, detail) = match (ledger.verify(), lost) {
        (Ok(_), Some(prior)) => (
            Severity::Fail,
            format!(
                "no longer holds what its sealed state records ({} bytes then, {} now): entries were removed, or an older copy was put back. Keep it and its state file ({state_name}) for review, and move both aside to start a new ledger",
                prior.stamp.len,
                bytes.len(),
            ),
        ),
        (Ok(s), None) => {
            let losses: u64 = s.chains.iter().map(|c| c.state_losses).sum();
            let mut detail = format!(
                "verifies: {} chain(s), {} entries{}",
                s.chains.len(),
                s.chains.iter().map(|c| c.entries).sum::<u64>(),
                if cut < bytes.len() { "; a torn final line will be moved aside by the next call" } else { "" }
            );
            let mut severity = Severity::Ok;
            if losses > 0 {
                severity = Severity::Warn;
                detail += &format!("; {losses} entr(y/ies) record a lost or broken sealed state (context.checkpoint_lost): entries before them may have been removed unnoticed, so review this session's bundle with that in mind");
            }
            match (&found, cut > 0) {
                (Some(Ok(store::Found::Absent)), true) => (Severity::Fail, format!("{detail}; its state file {state_name} is missing beside a non-empty ledger, a sign of tampering or damage: the next call records it on the ledger")),
                (Some(Ok(store::Found::Lost(cause, _))), true) => (Severity::Fail, format!("{detail}; its state file {state_name} is {}, a sign of tampering or damage: the next call records it on the ledger and keeps the state file aside", match cause { store::LossCause::SealBroken => "sealed with another key or altered (its seal fails)", _ => "unreadable" })),
                _ => (severity, detail),
            }
        }
        (Err(e), _) => (Severity::Fail, format!("does not verify ({e}); move it and its state file ({state_name}) aside to start a new ledger, keep them for review")),
    };
    Some(Check::about(CheckId::Ledger, name, severity, detail))
}
