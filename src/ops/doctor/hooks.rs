//! The checks of what Claude Code runs: the settings files and the plugin it reads hooks from,
//! `disableAllHooks`, each event's handler, and the commands those handlers run.

use super::{Check, CheckId, Severity};
use crate::ops::plugins::{installed_plugin_hooks, plugin_handlers, plugins_on};
use crate::ops::settings_files::settings_sources;
use crate::ops::shell::resolve_command;
use crate::ops::wiring::{distinct_commands, handlers_in, is_ours, Wired, EVENTS};
use serde_json::Value;
use std::path::Path;

/// What the settings files say about the hook.
#[derive(Default)]
struct Found {
    /// Our handlers, from the settings files and then the plugins.
    wired: Vec<Wired>,
    /// Managed settings set `"allowManagedHooksOnly": true`.
    managed_only: bool,
    /// Each `disableAllHooks`: the scope of its file, the file as shown, and its value.
    disable: Vec<(&'static str, String, bool)>,
}

/// Every check of the wiring, in order: unreadable settings, the plugin, `disableAllHooks`,
/// each event's handler, then each distinct command.
pub(super) fn checks(dir: &Path, ours: &str) -> Vec<Check> {
    let mut out = Vec::new();
    let mut found = read_settings(dir, ours, &mut out);
    read_plugins(dir, &mut found.wired, &mut out);
    let mut wired = found.wired;
    out.extend(apply_disable(&found.disable, &mut wired));
    let ignored = if found.managed_only {
        let before = wired.len();
        // A plugin that managed settings turn on runs its hooks there too.
        wired.retain(|w| w.scope == "managed" || w.plugin.as_ref().is_some_and(|p| p.by_managed));
        before - wired.len()
    } else {
        0
    };
    // The events the installed Claude Code knows, as `install` wires them; those beyond the
    // base set record (Claude Code's refusals, interruptions) or decide a skill's shell, and
    // are warned about, not required, so an older wiring keeps working.
    for event in crate::ops::events_for(crate::ops::installed_claude()) {
        let mine: Vec<&Wired> = wired.iter().filter(|w| w.event == event).collect();
        out.push(wired_check(event, &mine, ignored, EVENTS.contains(&event)));
    }
    out.extend(command_checks(&wired, dir));
    out
}

/// Why doctor cannot read a settings file (named as the check shows it).
#[derive(Debug, thiserror::Error)]
enum SettingsError {
    #[error("cannot read {shown} ({source}); make it readable by this user, or doctor cannot say what it wires")]
    Unreadable {
        shown: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{shown} is not valid JSON ({source}); fix it")]
    NotJson {
        shown: String,
        #[source]
        source: serde_json::Error,
    },
}

/// The settings file at `path` (shown as `shown`) as JSON: `None` when it does not exist, else
/// what keeps doctor from reading it.
fn settings_doc(path: &Path, shown: &str) -> Result<Option<Value>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Unreadable {
                shown: shown.to_string(),
                source,
            })
        }
    };
    serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map(Some)
        .map_err(|source| SettingsError::NotJson {
            shown: shown.to_string(),
            source,
        })
}

/// Reads every settings file: our handlers (a command `ours` counts as ours), the switches
/// that turn hooks off, and a check for each file it cannot read.
fn read_settings(dir: &Path, ours: &str, out: &mut Vec<Check>) -> Found {
    let mut found = Found::default();
    for (scope, path) in settings_sources(dir) {
        let shown = if matches!(scope, "project" | "local") {
            path.strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string()
        } else {
            path.display().to_string()
        };
        let doc = match settings_doc(&path, &shown) {
            Ok(Some(doc)) => doc,
            Ok(None) => continue,
            Err(detail) => {
                out.push(Check::new(
                    CheckId::Settings,
                    Severity::Fail,
                    detail.to_string(),
                ));
                continue;
            }
        };
        if let Some(b) = doc.get("disableAllHooks").and_then(Value::as_bool) {
            found.disable.push((scope, shown.clone(), b));
        }
        if scope == "managed"
            && doc.get("allowManagedHooksOnly").and_then(Value::as_bool) == Some(true)
        {
            found.managed_only = true;
        }
        for (event, group, h) in handlers_in(&doc).filter(|(_, _, h)| is_ours(h, ours, dir)) {
            found.wired.push(Wired {
                event,
                scope,
                matcher: group.get("matcher").cloned().unwrap_or(Value::Null),
                handler: h.clone(),
                plugin: None,
            });
        }
    }
    found
}

/// Adds the handlers of each attenu-hook plugin `enabledPlugins` turns on, and a warning for
/// what keeps Claude Code from loading them.
fn read_plugins(dir: &Path, wired: &mut Vec<Wired>, out: &mut Vec<Check>) {
    for plugin in plugins_on(dir) {
        let key = &plugin.key;
        let root = match &plugin.install_path {
            Ok(root) => root,
            Err(why) => {
                out.push(Check::new(CheckId::Plugin, Severity::Warn, why.to_string()));
                continue;
            }
        };
        let hooks = installed_plugin_hooks(root);
        for problem in &hooks.problems {
            let consequence = if hooks.docs.is_empty() {
                "so Claude Code loads no hook from it"
            } else {
                "so Claude Code may not load all of its hooks"
            };
            out.push(Check::new(
                CheckId::Plugin,
                Severity::Warn,
                format!(
                    "{key} is installed at {}, but {problem}, {consequence}",
                    root.display()
                ),
            ));
        }
        for doc in &hooks.docs {
            wired.extend(plugin_handlers(doc, &plugin, root));
        }
    }
}

/// `disableAllHooks` as Claude Code applies it: true in managed settings turns every hook
/// off; elsewhere the most specific scope that sets it decides (local, then project, then
/// user), and it turns off all but the managed hooks. Drops the handlers it turns off.
fn apply_disable(
    disable: &[(&'static str, String, bool)],
    wired: &mut Vec<Wired>,
) -> Option<Check> {
    let managed_off = disable.iter().find(|(s, _, b)| *s == "managed" && *b);
    let others_off = ["local", "project", "user"]
        .iter()
        .find_map(|scope| disable.iter().find(|(s, _, _)| s == scope))
        .filter(|(_, _, b)| *b);
    if let Some((_, shown, _)) = managed_off {
        wired.clear();
        return Some(Check::new(
            CheckId::HooksEnabled,
            Severity::Fail,
            format!("{shown} sets \"disableAllHooks\": true, so Claude Code runs no hook: nothing is enforced or recorded"),
        ));
    }
    let (_, shown, _) = others_off?;
    let check = (!wired.iter().any(|w| w.scope == "managed")).then(|| {
        Check::new(
            CheckId::HooksEnabled,
            Severity::Fail,
            format!("{shown} sets \"disableAllHooks\": true, so Claude Code runs only managed hooks, and attenu-hook is not among them: nothing is enforced or recorded; remove it"),
        )
    });
    wired.retain(|w| w.scope == "managed");
    check
}

/// The check of `event`'s handlers, `mine`; `ignored` handlers were dropped because only
/// managed hooks run.
fn wired_check(event: &str, mine: &[&Wired], ignored: usize, base: bool) -> Check {
    // SessionStart enforces nothing (every tool event opens the ledger itself), so its
    // wiring is checked but never required.
    let required = base && event != "SessionStart";
    let check = |severity, detail: String| Check::about(CheckId::Wired, event, severity, detail);
    if mine.is_empty() {
        return check(Severity::unmet(required), unwired(event, ignored, required));
    }
    // Claude Code runs every handler of every scope (the same command once): two commands
    // record every call twice, and a gated call's second claim is denied as a replay.
    let commands = distinct_commands(mine.iter().copied());
    if commands.len() > 1 {
        return check(
            Severity::unmet(required),
            format!(
                "attenu-hook is wired {} times for {event}, with the commands `{}` (as Claude Code runs them): each runs, so every call is recorded more than once; {}",
                commands.len(),
                commands.join("`, `"),
                if mine.iter().any(|w| w.scope == "plugin") {
                    "one is the attenu-hook plugin's, which `enabledPlugins` turns on: turn the plugin off or remove the handlers in the settings files"
                } else {
                    "keep one (`attenu-hook install` keeps one per settings file)"
                }
            ),
        );
    }
    // One handler that sees every call and blocks on failure is enough; Claude Code runs
    // all matching handlers of all scopes.
    match mine.iter().find(|w| w.problem().is_none()) {
        Some(w) => check(
            Severity::Ok,
            format!(
                "timeout {}s, onFailure {}, {} ({})",
                w.handler
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                w.handler
                    .get("onFailure")
                    .and_then(Value::as_str)
                    .unwrap_or("unset"),
                crate::ops::wiring::what_it_sees(event),
                match &w.plugin {
                    Some(p) => format!("the plugin {}", p.key),
                    None => format!("{} settings", w.scope),
                }
            ),
        ),
        None => check(
            Severity::unmet(required),
            mine[0].problem().unwrap_or_default(),
        ),
    }
}

/// Why no handler of ours runs for `event`.
fn unwired(event: &str, ignored: usize, required: bool) -> String {
    if ignored > 0 {
        format!("managed settings set \"allowManagedHooksOnly\": true, so only hooks in /etc/claude-code/managed-settings.json run, and attenu-hook is wired for {event} elsewhere only; wire it there")
    } else if event == "PreSkillShellCommand" {
        "no attenu-hook handler for PreSkillShellCommand, so a skill's or command's inline shell runs undecided and unrecorded (PreToolUse does not fire for it); run `attenu-hook install`".into()
    } else if event == "PermissionDenied" || event == "Interrupt" {
        format!("no attenu-hook handler for {event}, so what Claude Code refuses or interrupts itself is not on the record; run `attenu-hook install`")
    } else if !required {
        // Only a head start: every tool event opens the session's ledger itself.
        "no attenu-hook handler for SessionStart, so each session's first tool call also creates its ledger, which makes that call slower; run `attenu-hook install`".into()
    } else {
        format!("no attenu-hook handler for {event}; run `attenu-hook install`")
    }
}

/// Every handler's command, not just the first: a typo in one event's leaves that event
/// unhooked (or, with onFailure block, every call of it blocked).
fn command_checks(wired: &[Wired], dir: &Path) -> Vec<Check> {
    let check = |severity, detail: String| Check::new(CheckId::Command, severity, detail);
    distinct_commands(wired.iter())
        .into_iter()
        .map(|command| {
            let plugin = wired
                .iter()
                .find(|w| w.command().as_deref() == Some(command.as_str()))
                .and_then(|w| w.plugin.as_ref());
            match (resolve_command(&command, dir), plugin) {
                (Some(p), None) => check(Severity::Ok, format!("`{command}` runs {}", p.display())),
                (Some(p), Some(plugin)) => check(Severity::Ok, format!("`{command}` runs {} (the plugin {})", p.display(), plugin.key)),
                (None, None) => check(Severity::Fail, format!("`{command}` does not resolve to an executable; install the binary there or fix the command")),
                (None, Some(plugin)) => check(Severity::Fail, format!("`{command}` (the plugin {}) does not resolve to an executable, so with onFailure block every call is blocked; build the binary into the plugin (see README.md) or turn the plugin off", plugin.key)),
            }
        })
        .collect()
}
