//! One shipper per project: a non-blocking `flock` on `.attenu/outbox/.lock`. The lock goes
//! with the process (a killed shipper never leaves a stale lock behind), and a second shipper
//! that finds it taken leaves at once: the first one ships what the second would have.

use std::fs::File;
use std::io;
use std::path::Path;

/// The held lock; released when dropped (or when the process ends, however it ends).
#[derive(Debug)]
pub struct ShipLock {
    _file: File,
}

/// Takes the lock of `outbox`, or `Ok(None)` when another shipper holds it.
pub fn try_lock(outbox: &Path) -> io::Result<Option<ShipLock>> {
    let path = outbox.join(".lock");
    // Never through a symlink: it would lock (and create) a file somewhere else.
    let file = crate::fs::open_rw(&path)?;
    let m = file.metadata()?;
    crate::fs::check_owned_regular(&path, &m).map_err(io::Error::other)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(ShipLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}
