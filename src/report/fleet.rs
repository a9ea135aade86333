//! The fleet: the JSON `attenu-hook audit URL --pub … --json` prints, rendered as sessions by
//! status, the ones that are not complete first. The audit's JSON is not signed, so the page
//! shows what the audit said and says it re-checks nothing.

use super::escape::text as esc;
use super::html::Tone;
use super::model::Source;
use crate::audit::{Report, SessionReport, Status};
use crate::json::tree::Json;
use std::fmt::Write as _;

/// An audit's JSON, read back.
#[derive(Debug, Clone)]
pub struct AuditView {
    pub source: Source,
    pub report: Report,
}

/// Whether a JSON document is an audit's output: an object with `sessions` and no `entries`.
pub fn is_audit(doc: &Json) -> bool {
    doc.as_object().is_some_and(|o| {
        o.get("sessions").is_some_and(Json::is_array) && !o.contains_key("entries")
    })
}

pub fn tone(status: Status) -> Tone {
    match status {
        Status::Complete => Tone::Good,
        Status::Open | Status::Notice => Tone::Warn,
        _ => Tone::Bad,
    }
}

/// The sessions, not complete first: worst status first, then project and session.
pub fn ordered(report: &Report) -> Vec<&SessionReport> {
    let mut s: Vec<&SessionReport> = report.sessions.iter().collect();
    s.sort_by(|a, b| {
        b.status
            .cmp(&a.status)
            .then_with(|| a.project.cmp(&b.project))
            .then_with(|| a.session.cmp(&b.session))
    });
    s
}

/// The newest store time of any object of the session (RFC 3339 sorts as text).
fn last_stored(s: &SessionReport) -> String {
    s.chains
        .iter()
        .flat_map(|c| c.checkpoints.iter().chain(c.bundle.as_ref()))
        .map(|v| v.stored.as_str())
        .max()
        .unwrap_or("")
        .to_string()
}

pub fn render(out: &mut String, n: usize, a: &AuditView) {
    let report = &a.report;
    let _ = writeln!(
        out,
        "<article class=\"fleet\" id=\"audit-{n}\">\n<h2>Fleet audit: <span data-count=\"sessions\">{}</span> \
         session(s)</h2>\n<p class=\"note warn-text\">This is the audit's JSON as given ({}). It is not \
         signed, and this page re-checks nothing in it: run <code>attenu-hook audit URL --pub anchor.pub</code> \
         to judge the store again.</p>",
        report.sessions.len(),
        esc(&a.source.path)
    );
    out.push_str("<p class=\"status-counts\">");
    for (status, count) in report.counts() {
        let _ = write!(
            out,
            "<span class=\"badge {}\" data-status-count=\"{}\">{count} {}</span> ",
            tone(status).class(),
            status.as_str(),
            status.as_str()
        );
    }
    out.push_str("</p>\n");
    findings(out, report);
    if !report.store_times {
        out.push_str(
            "<p class=\"note warn-text\" data-store-times=\"machine\">The store is a directory \
             (<code>file://</code>): <q>last stored</q> is the shipping machines' own file time, which \
             whoever ships can set, not a time a server set.</p>\n",
        );
    }
    if report.sessions.is_empty() {
        out.push_str("<p>The audit found no session.</p>\n");
    } else {
        sessions_table(out, report);
    }
    for key in &report.stray {
        let _ = writeln!(
            out,
            "<p class=\"note\">Not an object of the layout, and of no session: <code>{}</code></p>",
            esc(key)
        );
    }
    out.push_str("</article>\n");
}

/// What the audit found about the fleet rather than one session: each one fails the audit.
pub fn findings(out: &mut String, report: &Report) {
    for f in &report.findings {
        let _ = writeln!(
            out,
            "<p class=\"fleet-finding bad-text\" data-fleet-finding><strong>Finding</strong>: {}</p>",
            esc(f)
        );
    }
}

fn sessions_table(out: &mut String, report: &Report) {
    out.push_str(
        "<table class=\"rows sessions\">\n<thead><tr><th>status</th><th>session</th><th>signer</th>\
         <th>repository</th><th>last stored</th><th>why</th></tr></thead>\n<tbody>\n",
    );
    for s in ordered(report) {
        let _ = writeln!(
            out,
            "<tr class=\"{}\" data-session-status=\"{}\"><td data-label=\"status\"><span class=\"badge {}\">{}</span></td>\
             <td data-label=\"session\"><code>{}</code></td><td data-label=\"signer\"><code>{}</code></td>\
             <td data-label=\"repository\"><code>{}</code></td><td data-label=\"last stored\">{}</td><td data-label=\"why\">{}{}</td></tr>",
            tone(s.status).class(),
            s.status.as_str(),
            tone(s.status).class(),
            s.status.as_str(),
            esc(&s.session),
            esc(&s.signer_name()),
            esc(&s.repository()),
            esc(&last_stored(s)),
            esc(&s.why),
            chains(s)
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The chains of a session that is not complete, with their findings.
fn chains(s: &SessionReport) -> String {
    if s.status == Status::Complete {
        return String::new();
    }
    let mut out = String::from("<ul class=\"chains\">");
    for c in &s.chains {
        let largest = c.checkpoints.iter().map(|v| v.size).max();
        let _ = write!(
            out,
            "<li><code>{}</code> <span class=\"badge {}\">{}</span> {} checkpoint(s){}{}",
            esc(&c.chain_id),
            tone(c.status).class(),
            c.status.as_str(),
            c.checkpoints.len(),
            largest
                .map(|l| format!(", largest {l}"))
                .unwrap_or_default(),
            match &c.bundle {
                Some(b) => format!(
                    "; bundle of {} entries{}",
                    b.size,
                    if b.verified { "" } else { ", not verified" }
                ),
                None => "; no closing bundle".into(),
            }
        );
        let new =
            |f: &&crate::audit::report::Finding| f.status != Status::Complete && f.why != s.why;
        for f in c.findings.iter().filter(new) {
            let _ = write!(
                out,
                "<br><span class=\"finding\">{}: {}</span>",
                f.status.as_str(),
                esc(&f.why)
            );
        }
        out.push_str("</li>");
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(name: &str, status: Status) -> SessionReport {
        let mut s = SessionReport::failed("attenu-hook-0000000000000000".into(), name.into(), "");
        s.status = status;
        s
    }

    #[test]
    fn sessions_that_are_not_complete_come_first_worst_first() {
        let mut report = Report::new(Vec::new(), Vec::new());
        report.sessions = vec![
            session("a", Status::Complete),
            session("b", Status::Open),
            session("c", Status::Forked),
            session("d", Status::Truncated),
            session("e", Status::Complete),
        ];
        let order: Vec<&str> = ordered(&report)
            .iter()
            .map(|s| s.session.as_str())
            .collect();
        assert_eq!(order, ["c", "d", "b", "a", "e"]);
    }

    #[test]
    fn the_audit_json_reads_back_and_an_unknown_status_does_not() {
        let text =
            r#"{"sessions":[{"project":"p","session":"s","status":"open","why":"w","chains":[]}]}"#;
        let report: Report = serde_json::from_str(text).unwrap();
        assert_eq!(report.sessions[0].status, Status::Open);
        assert!(serde_json::from_str::<Report>(&text.replace("open", "fine")).is_err());
    }
}
