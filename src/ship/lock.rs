//! One shipper per project, and no lost wake-ups.
//!
//! The lock is a non-blocking `flock` on `.attenu/outbox/.lock`; it goes with the process (a
//! killed shipper never leaves a stale lock behind). A shipper that finds it taken leaves, so
//! the holder must see whatever that shipper was started for. The producer therefore rings a
//! bell (`.attenu/outbox/.queued`, a fresh random value) after queueing and before starting a
//! shipper; the holder reads the bell before each scan and again after it lets the lock go,
//! and drains once more when the bell rang meanwhile. Either the bell rang before the holder's
//! last read (the holder drains again) or after it (then the lock was free or will be taken by
//! a shipper that scans after the file was queued). docs/SHIPPING.md walks the interleavings.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// The held lock; released when dropped (or when the process ends, however it ends).
#[derive(Debug)]
pub struct ShipLock {
    _file: File,
}

fn open_lock(outbox: &Path) -> io::Result<File> {
    let path = outbox.join(".lock");
    // Never through a symlink: it would lock (and create) a file somewhere else.
    let file = crate::fs::open_rw(&path)?;
    let m = file.metadata()?;
    crate::fs::check_owned_regular(&path, &m).map_err(io::Error::other)?;
    Ok(file)
}

/// Takes the lock of `outbox`, or `Ok(None)` when another shipper holds it.
pub fn try_lock(outbox: &Path) -> io::Result<Option<ShipLock>> {
    let file = open_lock(outbox)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(ShipLock { _file: file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Waits for the lock of `outbox` (polling, so a shipper stuck on a dead store cannot hold a
/// person's terminal forever): `Ok(None)` once `patience` has passed. `waiting` is called
/// once, the first time the lock is found taken.
pub fn wait_lock(
    outbox: &Path,
    patience: Duration,
    waiting: &mut dyn FnMut(),
) -> io::Result<Option<ShipLock>> {
    let file = open_lock(outbox)?;
    let until = Instant::now() + patience;
    let mut told = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(ShipLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < until => {
                if !told {
                    waiting();
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// What the bell said at one reading; compare two readings to learn whether anything was
/// queued between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bell(Vec<u8>);

const BELL: &str = ".queued";

/// Rings the bell of `outbox`: call it after queueing and before starting a shipper. A fresh
/// random value, so no later ring can ever read as an earlier one.
pub fn ring(outbox: &Path) -> io::Result<()> {
    let value = crate::random::random_hex(16).map_err(io::Error::other)?;
    let mut file = crate::fs::open_rw(&outbox.join(BELL))?;
    file.write_all(value.as_bytes())
}

/// Reads the bell of `outbox`. A bell that cannot be read reads as empty: the worst that does
/// is one more drain than needed, or (if it stays unreadable) the next event's shipper.
pub fn read_bell(outbox: &Path) -> Bell {
    match crate::fs::read_owned(&outbox.join(BELL), 64) {
        Ok(Some((value, _))) => Bell(value),
        _ => Bell(Vec::new()),
    }
}
