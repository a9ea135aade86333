//! One bundle's part of the page: its checks and failures (the verifier's), the session as a
//! tree, the timeline of calls, the denials by agent and reason, and the open calls. When the
//! bundle is invalid every part after the checks is marked UNPROVEN.

use super::escape::text as esc;
use super::html::{verdict, Tone};
use super::model::{BundleView, CallView, Decision, NodeView, MAX_LISTED_CALLS};
use crate::evidence::verify::{
    AnchorStatus, Binding, CallState, CheckpointStatus, KeyTrust, Report,
};
use std::fmt::Write as _;

pub fn bundle(out: &mut String, n: usize, b: &BundleView) {
    let (words, tone) = verdict(b);
    let proven = b.report.valid;
    let chain = match (b.chain.index, b.chain.of) {
        (Some(i), Some(of)) => format!("chain {i} of {of}"),
        (Some(i), None) => format!("chain {i}"),
        _ => "chain".into(),
    };
    let session = b.chain.session.as_deref().unwrap_or("(no session id)");
    let _ = writeln!(
        out,
        "<article class=\"bundle{}\" id=\"bundle-{n}\" data-valid=\"{proven}\">\n\
         <h2><span class=\"badge {}\">{}</span> Session <code>{}</code>, {chain}</h2>",
        if proven { "" } else { " unproven" },
        tone.class(),
        esc(words),
        esc(session),
    );
    checks(out, b);
    let mark = match (proven, b.report.key) {
        (false, _) => " <span class=\"badge bad\">UNPROVEN</span>",
        (true, KeyTrust::Pinned) => "",
        (true, _) => " <span class=\"badge warn\">key not pinned</span>",
    };
    tree(out, b, mark);
    timeline(out, b, mark);
    denials(out, b, mark);
    open_calls(out, b, mark);
    out.push_str("</article>\n");
}

/// The verifier's checks, counts and failures, as it reported them.
fn checks(out: &mut String, b: &BundleView) {
    let r = &b.report;
    let rows = check_rows(r);
    out.push_str("<section class=\"checks\">\n<h3>What the verifier checked</h3>\n<table class=\"kv\">\n<tbody>\n");
    for (name, (value, tone)) in rows {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{name}</th><td><span class=\"badge {}\">{}</span></td></tr>",
            tone.class(),
            esc(&value)
        );
    }
    out.push_str("</tbody>\n</table>\n");
    let _ = writeln!(
        out,
        "<p class=\"counts\">{} calls: {} allowed, {} denied, {} would-deny (as <code>log</code> counts them); \
         <span data-count=\"entries\">{}</span> entries, {} nodes, {} allows measured \
         for containment, {} not enforced (<code>policy: unlisted</code>); calls observed {}, unobserved {}, \
         unaccounted {}.</p>",
        r.actions_checked + r.ungated + r.denied,
        r.actions_checked,
        r.denied,
        r.ungated,
        r.entries,
        r.nodes,
        r.actions_checked,
        r.ungated,
        r.calls.observed,
        r.calls.unobserved,
        r.calls.unaccounted
    );
    failures(out, r);
    notices(out, r);
    out.push_str("</section>\n");
}

/// The verifier's checks, each with its status and how good that is.
fn check_rows(r: &Report) -> Vec<(&'static str, (String, Tone))> {
    let c = &r.checks;
    let ok = |v: bool| {
        if v {
            ("ok", Tone::Good)
        } else {
            ("FAILED", Tone::Bad)
        }
    };
    // A status is good, failed, or something in between (not checked, absent, incomplete).
    let level = |v: &dyn std::fmt::Display, good: bool, failed: bool| {
        let tone = if good {
            Tone::Good
        } else if failed {
            Tone::Bad
        } else {
            Tone::Warn
        };
        (v.to_string(), tone)
    };
    let binding = match (r.valid, c.execution_binding) {
        (true, Binding::Failed) => (
            format!(
                "failed for {} unaccounted call(s), listed below",
                r.calls.unaccounted
            ),
            Tone::Warn,
        ),
        (_, v) => level(&v, v == Binding::Clean, v == Binding::Failed),
    };
    vec![
        (
            "integrity (hash chain, signed anchor)",
            match crate::evidence::verify::signed_by_another_key(r) {
                Some(_) => (
                    "not checked: another key signed it (hash chain intact)".to_string(),
                    Tone::Bad,
                ),
                None => owned(ok(c.integrity)),
            },
        ),
        (
            "anchor signature",
            level(
                &c.anchor,
                c.anchor == AnchorStatus::Verified,
                c.anchor == AnchorStatus::Failed,
            ),
        ),
        (
            "monotonicity (no subagent wider than its parent)",
            owned(ok(c.monotonicity)),
        ),
        (
            "containment (every allow within its agent's authority)",
            owned(ok(c.containment)),
        ),
        ("execution binding (outcomes bound to their calls)", binding),
        (
            "signed tree checkpoint",
            level(
                &c.checkpoint,
                c.checkpoint == CheckpointStatus::Verified,
                c.checkpoint == CheckpointStatus::Failed,
            ),
        ),
        (
            "schema version, root, chain id, field names",
            owned(ok(c.version && c.root && c.chain_id && c.ledger_fields)),
        ),
    ]
}

/// The verifier's failures, each with where it is and what it says.
fn failures(out: &mut String, r: &Report) {
    if r.failures.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>{} failure(s)</h3>\n<ol class=\"failures\">",
        r.failures.len()
    );
    for f in &r.failures {
        let mut at = Vec::new();
        if let Some(i) = f.index {
            at.push(format!("entry {i}"));
        }
        if let Some(s) = f.seq {
            at.push(format!("seq {s}"));
        }
        if let Some(node) = &f.node {
            at.push(format!("node {}", esc(node)));
        }
        let _ = writeln!(
            out,
            "<li data-failure=\"{}\"><code>{}</code>{}: {}</li>",
            esc(f.name.as_str()),
            esc(f.name.as_str()),
            if at.is_empty() {
                String::new()
            } else {
                format!(" ({})", at.join(", "))
            },
            esc(&f.detail)
        );
    }
    out.push_str("</ol>\n");
}

/// The verifier's notices: what holds, but a reviewer should know.
fn notices(out: &mut String, r: &Report) {
    if r.notices.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>{} notice(s)</h3>\n<ol class=\"notices\">",
        r.notices.len()
    );
    for n in &r.notices {
        let seq = n.seq.map(|s| format!(", seq {s}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "<li><code>{}</code> (entry {}{seq}): {}</li>",
            esc(n.name),
            n.index,
            esc(&n.detail)
        );
    }
    out.push_str("</ol>\n");
}

fn owned((s, t): (&str, Tone)) -> (String, Tone) {
    (s.to_string(), t)
}

/// The root and its subagents, each with the authority the ledger records it was given.
fn tree(out: &mut String, b: &BundleView, mark: &str) {
    let _ = writeln!(
        out,
        "<section class=\"tree\">\n<h3>The session and its agents{mark}</h3>\n<p class=\"note\">Each \
         agent's authority is what the hook derived from the project's agent files and settings at the \
         start of this chain; the verifier checked that none is wider than the session's.</p>"
    );
    let roots: Vec<&NodeView> = b.nodes.iter().filter(|n| n.is_root()).collect();
    out.push_str("<ul class=\"nodes\">\n");
    for root in roots {
        node(out, root, true);
        out.push_str("<ul>\n");
        for (t, allowed, denied) in &b.undeclared {
            let _ = writeln!(
                out,
                "<li class=\"node undeclared\"><span class=\"agent\">{}</span> <span class=\"tag\">undeclared \
                 type: holds nothing</span> <span class=\"tally\">{allowed} allowed, {denied} denied</span></li>",
                esc(t)
            );
        }
        for child in b
            .nodes
            .iter()
            .filter(|n| n.parent.as_deref() == Some(&root.id))
        {
            node(out, child, false);
            out.push_str("</li>\n");
        }
        out.push_str("</ul>\n</li>\n");
    }
    out.push_str("</ul>\n");
    if !b.chain.unrepresented.is_empty() {
        out.push_str(
            "<p class=\"note\">Left to Claude Code's own matcher (rules with arguments): ",
        );
        let parts: Vec<String> = b
            .chain
            .unrepresented
            .iter()
            .map(|u| format!("<code>{}</code>", esc(u)))
            .collect();
        out.push_str(&parts.join(", "));
        out.push_str(".</p>\n");
    }
    for p in &b.chain.problems {
        let _ = writeln!(
            out,
            "<p class=\"note warn-text\">Declaration problem: {}</p>",
            esc(p)
        );
    }
    out.push_str("</section>\n");
}

/// One node's line, left open (`<li>`) for its children.
fn node(out: &mut String, n: &NodeView, root: bool) {
    let name = if root {
        "main thread (session root)".to_string()
    } else {
        esc(&n.agent)
    };
    let _ = write!(
        out,
        "<li class=\"node\" data-node=\"{}\"><span class=\"agent\">{name}</span> <span class=\"tally\">{} \
         allowed, {} denied{}</span>",
        esc(&n.id),
        n.allowed,
        n.denied,
        if n.done { "" } else { ", not closed" }
    );
    if let Some(d) = &n.declared_in {
        let _ = write!(
            out,
            " <span class=\"from\">from <code>{}</code></span>",
            esc(d)
        );
    }
    if let Some(i) = &n.invalid {
        let _ = write!(
            out,
            " <span class=\"badge bad\">declaration invalid: {}</span>",
            esc(i)
        );
    }
    out.push_str("<div class=\"scopes\">");
    if n.scopes.is_empty() {
        out.push_str("<span class=\"none\">holds nothing</span>");
    }
    let delegate = "agent.delegate.";
    let mut delegates = Vec::new();
    for s in &n.scopes {
        if let Some(to) = s.strip_prefix(delegate) {
            delegates.push(to);
            continue;
        }
        match tool_of(s) {
            Some(tool) => write!(
                out,
                "<code class=\"scope\"><b>{}</b> {}</code> ",
                esc(&tool),
                esc(s)
            ),
            None => write!(out, "<code class=\"scope\">{}</code> ", esc(s)),
        }
        .ok();
    }
    // One chip for every agent type it may start, not one per type.
    if !delegates.is_empty() {
        let _ = write!(
            out,
            "<code class=\"scope\"><b>Agent</b> {}{}</code> ",
            esc(delegate),
            esc(&format!("{{{}}}", delegates.join(", ")))
        );
    }
    out.push_str("</div>\n");
}

/// The tool a scope stands for, as a reviewer names it: `fs.read` is Read, `tool.foo` is
/// foo; `None` for an MCP scope or a pattern, shown as it is.
fn tool_of(scope: &str) -> Option<String> {
    crate::derive::scopes::TOOL_SCOPES
        .iter()
        .find(|(_, s)| *s == scope)
        .map(|(t, _)| t.to_string())
        .or_else(|| scope.strip_prefix("tool.").map(str::to_string))
}

/// Every decision in ledger order with its outcome.
fn timeline(out: &mut String, b: &BundleView, mark: &str) {
    let t = &b.totals;
    let _ = writeln!(
        out,
        "<section class=\"timeline\">\n<h3>Timeline: <span data-count=\"calls\">{}</span> calls, \
         <span data-count=\"allowed\">{}</span> allowed, <span data-count=\"denied\">{}</span> denied{}{}{mark}</h3>",
        t.calls,
        t.allowed + t.unenforced,
        t.denied,
        match t.refused_by_claude_code {
            0 => String::new(),
            n => format!(" (<span data-count=\"refused-by-claude-code\">{n}</span> refused by Claude Code)"),
        },
        if t.unenforced > 0 {
            format!(" ({} allowed without enforcement)", t.unenforced)
        } else {
            String::new()
        }
    );
    if let (Some(first), Some(last)) = (&b.chain.first_at, &b.chain.last_at) {
        let _ = writeln!(
            out,
            "<p class=\"note\">From {} to {} (the recording machine's clock).</p>",
            esc(first),
            esc(last)
        );
    }
    if t.calls > b.calls.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">The first {MAX_LISTED_CALLS} calls are listed; all {} are counted.</p>",
            t.calls
        );
    }
    if b.calls.is_empty() {
        out.push_str("<p>No tool call was recorded on this chain.</p>\n</section>\n");
        return;
    }
    out.push_str(
        "<table class=\"rows calls\">\n<thead><tr><th>call</th><th>time</th><th>agent</th><th>tool</th>\
         <th>scope</th><th>decision</th><th>reason</th><th>outcome</th></tr></thead>\n<tbody>\n",
    );
    // Calls numbered 1, 2, 3 as `log` lists them; the ledger's seq (which skips the entries
    // that are not calls, and so looks like gaps) is kept in the cell's title.
    for (n, c) in b.calls.iter().enumerate() {
        call_row(out, n + 1, c);
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn call_row(out: &mut String, number: usize, c: &CallView) {
    let (class, decision) = match c.decision {
        Decision::Allow => ("allow", "allowed"),
        Decision::AllowUnenforced => ("unenforced", "allowed, not enforced"),
        Decision::Deny => ("deny", "DENIED"),
    };
    let reason = match (&c.reason, c.decision) {
        (Some((code, msg)), Decision::AllowUnenforced) => format!(
            "would deny <code class=\"code\">{}</code> {}",
            esc(code),
            esc(msg)
        ),
        (Some((code, msg)), _) => format!(
            "<code class=\"code\" data-reason-code>{}</code> <span data-reason>{}</span>",
            esc(code),
            esc(msg)
        ),
        (None, _) => String::new(),
    };
    let outcome = match (&c.outcome, c.open, c.decision) {
        (_, _, Decision::Deny) => "not run".to_string(),
        (Some(o), _, _) => {
            let mut s = esc(&o.body_state);
            if let Some(ms) = o.duration_ms {
                let _ = write!(s, ", {ms} ms");
            }
            if let Some(code) = &o.error_code {
                let _ = write!(s, ", error <code>{}</code>", esc(code));
            }
            s
        }
        (None, Some(state), _) => format!("<span class=\"badge warn\">open: {state}</span>"),
        (None, None, _) => "none recorded".into(),
    };
    // What ran, as far as the record keeps it: a redacted summary, only when it was opted in.
    let summary = c.summary.as_deref().map_or_else(String::new, |t| {
        format!(
            " <code class=\"call-summary\" data-summary>{}</code>",
            esc(t)
        )
    });
    let seq = c
        .seq
        .map(|s| format!("ledger seq {s}"))
        .unwrap_or_else(|| format!("entry #{}", c.index));
    let _ = writeln!(
        out,
        "<tr class=\"{class}\" data-call=\"{class}\"><td data-label=\"call\" title=\"{seq}\">{number}</td>\
         <td data-label=\"time\">{}</td><td data-label=\"agent\">{}</td><td data-label=\"tool\"><code>{}</code>{summary}</td>\
         <td data-label=\"scope\"><code>{}</code></td><td data-label=\"decision\"><span class=\"decision\">{decision}</span></td>\
         <td data-label=\"reason\">{reason}</td><td data-label=\"outcome\">{outcome}</td></tr>",
        esc(&short_time(c.at.as_deref())),
        esc(&c.who),
        esc(&c.tool),
        esc(&c.scope),
    );
}

/// `HH:MM:SS.mmm` of an RFC 3339 time as the hook writes it, else the text as written.
fn short_time(at: Option<&str>) -> String {
    match at {
        Some(a) if a.len() == 24 && a.is_ascii() && a.as_bytes()[10] == b'T' => {
            a[11..23].to_string()
        }
        Some(a) => a.to_string(),
        None => String::new(),
    }
}

/// Denials by agent and reason code.
fn denials(out: &mut String, b: &BundleView, mark: &str) {
    let _ = writeln!(
        out,
        "<section class=\"denials\">\n<h3>Denials by agent and reason: <span data-count=\"denials\">{}</span>{mark}</h3>",
        b.totals.denied
    );
    if b.denials.is_empty() {
        out.push_str("<p>No call was denied.</p>\n</section>\n");
        return;
    }
    out.push_str("<ul class=\"groups\">\n");
    for g in &b.denials {
        let _ = writeln!(
            out,
            "<li data-denial-group><span class=\"agent\">{}</span> <code class=\"code\">{}</code> \
             <span class=\"tally\">{} denied</span>\n<ul>",
            esc(&g.who),
            esc(&g.code),
            g.count
        );
        for (index, tool, msg) in &g.examples {
            let _ = writeln!(
                out,
                "<li><code>{}</code> (entry {index}): {}</li>",
                esc(tool),
                esc(msg)
            );
        }
        if g.count > g.examples.len() {
            let _ = writeln!(out, "<li>… and {} more</li>", g.count - g.examples.len());
        }
        out.push_str("</ul></li>\n");
    }
    out.push_str("</ul>\n</section>\n");
}

/// Calls the verifier found without a bound outcome, and outcomes closed by reconciliation.
fn open_calls(out: &mut String, b: &BundleView, mark: &str) {
    let open = &b.report.calls.open;
    let _ = writeln!(
        out,
        "<section class=\"open\">\n<h3>Open calls and reconciliation: <span data-count=\"open\">{}</span> open{mark}</h3>",
        open.len()
    );
    if open.is_empty() {
        out.push_str("<p>Every allowed call has an outcome bound to it.</p>\n");
    } else {
        out.push_str(
            "<p class=\"note\">An open call was allowed, and no outcome is bound to it: it may have run, \
             or not. <code>attenu-hook reconcile list</code> on the recording machine shows what is known.</p>\n<ul>\n",
        );
        for c in open.iter().take(MAX_LISTED_CALLS) {
            let why = if c.state == CallState::Unaccounted {
                "its allow promised an observed outcome and none is bound to it"
            } else {
                "no outcome was recorded, and none was promised"
            };
            let _ = writeln!(
                out,
                "<li data-open-call><span class=\"badge warn\">{}</span> call <code>{}</code> on node <code>{}</code> \
                 (entry {}): {why}</li>",
                esc(c.state.as_str()),
                esc(&c.call_id),
                esc(c.node.as_deref().unwrap_or("?")),
                c.index
            );
        }
        if open.len() > MAX_LISTED_CALLS {
            let _ = writeln!(out, "<li>… and {} more</li>", open.len() - MAX_LISTED_CALLS);
        }
        out.push_str("</ul>\n");
    }
    if !b.resolutions.is_empty() {
        out.push_str("<p>Closed by <code>attenu-hook reconcile resolve</code>:</p>\n<ul>\n");
        for r in &b.resolutions {
            let _ = writeln!(
                out,
                "<li>call <code>{}</code> (entry {}): {} (marker {}), evidence: {}</li>",
                esc(r.call_id.as_deref().unwrap_or("?")),
                r.index,
                esc(&r.outcome),
                esc(&r.marker),
                esc(&r.evidence)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::short_time;

    #[test]
    fn a_time_as_the_hook_writes_it_is_shortened_and_anything_else_kept() {
        assert_eq!(short_time(Some("2026-12-02T05:41:22.084Z")), "05:41:22.084");
        // 24 bytes with a two-byte character across byte 10: kept as written, never cut.
        let odd = "2026-12-0\u{e9}05:41:22.084Z";
        assert_eq!(odd.len(), 24);
        assert_eq!(short_time(Some(odd)), odd);
        assert_eq!(short_time(None), "");
    }
}
