//! `attenu-hook log`: the ledger as a readable table (each entry's row, and their table,
//! sessions and summary views; `read.rs` reads the rows).

use crate::clock as time;
use crate::ledger::read::{context, EntryView, Event, Tree};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Row {
    pub time: String,
    pub session: String,
    pub agent: String,
    pub tool: String,
    /// The arguments' redacted summary, when `[privacy] record = "summary"` kept one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub call: String,
    pub scope: String,
    pub decision: String,
    pub reason: String,
    /// The reason's code alone (empty for an allow or an outcome), for the summary.
    #[serde(skip)]
    pub code: String,
}

pub use crate::trust::identity::Recorded as Who;

/// Why `log` has nothing to show.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{} has no .attenu/ directory, so the hook has recorded nothing here yet: it makes .attenu/ at the first event of a session Claude Code runs it in. Run `attenu-hook doctor` to check the wiring, or pass --project DIR", .project.display())]
    NoState { project: PathBuf },
    #[error("cannot list {}: {source}; is this the project root?", .dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no ledger for session '{session}' in {}", .dir.display())]
    NoSession { session: String, dir: PathBuf },
    /// A ledger file is not one the hook may read, or reading it failed.
    #[error(transparent)]
    Read(#[from] crate::fs::ReadError),
    #[error("{} was replaced or removed while log read it; run log again", .ledger.display())]
    Replaced { ledger: PathBuf },
    #[error("cannot write the output ({0})")]
    Output(std::io::Error),
}

/// The decision of a row Claude Code refused itself (`crate::ledger::refusal`).
pub const CC_REFUSED: &str = "refused-by-cc";

fn own(v: Option<&str>) -> String {
    v.unwrap_or("").to_string()
}

/// The row of one entry, when it is a decision or an outcome.
pub fn row<T: Tree>(e: EntryView<'_, T>) -> Option<Row> {
    let c = |k: &str| own(e.context_str(k));
    let would_deny = |k: &str| {
        own(e
            .context_get(context::WOULD_DENY)
            .and_then(|w| w.member(k))
            .and_then(T::as_text))
    };
    let (decision, code, message) = match e.event()? {
        Event::Allow if e.policy().is_some() => (
            "would-deny".to_string(),
            would_deny("code"),
            would_deny("message"),
        ),
        Event::Allow => ("allow".to_string(), String::new(), String::new()),
        // Claude Code's own refusal or interruption: tried, refused, but not by the hook.
        Event::Deny if c(context::REFUSED_BY) == crate::ledger::refusal::BY_CLAUDE_CODE => (
            CC_REFUSED.to_string(),
            c(context::REASON_CODE),
            own(e.first_reason_message()),
        ),
        Event::Deny => (
            "DENY".to_string(),
            c(context::REASON_CODE),
            own(e.first_reason_message()),
        ),
        Event::Outcome => (
            format!("outcome:{}", own(e.body_state())),
            String::new(),
            String::new(),
        ),
        _ => return None,
    };
    let reason = match decision.as_str() {
        "DENY" | "would-deny" | CC_REFUSED => format!("[{code}] {message}"),
        _ => String::new(),
    };
    let agent = match (e.context_get(context::AGENT_ID), c(context::AGENT_TYPE)) {
        (Some(_), t) if !t.is_empty() => t,
        (Some(_), _) => "(unknown)".into(),
        (None, t) if !t.is_empty() => format!("main:{t}"),
        (None, _) => "main".into(),
    };
    let time = match c(context::AT) {
        t if !t.is_empty() => t,
        _ => e.ts().map(time::rfc3339_ms).unwrap_or_default(),
    };
    Some(Row {
        time,
        session: c(context::SESSION_ID),
        agent,
        tool: own(e.tool()),
        call: c(context::SUMMARY),
        // An encoded name (`tool.x---4dulti-45dit`) with the name as written beside it.
        scope: crate::derive::readable::scope(&own(e.scope())),
        decision,
        reason,
        code,
    })
}

/// One row as a line of JSON.
pub fn json_line(r: &Row) -> String {
    serde_json::to_string(r).expect("JSON") + "\n"
}

/// The columns' widths, measured over every row the table shows (in characters), and the
/// sessions those rows are of.
#[derive(Debug, Default)]
pub struct Widths {
    time: usize,
    agent: usize,
    tool: usize,
    scope: usize,
    decision: usize,
    sessions: std::collections::BTreeSet<String>,
}

impl Widths {
    pub fn add(&mut self, r: &Row) {
        let len = |t: &str| t.chars().count();
        self.time = self.time.max(len(&r.time));
        self.agent = self.agent.max(len(&r.agent));
        self.tool = self.tool.max(len(&r.tool));
        self.scope = self.scope.max(len(&r.scope));
        self.decision = self.decision.max(len(&r.decision));
        if !self.sessions.contains(&r.session) {
            self.sessions.insert(r.session.clone());
        }
    }
}

/// The table, its columns measured: a header, then a line (or lines) per row. Colours only
/// when `color`; with a `width` (the terminal's), a reason wraps within it, under its own
/// column.
pub struct Table {
    w: [usize; 6],
    short: std::collections::HashMap<String, String>,
    color: bool,
    width: Option<usize>,
}

impl Table {
    pub fn new(w: Widths, color: bool, width: Option<usize>) -> Table {
        let short = short_sessions(&w.sessions);
        let wsess = short.values().map(|s| s.chars().count()).max().unwrap_or(0);
        Table {
            w: [
                w.time.max(4),
                wsess.max(7),
                w.agent.max(5),
                w.tool.max(4),
                w.scope.max(5),
                w.decision.max(8),
            ],
            short,
            color,
            width,
        }
    }

    pub fn header(&self) -> String {
        let [wtime, wsess, wa, wt, ws, wd] = self.w;
        format!(
            "{:<wtime$}  {:<wsess$}  {:<wa$}  {:<wt$}  {:<ws$}  {:<wd$}  reason\n",
            "time", "session", "agent", "tool", "scope", "decision"
        )
    }

    /// The row's line, and the reason's further lines when it wraps.
    pub fn line(&self, r: &Row) -> String {
        let [wtime, wsess, wa, wt, ws, wd] = self.w;
        let indent = self.w.iter().sum::<usize>() + 6 * 2;
        let d = format!("{:<wd$}", r.decision);
        let d = match (self.color, r.decision.as_str()) {
            (true, "DENY") => format!("\x1b[31m{d}\x1b[0m"),
            (true, "would-deny") => format!("\x1b[33m{d}\x1b[0m"),
            (true, "allow") => format!("\x1b[32m{d}\x1b[0m"),
            _ => d,
        };
        // The call's summary, when recorded, leads the last column.
        let text = match (r.call.as_str(), r.reason.as_str()) {
            ("", reason) => reason.to_string(),
            (call, "") => format!("$ {call}"),
            (call, reason) => format!("$ {call}  {reason}"),
        };
        let (lines, under) = wrap(&text, self.width, indent);
        let line = format!(
            "{:<wtime$}  {:<wsess$}  {:<wa$}  {:<wt$}  {:<ws$}  {d}  {}",
            r.time,
            self.short
                .get(r.session.as_str())
                .map_or(r.session.as_str(), String::as_str),
            r.agent,
            r.tool,
            r.scope,
            lines.first().map(String::as_str).unwrap_or("")
        );
        let mut out = line.trim_end().to_string();
        out.push('\n');
        for more in lines.iter().skip(1) {
            out.push_str(&format!("{:under$}{more}\n", ""));
        }
        out
    }
}

/// The reason's lines: one when there is no width; else wrapped at words to what is left of
/// the width after the other columns, or, when that is under 40 columns, on lines of their own
/// below the row, indented by 4 (then the first is empty).
fn wrap(text: &str, width: Option<usize>, indent: usize) -> (Vec<String>, usize) {
    let Some(width) = width else {
        return (vec![text.to_string()], indent);
    };
    let (room, indent, below) = match width.saturating_sub(indent) {
        room if room >= 40 => (room, indent, false),
        _ => (width.saturating_sub(4).max(20), 4, true),
    };
    let mut lines = Vec::new();
    if below && !text.is_empty() {
        lines.push(String::new());
    }
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    (lines, indent)
}

/// Each session id as the table shows it: whole when short, else the shortest prefix (8
/// characters at least) that tells the sessions shown apart, with `…`. `log --sessions`
/// lists them whole.
fn short_sessions(
    ids: &std::collections::BTreeSet<String>,
) -> std::collections::HashMap<String, String> {
    let longest = ids.iter().map(|i| i.chars().count()).max().unwrap_or(0);
    let unique_at = |n: usize| {
        let prefixes: std::collections::BTreeSet<String> =
            ids.iter().map(|i| i.chars().take(n).collect()).collect();
        prefixes.len() == ids.len()
    };
    let n = (8..longest).find(|&n| unique_at(n)).unwrap_or(longest);
    ids.iter()
        .map(|i| {
            let shown = if i.chars().count() > n.max(12) {
                i.chars().take(n).collect::<String>() + "…"
            } else {
                i.to_string()
            };
            (i.clone(), shown)
        })
        .collect()
}

/// One line of `log --summary` or `log --sessions`: calls (decisions, not outcomes) and how
/// they were answered.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Tally {
    /// The agent type (`--summary`) or the session id (`--sessions`).
    pub key: String,
    pub calls: usize,
    pub allow: usize,
    pub deny: usize,
    pub would_deny: usize,
    /// Refused (or interrupted) by Claude Code itself, before the hook was asked.
    pub refused_by_claude_code: usize,
    /// Enforced denials by reason code.
    pub deny_reasons: std::collections::BTreeMap<String, usize>,
    /// Denials not enforced (main thread, shadow mode) by reason code.
    pub would_deny_reasons: std::collections::BTreeMap<String, usize>,
    /// `--sessions`: the first and last time, and the agents seen.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub first: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
}

impl Tally {
    fn add(&mut self, r: &Row) {
        if self.first.is_empty() || r.time < self.first {
            self.first.clone_from(&r.time);
        }
        if r.time > self.last {
            self.last.clone_from(&r.time);
        }
        if !self.agents.contains(&r.agent) {
            self.agents.push(r.agent.clone());
        }
        let reasons = match r.decision.as_str() {
            "allow" => {
                self.allow += 1;
                None
            }
            "DENY" => {
                self.deny += 1;
                Some(&mut self.deny_reasons)
            }
            "would-deny" => {
                self.would_deny += 1;
                Some(&mut self.would_deny_reasons)
            }
            CC_REFUSED => {
                self.refused_by_claude_code += 1;
                Some(&mut self.deny_reasons)
            }
            _ => return,
        };
        self.calls += 1;
        if let Some(by) = reasons {
            *by.entry(r.code.clone()).or_default() += 1;
        }
    }
}

/// Rows tallied as they come, by a key (agent type or session): memory for each key, none
/// for a row.
#[derive(Debug, Default)]
pub struct Tallies(BTreeMap<String, Tally>);

impl Tallies {
    pub fn add(&mut self, key: &str, r: &Row) {
        if let Some(t) = self.0.get_mut(key) {
            return t.add(r);
        }
        let mut t = Tally {
            key: key.to_string(),
            ..Tally::default()
        };
        t.add(r);
        self.0.insert(key.to_string(), t);
    }

    /// The tallies in key order.
    pub fn done(self) -> Vec<Tally> {
        self.0.into_values().collect()
    }
}

/// `log --summary`: per agent, its calls, allows and denials by reason; then the total.
pub fn render_summary(by_agent: Vec<Tally>, json: bool) -> String {
    let mut t = by_agent;
    for a in &mut t {
        a.first.clear();
        a.last.clear();
        a.agents.clear();
    }
    if json {
        return t
            .iter()
            .map(|a| serde_json::to_string(a).expect("JSON") + "\n")
            .collect();
    }
    let mut total = Tally {
        key: "total".into(),
        ..Tally::default()
    };
    for a in &t {
        total.calls += a.calls;
        total.allow += a.allow;
        total.deny += a.deny;
        total.would_deny += a.would_deny;
        total.refused_by_claude_code += a.refused_by_claude_code;
    }
    let wa = widest(t.iter().map(|a| a.key.as_str()), 5);
    let mut out = format!(
        "{:<wa$}  {:>5}  {:>5}  {:>5}  {:>10}  {:>10}  denied for\n",
        "agent", "calls", "allow", "deny", "would-deny", "by-claude"
    );
    for a in t.iter().chain([&total]) {
        let reasons: Vec<String> = a
            .deny_reasons
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .chain(
                a.would_deny_reasons
                    .iter()
                    .map(|(c, n)| format!("{c} {n} (not enforced)")),
            )
            .collect();
        let line = format!(
            "{:<wa$}  {:>5}  {:>5}  {:>5}  {:>10}  {:>10}  {}",
            a.key,
            a.calls,
            a.allow,
            a.deny,
            a.would_deny,
            a.refused_by_claude_code,
            reasons.join(", ")
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The width of a column: its longest cell, in characters, and at least `at_least` (its title).
fn widest<'a>(cells: impl Iterator<Item = &'a str>, at_least: usize) -> usize {
    cells
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0)
        .max(at_least)
}

/// `log --sessions`: each session, whole id, with its first and last time, calls and agents.
pub fn render_sessions(by_session: Vec<Tally>, who: &BTreeMap<String, Who>, json: bool) -> String {
    let mut t = by_session;
    t.sort_by(|a, b| (&a.first, &a.key).cmp(&(&b.first, &b.key)));
    let unknown = Who {
        signer: "-".into(),
        repository: "-".into(),
    };
    let who_of = |session: &str| who.get(session).unwrap_or(&unknown);
    if json {
        return t
            .iter()
            .map(|s| {
                let mut v = serde_json::to_value(s).expect("JSON");
                if let Some(o) = v.as_object_mut() {
                    let key = o.remove("key").unwrap_or_default();
                    o.insert("session".into(), key);
                    let w = who_of(&s.key);
                    o.insert("signer".into(), w.signer.clone().into());
                    o.insert("repository".into(), w.repository.clone().into());
                }
                serde_json::to_string(&v).expect("JSON") + "\n"
            })
            .collect();
    }
    let ws = widest(t.iter().map(|s| s.key.as_str()), 7);
    let wt = widest(t.iter().map(|s| s.first.as_str()), 5);
    let wg = widest(t.iter().map(|s| who_of(&s.key).signer.as_str()), 6);
    let wr = widest(t.iter().map(|s| who_of(&s.key).repository.as_str()), 10);
    let mut out = format!(
        "{:<ws$}  {:<wt$}  {:<wt$}  {:>5}  {:>5}  {:>5}  {:>10}  {:<wg$}  {:<wr$}  agents\n",
        "session", "first", "last", "calls", "allow", "deny", "would-deny", "signer", "repository"
    );
    for s in &t {
        let w = who_of(&s.key);
        out.push_str(&format!(
            "{:<ws$}  {:<wt$}  {:<wt$}  {:>5}  {:>5}  {:>5}  {:>10}  {:<wg$}  {:<wr$}  {}\n",
            s.key,
            s.first,
            s.last,
            s.calls,
            s.allow,
            s.deny,
            s.would_deny,
            w.signer,
            w.repository,
            s.agents.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table (or JSON lines) of rows held whole, as `log` streams it.
    fn render(rows: &[Row], json: bool, color: bool, width: Option<usize>) -> String {
        if json {
            return rows.iter().map(json_line).collect();
        }
        let mut w = Widths::default();
        rows.iter().for_each(|r| w.add(r));
        let table = Table::new(w, color, width);
        rows.iter()
            .fold(table.header(), |out, r| out + &table.line(r))
    }

    /// The rows tallied by `key` (agent type or session), in key order; outcomes count nothing.
    fn tally(rows: &[Row], key: impl Fn(&Row) -> &str) -> Vec<Tally> {
        let mut by = Tallies::default();
        rows.iter().for_each(|r| by.add(key(r), r));
        by.done()
    }

    fn row(session: &str, agent: &str, decision: &str, code: &str) -> Row {
        Row {
            time: "2026-01-01T00:00:00.000Z".into(),
            session: session.into(),
            agent: agent.into(),
            tool: "Read".into(),
            call: String::new(),
            scope: "fs.read".into(),
            decision: decision.into(),
            reason: if code.is_empty() {
                String::new()
            } else {
                format!("[{code}] one two three four five six seven eight nine ten")
            },
            code: code.into(),
        }
    }

    #[test]
    fn sessions_are_shortened_to_a_prefix_that_tells_them_apart() {
        let rows = [
            row("s1", "main", "allow", ""),
            row("0b5f1c2e-aaaa-0000", "main", "allow", ""),
            row("0b5f1c2e-bbbb-0000", "main", "allow", ""),
        ];
        let short = short_sessions(&rows.iter().map(|r| r.session.clone()).collect());
        assert_eq!(short["s1"], "s1");
        assert_eq!(short["0b5f1c2e-aaaa-0000"], "0b5f1c2e-a…");
        assert_eq!(short["0b5f1c2e-bbbb-0000"], "0b5f1c2e-b…");
    }

    #[test]
    fn a_reason_wraps_within_the_width_under_its_column() {
        let rows = [row("s1", "reviewer", "DENY", "out-of-authority")];
        let text = render(&rows, false, false, Some(80));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.lines().count() > 2, "{text}");
        let one = render(&rows, false, false, None);
        assert_eq!(one.lines().count(), 2, "{one}");
    }

    #[test]
    fn the_summary_counts_calls_not_outcomes_and_denials_by_reason() {
        let rows = [
            row("s1", "reviewer", "allow", ""),
            row("s1", "reviewer", "outcome:returned", ""),
            row("s1", "reviewer", "DENY", "out-of-authority"),
            row("s1", "reviewer", "DENY", "out-of-authority"),
            row("s1", "main", "would-deny", "unresolved"),
        ];
        let t = tally(&rows, |r| &r.agent);
        assert_eq!(t[1].key, "reviewer");
        assert_eq!((t[1].calls, t[1].allow, t[1].deny), (3, 1, 2));
        assert_eq!(t[1].deny_reasons["out-of-authority"], 2);
        assert_eq!(t[0].would_deny_reasons["unresolved"], 1);
    }
}
