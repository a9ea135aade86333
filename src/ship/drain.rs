//! One drain of the outbox: take the lock, walk, and for each file read the key first, create
//! it if the store has none, compare if it has one, and remove the file only once the store
//! holds exactly its bytes. A drain that fails or is killed anywhere loses nothing: a file is
//! removed only after its object is confirmed, and the next drain starts over.

use super::outbox::{self, Pending, Refused};
use super::state::{self, State};
use super::store::{Created, Store, StoreError};
use super::{faults, lock, Target};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// An outbox file larger than this is not one the hook wrote; it stays and is reported.
const MAX_OBJECT_BYTES: u64 = 1 << 30;

/// What became of one outbox file.
#[derive(Debug)]
pub enum Outcome {
    /// Created in the store; the file is removed.
    Shipped,
    /// The store held identical bytes already (an earlier drain was cut short after the PUT);
    /// the file is removed.
    AlreadyShipped,
    /// The store holds different bytes under the key. The file stays.
    Conflict,
    /// The store or the file failed; the file stays.
    Failed(Failure),
    /// Not tried, because the store failed on an earlier file.
    NotAttempted,
}

/// Why one outbox file was not shipped (or, shipped, not removed). The system's or the
/// store's own error is kept as it said it.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The store itself failed; the files after this one are not tried.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The file went away between the walk and its read.
    #[error("{} vanished", .0.display())]
    Vanished(PathBuf),
    #[error(transparent)]
    Unreadable(crate::fs::ReadError),
    /// A create refused as "exists" whose object the next read did not find.
    #[error("the store refused to create {0} as existing, but holds no such object")]
    NoObjectAfterExists(String),
    #[error("{key} is in the store, but {} cannot be removed: {source}", .path.display())]
    NotRemoved {
        key: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Outcome {
    /// Whether the file is gone from the outbox because its object is in the store.
    pub fn done(&self) -> bool {
        matches!(self, Outcome::Shipped | Outcome::AlreadyShipped)
    }
}

/// The text of a conflict: the store holds bytes under `key` that are not the outbox's.
pub fn conflict_text(key: &str) -> String {
    format!("the store holds different bytes under {key}: someone wrote it before us; this is evidence of tampering or a bug, keep both and investigate")
}

/// What one drain did.
#[derive(Debug, Default)]
pub struct Report {
    /// Every file that was pending, in key order, with what became of it.
    pub outcomes: Vec<(String, Outcome)>,
    /// What the walk refused to ship (symlinks, other users' files, bad names).
    pub refused: Vec<Refused>,
    /// Why the drain left something, in one sentence; `None` when it left nothing it could ship.
    pub error: Option<String>,
    /// When this drain waited for another shipper: what that one recorded when it let go.
    pub waited_for: Option<State>,
}

impl Report {
    /// Objects now in the store that were in the outbox.
    pub fn shipped(&self) -> usize {
        self.outcomes.iter().filter(|(_, o)| o.done()).count()
    }
    /// Files still in the outbox (refused ones included).
    pub fn left(&self) -> usize {
        self.outcomes.len() - self.shipped() + self.refused.len()
    }
}

/// Why no drain happened.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// Another shipper holds the lock and drains this outbox now.
    #[error("another shipper is draining {0} now")]
    Busy(String),
    #[error(transparent)]
    Target(#[from] super::target::TargetError),
    #[error("the outbox {path} cannot be used: {why}")]
    Outbox {
        path: String,
        why: super::outbox::OutboxProblem,
    },
    #[error("cannot start the shipper's runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// What a drain does when another shipper holds the lock.
#[derive(Debug, Clone, Copy)]
pub enum WhenBusy {
    /// Leave at once (the hook's detached shipper): the holder drains again when the bell rang
    /// after its last scan, so nothing queued is left behind.
    Leave,
    /// Wait up to this long for the holder to finish, then drain what is left (by hand).
    Wait(std::time::Duration),
}

/// Drains the outbox of the project at `project` to `url` (`[ship] url`), with the store's
/// standard environment, until no object was queued since its last scan. `progress` sees each
/// file as it is done, with its position; `waiting` is called once if it waits for another
/// shipper.
pub fn drain(
    project: &Path,
    url: &str,
    busy: WhenBusy,
    progress: &mut dyn FnMut(usize, usize, &str, &Outcome),
    waiting: &mut dyn FnMut(),
) -> Result<Report, DrainError> {
    let target = Target::parse(url).map_err(DrainError::Target)?;
    let outbox = outbox::outbox_dir(project);
    let outbox_err = |why: super::outbox::OutboxProblem| DrainError::Outbox {
        path: outbox.display().to_string(),
        why,
    };
    match outbox::check_dir(&outbox) {
        Ok(false) => return Ok(Report::default()),
        Ok(true) => {}
        Err(why) => return Err(outbox_err(why)),
    }
    let mut waited = false;
    let lock = match busy {
        WhenBusy::Leave => lock::try_lock(&outbox),
        WhenBusy::Wait(patience) => lock::wait_lock(&outbox, patience, &mut || {
            waited = true;
            waiting();
        }),
    };
    let Some(mut held) = lock.map_err(|e| outbox_err(super::outbox::OutboxProblem::Lock(e)))?
    else {
        return Err(DrainError::Busy(outbox.display().to_string()));
    };
    let started = SystemTime::now();
    let mut report = Report {
        waited_for: waited
            .then(|| state::read(&outbox).ok().flatten())
            .flatten(),
        ..Report::default()
    };
    loop {
        let bell = lock::read_bell(&outbox);
        let store_failed = one_round(&outbox, url, &target, &mut report, progress)?;
        if store_failed || lock::read_bell(&outbox) == bell {
            // Recorded while we hold the lock, so a shipper waiting for it reads this drain's.
            record(&outbox, started, &mut report);
            faults::pause_before_release();
            // Let go, then look once more: a shipper started after our read left because we
            // held the lock, and its object is ours to ship.
            drop(held);
            if store_failed || lock::read_bell(&outbox) == bell {
                return Ok(report);
            }
            match lock::try_lock(&outbox)
                .map_err(|e| outbox_err(super::outbox::OutboxProblem::Lock(e)))?
            {
                Some(again) => held = again,
                // Whoever holds it now scans after the ring.
                None => return Ok(report),
            }
        }
    }
}

/// One scan of the outbox and one pass over what it found and this drain has not tried yet,
/// added to `report`. Returns whether the store itself failed (the rest was not tried).
fn one_round(
    outbox: &Path,
    url: &str,
    target: &Target,
    report: &mut Report,
    progress: &mut dyn FnMut(usize, usize, &str, &Outcome),
) -> Result<bool, DrainError> {
    let mut scan = outbox::scan(outbox);
    // A refusal found again in a later round is the same refusal; a file tried already (a
    // conflict, or one that could not be removed) is not tried twice in one drain.
    report.refused = scan.refused;
    let tried: std::collections::HashSet<&str> =
        report.outcomes.iter().map(|(k, _)| k.as_str()).collect();
    scan.pending.retain(|p| !tried.contains(p.key.as_str()));
    if scan.pending.is_empty() {
        return Ok(false);
    }
    match Store::from_env(url, target) {
        Ok(store) => {
            let rt = super::runtime().map_err(DrainError::Runtime)?;
            Ok(rt.block_on(ship_all(&store, scan.pending, report, progress)))
        }
        Err(e) => {
            report.error = Some(e.to_string());
            report.outcomes.extend(
                scan.pending
                    .into_iter()
                    .map(|p| (p.key, Outcome::NotAttempted)),
            );
            Ok(true)
        }
    }
}

/// Ships `pending` in order. After a failure of the store itself (not a conflict), the rest is
/// not tried: a store that is down would fail each one, each after its retries. Returns
/// whether that happened.
async fn ship_all(
    store: &Store,
    pending: Vec<Pending>,
    report: &mut Report,
    progress: &mut dyn FnMut(usize, usize, &str, &Outcome),
) -> bool {
    let of = pending.len();
    let mut stopped = false;
    for (i, p) in pending.into_iter().enumerate() {
        let outcome = if stopped {
            Outcome::NotAttempted
        } else {
            match ship_one(store, &p).await {
                Ok(o) => o,
                Err(e) => {
                    stopped = true;
                    Outcome::Failed(Failure::Store(e))
                }
            }
        };
        match &outcome {
            Outcome::Conflict if report.error.is_none() => {
                report.error = Some(conflict_text(&p.key))
            }
            Outcome::Failed(why) if report.error.is_none() => report.error = Some(why.to_string()),
            _ => {}
        }
        progress(i + 1, of, &p.key, &outcome);
        report.outcomes.push((p.key, outcome));
    }
    stopped
}

/// Ships one file. `Err` is a failure of the store; a file that cannot be read or removed is
/// an `Ok(Failed)`, and the drain goes on.
async fn ship_one(store: &Store, p: &Pending) -> Result<Outcome, StoreError> {
    let bytes = match crate::fs::read_owned(&p.path, MAX_OBJECT_BYTES) {
        Ok(Some((b, _))) => b,
        // Gone since the walk: nothing of it is ours to ship now.
        Ok(None) => return Ok(Outcome::Failed(Failure::Vanished(p.path.clone()))),
        Err(e) => return Ok(Outcome::Failed(Failure::Unreadable(e))),
    };
    // Read before the create: a store that ignores the create's condition (Garage 2.5.0
    // accepts `If-None-Match: *` and overwrites anyway) would otherwise let a second writer
    // replace evidence already shipped, and the compare after the create would see our own
    // bytes. Reading first catches every earlier object, whatever the store does with the
    // condition; the condition still covers the window between this read and the create on
    // a store that enforces it.
    let stored = match store.get(&p.key).await? {
        Some(stored) => stored,
        None => match store.create(&p.key, bytes.clone()).await? {
            Created::New => return Ok(remove(p, Outcome::Shipped)),
            Created::Exists => match store.get(&p.key).await? {
                Some(stored) => stored,
                None => return Ok(Outcome::Failed(Failure::NoObjectAfterExists(p.key.clone()))),
            },
        },
    };
    Ok(if stored == bytes {
        remove(p, Outcome::AlreadyShipped)
    } else {
        Outcome::Conflict
    })
}

/// Removes a shipped file. A removal that fails (or is lost in a crash) only means the next
/// drain finds identical bytes in the store and removes it then.
fn remove(p: &Pending, outcome: Outcome) -> Outcome {
    match std::fs::remove_file(&p.path) {
        Ok(()) => outcome,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => outcome,
        Err(source) => Outcome::Failed(Failure::NotRemoved {
            key: p.key.clone(),
            path: p.path.clone(),
            source,
        }),
    }
}

/// Names the first refusal as the reason when nothing else is, and writes `.state` for
/// `doctor`. A state that cannot be written costs only the report.
fn record(outbox: &Path, started: SystemTime, report: &mut Report) {
    if report.error.is_none() {
        report.error = report
            .refused
            .first()
            .map(|r| format!("{} is not shipped: it {}", r.path.display(), r.why));
    }
    let previous = state::read(outbox).ok().flatten();
    let now = state::unix_ms(SystemTime::now());
    let s = State {
        last_attempt_unix_ms: state::unix_ms(started),
        last_success_unix_ms: match report.error {
            None => Some(now),
            Some(_) => previous.and_then(|p| p.last_success_unix_ms),
        },
        last_error: report.error.clone(),
        shipped: report.shipped() as u64,
        left: report.left() as u64,
    };
    let _ = state::write(outbox, &s);
}
