//! Operator setup: `install` wires the hook into `.claude/settings.json`; `doctor` checks the
//! wiring, the command, permissions, configuration, derivation and ledgers.

use crate::config;
use crate::derive::derive_project;
use crate::ledger::store;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
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

fn is_ours(h: &Value) -> bool {
    h.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains("attenu-hook"))
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

/// Merges the hook block into `settings` (a parsed settings document); returns what changed.
pub fn merge(settings: &mut Doc, command: &str) -> Result<Vec<String>, String> {
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
        let mut found = false;
        for group in groups.iter_mut() {
            let Some(Doc::Arr(handlers)) = group.member_mut("hooks") else {
                continue;
            };
            for h in handlers.iter_mut().filter(|h| is_ours(&h.to_value())) {
                found = true;
                if h.to_value().get("onFailure").and_then(Value::as_str) != Some("block") {
                    h.set("onFailure", Doc::Str("block".into()))
                        .ok_or("a handler is not an object")?;
                    changes.push(format!(
                        "{event}: set \"onFailure\": \"block\" on the existing attenu-hook handler"
                    ));
                }
                if !h
                    .to_value()
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .is_some_and(|t| (2..=600).contains(&t))
                {
                    h.set("timeout", Doc::Num(TIMEOUT_S.into()))
                        .ok_or("a handler is not an object")?;
                    changes.push(format!(
                        "{event}: set \"timeout\": {TIMEOUT_S} on the existing attenu-hook handler"
                    ));
                }
            }
        }
        if !found {
            groups.push(Doc::Obj(vec![(
                "hooks".into(),
                Doc::Arr(vec![handler_doc(command)]),
            )]));
            changes.push(format!(
                "{event}: added the attenu-hook handler (no matcher: every tool)"
            ));
        }
    }
    Ok(changes)
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

/// `attenu-hook install [DIR] [--local] [--command CMD]`.
pub fn install(
    dir: &Path,
    local: bool,
    command: Option<&str>,
) -> Result<(PathBuf, Vec<String>), String> {
    let claude = dir.join(".claude");
    std::fs::create_dir_all(&claude)
        .map_err(|e| format!("cannot create {}: {e}", claude.display()))?;
    let path = claude.join(if local {
        "settings.local.json"
    } else {
        "settings.json"
    });
    let mut doc = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => Doc::Obj(vec![]),
        Ok(text) => match serde_json::from_str::<Doc>(text.trim_start_matches('\u{feff}')) {
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Doc::Obj(vec![]),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let command = command.map(str::to_string).unwrap_or_else(default_command);
    let changes = merge(&mut doc, &command)?;
    if !changes.is_empty() {
        let text = serde_json::to_string_pretty(&doc).expect("JSON") + "\n";
        crate::fsutil::write_atomic(&path, text.as_bytes(), true)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644));
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
pub fn resolve_command(command: &str, project: &Path) -> Option<PathBuf> {
    let expanded = command
        .replace("${CLAUDE_PROJECT_DIR}", &project.display().to_string())
        .replace("$CLAUDE_PROJECT_DIR", &project.display().to_string());
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for ch in expanded.trim_start().chars() {
        match (quote, ch) {
            (None, '"' | '\'') => quote = Some(ch),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => break,
            (_, c) => word.push(c),
        }
    }
    if word.contains('/') {
        let p = PathBuf::from(&word);
        let p = if p.is_absolute() { p } else { project.join(p) };
        is_executable(&p).then_some(p)
    } else {
        which(&word)
    }
}

/// Runs every check on the project at `dir`.
pub fn doctor(dir: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let mut handlers: Vec<(String, Value)> = Vec::new();
    for file in ["settings.json", "settings.local.json"] {
        let path = dir.join(".claude").join(file);
        match std::fs::read_to_string(&path) {
            Err(_) => continue,
            Ok(text) => match serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}')) {
                Err(e) => out.push(check(
                    "settings",
                    false,
                    true,
                    format!(".claude/{file} is not valid JSON ({e}); fix it"),
                )),
                Ok(doc) => {
                    for event in EVENTS {
                        for group in doc
                            .pointer(&format!("/hooks/{event}"))
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                        {
                            let matcher =
                                group.get("matcher").and_then(Value::as_str).unwrap_or("");
                            for h in group
                                .get("hooks")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                                .filter(|h| is_ours(h))
                            {
                                let mut h = h.clone();
                                h["__matcher"] = json!(matcher);
                                handlers.push((event.to_string(), h));
                            }
                        }
                    }
                }
            },
        }
    }
    for event in EVENTS {
        let mine: Vec<&Value> = handlers
            .iter()
            .filter(|(e, _)| e == event)
            .map(|(_, h)| h)
            .collect();
        let name = format!("wired:{event}");
        let Some(h) = mine.first() else {
            out.push(if *event == "SessionStart" {
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
        };
        let matcher = h["__matcher"].as_str().unwrap_or("");
        let on_failure = h.get("onFailure").and_then(Value::as_str);
        let timeout = h.get("timeout").and_then(Value::as_u64);
        // SessionStart enforces nothing (every tool event opens the ledger itself), so its
        // wiring is checked but never required.
        let required = *event != "SessionStart";
        if !(matcher.is_empty() || matcher == "*") {
            let skipped = if required {
                "other tools skip the hook"
            } else {
                "other session starts skip it"
            };
            out.push(check(
                &name,
                false,
                required,
                format!(
                    "the {event} handler has matcher '{matcher}', so {skipped}; remove the matcher"
                ),
            ));
        } else if required && on_failure != Some("block") {
            out.push(check(&name, false, required, format!("the {event} handler lacks \"onFailure\": \"block\", so a crash or timeout lets calls through; run `attenu-hook install`")));
        } else if !timeout.is_some_and(|t| (2..=600).contains(&t)) {
            out.push(check(&name, false, required, format!("the {event} handler's timeout {timeout:?} is not between 2 and 600 seconds; set it to {TIMEOUT_S}")));
        } else {
            out.push(check(
                &name,
                true,
                true,
                format!(
                    "timeout {}s, onFailure {}, every tool",
                    timeout.unwrap_or(0),
                    on_failure.unwrap_or("unset")
                ),
            ));
        }
    }
    if let Some((_, h)) = handlers.first() {
        let command = h.get("command").and_then(Value::as_str).unwrap_or("");
        out.push(match resolve_command(command, dir) {
            Some(p) => check("command", true, true, format!("`{command}` runs {}", p.display())),
            None => check("command", false, true, format!("`{command}` does not resolve to an executable; install the binary there or fix the command")),
        });
    }
    let attenu = dir.join(".attenu");
    match config::load(&attenu) {
        Ok(_) => out.push(check("config", true, true, "valid (or defaults)")),
        Err(e) => out.push(check(
            "config",
            false,
            true,
            format!("{e}; every call would be denied until it is fixed"),
        )),
    }
    match config::load(&attenu)
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

fn permission_checks(attenu: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .map(|m| (m.permissions().mode() & 0o777, m.file_type().is_symlink()))
    };
    match mode(attenu) {
        Ok((_, true)) => out.push(check(
            "perm:.attenu",
            false,
            true,
            ".attenu is a symlink; replace it with a real directory",
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
        assert_eq!(merge(&mut doc, "attenu-hook").unwrap().len(), EVENTS.len());
        assert!(merge(&mut doc, "attenu-hook").unwrap().is_empty());
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
}
