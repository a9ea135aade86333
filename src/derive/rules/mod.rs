//! Permission rules with arguments (`Bash(git tag:*)`, `Read(./src/**)`,
//! `WebFetch(domain:docs.rs)`), read as Claude Code 2.1.332 reads them. Derivation keeps each
//! rule as written (canonical tool name, then the specifier); the decision
//! (`policy::arguments`) reads it again with [`ArgRule::read`] and matches the call.
//!
//! * In an agent's `tools`, a rule with arguments grants its tool **only for the calls a rule
//!   matches** ([`Rules`]; a bare name beside it grants the whole tool);
//! * in `permissions.deny` and `permissions.ask`, it binds every subagent ([`SettingsRule`]);
//! * in `permissions.allow`, it widens nothing (left to Claude Code, listed as unrepresented).

pub mod path;
pub mod shell;

use super::scopes::{canonical_tool, scope_for_tool_name};
pub use path::{PathContext, PathPattern};
pub use shell::ShellPattern;
use std::collections::{BTreeMap, BTreeSet};

/// Scope → the rules (as written) under which it is held: a scope listed here is held only
/// for a call one of them matches. A scope held outright is not listed.
pub type Rules = BTreeMap<String, BTreeSet<String>>;

/// A rule's tool and specifier: `Bash(git tag:*)` is `("Bash", Some("git tag:*"))`. `None`
/// for a text that is not `Name` or `Name(…)`.
pub fn split(rule: &str) -> Option<(&str, Option<&str>)> {
    let rule = rule.trim();
    let (name, args) = match rule.find('(') {
        Some(open) if rule.ends_with(')') => {
            (rule[..open].trim(), Some(&rule[open + 1..rule.len() - 1]))
        }
        Some(_) => return None,
        None => (rule, None),
    };
    let valid = name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    valid.then(|| {
        (
            canonical_tool(name),
            args.map(str::trim).filter(|a| !a.is_empty() && *a != "*"),
        )
    })
}

/// The rule as the roster keeps it: the canonical tool name and the specifier.
pub fn written(tool: &str, spec: &str) -> String {
    format!("{tool}({spec})")
}

/// One rule's specifier, read for its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgRule {
    /// `Bash(…)`: the command of each simple command.
    Shell(ShellPattern),
    /// `Read(…)`, `Edit(…)`, `Write(…)`, `NotebookEdit(…)`, `Glob(…)`, `Grep(…)`: the path.
    Path(PathPattern),
    /// `WebFetch(domain:…)`: the URL's host.
    Domain(String),
    /// A specifier the hook does not read (another tool's, or one that does not parse): it
    /// matches no call, so a grant under it holds for none and a denial under it refuses all.
    Unread(String),
}

/// Tools whose rules name a path.
pub const FILE_TOOLS: &[&str] = &["Read", "Edit", "Write", "NotebookEdit", "Glob", "Grep"];

impl ArgRule {
    /// Reads the rule `tool(spec)`.
    pub fn read(tool: &str, spec: &str) -> ArgRule {
        match tool {
            "Bash" => ArgRule::Shell(ShellPattern::parse(spec)),
            t if FILE_TOOLS.contains(&t) => match PathPattern::parse(spec) {
                Some(p) => ArgRule::Path(p),
                None => ArgRule::Unread(format!("{tool}({spec}) names no path")),
            },
            "WebFetch" => match spec.strip_prefix("domain:").map(str::trim) {
                Some(d) if !d.is_empty() && !d.contains('/') => ArgRule::Domain(normal_host(d)),
                _ => ArgRule::Unread(format!(
                    "WebFetch({spec}) is not of the form WebFetch(domain:HOST)"
                )),
            },
            _ => ArgRule::Unread(format!(
                "the hook does not read the arguments of {tool}; list {tool} without arguments to hold the whole tool"
            )),
        }
    }
}

/// A host as rules compare it: as a WHATWG parser reads it (lowercase, IDNA), trailing dots
/// dropped; a leading `*.` kept.
pub fn normal_host(host: &str) -> String {
    let host = host.trim_end_matches('.');
    let (star, name) = match host.strip_prefix("*.") {
        Some(rest) => ("*.", rest),
        None => ("", host),
    };
    let name = match url::Host::parse(name) {
        Ok(url::Host::Domain(d)) => d,
        _ => name.to_ascii_lowercase(),
    };
    format!("{star}{}", name.trim_end_matches('.'))
}

/// Whether `host` (normalized) is named by a `domain:` rule's host: exactly, `*` for all, or
/// `*.example.com` for every name under it (not `example.com` itself), as Claude Code reads it.
pub fn domain_matches(rule: &str, host: &str) -> bool {
    let host = normal_host(host);
    if rule == "*" {
        return true;
    }
    match rule.strip_prefix("*.") {
        Some(suffix) => host
            .strip_suffix(suffix)
            .and_then(|h| h.strip_suffix('.'))
            .is_some_and(|label| {
                !label.is_empty() && !label.starts_with('.') && !label.contains("..")
            }),
        None => rule == host,
    }
}

/// The scopes a settings rule on `tool` binds: Claude Code applies a `Read` rule to every tool
/// that reads files and an `Edit` rule to every tool that edits them; a denial of commands binds
/// Monitor too, which runs one.
pub fn bound_scopes(tool: &str) -> Vec<String> {
    let tools: &[&str] = match tool {
        "Read" => &["Read", "Grep", "Glob"],
        "Edit" | "Write" | "NotebookEdit" => &["Edit", "Write", "NotebookEdit"],
        "Bash" => &["Bash", "Monitor"],
        other => return vec![scope_for_tool_name(other)],
    };
    tools.iter().map(|t| scope_for_tool_name(t)).collect()
}

/// What a settings rule does to a subagent's call it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// `permissions.deny`: refused.
    Deny,
    /// `permissions.ask`: Claude Code would ask; the hook cannot, so refused.
    Ask,
}

/// A `permissions.deny` or `permissions.ask` rule the decision applies to each call (a bare
/// denial is also taken out of the derived sets; a denial with arguments only here).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SettingsRule {
    pub kind: RuleKind,
    /// As written in the settings.
    pub rule: String,
    /// The settings file, from `.claude/`.
    pub file: String,
}

/// The settings rules of `deny` and `ask` (with their files) the decision applies: every ask
/// rule, and the deny rules with arguments (a bare denial is already out of every set).
pub fn settings_rules(
    deny: &[String],
    deny_from: &[String],
    ask: &[String],
    ask_from: &[String],
) -> Vec<SettingsRule> {
    let with_args = |r: &String| split(r).is_some_and(|(_, a)| a.is_some());
    let mut out: Vec<SettingsRule> = Vec::new();
    for (i, r) in deny.iter().enumerate().filter(|(_, r)| with_args(r)) {
        out.push(SettingsRule {
            kind: RuleKind::Deny,
            rule: r.trim().to_string(),
            file: deny_from.get(i).cloned().unwrap_or_default(),
        });
    }
    for (i, r) in ask.iter().enumerate() {
        out.push(SettingsRule {
            kind: RuleKind::Ask,
            rule: r.trim().to_string(),
            file: ask_from.get(i).cloned().unwrap_or_default(),
        });
    }
    out.sort_by(|a, b| (a.kind == RuleKind::Ask, &a.rule).cmp(&(b.kind == RuleKind::Ask, &b.rule)));
    out.dedup_by(|a, b| a.kind == b.kind && a.rule == b.rule);
    out
}

/// Every rule of `rules`, for the `derive` output and the ledger's context.
pub fn flat(rules: &Rules) -> BTreeSet<&str> {
    rules.values().flatten().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_split_into_tool_and_specifier() {
        assert_eq!(split("Bash(git tag:*)"), Some(("Bash", Some("git tag:*"))));
        assert_eq!(split(" Task(ops) "), Some(("Agent", Some("ops"))));
        assert_eq!(split("Bash(*)"), Some(("Bash", None)));
        assert_eq!(split("Read()"), Some(("Read", None)));
        assert_eq!(split("Read"), Some(("Read", None)));
        assert_eq!(split("Read(x"), None);
        assert_eq!(split("9x(y)"), None);
    }

    #[test]
    fn domains_match_exactly_or_below_a_star() {
        for (rule, host, want) in [
            ("docs.rs", "docs.rs", true),
            ("docs.rs", "DOCS.RS.", true),
            ("docs.rs", "evil-docs.rs", false),
            ("docs.rs", "a.docs.rs", false),
            ("*.docs.rs", "a.docs.rs", true),
            ("*.docs.rs", "a.b.docs.rs", true),
            ("*.docs.rs", "docs.rs", false),
            ("*.docs.rs", "adocs.rs", false),
            ("*", "anything", true),
        ] {
            assert_eq!(domain_matches(rule, host), want, "{rule} ~ {host}");
        }
        assert!(domain_matches(
            &normal_host("B\u{fc}cher.de"),
            "xn--bcher-kva.de"
        ));
        assert!(domain_matches(
            &normal_host("*.B\u{fc}cher.de"),
            "a.xn--bcher-kva.de"
        ));
        assert_eq!(
            ArgRule::read("WebFetch", "domain:Docs.RS"),
            ArgRule::Domain("docs.rs".into())
        );
        assert!(matches!(
            ArgRule::read("WebFetch", "https://docs.rs"),
            ArgRule::Unread(_)
        ));
        assert!(matches!(
            ArgRule::read("Skill", "deploy"),
            ArgRule::Unread(_)
        ));
    }

    #[test]
    fn settings_rules_keep_every_ask_and_the_denials_with_arguments() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let rules = settings_rules(
            &s(&["Bash", "Bash(rm *)", "Read(./secrets/**)"]),
            &s(&["settings.json", "settings.json", "settings.local.json"]),
            &s(&["WebFetch", "Bash(git push:*)"]),
            &s(&["settings.json", "settings.json"]),
        );
        let got: Vec<(RuleKind, &str)> = rules.iter().map(|r| (r.kind, r.rule.as_str())).collect();
        assert_eq!(
            got,
            [
                (RuleKind::Deny, "Bash(rm *)"),
                (RuleKind::Deny, "Read(./secrets/**)"),
                (RuleKind::Ask, "Bash(git push:*)"),
                (RuleKind::Ask, "WebFetch"),
            ]
        );
        assert_eq!(rules[1].file, "settings.local.json");
    }
}
