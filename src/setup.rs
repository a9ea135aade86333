//! Operator setup: `install` wires the hook into `.claude/settings.json`; `doctor` checks the
//! wiring, the command, permissions, configuration, derivation and ledgers.

use crate::config;
use crate::derive::derive_project;
use crate::ledger::store;
use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
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
fn is_ours(h: &Value, command: &str, project: &Path) -> bool {
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
        .is_some_and(|n| n == "attenu-hook")
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
fn restricting_matcher(matcher: Option<&Value>) -> Option<String> {
    match matcher {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.is_empty() || m == "*" => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(other) => Some(other.to_string()),
    }
}

/// Claude Code's user configuration directory: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

/// Whether two paths name the same file (after links).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// A shell command's first word, unquoted as a shell would read it, and whether anything
/// follows it.
fn split_command(command: &str) -> (String, bool) {
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.trim().chars();
    for ch in chars.by_ref() {
        match (quote, ch) {
            (None, '"' | '\'') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => break,
            (_, c) => word.push(c),
        }
    }
    (word, !chars.as_str().trim().is_empty())
}

/// The command to wire: `attenu-hook` when it is on PATH, else this executable's absolute path.
pub fn default_command() -> String {
    if which("attenu-hook").is_some() {
        return "attenu-hook".into();
    }
    std::env::current_exe()
        .map(|p| shell_quote(&p.display().to_string()))
        .unwrap_or_else(|_| "attenu-hook".into())
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    })
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Merges the hook block into `settings` (a parsed settings document of the project at
/// `project`); returns what changed. `command` is what a new handler runs; with `explicit` (the
/// operator passed `--command`) it also replaces the command of a handler already there.
///
/// After a merge every event has exactly one of our handlers in this file, in a group without a
/// matcher, with `"onFailure": "block"`, a timeout in range, and neither `async` (Claude Code
/// would not wait for its answer) nor `if` (it would see only some calls). Another handler of
/// ours is removed: under a matcher it saw only some calls, and beside the first one Claude Code
/// would run both, recording every call twice (and a gated call's second claim is a replay).
pub fn merge(
    settings: &mut Doc,
    command: &str,
    explicit: bool,
    project: &Path,
) -> Result<Vec<String>, String> {
    let mut changes = Vec::new();
    let hooks = settings
        .member_or_insert("hooks", Doc::Obj(vec![]))
        .ok_or("the settings file is not a JSON object; fix it by hand first")?;
    for event in EVENTS {
        let groups = hooks
            .member_or_insert(event, Doc::Arr(vec![]))
            .ok_or("`hooks` in the settings is not an object; fix it by hand first")?;
        let Doc::Arr(groups) = groups else {
            return Err(format!(
                "`hooks.{event}` is not a list; fix it by hand first"
            ));
        };
        // Each group's matcher and which of its handlers are ours, read once: `is_ours` may
        // resolve commands on disk.
        let read: Vec<(Option<String>, Vec<bool>)> = groups
            .iter()
            .map(|g| {
                let v = g.to_value();
                let ours = match v.get("hooks") {
                    Some(Value::Array(hs)) => {
                        hs.iter().map(|h| is_ours(h, command, project)).collect()
                    }
                    _ => vec![],
                };
                (restricting_matcher(v.get("matcher")), ours)
            })
            .collect();
        // The first handler of ours that sees every call is the one kept.
        let keep = read.iter().enumerate().find_map(|(gi, (matcher, ours))| {
            if matcher.is_some() {
                return None;
            }
            ours.iter().position(|&o| o).map(|hi| (gi, hi))
        });
        if let Some((gi, hi)) = keep {
            if let Some(Doc::Arr(handlers)) = groups[gi].member_mut("hooks") {
                fix_handler(&mut handlers[hi], event, command, explicit, &mut changes)?;
            }
        }
        let mut under_matcher: Vec<String> = Vec::new();
        let mut beside = 0;
        let mut kept_command = None;
        let mut emptied = Vec::new();
        for (gi, (group, (matcher, flags))) in groups.iter_mut().zip(&read).enumerate() {
            if !flags.iter().any(|&o| o) {
                continue;
            }
            let Some(Doc::Arr(handlers)) = group.member_mut("hooks") else {
                continue;
            };
            let mut hi = 0;
            handlers.retain(|h| {
                let (this, ours) = (hi, flags[hi]);
                hi += 1;
                if !ours || keep == Some((gi, this)) {
                    return true;
                }
                let v = h.to_value();
                if kept_command.is_none() {
                    kept_command = v.get("command").and_then(Value::as_str).map(String::from);
                }
                match matcher {
                    Some(m) => under_matcher.push(m.clone()),
                    None => beside += 1,
                }
                false
            });
            if handlers.is_empty() {
                emptied.push(gi);
            }
        }
        // A group left with no handler did nothing but run ours.
        for gi in emptied.into_iter().rev() {
            groups.remove(gi);
        }
        if !under_matcher.is_empty() {
            changes.push(format!(
                "{event}: removed the attenu-hook handler from the group with matcher '{}', where it saw only matching calls",
                under_matcher.join("', '")
            ));
        }
        if beside > 0 {
            changes.push(format!(
                "{event}: removed {beside} more attenu-hook handler(s): Claude Code would run each, and record every call more than once"
            ));
        }
        if keep.is_some() {
            continue;
        }
        let command = match (explicit, &kept_command) {
            (false, Some(kept)) => kept.as_str(),
            _ => command,
        };
        groups.push(Doc::Obj(vec![(
            "hooks".into(),
            Doc::Arr(vec![handler_doc(command)]),
        )]));
        changes.push(format!(
            "{event}: added the attenu-hook handler (no matcher: every tool)"
        ));
    }
    Ok(changes)
}

/// Brings one of our handlers, already in a group without a matcher, to what the hook needs.
fn fix_handler(
    h: &mut Doc,
    event: &str,
    command: &str,
    explicit: bool,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let v = h.to_value();
    let not_object = || "a handler is not an object".to_string();
    if v.get("onFailure").and_then(Value::as_str) != Some("block") {
        h.set("onFailure", Doc::Str("block".into()))
            .ok_or_else(not_object)?;
        changes.push(format!(
            "{event}: set \"onFailure\": \"block\" on the existing attenu-hook handler"
        ));
    }
    if !v
        .get("timeout")
        .and_then(Value::as_u64)
        .is_some_and(|t| (2..=600).contains(&t))
    {
        h.set("timeout", Doc::Num(TIMEOUT_S.into()))
            .ok_or_else(not_object)?;
        changes.push(format!(
            "{event}: set \"timeout\": {TIMEOUT_S} on the existing attenu-hook handler"
        ));
    }
    for (key, why) in [
        (
            "async",
            "Claude Code would run it in the background and not wait for its deny",
        ),
        (
            "asyncRewake",
            "Claude Code would run it in the background and not wait for its deny",
        ),
        (
            "if",
            "Claude Code would run it only for the calls that match",
        ),
    ] {
        // `"async": false` is what the key means when absent: harmless, left alone.
        if let Some(old) = v
            .get(key)
            .filter(|old| key == "if" || **old != Value::Bool(false))
        {
            h.remove(key);
            changes.push(format!(
                "{event}: removed \"{key}\": {old} from the attenu-hook handler ({why})"
            ));
        }
    }
    let current = v.get("command").and_then(Value::as_str).unwrap_or("");
    if explicit && current != command {
        h.set("command", Doc::Str(command.into()))
            .ok_or_else(not_object)?;
        changes.push(format!(
            "{event}: set the attenu-hook handler's command to `{command}` (was `{current}`)"
        ));
    }
    Ok(())
}

fn handler_doc(command: &str) -> Doc {
    Doc::Obj(vec![
        ("type".into(), Doc::Str("command".into())),
        ("command".into(), Doc::Str(command.into())),
        ("timeout".into(), Doc::Num(TIMEOUT_S.into())),
        ("onFailure".into(), Doc::Str("block".into())),
    ])
}

/// A JSON document that keeps its members in the order they were written, so `install`
/// changes only what it adds and a person's settings file is not reordered.
#[derive(Debug, Clone, PartialEq)]
pub enum Doc {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Doc>),
    Obj(Vec<(String, Doc)>),
}

impl Doc {
    fn member_mut(&mut self, key: &str) -> Option<&mut Doc> {
        match self {
            Doc::Obj(members) => members.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The member `key`, inserted at the end with `default` if absent; `None` if not an object.
    fn member_or_insert(&mut self, key: &str, default: Doc) -> Option<&mut Doc> {
        let Doc::Obj(members) = self else { return None };
        let at = match members.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                members.push((key.to_string(), default));
                members.len() - 1
            }
        };
        Some(&mut members[at].1)
    }

    fn set(&mut self, key: &str, value: Doc) -> Option<()> {
        *self.member_or_insert(key, Doc::Null)? = value;
        Some(())
    }

    fn remove(&mut self, key: &str) {
        if let Doc::Obj(members) = self {
            members.retain(|(k, _)| k != key);
        }
    }

    /// The same document as a `serde_json::Value`, for reading.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl serde::Serialize for Doc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Doc::Null => s.serialize_unit(),
            Doc::Bool(b) => s.serialize_bool(*b),
            Doc::Num(n) => n.serialize(s),
            Doc::Str(v) => s.serialize_str(v),
            Doc::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Doc::Obj(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (k, v) in members {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for Doc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Doc, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Doc;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Doc, E> {
                Ok(Doc::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Doc, E> {
                Ok(Doc::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Doc, E> {
                Ok(Doc::Num(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Doc, E> {
                Ok(Doc::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Doc, E> {
                serde_json::Number::from_f64(n)
                    .map(Doc::Num)
                    .ok_or_else(|| E::custom("not a finite number"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Doc, E> {
                Ok(Doc::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Doc, E> {
                Ok(Doc::Str(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Doc, A::Error> {
                let mut items = Vec::new();
                while let Some(i) = a.next_element()? {
                    items.push(i);
                }
                Ok(Doc::Arr(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Doc, A::Error> {
                let mut members: Vec<(String, Doc)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Doc>()? {
                    // A repeated member keeps the last value, as JSON readers do, in its first place.
                    match members.iter_mut().find(|(m, _)| *m == k) {
                        Some(slot) => slot.1 = v,
                        None => members.push((k, v)),
                    }
                }
                Ok(Doc::Obj(members))
            }
        }
        d.deserialize_any(V)
    }
}

/// `attenu-hook install [DIR] [--local] [--command CMD]`, with `dir` the project's root (the
/// CLI finds it). Writes only when something changes, atomically, keeping the file's mode, group
/// and (run as root, which it is only in a project root owns) owner; a settings file that is a
/// symbolic link is refused, never written through or replaced.
pub fn install(
    dir: &Path,
    local: bool,
    command: Option<&str>,
) -> Result<(PathBuf, Vec<String>), String> {
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory; pass the project's root directory",
            dir.display()
        ));
    }
    // Every path below is resolved once, here: the root checks then cover each directory
    // the write goes through.
    let dir = &std::fs::canonicalize(dir)
        .map_err(|e| format!("cannot resolve {} ({e})", dir.display()))?;
    let wiring_plugin = plugins_on(dir).into_iter().find(|p| {
        p.install_path
            .as_deref()
            .is_ok_and(|r| !installed_plugin_hooks(r).docs.is_empty())
    });
    if let Some(PluginOn { key, .. }) = wiring_plugin {
        return Err(format!(
            "the attenu-hook plugin ({key}) is turned on in `enabledPlugins` and installed, and it already wires the hook for every event; wiring it in settings as well would record every call twice (and deny a gated call's second claim as a replay). Use one: keep the plugin (`attenu-hook doctor` checks it), or turn it off, then run install again"
        ));
    }
    // Root (`sudo attenu-hook install`) in another user's project would write root's files
    // into directories that user controls, where a symbolic link swapped in at the right
    // moment redirects whatever root creates or hands over. The project's owner runs it.
    let as_root = crate::fsutil::current_uid() == Some(0);
    if as_root {
        if let Some((problem, remedy)) = unsafe_for_root(dir) {
            return Err(format!(
                "{problem}, and install does not run as root where another user controls a directory it writes through (what root writes there could be redirected); {remedy}"
            ));
        }
    }
    let claude = dir.join(".claude");
    std::fs::create_dir_all(&claude)
        .map_err(|e| format!("cannot create {}: {e}", claude.display()))?;
    let path = claude.join(if local {
        "settings.local.json"
    } else {
        "settings.json"
    });
    // One descriptor, opened without following a link: what is checked is what is read.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    let (keep, text) = match opened {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A new file gets the mode an editor would give it.
            let keep = crate::fsutil::Keep {
                mode: 0o644,
                uid: None,
                gid: None,
            };
            (keep, None)
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let target = std::fs::read_link(&path)
                .map(|t| format!(" to {}", t.display()))
                .unwrap_or_default();
            return Err(format!(
                "{} is a symbolic link{target}; install does not write through links. Add the hook block to the file it points to (see `attenu-hook install` in README.md), or replace the link with a regular file",
                path.display()
            ));
        }
        Err(e) => {
            return Err(format!(
                "cannot read {}: {e}; make it readable by this user (or run install as its owner), then run install again",
                path.display()
            ))
        }
        Ok(mut f) => {
            let m = f
                .metadata()
                .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
            if !m.is_file() {
                return Err(format!(
                    "{} is not a regular file; move it aside, then run install again",
                    path.display()
                ));
            }
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).map_err(|e| {
                format!(
                    "cannot read {}: {e}; it must be UTF-8 JSON, readable by this user",
                    path.display()
                )
            })?;
            let keep = crate::fsutil::Keep {
                mode: m.permissions().mode() & 0o7777,
                // Only root can give a file away; anyone else writes it as their own, as an
                // editor would, keeping its group where they are in it.
                uid: as_root.then(|| m.uid()),
                gid: Some(m.gid()),
            };
            (keep, Some(text))
        }
    };
    let mut doc = match text {
        None => Doc::Obj(vec![]),
        Some(text) if text.trim().is_empty() => Doc::Obj(vec![]),
        Some(text) => match serde_json::from_str::<Doc>(text.trim_start_matches('\u{feff}')) {
            Ok(m @ Doc::Obj(_)) => m,
            Ok(_) => {
                return Err(format!(
                    "{} is not a JSON object; refusing to guess. Fix it, then run install again",
                    path.display()
                ))
            }
            Err(e) => {
                return Err(format!(
                    "{} is not valid JSON ({e}); refusing to guess. Fix it, then run install again",
                    path.display()
                ))
            }
        },
    };
    let explicit = command.is_some();
    let command = command.map(str::to_string).unwrap_or_else(default_command);
    let changes = merge(&mut doc, &command, explicit, dir)?;
    if !changes.is_empty() {
        let text = serde_json::to_string_pretty(&doc).expect("JSON") + "\n";
        // The old file's mode (a private settings.local.json stays private) and owner (one
        // that `sudo attenu-hook install` rewrote stays its user's to edit).
        crate::fsutil::replace_keeping(&path, text.as_bytes(), keep)
            .map_err(|e| format!("cannot write {}: {e}; nothing was changed", path.display()))?;
    }
    Ok((path, changes))
}

/// One doctor finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    /// A failed required check makes `doctor` exit non-zero; others are warnings.
    pub required: bool,
    pub detail: String,
}

fn check(name: &str, ok: bool, required: bool, detail: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        ok,
        required,
        detail: detail.into(),
    }
}

/// Resolves a handler command to the executable it runs, as a shell would for the first word.
/// `$NAME`, `${NAME}` and a leading `~/` are expanded as the shell Claude Code runs the command
/// with would, from this environment (`CLAUDE_PROJECT_DIR` is `project`); `None` when one is
/// not set here.
pub fn resolve_command(command: &str, project: &Path) -> Option<PathBuf> {
    let expanded = expand(command, project)?;
    let (word, _) = split_command(&expanded);
    if word.contains('/') {
        let p = PathBuf::from(&word);
        let p = if p.is_absolute() { p } else { project.join(p) };
        is_executable(&p).then_some(p)
    } else {
        which(&word)
    }
}

fn expand(command: &str, project: &Path) -> Option<String> {
    let var = |name: &str| -> Option<String> {
        if name == "CLAUDE_PROJECT_DIR" {
            Some(project.display().to_string())
        } else {
            std::env::var(name).ok()
        }
    };
    let command = command.trim_start();
    let mut out = String::with_capacity(command.len());
    let rest = match command.strip_prefix("~/") {
        Some(rest) => {
            out.push_str(&var("HOME")?);
            out.push('/');
            rest
        }
        None => command,
    };
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let braced = chars.peek() == Some(&'{');
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphanumeric() || n == '_' {
                name.push(n);
                chars.next();
            } else {
                break;
            }
        }
        if braced && chars.next() != Some('}') {
            return None;
        }
        if name.is_empty() {
            out.push('$');
            continue;
        }
        out.push_str(&var(&name)?);
    }
    Some(out)
}

/// Why root must not write `.claude/settings.json` under the canonical `dir`, and what to do
/// instead: a directory on the way that a user other than root could change. The project and
/// its `.claude` must be root's, writable by root only, and `.claude` a real directory; each
/// directory above the project must be root's and writable by root only, or sticky (like
/// `/tmp`, where no one else can rename root's entries). As `dir` is canonical, these are all
/// the directories on the way, and none of them is a link.
fn unsafe_for_root(dir: &Path) -> Option<(String, String)> {
    let places = [(dir.to_path_buf(), false), (dir.join(".claude"), false)]
        .into_iter()
        .chain(dir.ancestors().skip(1).map(|a| (a.to_path_buf(), true)));
    for (path, is_above) in places {
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let shown = path.display();
        if m.file_type().is_symlink() {
            return Some((
                format!("{shown} is a symbolic link"),
                "replace it with the directory it points to, or run install as the user who owns that directory".into(),
            ));
        }
        let owner = m.uid();
        if owner != 0 {
            let example = format!(
                "for example `sudo -u '#{owner}' attenu-hook install {}`",
                shell_quote(&dir.display().to_string())
            );
            return Some(if is_above {
                (
                    format!("{shown}, a directory above the project, belongs to uid {owner}"),
                    "move the project out of it, or run install as a user who owns the project"
                        .into(),
                )
            } else if path == dir {
                (
                    format!("{shown} belongs to uid {owner}"),
                    format!("run install as the project's owner, {example}"),
                )
            } else {
                (
                    format!("{shown} belongs to uid {owner}"),
                    format!("run install as its owner, {example}"),
                )
            });
        }
        let sticky = m.mode() & 0o1000 != 0;
        let writers = match (m.mode() & 0o020 != 0, m.mode() & 0o002 != 0) {
            _ if is_above && sticky => continue,
            (true, true) => "its group and by others",
            (true, false) => "its group",
            (false, true) => "others",
            (false, false) => continue,
        };
        return Some((
            format!("{shown} is writable by {writers}"),
            format!(
                "make it writable by its owner only (`chmod go-w {}`), or run install as the user who should own the project",
                shell_quote(&path.display().to_string())
            ),
        ));
    }
    None
}

/// The settings files Claude Code reads hooks from, most authoritative first: managed policy,
/// the user's (`CLAUDE_CONFIG_DIR`, else `~/.claude`), the project's and the local one.
fn settings_sources(project: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut out = vec![(
        "managed",
        PathBuf::from("/etc/claude-code/managed-settings.json"),
    )];
    let project_file = project.join(".claude").join("settings.json");
    if let Some(user_file) = user_config_dir().map(|d| d.join("settings.json")) {
        let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        // A project at the home directory: its settings are the user's, read once.
        if !same(&user_file, &project_file) {
            out.push(("user", user_file));
        }
    }
    out.push(("project", project_file));
    out.push(("local", project.join(".claude").join("settings.local.json")));
    out
}

/// The name in `.claude-plugin/plugin.json`: Claude Code's `enabledPlugins` names a plugin as
/// `name@marketplace`.
const PLUGIN_NAME: &str = "attenu-hook";

/// Every `enabledPlugins` key that turns the attenu-hook plugin on, with the scope of the
/// settings file that decides it. Each key is decided by the most specific file that sets it,
/// managed settings above all.
fn enabled_plugins(switches: &[(&'static str, String, bool)]) -> Vec<(String, &'static str)> {
    let mut keys: Vec<&String> = switches.iter().map(|(_, k, _)| k).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|key| {
            ["managed", "local", "project", "user"]
                .iter()
                .find_map(|scope| {
                    switches
                        .iter()
                        .find(|(s, k, _)| s == scope && k == key)
                        .map(|(s, _, on)| (*on, *s))
                })
                .filter(|(on, _)| *on)
                .map(|(_, scope)| (key.clone(), scope))
        })
        .collect()
}

/// `name@marketplace` for the attenu-hook plugin; a key without a marketplace names none.
fn is_our_plugin_key(key: &str) -> bool {
    key.split_once('@')
        .is_some_and(|(name, market)| name == PLUGIN_NAME && !market.is_empty())
}

/// An attenu-hook plugin that `enabledPlugins` turns on, as Claude Code would load it.
#[derive(Debug)]
struct PluginOn {
    key: String,
    /// Managed settings turn it on: its hooks then run even where only managed hooks may.
    by_managed: bool,
    /// Where the installation Claude Code uses for this project is, or why it uses none (no
    /// registry entry applies here, or it cannot read the registry); then it loads nothing.
    install_path: Result<PathBuf, String>,
}

/// Reads `enabledPlugins` from every settings file and, for each attenu-hook plugin it turns
/// on, where Claude Code installed it (`plugins/installed_plugins.json` in its user config
/// directory).
fn plugins_on(dir: &Path) -> Vec<PluginOn> {
    let mut switches = Vec::new();
    for (scope, path) in settings_sources(dir) {
        let Some(doc) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(t.trim_start_matches('\u{feff}')).ok())
        else {
            continue;
        };
        for (key, on) in doc
            .get("enabledPlugins")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if is_our_plugin_key(key) {
                switches.push((scope, key.clone(), on.as_bool() == Some(true)));
            }
        }
    }
    let on = enabled_plugins(&switches);
    if on.is_empty() {
        return Vec::new();
    }
    let registry = user_config_dir()
        .unwrap_or_else(|| PathBuf::from("~/.claude"))
        .join("plugins")
        .join("installed_plugins.json");
    let doc: Option<Value> = std::fs::read_to_string(&registry)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    on.into_iter()
        .map(|(key, scope)| PluginOn {
            install_path: installation_for(doc.as_ref(), &key, dir).map_err(|(why, remedy)| {
                format!(
                    "`enabledPlugins` turns on {key}, but {} {why}, so Claude Code loads no hook from it; {remedy}",
                    registry.display()
                )
            }),
            key,
            by_managed: scope == "managed",
        })
        .collect()
}

/// The installation of plugin `key` that Claude Code 2.1 loads in `project`, from its
/// registry `doc`: the first entry that applies there. A user or managed installation applies
/// everywhere; a project or local one where its `projectPath` is this project or in the same
/// git repository (a linked worktree counts as its main checkout). `Err` holds the end of the
/// sentence "the registry ..." and what to do.
fn installation_for(
    doc: Option<&Value>,
    key: &str,
    project: &Path,
) -> Result<PathBuf, (String, String)> {
    let none_here = || {
        (
            "lists no installation of it for this project".to_string(),
            format!("install it (`claude plugin install {key}`) or remove the entry"),
        )
    };
    let Some(doc) = doc else {
        return Err(none_here());
    };
    let entries: Vec<&Value> = if doc.get("version").and_then(Value::as_u64) == Some(2) {
        // One record it cannot read, under any plugin, and Claude Code reads none.
        let plugins = doc.get("plugins").and_then(Value::as_object);
        for (k, records) in plugins.into_iter().flatten() {
            // Claude Code sets aside, without failing, a key that is not a plugin id and npm
            // records it resolves elsewhere.
            let npm = k.to_ascii_lowercase().ends_with("@npm")
                && records.as_array().is_some_and(|a| {
                    a.iter()
                        .any(|r| r.as_object().is_some_and(|o| o.contains_key("npmResolved")))
                });
            if !is_plugin_id(k) || npm {
                continue;
            }
            if let Some(why) = unreadable_record(records) {
                return Err((
                    format!("has a record under {k} that Claude Code cannot read ({why}), and then it reads no installed plugin at all"),
                    format!("reinstall {k} (`claude plugin install {k}`), or fix that record"),
                ));
            }
        }
        plugins
            .and_then(|p| p.get(key))
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    } else {
        // Version 1: one user installation per key. (Claude Code recomputes its directory
        // under its plugin cache; this reads the one the file names.)
        doc.get("plugins")
            .and_then(|p| p.get(key))
            .or_else(|| doc.get(key))
            .into_iter()
            .collect()
    };
    let here = std::fs::canonicalize(project).ok();
    let repo = here.as_deref().and_then(git_root);
    entries
        .iter()
        .find(|e| {
            let scope = e.get("scope").and_then(Value::as_str);
            if matches!(scope, None | Some("user" | "managed")) {
                return true;
            }
            let Some(theirs) = e
                .get("projectPath")
                .and_then(Value::as_str)
                .and_then(|p| std::fs::canonicalize(p).ok())
            else {
                return false;
            };
            Some(&theirs) == here.as_ref() || (repo.is_some() && git_root(&theirs) == repo)
        })
        .and_then(|e| e.get("installPath").and_then(Value::as_str))
        .map(PathBuf::from)
        .ok_or_else(none_here)
}

/// Why Claude Code's registry schema rejects a plugin's records (version 2): a list of
/// objects, each with a known `scope`, a string `installPath`, and strings where it has
/// `projectPath`, `version` and the like.
fn unreadable_record(records: &Value) -> Option<String> {
    let Some(records) = records.as_array() else {
        return Some("not a list".into());
    };
    for r in records {
        let Some(r) = r.as_object() else {
            return Some("a record is not an object".into());
        };
        if !matches!(
            r.get("scope").and_then(Value::as_str),
            Some("user" | "managed" | "project" | "local")
        ) {
            return Some("a record has no scope of user, managed, project or local".into());
        }
        if !r.get("installPath").is_some_and(Value::is_string) {
            return Some("a record has no installPath".into());
        }
        for field in [
            "projectPath",
            "version",
            "installedAt",
            "lastUpdated",
            "gitCommitSha",
            "resolvedVersion",
        ] {
            if r.get(field).is_some_and(|v| !v.is_string()) {
                return Some(format!("a record's {field} is not a string"));
            }
        }
        if r.get("auto").is_some_and(|v| !v.is_boolean()) {
            return Some("a record's auto is not true or false".into());
        }
    }
    None
}

/// A plugin id as Claude Code's registry accepts one: `name@marketplace`, each part a letter
/// or digit followed by letters, digits, `-`, `.` or `_`.
fn is_plugin_id(key: &str) -> bool {
    let part = |p: &str| {
        p.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    };
    key.split_once('@')
        .is_some_and(|(name, market)| part(name) && part(market))
}

/// The root of the git checkout `dir` is in: the nearest directory at or above it that holds
/// `.git`; for a linked worktree, the main checkout it belongs to, as Claude Code maps it:
/// only when its git directory is `<common>/worktrees/<name>` with a `commondir` file, and
/// that directory's `gitdir` file links back to this worktree's `.git` (otherwise the
/// worktree counts as its own checkout).
fn git_root(dir: &Path) -> Option<PathBuf> {
    let top = dir
        .ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())?;
    let top = std::fs::canonicalize(top).ok()?;
    let dot_git = top.join(".git");
    if dot_git.is_dir() {
        return Some(top);
    }
    let main_checkout = || -> Option<PathBuf> {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let git_dir = top.join(text.trim().strip_prefix("gitdir:")?.trim());
        let plain = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
        if !plain(&git_dir.join("commondir")) || !plain(&git_dir.join("gitdir")) {
            return None;
        }
        let common_text = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
        let common = std::fs::canonicalize(git_dir.join(common_text.trim())).ok()?;
        let git_dir = std::fs::canonicalize(&git_dir).ok()?;
        if git_dir.parent()? != common.join("worktrees") {
            return None;
        }
        let back_text = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
        let back = std::fs::canonicalize(git_dir.join(back_text.trim())).ok()?;
        if back != dot_git {
            return None;
        }
        Some(match common.file_name() {
            Some(n) if n == ".git" => common.parent()?.to_path_buf(),
            _ => common,
        })
    };
    Some(main_checkout().unwrap_or(top))
}

/// The hooks an installed plugin gives Claude Code, each as a hooks document
/// (`{"hooks": {event: [groups]}}`), and what keeps any of them from loading.
#[derive(Debug, Default)]
struct PluginHooks {
    docs: Vec<Value>,
    problems: Vec<String>,
}

/// Reads an installed plugin's hooks as Claude Code 2.1 loads them: `hooks/hooks.json` when
/// it exists, always, and on top of it what the manifest's `hooks` adds (a `./….json` path
/// inside the plugin, the hooks themselves, or a list of those). A manifest Claude Code
/// rejects loads nothing at all, `hooks/hooks.json` included. A manifest entry naming
/// `hooks/hooks.json` again is loaded once.
fn installed_plugin_hooks(root: &Path) -> PluginHooks {
    let mut out = PluginHooks::default();
    // Claude Code drops a leading byte-order mark from the manifest, not from hooks files.
    let read = |file: &Path, bom_allowed: bool| -> Result<Value, String> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {} ({e})", file.display()))?;
        let text = if bom_allowed {
            text.trim_start_matches('\u{feff}')
        } else {
            &text
        };
        serde_json::from_str(text)
            .map_err(|e| format!("{} is not valid JSON ({e})", file.display()))
    };
    let manifest_file = root.join(".claude-plugin").join("plugin.json");
    let manifest = match std::fs::metadata(&manifest_file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        _ => match read(&manifest_file, true) {
            Ok(m) if m.is_object() => Some(m),
            Ok(_) => {
                out.problems
                    .push(format!("{} is not a JSON object", manifest_file.display()));
                return out;
            }
            Err(e) => {
                out.problems.push(e);
                return out;
            }
        },
    };
    let items: Vec<&Value> = match manifest.as_ref().and_then(|m| m.get("hooks")) {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => vec![],
    };
    // Claude Code validates the whole manifest first; one bad `hooks` item fails it.
    enum Listed<'a> {
        File(&'a str),
        Inline(&'a serde_json::Map<String, Value>),
    }
    let mut listed = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(events) => listed.push(Listed::Inline(events)),
            Value::String(rel) if rel.starts_with("./") && rel.ends_with(".json") => {
                listed.push(Listed::File(rel))
            }
            _ => {
                out.problems.push(format!(
                    "its manifest {} has the `hooks` entry {item}, which is neither a path of the form `./….json` nor hooks, and Claude Code rejects the manifest",
                    manifest_file.display()
                ));
                return out;
            }
        }
    }
    let root_real = std::fs::canonicalize(root).ok();
    let standard = root.join("hooks").join("hooks.json");
    let standard_real = std::fs::canonicalize(&standard).ok();
    match std::fs::metadata(&standard) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        _ => match read(&standard, false) {
            Ok(doc) => out.docs.push(doc),
            Err(e) => out.problems.push(e),
        },
    }
    for item in listed {
        match item {
            // Inline hooks map events to groups directly.
            Listed::Inline(events) => out.docs.push(json!({ "hooks": events })),
            Listed::File(rel) => {
                let file = root.join(rel);
                let real = std::fs::canonicalize(&file).ok();
                if real.is_some() && real == standard_real {
                    continue;
                }
                let inside = match (&real, &root_real) {
                    (Some(r), Some(root)) => r.starts_with(root),
                    _ => true,
                };
                if !inside {
                    out.problems.push(format!(
                        "its manifest names the hooks file {rel}, which is outside the plugin's directory, and Claude Code does not load it"
                    ));
                    continue;
                }
                match read(&file, false) {
                    Ok(doc) => out.docs.push(doc),
                    Err(e) => out.problems.push(e),
                }
            }
        }
    }
    if out.docs.is_empty() && out.problems.is_empty() {
        out.problems.push(format!(
            "it has no {} and its manifest names no hooks",
            standard.display()
        ));
    }
    out
}

/// The handlers a hooks document (`{"hooks": {event: [groups]}}`) declares, as wired by the
/// plugin installed at `root`.
fn plugin_handlers(doc: &Value, plugin: &PluginOn, root: &Path) -> Vec<Wired> {
    handlers_in(doc)
        .map(|(event, group, h)| Wired {
            event,
            scope: "plugin",
            matcher: group.get("matcher").cloned().unwrap_or(Value::Null),
            handler: h.clone(),
            plugin: Some(PluginRef {
                key: plugin.key.clone(),
                root: root.to_path_buf(),
                by_managed: plugin.by_managed,
            }),
        })
        .collect()
}

/// Every handler of the events the hook needs in a hooks document (a settings file, or a
/// plugin's hooks file): its event, the group it sits in, and the handler.
fn handlers_in(doc: &Value) -> impl Iterator<Item = (&'static str, &Value, &Value)> {
    EVENTS.iter().flat_map(move |&event| {
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
struct Wired {
    event: &'static str,
    scope: &'static str,
    matcher: Value,
    handler: Value,
    /// For a plugin's handler, which plugin.
    plugin: Option<PluginRef>,
}

/// The installed plugin a handler comes from.
struct PluginRef {
    key: String,
    /// Its install directory, `${CLAUDE_PLUGIN_ROOT}` in its commands.
    root: PathBuf,
    /// Managed settings turn it on: its hooks run even where only managed hooks may.
    by_managed: bool,
}

impl Wired {
    /// The command as Claude Code runs it: in a plugin's handler, `${CLAUDE_PLUGIN_ROOT}` is
    /// the plugin's directory (in a settings file it is not set).
    fn command(&self) -> Option<String> {
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
}

impl Wired {
    /// Why this handler does not make Claude Code wait for the hook on every call of its
    /// event, or `None` when it does.
    fn problem(&self) -> Option<String> {
        let event = self.event;
        let h = &self.handler;
        let tool_event = !matches!(event, "SessionStart" | "SubagentStart" | "SessionEnd");
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
fn distinct_commands<'a>(wired: impl Iterator<Item = &'a Wired>) -> Vec<String> {
    let mut commands: Vec<String> = wired.filter_map(Wired::command).collect();
    commands.sort_unstable();
    commands.dedup();
    commands
}

/// Runs every check on the project at `dir`.
pub fn doctor(dir: &Path) -> Vec<Check> {
    doctor_for(dir, &default_command())
}

/// [`doctor`], also counting handlers whose command is `ours` (the one `install --command`
/// just wrote) as attenu-hook's.
pub fn doctor_for(dir: &Path, ours: &str) -> Vec<Check> {
    let mut out = Vec::new();
    let mut wired: Vec<Wired> = Vec::new();
    let mut managed_only = false;
    let mut disable: Vec<(&'static str, String, bool)> = Vec::new();
    for (scope, path) in settings_sources(dir) {
        let shown = if matches!(scope, "project" | "local") {
            path.strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string()
        } else {
            path.display().to_string()
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.push(check(
                    "settings",
                    false,
                    true,
                    format!("cannot read {shown} ({e}); make it readable by this user, or doctor cannot say what it wires"),
                ));
                continue;
            }
        };
        let doc = match serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
            Ok(d) => d,
            Err(e) => {
                out.push(check(
                    "settings",
                    false,
                    true,
                    format!("{shown} is not valid JSON ({e}); fix it"),
                ));
                continue;
            }
        };
        if let Some(b) = doc.get("disableAllHooks").and_then(Value::as_bool) {
            disable.push((scope, shown.clone(), b));
        }
        if scope == "managed"
            && doc.get("allowManagedHooksOnly").and_then(Value::as_bool) == Some(true)
        {
            managed_only = true;
        }
        for (event, group, h) in handlers_in(&doc).filter(|(_, _, h)| is_ours(h, ours, dir)) {
            wired.push(Wired {
                event,
                scope,
                matcher: group.get("matcher").cloned().unwrap_or(Value::Null),
                handler: h.clone(),
                plugin: None,
            });
        }
    }
    for plugin in plugins_on(dir) {
        let key = &plugin.key;
        let root = match &plugin.install_path {
            Ok(root) => root,
            Err(why) => {
                out.push(check("plugin", false, false, why.clone()));
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
            out.push(check(
                "plugin",
                false,
                false,
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
    // `disableAllHooks` as Claude Code applies it: true in managed settings turns every hook
    // off; elsewhere the most specific scope that sets it decides (local, then project, then
    // user), and it turns off all but the managed hooks.
    let managed_off = disable.iter().find(|(s, _, b)| *s == "managed" && *b);
    let others_off = ["local", "project", "user"]
        .iter()
        .find_map(|scope| disable.iter().find(|(s, _, _)| s == scope))
        .filter(|(_, _, b)| *b);
    if let Some((_, shown, _)) = managed_off {
        out.push(check(
            "hooks-enabled",
            false,
            true,
            format!("{shown} sets \"disableAllHooks\": true, so Claude Code runs no hook: nothing is enforced or recorded"),
        ));
        wired.clear();
    } else if let Some((_, shown, _)) = others_off {
        if !wired.iter().any(|w| w.scope == "managed") {
            out.push(check(
                "hooks-enabled",
                false,
                true,
                format!("{shown} sets \"disableAllHooks\": true, so Claude Code runs only managed hooks, and attenu-hook is not among them: nothing is enforced or recorded; remove it"),
            ));
        }
        wired.retain(|w| w.scope == "managed");
    }
    let ignored = if managed_only {
        let before = wired.len();
        // A plugin that managed settings turn on runs its hooks there too.
        wired.retain(|w| w.scope == "managed" || w.plugin.as_ref().is_some_and(|p| p.by_managed));
        before - wired.len()
    } else {
        0
    };
    for event in EVENTS {
        let mine: Vec<&Wired> = wired.iter().filter(|w| w.event == *event).collect();
        let name = format!("wired:{event}");
        // SessionStart enforces nothing (every tool event opens the ledger itself), so its
        // wiring is checked but never required.
        let required = *event != "SessionStart";
        if mine.is_empty() {
            out.push(if ignored > 0 {
                check(&name, false, required, format!("managed settings set \"allowManagedHooksOnly\": true, so only hooks in /etc/claude-code/managed-settings.json run, and attenu-hook is wired for {event} elsewhere only; wire it there"))
            } else if !required {
                // Only a head start: every tool event opens the session's ledger itself.
                check(&name, false, false, "no attenu-hook handler for SessionStart, so each session's first tool call also creates its ledger, which makes that call slower; run `attenu-hook install`")
            } else {
                check(
                    &name,
                    false,
                    true,
                    format!("no attenu-hook handler for {event}; run `attenu-hook install`"),
                )
            });
            continue;
        }
        // Claude Code runs every handler of every scope (the same command once): two commands
        // record every call twice, and a gated call's second claim is denied as a replay.
        let commands = distinct_commands(mine.iter().copied());
        if commands.len() > 1 {
            out.push(check(
                &name,
                false,
                required,
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
            ));
            continue;
        }
        // One handler that sees every call and blocks on failure is enough; Claude Code runs
        // all matching handlers of all scopes.
        match mine.iter().find(|w| w.problem().is_none()) {
            Some(w) => out.push(check(
                &name,
                true,
                true,
                format!(
                    "timeout {}s, onFailure {}, every tool ({})",
                    w.handler
                        .get("timeout")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                    w.handler
                        .get("onFailure")
                        .and_then(Value::as_str)
                        .unwrap_or("unset"),
                    match &w.plugin {
                        Some(p) => format!("the plugin {}", p.key),
                        None => format!("{} settings", w.scope),
                    }
                ),
            )),
            None => out.push(check(
                &name,
                false,
                required,
                mine[0].problem().unwrap_or_default(),
            )),
        }
    }
    // Every handler's command, not just the first: a typo in one event's leaves that event
    // unhooked (or, with onFailure block, every call of it blocked).
    for command in distinct_commands(wired.iter()) {
        let plugin = wired
            .iter()
            .find(|w| w.command().as_deref() == Some(command.as_str()))
            .and_then(|w| w.plugin.as_ref());
        out.push(match (resolve_command(&command, dir), plugin) {
            (Some(p), None) => check("command", true, true, format!("`{command}` runs {}", p.display())),
            (Some(p), Some(plugin)) => check("command", true, true, format!("`{command}` runs {} (the plugin {})", p.display(), plugin.key)),
            (None, None) => check("command", false, true, format!("`{command}` does not resolve to an executable; install the binary there or fix the command")),
            (None, Some(plugin)) => check("command", false, true, format!("`{command}` (the plugin {}) does not resolve to an executable, so with onFailure block every call is blocked; build the binary into the plugin (see README.md) or turn the plugin off", plugin.key)),
        });
    }
    let attenu = dir.join(".attenu");
    match config::load(&attenu) {
        Ok(c) => {
            out.push(check("config", true, true, "valid (or defaults)"));
            out.extend(reviewer_check(&attenu, &c));
        }
        Err(e) => out.push(check(
            "config",
            false,
            true,
            format!("{e}; every call would be denied until it is fixed"),
        )),
    }
    match config::load(&attenu)
        .map_err(|e| e.to_string())
        .and_then(|c| derive_project(dir, &c.agents).map_err(|e| e.to_string()))
    {
        Ok(r) if r.problems.is_empty() => out.push(check(
            "derive",
            true,
            true,
            format!("{} agents, digest {}", r.agents.len(), &r.digest[..12]),
        )),
        Ok(r) => out.push(check(
            "derive",
            false,
            false,
            format!("{} problem(s): {}", r.problems.len(), r.problems.join("; ")),
        )),
        Err(e) => out.push(check("derive", false, true, e)),
    }
    if attenu.exists() {
        out.extend(permission_checks(&attenu));
        out.extend(ledger_checks(&attenu));
    } else {
        out.push(check(
            "state",
            true,
            false,
            ".attenu/ does not exist yet; the first hook call creates it (0700)",
        ));
    }
    out
}

/// A reviewer whose key is the project's own anchor key: `.attenu/anchor.key` is readable by
/// the user Claude Code runs as, so anything that can read it could sign authorizations.
fn reviewer_check(attenu: &Path, c: &config::Config) -> Option<Check> {
    if c.gate.reviewers.is_empty() {
        return None;
    }
    let anchor = crate::evidence::keys::load(&attenu.join("anchor.key")).ok()?;
    let public = crate::ledger::chain::hex(anchor.verifying().as_bytes());
    let named: Vec<&str> = c
        .gate
        .reviewers
        .iter()
        .filter(|(_, k)| k.eq_ignore_ascii_case(&public))
        .map(|(n, _)| n.as_str())
        .collect();
    Some(if named.is_empty() {
        check(
            "gate:reviewers",
            true,
            true,
            format!(
                "{} reviewer key(s), none of them the project's anchor key",
                c.gate.reviewers.len()
            ),
        )
    } else {
        check(
            "gate:reviewers",
            false,
            true,
            format!(
                "[gate] reviewers {} is the project's own anchor key (.attenu/anchor.key), which anything running as this user can read, so anything could sign authorizations; make a reviewer key outside the project with `attenu-hook keygen --out FILE` and configure its public key instead",
                named.join(", ")
            ),
        )
    })
}

fn permission_checks(attenu: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .map(|m| (m.permissions().mode() & 0o777, m.file_type().is_symlink()))
    };
    let is_dir = std::fs::symlink_metadata(attenu).is_ok_and(|m| m.is_dir());
    match mode(attenu) {
        Ok((_, true)) => out.push(check(
            "perm:.attenu",
            false,
            true,
            ".attenu is a symlink; replace it with a real directory",
        )),
        Ok(_) if !is_dir => out.push(check(
            "perm:.attenu",
            false,
            true,
            ".attenu is not a directory, so every hook call is denied; move it aside",
        )),
        Ok((m, _)) if m & 0o077 != 0 => out.push(check(
            "perm:.attenu",
            false,
            true,
            format!(".attenu is {m:o}; run `chmod 700 .attenu`"),
        )),
        Ok(_) => out.push(check("perm:.attenu", true, true, "0700")),
        Err(e) => out.push(check("perm:.attenu", false, true, e.to_string())),
    }
    for e in std::fs::read_dir(attenu).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let secret = name == "anchor.key"
            || name.starts_with("ledger-")
            || name.starts_with("gate.sqlite")
            || name.starts_with("bundle-");
        if !secret {
            continue;
        }
        match mode(&e.path()) {
            Ok((_, true)) => out.push(check(
                &format!("perm:{name}"),
                false,
                true,
                format!("{name} is a symlink; move it aside"),
            )),
            Ok((m, _)) if m & 0o077 != 0 => out.push(check(
                &format!("perm:{name}"),
                false,
                true,
                format!("{name} is {m:o}; run `chmod 600 .attenu/{name}`"),
            )),
            _ => {}
        }
    }
    if out.len() == 1 && out[0].ok {
        out.push(check(
            "perm:files",
            true,
            true,
            "keys, ledgers, bundles and the gate database are 0600",
        ));
    }
    out
}

fn ledger_checks(attenu: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    // Loaded, never created: without the key no checkpoint can be checked, only the chains.
    let mac_key = crate::evidence::keys::load(&attenu.join("anchor.key"))
        .ok()
        .map(|k| k.checkpoint_mac_key());
    let mut names: Vec<_> = std::fs::read_dir(attenu)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ledger-") && n.ends_with(".jsonl"))
        .collect();
    names.sort();
    for name in names {
        let state_name = name.replace(".jsonl", ".state.json");
        // The checkpoint before the ledger: a hook writes the ledger (and fsyncs it) before its
        // checkpoint, so a ledger read after its checkpoint is never older than it.
        let checkpoint = mac_key.as_ref().and_then(|key| {
            let (sealed, _) =
                crate::fsutil::read_owned(&attenu.join(&state_name), store::MAX_CHECKPOINT_BYTES)
                    .ok()??;
            store::unseal_checkpoint(&sealed, key)
        });
        // Never through a symlink, never blocking on a FIFO; u64::MAX: a ledger has no bound.
        let bytes = match crate::fsutil::read_owned(&attenu.join(&name), u64::MAX) {
            Ok(Some((b, _))) => b,
            Ok(None) => continue,
            Err(e) => {
                out.push(check(
                    &format!("ledger:{name}"),
                    false,
                    true,
                    format!("cannot read: {}", String::from(e)),
                ));
                continue;
            }
        };
        let cut = store::whole_lines_len(&bytes);
        // The chain first (an edit is reported where it is), then whether the file still holds
        // what its checkpoint recorded (a cut or an older copy, which verify as chains).
        let lost = checkpoint.filter(|c| !store::holds_checkpointed_prefix(c, &bytes));
        out.push(match (store::scan(&bytes[..cut]), lost) {
            (Ok(_), Some(prior)) => check(
                &format!("ledger:{name}"),
                false,
                true,
                format!(
                    "no longer holds what its checkpoint records ({} bytes then, {} now): entries were removed, or an older copy was put back. Keep it and its checkpoint ({state_name}) for review, and move both aside to start a new ledger",
                    prior.stamp.len,
                    bytes.len(),
                ),
            ),
            (Ok(s), None) => check(
                &format!("ledger:{name}"),
                true,
                true,
                format!(
                    "verifies: {} chain(s), {} entries{}",
                    s.chains.len(),
                    s.chains.iter().map(|c| c.entries).sum::<u64>(),
                    if cut < bytes.len() { "; a torn final line will be moved aside by the next call" } else { "" }
                ),
            ),
            (Err(e), _) => check(&format!("ledger:{name}"), false, true, format!("does not verify ({e}); move it and its checkpoint ({state_name}) aside to start a new ledger, keep them for review")),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_idempotent_and_keeps_other_hooks() {
        let mut doc: Doc =
            serde_json::from_str(r#"{"model":"x","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint"}]}]}}"#).unwrap();
        assert_eq!(
            merge(&mut doc, "attenu-hook", false, Path::new("/nonexistent"))
                .unwrap()
                .len(),
            EVENTS.len()
        );
        assert!(
            merge(&mut doc, "attenu-hook", false, Path::new("/nonexistent"))
                .unwrap()
                .is_empty()
        );
        let v = doc.to_value();
        assert_eq!(v["model"], "x");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint");
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            text.starts_with(r#"{"model":"x","hooks":{"PreToolUse":[{"matcher":"Bash""#),
            "order kept: {text}"
        );
    }

    #[test]
    fn resolves_quoted_project_commands() {
        let dir = std::env::temp_dir();
        assert!(resolve_command("\"$CLAUDE_PROJECT_DIR\"/nope/attenu-hook", &dir).is_none());
        assert!(resolve_command("sh -c true", &dir).is_some());
    }

    /// The plugin's own wiring is what `install` writes: every event, no matcher, onFailure
    /// block, a timeout in range. Otherwise doctor would fail every project using the plugin.
    #[test]
    fn the_packaged_plugin_hooks_pass_doctors_checks() {
        let doc: Value = serde_json::from_str(include_str!("../hooks/hooks.json")).unwrap();
        let plugin = PluginOn {
            key: "attenu-hook@m".into(),
            by_managed: false,
            install_path: Err(String::new()),
        };
        let wired = plugin_handlers(&doc, &plugin, Path::new("/plugins/attenu-hook"));
        for event in EVENTS {
            let mine: Vec<&Wired> = wired.iter().filter(|w| w.event == *event).collect();
            assert_eq!(mine.len(), 1, "{event}");
            assert_eq!(mine[0].problem(), None, "{event}");
            assert_eq!(
                mine[0].command().as_deref(),
                Some("\"/plugins/attenu-hook\"/bin/attenu-hook"),
                "{event}"
            );
        }
    }

    #[test]
    fn the_most_specific_settings_file_turns_the_plugin_on_or_off() {
        let key = "attenu-hook@market".to_string();
        let on = |v: &[(&'static str, bool)]| {
            let switches: Vec<_> = v.iter().map(|(s, b)| (*s, key.clone(), *b)).collect();
            !enabled_plugins(&switches).is_empty()
        };
        assert!(on(&[("user", true)]));
        assert!(!on(&[("user", true), ("project", false)]));
        assert!(on(&[("project", false), ("local", true)]));
        assert!(!on(&[("local", true), ("managed", false)]));
        assert!(!on(&[]));
        assert!(is_our_plugin_key("attenu-hook@market"));
        for not in [
            "attenu-hook",
            "attenu-hook@",
            "attenu-hooks@market",
            "x@attenu-hook",
        ] {
            assert!(!is_our_plugin_key(not), "{not}");
        }
    }
}
