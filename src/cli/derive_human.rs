//! The `--derive --human` text: grouped (the pool and who inherits it, then the agents with
//! their own lists, then those that hold nothing), delegation summarized, wrapped to the
//! terminal's width, coloured only on a terminal.

use super::terminal::Terminal;
use crate::derive::explain::{Account, Origins};
use crate::derive::provenance::PoolSource;
use crate::derive::readable;
use crate::derive::scopes::delegate_scope;
use crate::derive::{AgentAuthority, Roster};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// How the text is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub width: usize,
    pub colour: bool,
}

impl Style {
    /// By the one terminal policy ([`Terminal`]): `COLUMNS` wide when at least 40, else 100.
    pub fn for_stdout() -> Style {
        Style::of(Terminal::stdout())
    }

    fn of(t: Terminal) -> Style {
        Style {
            width: t.columns.filter(|w| *w >= 40).unwrap_or(100),
            colour: t.colour,
        }
    }

    #[cfg(test)]
    fn from(
        tty: bool,
        columns: Option<&str>,
        no_color: Option<&std::ffi::OsStr>,
        term: Option<&str>,
    ) -> Style {
        Style::of(Terminal::from(tty, columns, no_color, term))
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn heading(&self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// The whole text.
pub fn render(root: &Path, r: &Roster, account: &Account, style: Style) -> String {
    let names: Vec<&String> = r.agents.keys().collect();
    let mut s = format!("project  {}\ndigest   {}\n\n", root.display(), r.digest);
    let plain = without_delegation(&r.root);
    let delegates = delegation(|x| holds_all(&r.root, &r.root_excluded, x), &names);
    s.push_str(&style.heading(&format!(
        "session root: {} scope(s){}\n",
        plain.len(),
        delegates.as_ref().map_or(String::new(), |d| format!(", {d}"))
    )));
    s.push_str(&wrap(&readable_all(&plain), 2, style.width));
    if !r.root_excluded.is_empty() {
        let except = format!("except {}", readable_all(&r.root_excluded).join(", "));
        s.push_str(&format!("  {}\n", style.paint("33", &except)));
    }
    if !r.root_rules.is_empty() {
        let rules: Vec<&str> = crate::derive::rules::flat(&r.root_rules)
            .into_iter()
            .collect();
        let only = format!("only for calls matching {}", rules.join(", "));
        s.push_str(&words(&only, 2, style.width));
    }
    rules_section(&mut s, r, style);
    s.push('\n');
    pool_section(&mut s, r, account, style);
    agent_sections(&mut s, r, &names, style);
    if !r.unrepresented.is_empty() {
        s.push_str(&style.heading("unrepresented (argument-scoped rules, left to Claude Code)\n"));
        for u in &r.unrepresented {
            s.push_str(&words(u, 2, style.width));
        }
    }
    if !r.problems.is_empty() {
        s.push_str(&style.heading("\nproblems\n"));
        for p in &r.problems {
            s.push_str(&style.paint("31", &words(p, 2, style.width)));
        }
    }
    format!("{}\n", s.trim_end())
}

/// The settings' rules that bind every subagent at each call.
fn rules_section(s: &mut String, r: &Roster, style: Style) {
    if r.settings_rules.is_empty() {
        return;
    }
    s.push_str(&style.heading("\nsettings rules that bind every subagent\n"));
    for rule in &r.settings_rules {
        let what = match rule.kind {
            crate::derive::rules::RuleKind::Deny => "refuses",
            crate::derive::rules::RuleKind::Ask => "refuses (a hook cannot ask)",
        };
        let line = format!(
            "{} in .claude/{} {what} the calls it matches",
            rule.rule, rule.file
        );
        s.push_str(&words(&line, 2, style.width));
    }
}

/// What an agent without `tools` holds (delegation aside), and why each entry is there.
fn pool_section(s: &mut String, r: &Roster, account: &Account, style: Style) {
    let inheriting = r.why.inheriting.len();
    if inheriting == 0 {
        s.push_str(&style.heading("session pool: no agent inherits it"));
        s.push_str(" (every agent lists its own tools)\n\n");
        return;
    }
    let how = match account.source {
        PoolSource::Derived => "permissions.allow and the tools the agents list",
        PoolSource::Configured => "[derive] session_pool in .attenu/config.toml",
    };
    s.push_str(&style.heading(&words(
        &format!(
            "session pool: held by the {inheriting} agent(s) without a `tools` list; from {how}"
        ),
        0,
        style.width,
    )));
    if account.pool.is_empty() {
        s.push_str(&format!(
            "  {}\n",
            style.paint(
                "31",
                "(empty: agents that inherit it may use no tool; add tools to permissions.allow)"
            )
        ));
    }
    let width = account
        .pool
        .keys()
        .map(|k| readable::scope(k).chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    for (scope, origins) in &account.pool {
        let line = |indent| match r.why.deny_rule(scope) {
            Some(d) => style.paint(
                "33",
                &words(
                    &format!("denied by permissions.deny {} in {}", d.rule, d.file),
                    indent,
                    style.width,
                ),
            ),
            None => words(&origin_text(origins), indent, style.width),
        };
        s.push_str(&beside(&readable::scope(scope), width, line));
    }
    s.push('\n');
}

fn origin_text(o: &Origins) -> String {
    let mut parts: Vec<String> = o
        .allow
        .iter()
        .map(|f| format!("permissions.allow in {f}"))
        .collect();
    if o.session_pool {
        parts.push("[derive] session_pool".into());
    }
    if !o.agents.is_empty() {
        parts.push(format!("tools of {}", few(&o.agents, 4)));
    }
    parts.join("; ")
}

/// The agents, grouped: inheriting (by what they hold), with their own list, holding nothing.
fn agent_sections(s: &mut String, r: &Roster, names: &[&String], style: Style) {
    let pool: BTreeSet<String> = if r.why.pool == PoolSource::Configured {
        without_delegation(&r.why.configured)
            .into_iter()
            .filter(|x| r.why.deny_rule(x).is_none())
            .collect()
    } else {
        without_delegation(&r.root)
    };
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut own = Vec::new();
    let mut nothing = Vec::new();
    for (name, a) in &r.agents {
        if let Some(why) = &a.invalid {
            nothing.push((name, why));
        } else if r.why.inheriting.contains(name) {
            let held = without_delegation(&a.scopes);
            let less: Vec<String> = pool.difference(&held).cloned().collect();
            let mut what = "the pool".to_string();
            if !less.is_empty() {
                what.push_str(&format!(" without {}", readable_all(&less).join(", ")));
            }
            with_details(&mut what, a, names);
            groups.entry(what).or_default().push(name.clone());
        } else {
            own.push((name, a));
        }
    }
    if !groups.is_empty() {
        let n: usize = groups.values().map(Vec::len).sum();
        s.push_str(&style.heading(&format!("agents that inherit the pool ({n})\n")));
        for (what, members) in &groups {
            s.push_str(&format!("  {what}:\n"));
            s.push_str(&wrap(members, 4, style.width));
        }
        s.push('\n');
    }
    if !own.is_empty() {
        s.push_str(&style.heading(&format!("agents with their own tools ({})\n", own.len())));
        let col = own
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            .min(24);
        for (name, a) in own {
            let mut items = readable_all(&without_delegation(&a.scopes));
            let mut tail = String::new();
            with_details(&mut tail, a, names);
            if items.is_empty() && tail.is_empty() {
                items.push("(none)".into());
            }
            if let Some(t) = tail.strip_prefix(", ") {
                items.push(t.to_string());
            }
            s.push_str(&labelled(name, col, &items, style.width));
        }
        s.push('\n');
    }
    if !nothing.is_empty() {
        s.push_str(&style.heading(&format!("agents that hold nothing ({})\n", nothing.len())));
        for (name, why) in nothing {
            s.push_str(&format!("  {name}\n"));
            s.push_str(&style.paint("31", &words(why, 4, style.width)));
        }
        s.push('\n');
    }
}

/// Appends the agent's delegation and its exclusions to `what`.
fn with_details(what: &mut String, a: &AgentAuthority, names: &[&String]) {
    if let Some(d) = delegation(|x| a.holds(x), names) {
        what.push_str(&format!(", {d}"));
    }
    if !a.excluded.is_empty() {
        what.push_str(&format!(
            ", except {}",
            readable_all(&a.excluded).join(", ")
        ));
    }
    if !a.rules.is_empty() {
        let rules: Vec<&str> = crate::derive::rules::flat(&a.rules).into_iter().collect();
        what.push_str(&format!(", only for calls matching {}", rules.join(", ")));
    }
}

/// "may delegate to every agent (N)", a few names, or nothing.
fn delegation(holds: impl Fn(&str) -> bool, names: &[&String]) -> Option<String> {
    let may: Vec<String> = names
        .iter()
        .filter(|n| holds(&delegate_scope(n)))
        .map(|n| n.to_string())
        .collect();
    let (k, n) = (may.len(), names.len());
    if k == 0 {
        None
    } else if k == n {
        Some(format!("may delegate to every agent ({n})"))
    } else if n - k <= 3 && k > 3 {
        let not: Vec<String> = names
            .iter()
            .filter(|x| !may.contains(x))
            .map(|x| x.to_string())
            .collect();
        Some(format!(
            "may delegate to every agent but {} ({k} of {n})",
            not.join(", ")
        ))
    } else {
        Some(format!("may delegate to {} ({k} of {n})", few(&may, 6)))
    }
}

fn holds_all(held: &BTreeSet<String>, excluded: &BTreeSet<String>, scope: &str) -> bool {
    crate::derive::scopes::holds(held, scope) && !crate::derive::scopes::holds(excluded, scope)
}

fn without_delegation(scopes: &BTreeSet<String>) -> BTreeSet<String> {
    scopes
        .iter()
        .filter(|s| !s.starts_with("agent.delegate."))
        .cloned()
        .collect()
}

fn readable_all<'a>(scopes: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    scopes.into_iter().map(|s| readable::scope(s)).collect()
}

/// Up to `max` names, then how many more.
fn few(names: &[String], max: usize) -> String {
    if names.len() <= max {
        return names.join(", ");
    }
    format!("{} and {} more", names[..max].join(", "), names.len() - max)
}

/// `text` wrapped at its spaces into lines of at most `width` (a word longer than a line
/// stands alone), each indented by `indent`.
fn words(text: &str, indent: usize, width: usize) -> String {
    let tokens: Vec<String> = text
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    fill(&tokens, indent, width)
}

/// `items` joined with ", " in lines of at most `width`, each indented by `indent`. An item
/// is broken (at its spaces) only when it is longer than a line.
fn wrap(items: &[String], indent: usize, width: usize) -> String {
    let room = width.saturating_sub(indent);
    let mut tokens = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        if piece.chars().count() <= room {
            tokens.push(piece);
        } else {
            tokens.extend(piece.split(' ').filter(|w| !w.is_empty()).map(String::from));
        }
    }
    fill(&tokens, indent, width)
}

/// `tokens` separated by spaces, greedily in lines of at most `width`, indented by `indent`.
fn fill(tokens: &[String], indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let room = width.saturating_sub(indent);
    for token in tokens {
        let len = line.chars().count();
        if len > 0 && len + 1 + token.chars().count() > room {
            out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(token);
    }
    if !line.is_empty() {
        out.push_str(&format!("{}{line}\n", " ".repeat(indent)));
    }
    out
}

/// `name` in a column `col` wide, then `items` wrapped beside it (below it when it is wider).
fn labelled(name: &str, col: usize, items: &[String], width: usize) -> String {
    beside(name, col, |indent| {
        wrap(items, indent, width.max(indent + 20))
    })
}

/// `name` in a column `col` wide, then the lines `body(indent)` gives, the first beside it.
fn beside(name: &str, col: usize, body: impl Fn(usize) -> String) -> String {
    let indent = 2 + col + 2;
    let body = body(indent);
    let len = name.chars().count();
    if len > col {
        return format!("  {name}\n{body}");
    }
    let pad = format!("  {name}{}  ", " ".repeat(col - len));
    match body.get(indent..) {
        Some(rest) => format!("{pad}{rest}"),
        None => format!("  {name}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wrap_to_the_width_and_long_names_go_above() {
        let items: Vec<String> = (0..30).map(|i| format!("fs.scope{i}")).collect();
        let text = labelled("agent", 6, &items, 60);
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        assert!(text.starts_with("  agent   fs.scope0, "), "{text}");
        assert!(text.lines().skip(1).all(|l| l.starts_with("          fs.")));
        let names: Vec<String> = (0..12).map(|i| format!("Agent {i} Expert")).collect();
        let text = wrap(&names, 4, 40);
        assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
        assert!(
            text.lines()
                .all(|l| l.trim_end().ends_with("Expert,") || l.ends_with("Expert")),
            "{text}"
        );
        let long = labelled("a-very-long-agent-name", 6, &items[..1], 60);
        assert_eq!(long, "  a-very-long-agent-name\n          fs.scope0\n");
        assert_eq!(labelled("x", 3, &[], 60), "  x\n");
    }

    #[test]
    fn delegation_is_summarized() {
        let names: Vec<String> = (0..8).map(|i| format!("a{i}")).collect();
        let refs: Vec<&String> = names.iter().collect();
        let held = |n: usize| {
            let set: BTreeSet<String> = names[..n].iter().map(|a| delegate_scope(a)).collect();
            delegation(move |s| set.contains(s), &refs)
        };
        assert_eq!(held(8).unwrap(), "may delegate to every agent (8)");
        assert_eq!(
            held(6).unwrap(),
            "may delegate to every agent but a6, a7 (6 of 8)"
        );
        assert_eq!(held(2).unwrap(), "may delegate to a0, a1 (2 of 8)");
        assert_eq!(held(0), None);
        let any = delegation(|_| true, &refs).unwrap();
        assert_eq!(any, "may delegate to every agent (8)");
    }

    #[test]
    fn width_and_colour_come_from_the_terminal_and_the_environment() {
        use std::ffi::OsStr;
        let of =
            |tty, cols, nc: Option<&str>, term| Style::from(tty, cols, nc.map(OsStr::new), term);
        assert_eq!(
            of(true, None, None, Some("xterm")),
            Style {
                width: 100,
                colour: true
            }
        );
        assert_eq!(
            of(false, Some("80"), None, None),
            Style {
                width: 80,
                colour: false
            }
        );
        assert!(!of(true, None, Some("1"), None).colour, "NO_COLOR");
        assert!(
            of(true, None, Some(""), None).colour,
            "an empty NO_COLOR is unset"
        );
        assert!(!of(true, None, None, Some("dumb")).colour);
        for odd in ["", "x", "12", "-5"] {
            assert_eq!(of(false, Some(odd), None, None).width, 100, "{odd}");
        }
    }

    #[test]
    fn colour_only_when_asked() {
        let on = Style {
            width: 80,
            colour: true,
        };
        let off = Style {
            width: 80,
            colour: false,
        };
        assert_eq!(on.heading("x"), "\x1b[1mx\x1b[0m");
        assert_eq!(off.heading("x"), "x");
    }
}
