//! `attenu-hook ship [--project DIR] [--quiet]`: drains the outbox to `[ship] url` by hand,
//! with progress on stderr. Exit 0 when the outbox is empty afterwards, 1 when something is
//! left (with the reason), 2 when shipping is not configured or the input is unusable.
//! `--probe` tries the store instead (`crate::ship::probe`). Before draining, it queues the
//! sessions recorded before shipping was turned on (`crate::ship::backfill`): always by hand,
//! once per URL in the hook's detached shipper (`--quiet`).

use super::project::state_project_dir;
use super::{fail, Exit};
use crate::ship::{DrainError, Outcome, WhenBusy};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The project, or a directory inside it (its state is the nearest .attenu/ above)
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// No progress, and leave quietly when another shipper drains the outbox (as the hook's
    /// detached shipper does: the running one ships what this one would have)
    #[arg(long)]
    quiet: bool,
    /// How long to wait for a running shipper to finish before draining what it left
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    wait: u64,
    /// Start a detached shipper (no terminal, its own process group, not waited for), print
    /// its process id and return at once
    #[arg(long, conflicts_with = "quiet")]
    detach: bool,
    /// Try the store instead of draining: write one small object, read it back, delete it
    /// (a write-once bucket's refusal is reported, not an error). Exit 0 when the shipper
    /// could ship there, 1 when not. `doctor` runs this
    #[arg(long, conflicts_with_all = ["quiet", "detach"])]
    probe: bool,
}

pub fn run(a: Args) -> Exit {
    let root = state_project_dir(&a.project);
    let config = match crate::config::load(&root.join(".attenu")) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let Some(url) = config.ship.url else {
        return fail(format!(
            "shipping is not configured for {}: add\n\n[ship]\nurl = \"s3://bucket/prefix\"   # or \"file:///mounted/share\"\n\nto .attenu/config.toml, with the store's endpoint and credentials in the environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION)",
            root.display()
        ));
    };
    if a.probe {
        return probe(&url);
    }
    if a.detach {
        return match crate::ship::spawn_detached(&root) {
            Ok(pid) => {
                println!("{pid}");
                Exit::Success
            }
            Err(e) => fail(format!("cannot start a shipper: {e}")),
        };
    }
    if !a.quiet {
        backfill(&root, &url, false);
        return drain(&root, &url, false, a.wait);
    }
    // The hook's shipper ships what the hook queued first, then the sessions recorded before
    // shipping was on (once per URL), then drains again if that queued anything.
    let first = drain(&root, &url, true, a.wait);
    if backfill(&root, &url, true) {
        return drain(&root, &url, true, a.wait);
    }
    first
}

/// One drain, with progress unless `quiet`.
fn drain(root: &std::path::Path, url: &str, quiet: bool, wait: u64) -> Exit {
    let mut progress = |n: usize, of: usize, key: &str, o: &Outcome| {
        if quiet {
            return;
        }
        let what = match o {
            Outcome::Shipped => "shipped".to_string(),
            Outcome::AlreadyShipped => "shipped (already in the store)".to_string(),
            Outcome::Conflict => "CONFLICT".to_string(),
            Outcome::Failed(why) => format!("FAILED ({why})"),
            Outcome::NotAttempted => "not tried".to_string(),
        };
        eprintln!("{what} {n}/{of} {key}");
    };
    let busy = if quiet {
        WhenBusy::Leave
    } else {
        WhenBusy::Wait(Duration::from_secs(wait))
    };
    let mut waiting = || {
        eprintln!("ship: another shipper is draining the outbox; waiting for it to finish…");
    };
    let report = match crate::ship::drain(root, url, busy, &mut progress, &mut waiting) {
        Ok(r) => r,
        Err(DrainError::Busy(_)) if quiet => return Exit::Success,
        Err(e @ DrainError::Busy(_)) => {
            eprintln!("attenu-hook: {e} and did not finish within {wait} s; run `attenu-hook ship` again, or `attenu-hook doctor` to see its last error");
            return Exit::CheckFailed;
        }
        Err(e) => return fail(e),
    };
    if let Some(other) = report.waited_for.as_ref().filter(|_| !quiet) {
        match &other.last_error {
            None => eprintln!(
                "ship: the running shipper shipped {} object(s)",
                other.shipped
            ),
            Some(why) => eprintln!(
                "ship: the running shipper shipped {} object(s) and left {}: {why}",
                other.shipped, other.left
            ),
        }
    }
    let left = report.left();
    if left == 0 {
        if !quiet {
            eprintln!(
                "ship: {} object(s) shipped to {url}; the outbox is empty",
                report.shipped()
            );
        }
        return Exit::Success;
    }
    for r in &report.refused {
        eprintln!(
            "attenu-hook: {} is not shipped: it {}",
            r.path.display(),
            r.why
        );
    }
    let why = report.error.as_deref().unwrap_or("see above");
    eprintln!(
        "attenu-hook: ship: {} shipped, {left} left in the outbox: {why}",
        report.shipped()
    );
    Exit::CheckFailed
}

/// `ship --probe`: one sentence on stdout when the store works, the reason on stderr when not.
fn probe(url: &str) -> Exit {
    let target = match crate::ship::Target::parse(url) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let store = match crate::ship::Store::from_env(url, &target) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("attenu-hook: ship --probe: {e}");
            return Exit::CheckFailed;
        }
    };
    let rt = match crate::ship::runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the shipper's runtime: {e}")),
    };
    match rt.block_on(crate::ship::probe::probe(&store)) {
        Ok(p) => {
            println!("{}", p.sentence(url));
            Exit::Success
        }
        Err(e) => {
            eprintln!("attenu-hook: ship --probe: {url}: {e}");
            Exit::CheckFailed
        }
    }
}

/// Queues the sessions recorded before shipping was on (by hand: every time; `--quiet`: once
/// per URL), and rings the bell so a shipper draining now scans again. Whether it queued any.
fn backfill(root: &std::path::Path, url: &str, quiet: bool) -> bool {
    use crate::ship::backfill;
    if quiet && backfill::done_for(root, url) {
        return false;
    }
    let done = backfill::run(root, url);
    if !done.sessions.is_empty() {
        let _ = crate::ship::lock::ring(&crate::ship::outbox_dir(root));
    }
    if quiet {
        return !done.sessions.is_empty();
    }
    if !done.sessions.is_empty() {
        eprintln!(
            "ship: queued {} session(s) not shipped before: {}",
            done.sessions.len(),
            done.sessions.join(", ")
        );
    }
    for p in &done.problems {
        eprintln!("attenu-hook: ship: cannot queue {p}");
    }
    !done.sessions.is_empty()
}
