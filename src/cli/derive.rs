//! `attenu-hook --derive [DIR]`: the permission sets derived from the project.

use super::project::project_dir;
use super::{fail, Exit};
use crate::derive::{derive_project, Roster};
use serde_json::Value;
use std::path::Path;

pub fn run(dir: &Path, human: bool) -> Exit {
    if !dir.is_dir() {
        return fail(format!("{} is not a directory", dir.display()));
    }
    let root = project_dir(dir);
    let config = match crate::config::load(&root.join(".attenu")) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    match derive_project(&root, &config.agents, config.derive.session_pool.as_deref()) {
        Ok(r) if human => {
            print!("{}", human_roster(&root, &r));
            Exit::Success
        }
        Ok(r) => {
            let mut doc = r.to_json();
            doc["project"] = Value::from(root.display().to_string());
            println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            Exit::Success
        }
        Err(e) => fail(e),
    }
}

/// The `--derive --human` table.
pub fn human_roster(root: &Path, r: &Roster) -> String {
    let mut s = format!(
        "project  {}\ndigest   {}\n\nsession root\n",
        root.display(),
        r.digest
    );
    for scope in &r.root {
        s.push_str(&format!("  {scope}\n"));
    }
    if !r.root_excluded.is_empty() {
        s.push_str(&format!("  except {}\n", joined(&r.root_excluded)));
    }
    let width = r
        .agents
        .keys()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    s.push_str("\nagent");
    s.push_str(&" ".repeat(width - 5 + 2));
    s.push_str("scopes\n");
    for (name, a) in &r.agents {
        let scopes = match &a.invalid {
            Some(why) => format!("(holds nothing: {why})"),
            None if a.scopes.is_empty() => "(none)".into(),
            None => joined(&a.scopes),
        };
        let scopes = if a.excluded.is_empty() {
            scopes
        } else {
            format!("{scopes} (except {})", joined(&a.excluded))
        };
        s.push_str(&format!("{name:<width$}  {scopes}\n"));
    }
    if !r.unrepresented.is_empty() {
        s.push_str("\nunrepresented (argument-scoped rules, left to Claude Code)\n");
        for u in &r.unrepresented {
            s.push_str(&format!("  {u}\n"));
        }
    }
    if !r.problems.is_empty() {
        s.push_str("\nproblems\n");
        for p in &r.problems {
            s.push_str(&format!("  {p}\n"));
        }
    }
    s
}

fn joined<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    items.into_iter().cloned().collect::<Vec<_>>().join(", ")
}
