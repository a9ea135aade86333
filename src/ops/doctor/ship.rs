//! The shipping check: the outbox's backlog (how many files, how old the oldest) and the last
//! drain's error. Evidence still on the machine is evidence a process on it can rewrite, so a
//! backlog older than an hour, or a drain that failed, is worth a warning.
//!
//! [`store_check`] then tries the store itself: `attenu-hook-ship ship --probe` writes one
//! small object, reads it back and deletes it where the store allows (`crate::ship::probe`).
//! It runs in the sibling binary, like `ship` and `audit`, so the object-store client and its
//! runtime stay out of `attenu-hook` (`crate::cli::shipper`): the hook's binary is the same size
//! with or without the probe, and no hook process ever links it.

use super::{Check, CheckId, Severity};
use crate::ship::{outbox, state};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

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

/// How long the probe may take: the store's client gives up on a request after 20 s.
const PROBE_DEADLINE: Duration = Duration::from_secs(45);

/// The store check: shipping on and the shipper installed, `ship --probe` in the sibling.
pub(crate) fn store_check(dir: &Path) -> Vec<Check> {
    let Ok(c) = crate::config::load(&dir.join(".attenu")) else {
        return Vec::new();
    };
    let (Some(url), Some(shipper)) = (c.ship.url, crate::ship::spawn::shipper_binary()) else {
        return Vec::new();
    };
    let (severity, detail) = match run_probe(&shipper, dir) {
        Ok((0, out, _)) => (Severity::Ok, last_line(&out)),
        Ok((code, _, err)) => (
            Severity::Fail,
            format!(
                "{}; nothing can ship to {url} until this is fixed (exit {code} of `attenu-hook ship --probe`)",
                last_line(&err).trim_start_matches("attenu-hook: ship --probe: ")
            ),
        ),
        Err(why) => (Severity::Fail, format!("{url}: {why}")),
    };
    vec![Check::new(CheckId::ShipStore, severity, detail)]
}

/// Why `ship --probe` gave no answer.
#[derive(Debug, thiserror::Error)]
enum ProbeRunError {
    #[error("cannot run {}: {source}", .shipper.display())]
    Spawn {
        shipper: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the store did not answer the probe within {} s", PROBE_DEADLINE.as_secs())]
    Timeout,
    #[error("cannot wait for the probe: {0}")]
    Wait(#[source] std::io::Error),
}

/// Runs `SHIPPER ship --probe --project DIR` and returns its exit code, stdout and stderr.
fn run_probe(shipper: &Path, dir: &Path) -> Result<(i32, String, String), ProbeRunError> {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new(shipper)
        .args(["ship", "--probe", "--project"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ProbeRunError::Spawn {
            shipper: shipper.to_path_buf(),
            source,
        })?;
    let until = Instant::now() + PROBE_DEADLINE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProbeRunError::Timeout);
            }
            Err(e) => return Err(ProbeRunError::Wait(e)),
        }
    };
    // The probe writes a line or two: far less than a pipe holds, so it never blocked.
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    Ok((status.code().unwrap_or(-1), out, err))
}

fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

fn human(d: Duration) -> String {
    match d.as_secs() {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}
