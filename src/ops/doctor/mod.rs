//! `attenu-hook doctor`: checks the wiring, the command, permissions, configuration,
//! derivation and ledgers, each finding a typed [`Check`].

mod check;
mod hooks;
mod inherit;
mod ship;
mod state;

pub use check::{Check, CheckId, Severity};

use super::wiring::default_command;
use std::path::Path;

/// Runs every check on the project at `dir`.
pub fn doctor(dir: &Path) -> Vec<Check> {
    doctor_for(dir, &default_command())
}

/// The checks that reach outside the machine: the store of `[ship] url`, tried by the
/// shipper's binary (`doctor` runs them; `install` does not).
pub fn doctor_store(dir: &Path) -> Vec<Check> {
    ship::store_check(dir)
}

/// [`doctor`], also counting handlers whose command is `ours` (the one `install --command`
/// just wrote) as attenu-hook's.
pub fn doctor_for(dir: &Path, ours: &str) -> Vec<Check> {
    let mut out = hooks::checks(dir, ours);
    out.extend(state::checks(dir));
    out.extend(inherit::checks(dir));
    out.extend(ship::checks(dir));
    out
}
