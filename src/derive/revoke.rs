//! The operator's live revocation, `.attenu/revoke`: read on every call, so it narrows a
//! running session at once, although the session's roster is pinned when it starts.
//!
//! One entry a line; `#` starts a comment:
//!
//! ```text
//! reviewer            every call of subagent type `reviewer` is denied
//! ops: Bash, WebFetch those tools of `ops` are denied (a tools line, as in an agent file)
//! *                   every subagent holds nothing (the main thread is not affected)
//! ```
//!
//! A name matches as Claude Code matches an `Agent` call's `subagent_type`: exactly, or
//! lowercased without white space, `-` or `_`. The file only ever takes authority away. It
//! costs one `open` per call when it is absent and one small read when present, whatever the
//! roster's size. A file that cannot be read (not ours, a link, larger than
//! [`MAX_BYTES`], not UTF-8) revokes every subagent until it is fixed: it is the operator's
//! word in an incident, and a broken one is not taken for "nothing revoked".

use super::compat;
use super::frontmatter::split_rules;
use super::scopes::{declared_at, set_covers, Declared, Site};
use std::collections::BTreeSet;
use std::path::Path;

/// The file, in the state directory.
pub const FILE: &str = "revoke";
/// Larger than this, the file is not read (and every subagent is revoked).
pub const MAX_BYTES: u64 = 64 << 10;

/// What `.attenu/revoke` takes away.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Revocations {
    entries: Vec<Entry>,
    /// Why the file could not be read, when it could not: every subagent is revoked.
    broken: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// 1-based.
    line: usize,
    text: String,
    /// `*` for every subagent.
    agent: String,
    /// The scopes taken; `None`: everything.
    scopes: Option<BTreeSet<String>>,
}

/// The revocations in force: none when the file is absent.
pub fn read(attenu_dir: &Path) -> Revocations {
    let path = attenu_dir.join(FILE);
    match crate::fs::read_owned(&path, MAX_BYTES) {
        Ok(None) => Revocations::default(),
        Ok(Some((bytes, _))) => match String::from_utf8(bytes) {
            Ok(text) => parse(&text),
            Err(_) => broken("it is not UTF-8".into()),
        },
        Err(e) => broken(e.to_string()),
    }
}

fn broken(why: String) -> Revocations {
    Revocations {
        entries: vec![],
        broken: Some(why),
    }
}

/// Reads the file's text. A line naming tools that cannot be read as a tools line revokes
/// the whole agent: the file never narrows less than it was meant to.
pub fn parse(text: &str) -> Revocations {
    let entries = text
        .lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                return None;
            }
            let (agent, tools) = match line.split_once(':') {
                Some((a, t)) => (a.trim(), Some(t)),
                None => (line, None),
            };
            Some(Entry {
                line: i + 1,
                text: line.to_string(),
                agent: agent.to_string(),
                scopes: tools.and_then(scopes_of),
            })
        })
        .collect();
    Revocations {
        entries,
        broken: None,
    }
}

/// The scopes a tools line names; `None` (everything) for `*`, an empty list, or a rule that
/// cannot be read.
fn scopes_of(tools: &str) -> Option<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for rule in split_rules(tools) {
        match declared_at(&rule, Site::AgentDisallowed) {
            Declared::Scopes(s) | Declared::WholeTool(s, _) => out.extend(s),
            Declared::Ruled(s, _) => _ = out.insert(s),
            Declared::All | Declared::Unrepresented(_) => return None,
        }
    }
    compat::take_with_bash(&mut out);
    (!out.is_empty()).then_some(out)
}

impl Revocations {
    /// Why subagent type `ty` may not use `scope`, when the file says so: the sentence
    /// names the line to remove.
    pub fn revokes(&self, ty: &str, scope: &str) -> Option<String> {
        if let Some(why) = &self.broken {
            return Some(format!(
                ".attenu/revoke cannot be read ({why}), so every subagent is revoked until it is fixed or removed"
            ));
        }
        let e = self.entries.iter().find(|e| {
            let named = e.agent == "*"
                || e.agent == ty
                || compat::spawned_agent(&e.agent, std::iter::once(&ty.to_string())).is_some();
            named && e.scopes.as_ref().is_none_or(|s| set_covers(s, scope))
        })?;
        Some(format!(
            "line {} of .attenu/revoke (`{}`) revokes it from subagent '{ty}'; remove that line (or run `attenu-hook revoke --restore {}`) when the incident is over",
            e.line, e.text, e.agent
        ))
    }

    /// Whether nothing is revoked.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.broken.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_revokes_an_agent_or_some_of_its_tools() {
        let r = parse("# incident 12\nreviewer\nops: Bash, WebFetch  # for now\n\n");
        assert!(r.revokes("reviewer", "fs.read").is_some());
        // Matched as Claude Code matches a subagent_type.
        assert!(r.revokes("Reviewer", "fs.read").is_some());
        let bash = r.revokes("ops", "exec.bash").unwrap();
        assert!(bash.contains("line 3"), "{bash}");
        // Taking Bash takes Monitor, as in disallowedTools.
        assert!(r.revokes("ops", "exec.monitor").is_some());
        assert!(r.revokes("ops", "net.fetch").is_some());
        assert!(r.revokes("ops", "fs.read").is_none());
        assert!(r.revokes("builder", "exec.bash").is_none());
        assert!(parse("").is_empty());
    }

    #[test]
    fn a_star_or_an_unreadable_line_revokes_more_never_less() {
        let all = parse("*\n");
        assert!(all.revokes("anyone", "fs.read").is_some());
        let tools = parse("*: Write\n");
        assert!(tools.revokes("anyone", "fs.write").is_some());
        assert!(tools.revokes("anyone", "fs.read").is_none());
        for unreadable in ["ops: Bash(", "ops: *", "ops:"] {
            let r = parse(unreadable);
            assert!(r.revokes("ops", "fs.read").is_some(), "{unreadable}");
        }
        assert!(broken("x".into()).revokes("ops", "fs.read").is_some());
    }
}
