//! Sessions recorded before shipping was turned on: their ledgers exist, but nothing of them
//! was ever queued (no chain has a `checkpointed` mark in its sealed state). The shipper
//! queues, for every ledger in `.attenu/` with entries not yet queued, each such chain's signed
//! checkpoint with its entries; and for a session that ended (its last chain's root node
//! finalized, which SessionEnd writes) whose last chain was not queued either, its closing
//! bundles. It is the hook's own queueing ([`crate::evidence::queue`]), under each ledger's
//! lock, so a hook running meanwhile and this never queue the same entries twice.
//!
//! The hook pays nothing for this: `attenu-hook ship` runs it before draining, every time, and
//! the detached shipper the hook starts (SessionStart always starts one) runs it after its
//! drain, once per `[ship] url`, remembered in `.attenu/outbox/.backfilled`. A session that is running now is the hook's:
//! its ledger is locked or, once open, already queued by its SessionStart.

use crate::evidence::bundle::ExportError;
use crate::evidence::keys::KeyError;
use crate::evidence::queue::QueueError;
use crate::evidence::{bundle, keys, queue};
use crate::ledger::store::{Ledger, SessionPaths, StoreError};
use crate::trust::{Signer, SignerError};
use std::path::Path;
use std::time::{Duration, Instant};

/// What one pass queued, and what it could not.
#[derive(Debug, Default)]
pub struct Backfill {
    /// The sessions (ledger names) something was queued for.
    pub sessions: Vec<String>,
    /// Ledgers that could not be read or queued, each with why.
    pub problems: Vec<String>,
}

/// Why one ledger's backlog could not be queued; the next pass tries it again.
#[derive(Debug, thiserror::Error)]
enum BackfillError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Ledger(#[from] StoreError),
    #[error(transparent)]
    Signer(#[from] SignerError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error(transparent)]
    Export(#[from] ExportError),
}

/// The marker of a pass that completed for a URL.
const MARKER: &str = ".backfilled";

/// Whether a pass completed for `url` already (the detached shipper's test).
pub fn done_for(project: &Path, url: &str) -> bool {
    std::fs::read(super::outbox_dir(project).join(MARKER)).is_ok_and(|b| b == url.as_bytes())
}

/// Queues what every ledger of `project` has not queued yet. When nothing failed, remembers
/// the pass for `url`.
pub fn run(project: &Path, url: &str) -> Backfill {
    let attenu = project.join(".attenu");
    let mut out = Backfill::default();
    let names = match ledger_names(&attenu) {
        Ok(n) => n,
        Err(e) => {
            out.problems
                .push(format!("cannot list {}: {e}", attenu.display()));
            return out;
        }
    };
    let mut signer: Option<Signer> = None;
    for name in names {
        match one(&attenu, &name, &mut signer) {
            Ok(true) => out.sessions.push(name),
            Ok(false) => {}
            Err(why) => out.problems.push(format!("session {name}: {why}")),
        }
    }
    if out.problems.is_empty() {
        // Written the way the outbox's files are (atomically); a marker lost only means the
        // next detached shipper looks again.
        let _ = crate::fs::write_atomic(
            &super::outbox_dir(project).join(MARKER),
            url.as_bytes(),
            false,
        );
    }
    out
}

/// The session names of `ledger-<name>.jsonl` files that are regular files.
fn ledger_names(attenu: &Path) -> std::io::Result<Vec<String>> {
    Ok(crate::ledger::read::sessions(attenu)?
        .into_iter()
        .filter(|f| f.file_type.is_some_and(|t| t.is_file()))
        .map(|f| f.paths.name)
        .collect())
}

/// Queues what ledger `name` has not queued. `Ok(true)` when something was.
fn one(attenu: &Path, name: &str, signer: &mut Option<Signer>) -> Result<bool, BackfillError> {
    // The file name is already the sanitised form of the session id.
    let paths = SessionPaths::of_file_name(attenu, name);
    let mac = keys::state_mac_key(attenu)?;
    // A short wait: a ledger a hook holds is skipped, not waited for.
    let mut ledger = match Ledger::open(paths, mac, Instant::now() + Duration::from_millis(100)) {
        Ok(l) => l,
        // A hook holds it: a session running now, which queues its own.
        Err(StoreError::LockTimeout(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let due: Vec<usize> = (0..ledger.state.chains.len())
        .filter(|&i| ledger.state.chains[i].unshipped() > 0)
        .collect();
    let Some(&last_due) = due.last() else {
        return Ok(false);
    };
    let ended = ledger.state.chains.last().is_some_and(|c| {
        c.nodes
            .get("")
            .is_some_and(|root| c.finalized.contains(root))
    });
    let closing = ended && last_due + 1 == ledger.state.chains.len();
    if signer.is_none() {
        *signer = Some(crate::trust::signer::load(attenu)?);
    }
    let signer = signer.as_ref().expect("loaded above");
    for i in due {
        queue::chain(attenu, &mut ledger, signer, i)?;
    }
    if closing {
        let written = bundle::export_locked(&ledger, signer, None)?;
        if let Some(w) = queue::bundles(attenu, &ledger, signer, &written)
            .into_iter()
            .next()
        {
            return Err(w.into());
        }
    }
    Ok(true)
}
