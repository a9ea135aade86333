//! The ledger's exclusive lock: a blocking `flock` with a deadline.

use super::{LedgerIo, StoreError};
use std::fs::File;
use std::path::Path;
use std::time::Instant;

/// Takes the exclusive lock, waiting at most until `deadline`. The wait is a blocking `flock`
/// on a helper thread, so the process is woken the moment the lock is released (polling left
/// waiters asleep while the lock sat free, and starved some of them under contention). On
/// timeout the helper stays blocked; the process answers with a deny and exits, which drops it.
pub(super) fn acquire(lock: &File, path: &Path, deadline: Instant) -> Result<(), StoreError> {
    match lock.try_lock() {
        Ok(()) => return Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(e)) => return Err(lock_failed(path, e)),
    }
    // A second descriptor of the same open file: flock belongs to the open file description,
    // so the lock taken through it is this process's lock on `lock` too.
    let waiter = lock.try_clone().map_err(|e| lock_failed(path, e))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("ledger-lock".into())
        .spawn(move || {
            let _ = tx.send(waiter.lock());
        })
        .map_err(LedgerIo::WaitForLock)?;
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(lock_failed(path, e)),
        Err(_) => Err(StoreError::LockTimeout(path.to_path_buf())),
    }
}

fn lock_failed(path: &Path, source: std::io::Error) -> StoreError {
    LedgerIo::Lock {
        path: path.to_path_buf(),
        source,
    }
    .into()
}
