//! The settings document `install` edits ([`Doc`], which keeps a person's member order) and
//! the merge that brings its hook block to what the hook needs.

use super::shell::split_command;
use super::wiring::{
    is_ours, machine_specific, restricting_matcher, what_it_sees, EVENTS, TIMEOUT_S,
};
use serde_json::Value;
use std::path::Path;

/// Why a settings document cannot take the hook block: its shape is not what Claude Code reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("the settings file is not a JSON object; fix it by hand first")]
    NotAnObject,
    #[error("`hooks` in the settings is not an object; fix it by hand first")]
    HooksNotAnObject,
    #[error("`hooks.{0}` is not a list; fix it by hand first")]
    EventNotAList(&'static str),
    #[error("a handler is not an object")]
    HandlerNotAnObject,
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
    events: &[&'static str],
    command: &str,
    explicit: bool,
    project: &Path,
) -> Result<Vec<String>, MergeError> {
    let mut changes = Vec::new();
    let hooks = settings
        .member_or_insert("hooks", Doc::Obj(vec![]))
        .ok_or(MergeError::NotAnObject)?;
    for &event in events {
        let groups = hooks
            .member_or_insert(event, Doc::Arr(vec![]))
            .ok_or(MergeError::HooksNotAnObject)?;
        let Doc::Arr(groups) = groups else {
            return Err(MergeError::EventNotAList(event));
        };
        merge_event(groups, event, command, explicit, project, &mut changes)?;
    }
    Ok(changes)
}

/// Our handlers whose command is this machine's absolute path. One that names an
/// `attenu-hook` executable (what `install` wrote before it wired commit-safe commands) is
/// rewritten to `command`; a wrapper the operator chose with `--command` is kept. Returns what
/// changed and the commands kept. Only for the shared `settings.json`, and only when the
/// operator did not pass `--command`.
pub fn replace_machine_paths(
    settings: &mut Doc,
    command: &str,
    project: &Path,
) -> (Vec<String>, Vec<String>) {
    let (mut changes, mut kept) = (Vec::new(), Vec::new());
    let Some(hooks) = settings.member_mut("hooks") else {
        return (changes, kept);
    };
    let versioned = super::claude_version::VERSIONED_EVENTS
        .iter()
        .map(|(e, _)| e);
    for event in EVENTS.iter().chain(versioned) {
        let Some(Doc::Arr(groups)) = hooks.member_mut(event) else {
            continue;
        };
        for group in groups {
            let Some(Doc::Arr(handlers)) = group.member_mut("hooks") else {
                continue;
            };
            for h in handlers {
                let v = h.to_value();
                let Some(current) = v.get("command").and_then(Value::as_str) else {
                    continue;
                };
                if !machine_specific(current) || !is_ours(&v, command, project) {
                    continue;
                }
                let (program, _) = split_command(current);
                let by_name = Path::new(&program)
                    .file_name()
                    .is_some_and(|n| n == "attenu-hook");
                if by_name && h.set("command", Doc::Str(command.into())).is_some() {
                    changes.push(format!(
                        "{event}: set the attenu-hook handler's command to `{command}` (was `{current}`, a path only this machine has)"
                    ));
                } else if !kept.iter().any(|k| k == current) {
                    kept.push(current.to_string());
                }
            }
        }
    }
    (changes, kept)
}

/// A group's matcher and which of its handlers are ours.
type GroupRead = (Option<String>, Vec<bool>);

/// [`merge`] for one event's groups.
fn merge_event(
    groups: &mut Vec<Doc>,
    event: &str,
    command: &str,
    explicit: bool,
    project: &Path,
    changes: &mut Vec<String>,
) -> Result<(), MergeError> {
    // Each group's matcher and which of its handlers are ours, read once: `is_ours` may
    // resolve commands on disk.
    let read: Vec<GroupRead> = groups
        .iter()
        .map(|g| {
            let v = g.to_value();
            let ours = match v.get("hooks") {
                Some(Value::Array(hs)) => hs.iter().map(|h| is_ours(h, command, project)).collect(),
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
            fix_handler(&mut handlers[hi], event, command, explicit, changes)?;
        }
    }
    let removed = remove_others(groups, &read, keep);
    if !removed.under_matcher.is_empty() {
        changes.push(format!(
            "{event}: removed the attenu-hook handler from the group with matcher '{}', where it saw only matching calls",
            removed.under_matcher.join("', '")
        ));
    }
    if removed.beside > 0 {
        changes.push(format!(
            "{event}: removed {} more attenu-hook handler(s): Claude Code would run each, and record every call more than once",
            removed.beside
        ));
    }
    if keep.is_some() {
        return Ok(());
    }
    let command = match (explicit, &removed.kept_command) {
        (false, Some(kept)) if !upgrades(kept, command) => kept.as_str(),
        _ => command,
    };
    groups.push(Doc::Obj(vec![(
        "hooks".into(),
        Doc::Arr(vec![handler_doc(command)]),
    )]));
    changes.push(format!(
        "{event}: added the attenu-hook handler (no matcher: {})",
        what_it_sees(event)
    ));
    Ok(())
}

/// Our handlers [`remove_others`] took out of an event's groups.
#[derive(Default)]
struct Removed {
    /// The matchers of the groups they sat under, one per handler.
    under_matcher: Vec<String>,
    /// How many sat beside the kept one, in groups without a matcher.
    beside: usize,
    /// The first one's command, for the handler added when none was kept.
    kept_command: Option<String>,
}

/// Removes every handler of ours but the one at `keep`, and a group left with no handler.
fn remove_others(
    groups: &mut Vec<Doc>,
    read: &[GroupRead],
    keep: Option<(usize, usize)>,
) -> Removed {
    let mut removed = Removed::default();
    let mut emptied = Vec::new();
    for (gi, (group, (matcher, flags))) in groups.iter_mut().zip(read).enumerate() {
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
            if removed.kept_command.is_none() {
                removed.kept_command = v.get("command").and_then(Value::as_str).map(String::from);
            }
            match matcher {
                Some(m) => removed.under_matcher.push(m.clone()),
                None => removed.beside += 1,
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
    removed
}

/// Brings one of our handlers, already in a group without a matcher, to what the hook needs.
fn fix_handler(
    h: &mut Doc,
    event: &str,
    command: &str,
    explicit: bool,
    changes: &mut Vec<String>,
) -> Result<(), MergeError> {
    let v = h.to_value();
    let not_object = || MergeError::HandlerNotAnObject;
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
    if !explicit && upgrades(current, command) {
        h.set("command", Doc::Str(command.into()))
            .ok_or_else(not_object)?;
        changes.push(format!(
            "{event}: set the attenu-hook handler's command to `{command}` (was `{current}`): the launcher tells a teammate without the binary what to install"
        ));
    } else if explicit && current != command {
        h.set("command", Doc::Str(command.into()))
            .ok_or_else(not_object)?;
        changes.push(format!(
            "{event}: set the attenu-hook handler's command to `{command}` (was `{current}`)"
        ));
    }
    Ok(())
}

/// Whether a plain `install` replaces `current` by `command`: the commands it wired before the
/// launcher (`attenu-hook` from PATH, the bare link) become the launcher, which runs either
/// and explains a missing binary instead of blocking in silence.
fn upgrades(current: &str, command: &str) -> bool {
    command == super::wiring::LAUNCHER_COMMAND
        && [super::wiring::LINKED_COMMAND, "attenu-hook"].contains(&current.trim())
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
        match self {
            Doc::Null => s.serialize_unit(),
            Doc::Bool(b) => s.serialize_bool(*b),
            Doc::Num(n) => n.serialize(s),
            Doc::Str(v) => s.serialize_str(v),
            Doc::Arr(items) => s.collect_seq(items),
            Doc::Obj(members) => s.collect_map(members.iter().map(|(k, v)| (k, v))),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Doc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Doc, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> serde::de::Visitor<'de> for DocVisitor {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_idempotent_and_keeps_other_hooks() {
        let mut doc: Doc =
            serde_json::from_str(r#"{"model":"x","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint"}]}]}}"#).unwrap();
        assert_eq!(
            merge(
                &mut doc,
                EVENTS,
                "attenu-hook",
                false,
                Path::new("/nonexistent")
            )
            .unwrap()
            .len(),
            EVENTS.len()
        );
        assert!(merge(
            &mut doc,
            EVENTS,
            "attenu-hook",
            false,
            Path::new("/nonexistent")
        )
        .unwrap()
        .is_empty());
        let v = doc.to_value();
        assert_eq!(v["model"], "x");
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint");
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            text.starts_with(r#"{"model":"x","hooks":{"PreToolUse":[{"matcher":"Bash""#),
            "order kept: {text}"
        );
    }
}
