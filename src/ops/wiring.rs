//! Finding attenu-hook's handlers in a hooks document (a settings file, or a plugin's hooks
//! file), and whether one makes Claude Code wait for the hook on every call of its event.

use super::shell::{resolve_command, split_command, which};
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Every event the hook needs, in the order they are written.
pub const EVENTS: &[&str] = &[
    "SessionStart",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
];

/// The handler timeout `install` writes, in seconds.
pub const TIMEOUT_S: u64 = 10;

/// Is this handler ours? Its command is exactly `command` (what `install` writes), or it runs
/// a program with no arguments that is `attenu-hook` by name, or the same file as this
/// executable or as `command`'s (a renamed copy, a link). A command with arguments runs the
/// CLI, not the hook: `attenu-hook log --denied | notify-send -` records nothing, so it is not
/// wiring.
pub(super) fn is_ours(h: &Value, command: &str, project: &Path) -> bool {
    let Some(c) = h.get("command").and_then(Value::as_str) else {
        return false;
    };
    if h.get("args")
        .is_some_and(|a| !a.as_array().is_some_and(Vec::is_empty))
    {
        return false;
    }
    if c.trim() == command.trim() {
        return true;
    }
    let (program, rest) = split_command(c);
    if rest {
        return false;
    }
    if Path::new(&program)
        .file_name()
        .is_some_and(|n| n == "attenu-hook" || n == LAUNCHER_NAME)
    {
        return true;
    }
    let Some(runs) = resolve_command(c, project) else {
        return false;
    };
    let this = std::env::current_exe().ok();
    let wired = resolve_command(command, project);
    [this, wired].iter().flatten().any(|p| same_file(p, &runs))
}

/// The matcher a hook group restricts its handlers to, as text, or `None` when it has none and
/// its handlers see every call (absent, `null`, `""` or `"*"`).
pub(super) fn restricting_matcher(matcher: Option<&Value>) -> Option<String> {
    match matcher {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.is_empty() || m == "*" => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(other) => Some(other.to_string()),
    }
}

/// What a handler without a matcher sees of an event: tool events are calls, the others not.
pub(super) fn what_it_sees(event: &str) -> &'static str {
    match event {
        "SessionStart" => "every session start",
        "SessionEnd" => "every session end",
        "SubagentStart" | "SubagentStop" => "every agent type",
        "PermissionDenied" => "every call Claude Code refuses itself",
        "PreSkillShellCommand" => "every skill's inline shell command",
        "Interrupt" => "every interruption",
        _ => "every tool call",
    }
}

/// Whether two paths name the same file (after links).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Where `install` links this executable when `attenu-hook` is not on PATH: a per-developer
/// link inside the project, git-ignored, that the committed wiring reaches through
/// `$CLAUDE_PROJECT_DIR` in every clone.
pub const PROJECT_LINK: &str = ".claude/hooks/attenu-hook";

/// The command that runs [`PROJECT_LINK`] directly, as `install` wired it before the launcher. Claude Code
/// runs hook commands through a shell with `CLAUDE_PROJECT_DIR` set to the project's root.
pub const LINKED_COMMAND: &str = "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/attenu-hook";

/// The committed launcher `install` writes beside the link: it runs this developer's
/// attenu-hook (the link, else the one on PATH) and, on a machine without one, says what to
/// install and exits 2, which blocks the call (docs/OPERATIONS.md, "The launcher").
pub const LAUNCHER: &str = ".claude/hooks/attenu-hook.sh";

/// The launcher's file name, which marks a handler as ours.
pub const LAUNCHER_NAME: &str = "attenu-hook.sh";

/// The command that runs [`LAUNCHER`], as `settings.snippet.json` writes it.
pub const LAUNCHER_COMMAND: &str = "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/attenu-hook.sh";

/// What a teammate without the binary reads (Claude Code shows an exit-2 hook's stderr).
pub const NOT_INSTALLED: &str = "attenu-hook is not installed on this machine: npm install -g attenu-hook (or apt-get install ./attenu-hook_<version>_amd64.deb, or the static tarball; see README.md), then run `attenu-hook install` in this project. Until then every tool call is blocked";

/// The launcher's text. POSIX sh, no external program: it costs a shell's start per call.
pub fn launcher_script() -> String {
    format!(
        r#"#!/bin/sh
# attenu-hook's launcher, written by `attenu-hook install`: commit it with .claude/settings.json.
# It runs this developer's attenu-hook (the git-ignored link beside it, else the one on PATH).
# Without one it explains and exits 2, which blocks the call: the hook fails closed.
here="${{0%/*}}"
if [ -f "$here/attenu-hook" ] && [ -x "$here/attenu-hook" ]; then
  exec "$here/attenu-hook" "$@"
fi
if command -v attenu-hook >/dev/null 2>&1; then
  exec attenu-hook "$@"
fi
echo '{NOT_INSTALLED}.' >&2
exit 2
"#
    )
}

/// The command to wire, one that works unchanged in every clone of the project (so safe in a
/// committed `settings.json`): [`LAUNCHER_COMMAND`].
pub fn default_command() -> String {
    LAUNCHER_COMMAND.into()
}

/// Whether `attenu-hook` on PATH is this executable (then the launcher needs no link). The
/// npm package's is a Node shim that runs this one: linked directly, a call skips Node's start.
pub fn on_path() -> bool {
    let this = std::env::current_exe().ok();
    which("attenu-hook").is_some_and(|p| this.is_some_and(|t| same_file(&p, &t)))
}

/// Whether a handler command names a file by this machine's absolute path (or `~`): in a
/// shared settings file it runs nothing on a teammate's machine, and with `"onFailure":
/// "block"` every one of their calls is blocked.
pub fn machine_specific(command: &str) -> bool {
    let (program, _) = split_command(command);
    program.starts_with('/') || program.starts_with('~')
}

/// Every handler of the events the hook needs in a hooks document (a settings file, or a
/// plugin's hooks file): its event, the group it sits in, and the handler.
pub(super) fn handlers_in(doc: &Value) -> impl Iterator<Item = (&'static str, &Value, &Value)> {
    let versioned = super::claude_version::VERSIONED_EVENTS
        .iter()
        .map(|(e, _)| e);
    EVENTS.iter().chain(versioned).flat_map(move |&event| {
        doc.pointer(&format!("/hooks/{event}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(move |group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(move |h| (event, group, h))
            })
    })
}

/// One of our handlers as found in a settings file or an installed plugin.
pub(super) struct Wired {
    pub(super) event: &'static str,
    pub(super) scope: &'static str,
    pub(super) matcher: Value,
    pub(super) handler: Value,
    /// For a plugin's handler, which plugin.
    pub(super) plugin: Option<PluginRef>,
}

/// The installed plugin a handler comes from.
pub(super) struct PluginRef {
    pub(super) key: String,
    /// Its install directory, `${CLAUDE_PLUGIN_ROOT}` in its commands.
    pub(super) root: PathBuf,
    /// Managed settings turn it on: its hooks run even where only managed hooks may.
    pub(super) by_managed: bool,
}

impl Wired {
    /// The command as Claude Code runs it: in a plugin's handler, `${CLAUDE_PLUGIN_ROOT}` is
    /// the plugin's directory (in a settings file it is not set).
    pub(super) fn command(&self) -> Option<String> {
        let c = self.handler.get("command").and_then(Value::as_str)?;
        Some(match &self.plugin {
            Some(p) => {
                let root = p.root.to_string_lossy();
                c.replace("${CLAUDE_PLUGIN_ROOT}", &root)
                    .replace("$CLAUDE_PLUGIN_ROOT", &root)
            }
            None => c.to_string(),
        })
    }

    /// Why this handler does not make Claude Code wait for the hook on every call of its
    /// event, or `None` when it does.
    pub(super) fn problem(&self) -> Option<String> {
        let event = self.event;
        let h = &self.handler;
        let tool_event = !matches!(
            event,
            "SessionStart" | "SubagentStart" | "SessionEnd" | "Interrupt"
        );
        if let Some(m) = restricting_matcher(Some(&self.matcher)) {
            let skipped = match event {
                "SessionStart" => "other session starts skip it",
                "SubagentStart" | "SubagentStop" => "other agent types skip it",
                _ => "other tools skip the hook",
            };
            return Some(format!(
                "the {event} handler has matcher '{m}', so {skipped}; remove the matcher (`attenu-hook install` does)"
            ));
        }
        for key in ["async", "asyncRewake"] {
            if h.get(key).is_some_and(|v| v != &Value::Bool(false)) {
                return Some(format!(
                    "the {event} handler has \"{key}\", so Claude Code runs it in the background and does not wait for its answer: a deny comes too late and the call runs; remove it (`attenu-hook install` does)"
                ));
            }
        }
        if let Some(cond) = h.get("if") {
            return Some(format!(
                "the {event} handler has \"if\": {cond}, so Claude Code runs it only for the calls that match and the others are neither checked nor recorded; remove it (`attenu-hook install` does)"
            ));
        }
        let on_failure = h.get("onFailure").and_then(Value::as_str);
        if tool_event && on_failure != Some("block") {
            return Some(format!("the {event} handler lacks \"onFailure\": \"block\", so a crash or timeout lets calls through; run `attenu-hook install`"));
        }
        let timeout = h.get("timeout").and_then(Value::as_u64);
        if !timeout.is_some_and(|t| (2..=600).contains(&t)) {
            return Some(format!("the {event} handler's timeout {timeout:?} is not between 2 and 600 seconds; set it to {TIMEOUT_S}"));
        }
        None
    }
}

/// The commands of these handlers as Claude Code runs them, each once, sorted.
pub(super) fn distinct_commands<'a>(wired: impl Iterator<Item = &'a Wired>) -> Vec<String> {
    let mut commands: Vec<String> = wired.filter_map(Wired::command).collect();
    commands.sort_unstable();
    commands.dedup();
    commands
}
