//! `attenu-hook install [DIR]`: wires the hook into the project's settings.

use super::project::ProjectDir;
use super::{fail, Exit};
use std::path::Path;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    at: ProjectDir,
    /// Write .claude/settings.local.json instead
    #[arg(long)]
    local: bool,
    /// The command to wire (default: "$CLAUDE_PROJECT_DIR"/.claude/hooks/attenu-hook.sh, a committed launcher that runs attenu-hook and blocks with what to install where it is missing)
    #[arg(long)]
    command: Option<String>,
    /// Also grant Claude Code's built-in agents (Explore, Plan, general-purpose, ...) exactly the tools Claude Code gives them: sets [derive] builtin_agents = true in .claude/attenu.toml (with --local, in .attenu/config.toml). Without it they hold nothing
    #[arg(long)]
    builtin_agents: bool,
}

pub fn run(a: Args) -> Exit {
    let root = match a.at.root() {
        Ok(root) => root,
        Err(e) => return fail(e),
    };
    let command = a.command.as_deref();
    let done = match crate::ops::install(&root, a.local, command) {
        Ok(done) => done,
        Err(e) => return fail(e),
    };
    if done.changes.is_empty() {
        println!(
            "{} already wires attenu-hook for every event it needs; nothing changed in it",
            done.path.display()
        );
    } else {
        println!("updated {}:", done.path.display());
        for c in &done.changes {
            println!("  {c}");
        }
    }
    for c in &done.beside {
        println!("{c}");
    }
    if done.linked {
        let runs = match done.launcher {
            true => format!(
                "{} in every clone, which runs the link {} where there is one, else `attenu-hook` on PATH",
                crate::ops::LAUNCHER,
                crate::ops::PROJECT_LINK
            ),
            false => format!("the link {} in every clone", crate::ops::PROJECT_LINK),
        };
        println!(
            "note: {} runs {runs}; the link is per developer, so each runs `attenu-hook install` once in their clone (it leaves the settings as they are), or puts attenu-hook on PATH (`npm install -g attenu-hook`)",
            done.path.display(),
        );
    }
    if done.on_path && !done.changes.is_empty() {
        println!(
            "note: {} runs `attenu-hook` from PATH, in every clone: each developer puts it on theirs (`npm install -g attenu-hook`); where it is missing, the call is blocked with that advice",
            done.path.display()
        );
    }
    if !done.changes.is_empty() || !done.beside.is_empty() {
        println!(
            "next: `attenu-hook doctor {}{}`",
            done.path
                .parent()
                .and_then(Path::parent)
                .unwrap_or(&a.at.dir)
                .display(),
            // A wrapper is not recognisable as attenu-hook by its name.
            command
                .filter(|c| *c != crate::ops::default_command())
                .map(|c| format!(" --command '{}'", c.replace('\'', "'\\''")))
                .unwrap_or_default()
        );
    }
    for n in &done.notes {
        println!("note: {n}");
    }
    match builtin_agents(&root, &a) {
        Ok(line) => println!("{line}"),
        Err(e) => return fail(e),
    }
    for w in &done.warnings {
        eprintln!("attenu-hook: warning: {w}");
    }
    warn_if_not_run(&root, command);
    Exit::Success
}

/// After `install`: what would still keep Claude Code from running the handler it wrote (hooks
/// turned off, managed hooks only, a second command wired), which the file itself cannot fix.
/// The wiring is written either way; this only makes sure the user hears it now.
fn warn_if_not_run(root: &Path, command: Option<&str>) {
    let command = command
        .map(str::to_string)
        .unwrap_or_else(crate::ops::default_command);
    let checks = crate::ops::doctor_for(root, &command);
    let failed = |c: &&crate::ops::Check| c.failed();
    // With hooks turned off every event reads as unwired; the cause is the one thing to say.
    let off: Vec<_> = checks
        .iter()
        .filter(failed)
        .filter(|c| c.id == crate::ops::CheckId::HooksEnabled)
        .collect();
    let wiring: Vec<_> = checks
        .iter()
        .filter(failed)
        .filter(|c| c.id == crate::ops::CheckId::Wired)
        .collect();
    let shown = if off.is_empty() { wiring } else { off };
    if let Some(first) = shown.first() {
        let more = match shown.len() - 1 {
            0 => String::new(),
            n => format!(" ({n} more like it; `attenu-hook doctor` lists them)"),
        };
        eprintln!(
            "attenu-hook: warning: the hook is wired, but {}{more}",
            first.detail
        );
    }
}

/// The built-in agent preset: set with `--builtin-agents`, else offered.
fn builtin_agents(root: &Path, a: &Args) -> Result<String, crate::ops::PresetError> {
    if !a.builtin_agents {
        let on = crate::config::load(&root.join(".attenu")).is_ok_and(|c| c.derive.builtin_agents);
        return Ok(if on {
            "built-in agents (Explore, Plan, general-purpose, ...) hold what Claude Code gives them ([derive] builtin_agents)".into()
        } else {
            "note: Claude Code's built-in agents (Explore, Plan, general-purpose, ...) hold nothing here, so each of their calls is denied; `attenu-hook install --builtin-agents` grants them exactly the tools Claude Code gives them".into()
        });
    }
    let (path, changed) = crate::ops::enable_builtin_agents(root, a.local)?;
    Ok(format!(
        "{} {}: [derive] builtin_agents = true (Claude Code's built-in agents hold the tools Claude Code gives them)",
        if changed { "updated" } else { "already set in" },
        path.display()
    ))
}
