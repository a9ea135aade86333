//! The shipping check: the outbox's backlog (how many files, how old the oldest) and the last
//! drain's error. Evidence still on the machine is evidence a process on it can rewrite, so a
//! backlog older than an hour, or a drain that failed, is worth a warning.

use super::{Check, CheckId, Severity};
use crate::ship::{outbox, state};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A backlog older than this is a warning.
const STALE: Duration = Duration::from_secs(3600);

/// The check of `[ship]`, or none when the configuration does not load (`config` fails then).
pub(super) fn checks(dir: &Path) -> Vec<Check> {
    let Ok(c) = crate::config::load(&dir.join(".attenu")) else {
        return Vec::new();
    };
    let Some(url) = c.ship.url else {
        return vec![Check::new(
            CheckId::Ship,
            Severity::Ok,
            "shipping is off (no [ship] url)",
        )];
    };
    if crate::ship::spawn::shipper_binary().is_none() {
        return vec![Check::new(
            CheckId::Ship,
            Severity::Fail,
            format!("[ship] url is set, but {} is not installed beside attenu-hook or on PATH, so nothing leaves the machine; `cargo install --locked --path .` installs both binaries", crate::ship::spawn::SHIPPER),
        )];
    }
    let outbox = outbox::outbox_dir(dir);
    let scan = match outbox::check_dir(&outbox) {
        Ok(true) => outbox::scan(&outbox),
        Ok(false) => outbox::Scan::default(),
        Err(why) => {
            let detail = format!("the outbox {} cannot be used: {why}", outbox.display());
            return vec![Check::new(CheckId::Ship, Severity::Warn, detail)];
        }
    };
    let now = SystemTime::now();
    let oldest = scan.pending.iter().map(|p| p.modified).min();
    let age = oldest.map(|t| now.duration_since(t).unwrap_or(Duration::ZERO));
    let mut warn = age.is_some_and(|a| a > STALE) || !scan.refused.is_empty();
    let mut detail = match age {
        None => format!("to {url}: the outbox is empty"),
        Some(a) => format!(
            "to {url}: {} object(s) waiting, the oldest for {}",
            scan.pending.len(),
            human(a)
        ),
    };
    if !scan.refused.is_empty() {
        detail.push_str(&format!("; {} entry(ies) refused", scan.refused.len()));
    }
    match state::read(&outbox) {
        Ok(Some(s)) => {
            if let Some(e) = s.last_error {
                warn = true;
                detail.push_str(&format!("; the last drain failed: {e}"));
            }
        }
        Ok(None) if !scan.pending.is_empty() => detail.push_str("; no drain has run yet"),
        Ok(None) => {}
        Err(e) => {
            warn = true;
            detail.push_str(&format!("; {e}"));
        }
    }
    if warn {
        detail.push_str("; run `attenu-hook ship` to drain it by hand and see why");
    }
    let severity = if warn { Severity::Warn } else { Severity::Ok };
    vec![Check::new(CheckId::Ship, severity, detail)]
}

fn human(d: Duration) -> String {
    match d.as_secs() {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}
