//! `attenu-hook ship [--project DIR] [--quiet]`: drains the outbox to `[ship] url` by hand,
//! with progress on stderr. Exit 0 when the outbox is empty afterwards, 1 when something is
//! left (with the reason), 2 when shipping is not configured or the input is unusable.

use super::project::state_project_dir;
use super::{fail, Exit};
use crate::ship::{DrainError, Outcome};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The project, or a directory inside it (its state is the nearest .attenu/ above)
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// No progress, and leave quietly when another shipper drains the outbox (as the hook's
    /// detached shipper does)
    #[arg(long)]
    quiet: bool,
    /// Start a detached shipper (no terminal, its own process group, not waited for), print
    /// its process id and return at once
    #[arg(long, conflicts_with = "quiet")]
    detach: bool,
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
    if a.detach {
        return match crate::ship::spawn_detached(&root) {
            Ok(pid) => {
                println!("{pid}");
                Exit::Success
            }
            Err(e) => fail(format!("cannot start a shipper: {e}")),
        };
    }
    let quiet = a.quiet;
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
    let report = match crate::ship::drain(&root, &url, &mut progress) {
        Ok(r) => r,
        Err(DrainError::Busy(_)) if quiet => return Exit::Success,
        Err(e @ DrainError::Busy(_)) => {
            eprintln!("attenu-hook: {e}; it ships what this one would have");
            return Exit::CheckFailed;
        }
        Err(e) => return fail(e),
    };
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
