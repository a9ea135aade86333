//! `attenu-hook doctor [DIR]`: checks the wiring, the command, permissions, configuration and
//! ledgers; exit 1 when a required check fails.

use super::project::ProjectDir;
use super::{fail, Exit};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    dir: ProjectDir,
    /// Also count handlers running this command as attenu-hook's (a wrapper that
    /// `install --command` wired)
    #[arg(long)]
    command: Option<String>,
}

pub fn run(a: Args) -> Exit {
    let root = match a.dir.root() {
        Ok(root) => root,
        Err(e) => return fail(e),
    };
    println!("project {}", root.display());
    let mut checks = match &a.command {
        Some(c) => crate::ops::doctor_for(&root, c),
        None => crate::ops::doctor(&root),
    };
    checks.extend(crate::ops::doctor_store(&root));
    let mut failed = false;
    for c in &checks {
        failed |= c.failed();
        println!("{}  {:<28} {}", c.severity.tag(), c.label(), c.detail);
    }
    if failed {
        println!("doctor: some required checks failed");
        Exit::CheckFailed
    } else {
        println!("doctor: all required checks passed");
        Exit::Success
    }
}
