//! `attenu-hook derive [DIR]` (or `--derive`): the permission sets derived from the project, with the
//! account of inheritance (who inherits the session pool, what it holds and why).

use super::derive_human::{render, Style};
use super::project::project_dir;
use super::{fail, Exit};
use crate::derive::explain::Account;
use crate::derive::{explain_project, readable, Roster};
use serde_json::{json, Value};
use std::collections::BTreeMap;
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
    let pool = config.derive.session_pool.as_deref();
    match explain_project(&root, &config.agents, pool) {
        Ok((r, account)) if human => {
            print!("{}", render(&root, &r, &account, Style::for_stdout()));
            if let Some(line) = crate::derive::builtin::used_line(&root.join(".attenu"), &r) {
                println!("\n{line}");
            }
            Exit::Success
        }
        Ok((r, account)) => {
            let mut doc = r.to_json();
            doc["project"] = Value::from(root.display().to_string());
            doc["inheritance"] = inheritance(&r, &account);
            doc["builtins_used"] = builtins_used(&root, &r);
            let names = original_names(&r);
            if !names.is_empty() {
                doc["names"] = json!(names);
            }
            println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            Exit::Success
        }
        Err(e) => fail(e),
    }
}

/// `inheritance` in the JSON: the pool's source, the agents that hold it, each entry with
/// what put it there, and the entries `permissions.deny` takes.
fn inheritance(r: &Roster, account: &Account) -> Value {
    let denied: BTreeMap<&String, Value> = account
        .pool
        .keys()
        .filter_map(|s| r.why.deny_rule(s).map(|d| (s, json!(d))))
        .collect();
    json!({
        "pool_source": account.source,
        "inheriting": r.why.inheriting,
        "pool": account.pool,
        "denied": denied,
    })
}

/// Every encoded scope in the roster → the name it was written as.
fn original_names(r: &Roster) -> BTreeMap<String, String> {
    r.root
        .iter()
        .chain(r.agents.values().flat_map(|a| a.scopes.iter()))
        .filter_map(|s| readable::original(s).map(|o| (s.clone(), o)))
        .collect()
}

/// `builtins_used` in the JSON: each built-in agent the project's sessions used, how many
/// ledger records name it, and the scopes it holds now (`null`: it is not declared).
fn builtins_used(root: &Path, r: &Roster) -> Value {
    crate::derive::builtin::used_in(&root.join(".attenu"))
        .into_iter()
        .map(|(name, records)| {
            let holds = r.agents.get(name).map(
                |a| json!({"scopes": a.scopes.iter().collect::<Vec<_>>(), "source": a.source}),
            );
            (
                name.to_string(),
                json!({"records": records, "holds": holds}),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}
