//! Permission rules with arguments, at call time (the rules: `crate::derive::rules`).
//!
//! * [`grant`]: a caller that holds a tool only under rules (`tools: Bash(git tag:*)`) may make
//!   the call only if its rules match it: for Bash, **every** simple command of the line
//!   ([`super::command`], grant mode); for a file tool, every file the path reaches; for
//!   WebFetch, the URL's host.
//! * [`settings`]: a `permissions.deny` rule with arguments, or any `permissions.ask` rule,
//!   that matches the call refuses it (for Bash, if **any** command of the line matches, or
//!   if a part of the line cannot be read), whatever the caller holds.

use super::command::{self, Mode, Simple};
use super::reach::Reach;
use crate::derive::rules::{self, ArgRule, PathContext, RuleKind, SettingsRule};
use crate::derive::scopes::{canonical_tool, covers, declared_at, Declared, Site};
use crate::reason::{Code, Reason};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where a call is made: what its relative paths and a rule's path forms are read against.
#[derive(Debug, Clone, Copy)]
pub struct Where<'a> {
    pub project_root: &'a Path,
    pub reach: &'a Reach,
}

impl Where<'_> {
    fn paths(&self) -> PathContext<'_> {
        PathContext {
            project_root: self.project_root,
            home: self.reach.home.as_deref(),
        }
    }
}

/// What a call's arguments are, as its tool's rules read them.
enum Subject {
    Command(String),
    /// Every file the call's path can reach: as written (made absolute) and as resolved; for a
    /// search (`search`), the directories searched.
    Paths {
        paths: Vec<PathBuf>,
        search: bool,
    },
    Host(String),
    /// The tool's arguments are not read by any rule.
    Other,
}

/// Who is asking, as a refusal names them.
#[derive(Debug, Clone, Copy)]
pub struct Holder<'a> {
    /// `subagent 'x'`, `the session`.
    pub who: &'a str,
    /// Where its rules are declared (`.claude/agents/x.md`).
    pub declared_in: &'a str,
}

/// Whether `rules` (the caller's rules for the call's scope) match the call.
pub fn grant(
    rules: &BTreeSet<String>,
    tool_name: &str,
    input: &Value,
    at: Where<'_>,
    holder: Holder<'_>,
) -> Result<(), Reason> {
    let tool = canonical_tool(tool_name);
    let read: Vec<ArgRule> = rules.iter().filter_map(|r| read(r)).collect();
    let listed = rules.iter().cloned().collect::<Vec<_>>().join(", ");
    let unmatched = |what: String| {
        Reason::new(
            Code::ArgumentRuleUnmatched,
            format!(
                "{what} matches none of the rules {} holds {tool} under ({listed}, in {}); add a rule that names it to that tools line, or list {tool} without arguments to grant the whole tool",
                holder.who, holder.declared_in
            ),
        )
    };
    match subject(tool, input, at) {
        Subject::Command(line) => {
            let simples = command::simple_commands(&line, Mode::Grant).map_err(|r| {
                Reason::new(
                    Code::ArgumentUnprovable,
                    format!(
                        "{tool} was refused at {}: {} holds {tool} only for commands its rules match ({listed}, in {}), and every command a line runs must be shown to match one; run plain commands (lists, pipes and subshells of them are fine), or list {tool} without arguments to grant the whole tool",
                        r.0, holder.who, holder.declared_in
                    ),
                )
            })?;
            for s in &simples {
                let hit = read
                    .iter()
                    .any(|r| matches!(r, ArgRule::Shell(p) if p.matches(&s.text)));
                if !hit {
                    return Err(unmatched(format!("the command `{}`", short(&s.text))));
                }
            }
            Ok(())
        }
        Subject::Paths { paths, search } => {
            for p in &paths {
                let hit = read
                    .iter()
                    .any(|r| matches!(r, ArgRule::Path(pp) if path_hit(pp, p, search, at)));
                if !hit {
                    return Err(unmatched(format!("the path {}", p.display())));
                }
            }
            Ok(())
        }
        Subject::Host(host) => {
            let hit = read
                .iter()
                .any(|r| matches!(r, ArgRule::Domain(d) if rules::domain_matches(d, &host)));
            if hit {
                Ok(())
            } else {
                Err(unmatched(format!("the host {host}")))
            }
        }
        Subject::Other => Err(unmatched(format!("a {tool} call"))),
    }
}

/// A rule as the roster keeps it, read.
fn read(rule: &str) -> Option<ArgRule> {
    match rules::split(rule)? {
        (tool, Some(spec)) => Some(ArgRule::read(tool, spec)),
        (_, None) => None,
    }
}

/// The settings rules that refuse the call, checked in Claude Code's order (deny, then ask).
/// `asks`: the caller is a subagent, which Claude Code's ask rules would stop for a question
/// the hook cannot put.
pub fn settings(
    list: &[SettingsRule],
    asks: bool,
    scope: &str,
    tool_name: &str,
    input: &Value,
    at: Where<'_>,
) -> Result<(), Reason> {
    let tool = canonical_tool(tool_name);
    let mut subject = None;
    for r in list.iter().filter(|r| asks || r.kind == RuleKind::Deny) {
        let Some((rule_tool, spec)) = rules::split(&r.rule) else {
            continue;
        };
        let hit = match (declared_at(&r.rule, Site::Settings), spec) {
            (Declared::Scopes(s), _) => s.iter().any(|p| covers(p, scope)).then(String::new),
            (_, Some(spec)) if rules::bound_scopes(rule_tool).iter().any(|s| s == scope) => {
                let subject = subject.get_or_insert_with(|| self::subject(tool, input, at));
                settings_hit(r, rule_tool, spec, subject, at)?
            }
            _ => None,
        };
        if let Some(what) = hit {
            return Err(settings_reason(r, tool, &what));
        }
    }
    Ok(())
}

/// Whether one settings rule with arguments matches the call (`Some`: what it matched).
fn settings_hit(
    r: &SettingsRule,
    rule_tool: &str,
    spec: &str,
    subject: &Subject,
    at: Where<'_>,
) -> Result<Option<String>, Reason> {
    let unprovable = |why: String| {
        Reason::new(
            Code::ArgumentUnprovable,
            format!(
                "{why}, so the hook cannot show that the call escapes permissions.{} {} in .claude/{}, which binds subagents; run plain commands, or narrow that rule",
                kind_word(r.kind),
                r.rule,
                r.file
            ),
        )
    };
    Ok(match (ArgRule::read(rule_tool, spec), subject) {
        (ArgRule::Shell(p), Subject::Command(line)) => {
            let simples = command::simple_commands(line, Mode::Deny)
                .map_err(|refused| unprovable(format!("the command line has {}", refused.0)))?;
            simples
                .iter()
                .find(|s: &&Simple| p.matches(&s.text) || s.forms.iter().any(|f| p.matches(f)))
                .map(|s| format!("the command `{}`", short(&s.text)))
        }
        (ArgRule::Path(pp), Subject::Paths { paths, search }) => paths
            .iter()
            .find(|p| path_hit(&pp, p, *search, at))
            .map(|p| format!("the path {}", p.display())),
        (ArgRule::Domain(d), Subject::Host(h)) => {
            rules::domain_matches(&d, h).then(|| format!("the host {h}"))
        }
        (ArgRule::Unread(why), _) => return Err(unprovable(why)),
        // A rule whose kind of argument the call does not have (a Bash rule beside Monitor's
        // missing command): nothing to match.
        _ => None,
    })
}

fn kind_word(kind: RuleKind) -> &'static str {
    match kind {
        RuleKind::Deny => "deny",
        RuleKind::Ask => "ask",
    }
}

fn settings_reason(r: &SettingsRule, tool: &str, what: &str) -> Reason {
    let matched = if what.is_empty() {
        String::new()
    } else {
        format!(" (it matches {what})")
    };
    match r.kind {
        RuleKind::Deny => Reason::new(
            Code::SettingsDenyRule,
            format!(
                "{tool} is refused by permissions.deny {} in .claude/{}{matched}, which binds subagents as it binds the session; remove or narrow that rule if the call should run",
                r.rule, r.file
            ),
        ),
        RuleKind::Ask => Reason::new(
            Code::SettingsAskRule,
            format!(
                "{tool} matches permissions.ask {} in .claude/{}{matched}: Claude Code would ask first, and a hook cannot ask for a subagent, so it is refused; run it from the main thread, or move the rule to permissions.allow if subagents may run it unasked",
                r.rule, r.file
            ),
        ),
    }
}

/// Whether `pattern` names `path`; for a search, the directory or everything in it (a child
/// no literal name could be, which only wildcards match, stands for "everything").
fn path_hit(pattern: &rules::PathPattern, path: &Path, search: bool, at: Where<'_>) -> bool {
    pattern.matches(path, at.paths()) || (search && pattern.matches(&path.join("\0"), at.paths()))
}

/// A command shortened for a sentence.
fn short(s: &str) -> String {
    let mut cut: String = s.chars().take(80).collect();
    if cut.len() < s.len() {
        cut.push('…');
    }
    cut
}

/// What the call of `tool` with `input` is, for its rules.
fn subject(tool: &str, input: &Value, at: Where<'_>) -> Subject {
    let str_of = |k: &str| input.get(k).and_then(Value::as_str);
    match tool {
        "Bash" | "Monitor" => Subject::Command(str_of("command").unwrap_or_default().to_string()),
        "Read" | "Write" | "Edit" => Subject::Paths {
            paths: paths(str_of("file_path"), "file_path", at),
            search: false,
        },
        "NotebookEdit" => Subject::Paths {
            paths: paths(str_of("notebook_path"), "notebook_path", at),
            search: false,
        },
        "Grep" => Subject::Paths {
            paths: paths(str_of("path").or(Some(".")), "path", at),
            search: true,
        },
        "Glob" => {
            let mut found = paths(str_of("path").or(Some(".")), "path", at);
            // A pattern that climbs out (`../x/*`, `/etc/*`) reaches its own directory too.
            let pattern = str_of("pattern").unwrap_or_default();
            let fixed: Vec<&str> = pattern
                .split('/')
                .take_while(|s| !s.contains(['*', '?', '[', '{']))
                .collect();
            if !fixed.is_empty() && (pattern.starts_with('/') || fixed.contains(&"..")) {
                let base = found.first().cloned().unwrap_or_default();
                let dir = base.join(fixed.join("/"));
                found.extend(rules::path::normalize(&dir));
            }
            // And where that directory leads: Claude Code searches its canonical path, so
            // `/p/docs/link/*` lists what `docs/link` links to.
            for dir in at.reach.of("glob") {
                if !found.contains(dir) {
                    found.push(dir.clone());
                }
            }
            Subject::Paths {
                paths: found,
                search: true,
            }
        }
        "WebFetch" => match str_of("url").and_then(host_of) {
            Some(h) => Subject::Host(h),
            None => Subject::Host(String::new()),
        },
        _ => Subject::Other,
    }
}

/// The files input `key` (`written`) can reach: as written, made absolute against the call's
/// directory, and every resolution the edge found.
fn paths(written: Option<&str>, key: &str, at: Where<'_>) -> Vec<PathBuf> {
    let Some(w) = written else {
        return vec![PathBuf::new()];
    };
    let base = at.reach.cwd.as_deref().unwrap_or(at.project_root);
    let expanded = match (w.strip_prefix("~/"), at.reach.home.as_deref()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => base.join(w),
    };
    let mut out: Vec<PathBuf> = rules::path::normalize(&expanded).into_iter().collect();
    if out.is_empty() {
        // Not a path any rule can name (it climbs above `/`): matched by none.
        out.push(PathBuf::new());
    }
    for p in at.reach.of(key) {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// The host of a URL as a WHATWG parser (Claude Code's `new URL`) reads it: tabs and newlines
/// dropped, `\\` ending the authority, percent-escapes decoded, IDNA applied. A URL without a
/// scheme is read as `https://`. `None` when it has no host.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = match url::Url::parse(url) {
        Err(url::ParseError::RelativeUrlWithoutBase) => url::Url::parse(&format!("https://{url}")),
        read => read,
    }
    .ok()?;
    let host = match parsed.host()? {
        url::Host::Domain(d) => d.to_string(),
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => a.to_string(),
    };
    (!host.is_empty()).then(|| rules::normal_host(&host))
}

#[cfg(test)]
#[path = "arguments_tests.rs"]
mod tests;
