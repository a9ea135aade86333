//! The producer's side of the outbox, `.attenu/outbox/`: the hook queues each object there,
//! durably, under its object key, and a detached shipper drains it (`crate::ship`). Nothing
//! here talks to the network.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

/// Queues `bytes` as the object `key` (components `[A-Za-z0-9._-]`, joined by `/`). The file
/// is written beside its place under a dot-name and renamed into it, durably, so the shipper
/// only ever sees whole objects. A directory on the way that is a symbolic link is refused,
/// never followed.
pub fn put(attenu: &Path, key: &str, bytes: &[u8]) -> io::Result<()> {
    let components: Vec<&str> = key.split('/').collect();
    if components.iter().any(|c| !component_ok(c)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{key} is not an object key"),
        ));
    }
    let (file, dirs) = components.split_last().expect("split always yields one");
    let mut at = attenu.join("outbox");
    ensure_dir(&at)?;
    for d in dirs {
        at.push(d);
        ensure_dir(&at)?;
    }
    crate::fs::write_atomic(&at.join(file), bytes, true)
}

/// The shipper's key alphabet, and never a dot-name, which it takes for a file still being
/// written.
fn component_ok(c: &str) -> bool {
    crate::ship::component_ok(c) && !c.starts_with('.')
}

/// `path` is a real directory (created 0700 when missing), not a link to one.
fn ensure_dir(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::other(format!(
            "{} is not a directory (a symbolic link or a file is refused)",
            path.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match std::fs::DirBuilder::new().mode(0o700).create(path) {
                // Another process made it meanwhile.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => ensure_dir(path),
                other => other,
            }
        }
        Err(e) => Err(e),
    }
}
