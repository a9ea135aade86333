//! Starting a shipper from the hook without making Claude Code wait for it.
//!
//! Claude Code reads a hook's stdout and stderr to their end, so a child that held either
//! would keep the call waiting as long as it ships. The shipper gets /dev/null for all three
//! standard descriptors (everything else std opens is close-on-exec), its own process group
//! (a signal Claude Code sends to the hook's group does not cut a drain short; a killed drain
//! would lose nothing, but it would have to start over), and is never waited for: once the
//! hook exits it is the init process's child.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The binary that ships: `attenu-hook-ship`, kept apart from the hook's own so its network
/// stack never costs a hook process anything (`crate::cli::shipper`).
pub const SHIPPER: &str = "attenu-hook-ship";

/// `attenu-hook-ship` beside this executable, else on PATH.
pub fn shipper_binary() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(SHIPPER)))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(SHIPPER))
                .find(|p| p.is_file())
        })
    })
}

/// Rings the outbox's bell (see [`super::lock`]) and starts `attenu-hook-ship ship --quiet
/// --project <project>` detached. Call it after queueing. Returns as soon as the process is
/// started; its process id is returned only for tests and logs.
pub fn spawn_detached(project: &Path) -> io::Result<u32> {
    // A bell that cannot ring still starts this shipper; it drains what is queued now.
    let _ = super::lock::ring(&super::outbox::outbox_dir(project));
    let exe = shipper_binary().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{SHIPPER} is not installed beside attenu-hook or on PATH"),
        )
    })?;
    let child = Command::new(exe)
        .arg("ship")
        .arg("--quiet")
        .arg("--project")
        .arg(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    // Dropping a Child neither waits for it nor kills it.
    Ok(child.id())
}
