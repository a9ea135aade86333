//! The text form of a report, as `attenu-hook verify` prints it without `--json`.

use super::shown::{shown, shown_str};
use super::{Binding, CallState, FailureName, Json, KeyTrust, Report, Verdict};
use std::fmt::Write as _;
use std::path::Path;

/// The text form of a report: one line per failure, one per open call, a line on the key, and
/// a final line starting `VALID` or `INVALID`.
pub fn render_text(report: &Report, key_file: Option<&Path>) -> String {
    let mut out = String::new();
    failure_lines(&mut out, report);
    open_call_lines(&mut out, report);
    incomplete_line(&mut out, report);
    notice_lines(&mut out, report);
    recorded_line(&mut out, report);
    key_line(&mut out, report, key_file);
    verdict_line(&mut out, report);
    out
}

/// `RECORDED by S in R`: who signed and where, as the chain's root says (only as good as the
/// verdict below: in an invalid bundle it is a claim).
fn recorded_line(out: &mut String, report: &Report) {
    if let Some(r) = &report.recorded {
        let _ = writeln!(
            out,
            "RECORDED by {} in {} (the chain's root; {})",
            shown_str(&r.signer),
            shown_str(&r.repository),
            if report.valid {
                "signed with the chain"
            } else {
                "not proven"
            }
        );
    }
}

/// `FAIL name (entry i, seq s, node n): detail`.
fn failure_lines(out: &mut String, report: &Report) {
    for f in &report.failures {
        let _ = write!(out, "FAIL {}", f.name);
        let mut at = Vec::new();
        if let Some(i) = f.index {
            at.push(format!("entry {i}"));
        }
        if let Some(s) = f.seq {
            at.push(format!("seq {s}"));
        }
        if let Some(n) = &f.node {
            at.push(format!("node {}", shown_str(n)));
        }
        if !at.is_empty() {
            let _ = write!(out, " ({})", at.join(", "));
        }
        let _ = writeln!(out, ": {}", f.detail);
    }
}

/// `OPEN state call c (tool t, agent a, tool_use_id u) on node n (entry i): why`.
fn open_call_lines(out: &mut String, report: &Report) {
    for c in &report.calls.open {
        let why = if c.state == CallState::Unaccounted {
            "its allow promised an observed outcome and none is bound to it"
        } else {
            "no outcome was recorded, and none was promised (capture pre_hook_only)"
        };
        let node = c
            .node
            .as_deref()
            .map(shown_str)
            .unwrap_or_else(|| "?".into());
        let shown_or =
            |v: &Option<String>| v.as_deref().map(shown_str).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "OPEN {} call {} (tool {}, agent {}, tool_use_id {}) on node {node} (entry {}): {why}",
            c.state,
            shown_str(&c.call_id),
            shown_or(&c.tool),
            shown_or(&c.agent),
            shown_or(&c.tool_use_id),
            c.index
        );
    }
}

/// What "execution binding incomplete" means, in the output that says it.
fn incomplete_line(out: &mut String, report: &Report) {
    if report.checks.execution_binding != Binding::Incomplete {
        return;
    }
    let open = report.calls.open.len();
    let calls = if open == 0 {
        String::new()
    } else {
        format!("{open} allowed call(s) listed as OPEN above have no recorded outcome, or ")
    };
    let _ = writeln!(
        out,
        "NOTE execution binding incomplete: the ledger does not show how everything ended: {calls}an agent \
         neither finished (no done entry) nor was revoked. That is what a session still running, or a \
         call cut short before its PostToolUse, leaves; it is not a failure and proves no tampering, but \
         those calls' effects are not evidenced"
    );
}

/// `NOTICE name (entry i, seq s): detail`.
fn notice_lines(out: &mut String, report: &Report) {
    for n in &report.notices {
        let seq = n.seq.map(|s| format!(", seq {s}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "NOTICE {} (entry {}{seq}): {}",
            n.name, n.index, n.detail
        );
    }
}

/// Which key checked the anchor, and a warning when it proves less than a pinned one.
fn key_line(out: &mut String, report: &Report, key_file: Option<&Path>) {
    let shown_file = |p: Option<&Path>| {
        p.map(|p| shown_str(&p.display().to_string()))
            .unwrap_or_default()
    };
    match (report.key, &report.certificate) {
        (KeyTrust::Pinned, Some(c)) => {
            let _ = writeln!(
                out,
                "key: certified by the pinned CA ({}): key id \"{}\", serial {}, CA {}, valid before {}; checked at \
                 the bundle's own signing time {} (`audit --ca` checks the store's time, which no signer chooses)",
                shown_str(c.through.as_deref().unwrap_or("")),
                shown_str(&c.view.key_id),
                c.view.serial,
                c.view.ca,
                c.view.valid_before,
                c.checked_at.as_deref().unwrap_or("?")
            );
        }
        (KeyTrust::BundleSide, Some(c)) => {
            let _ = writeln!(
                out,
                "WARNING: key NOT pinned: the anchor was checked with the key the bundle's own certificate names \
                 (key id \"{}\", CA {}), and no CA you pinned vouched for it. Anyone who rewrote this bundle could \
                 have put in their own key and certificate. Verify with the team's CA: attenu-hook verify BUNDLE --ca FILE",
                shown_str(&c.view.key_id),
                c.view.ca
            );
        }
        (KeyTrust::Pinned, None) => {
            let _ = writeln!(out, "key: pinned ({})", shown_file(key_file));
        }
        (KeyTrust::BundleSide, None) => {
            let _ = writeln!(
                out,
                "WARNING: key NOT pinned: the anchor was checked with {}, read from beside the bundle. Anyone \
                 who rewrote this bundle could have re-signed it with their own key and replaced that file. \
                 Verify with the key you trust: attenu-hook verify BUNDLE --pub FILE",
                shown_file(key_file)
            );
        }
        (KeyTrust::Hmac, _) => {
            let _ = writeln!(out, "key: HMAC test secret (reference test vectors only)");
        }
        (KeyTrust::None, _) => {
            let _ = writeln!(
                out,
                "WARNING: no key: the anchor signature was NOT checked, so a bundle rewritten from its first \
                 entry would look consistent. Pass the project's anchor.pub with --pub FILE"
            );
        }
    }
}

/// `VALID` or `INVALID`, the counts and each check's outcome.
fn verdict_line(out: &mut String, report: &Report) {
    let yes = |b: bool| if b { "ok" } else { "FAILED" };
    let chain_id = shown(&Json::from_value(&report.chain_id));
    // The reference answers ok with binding "failed" when an allow promised an outcome that
    // never came; the verdict follows it, and the line says what "failed" means there.
    let binding = match (report.valid, report.checks.execution_binding) {
        (true, Binding::Failed) => format!(
            "failed for {} unaccounted call(s), listed as OPEN above",
            report.calls.unaccounted
        ),
        (_, level) => level.to_string(),
    };
    if let Some(line) = other_key_line(report) {
        let _ = writeln!(out, "{line}");
        return;
    }
    let verdict = match report.verdict() {
        Verdict::ValidUnpinned => "VALID (key NOT pinned)",
        Verdict::ValidWithNotice => "VALID (with NOTICE: see above)",
        Verdict::Valid => "VALID",
        Verdict::Invalid => "INVALID",
    };
    // Claude Code's own refusals are named only when there are some: the line is read by scripts.
    let by_claude = match report.refused_by_claude_code {
        0 => String::new(),
        n => format!(" ({n} refused by Claude Code)"),
    };
    let _ = writeln!(
        out,
        "{verdict}: {} failure(s); chain {chain_id}, {} entries, {} nodes, {} calls: {} allowed, {} denied{by_claude}, {} \
         would-deny (allowed, not enforced); integrity {}, monotonicity {}, containment {}, execution \
         binding {}, anchor {}, checkpoint {}",
        report.failures.len(),
        report.entries,
        report.nodes,
        report.actions_checked + report.ungated + report.denied,
        report.actions_checked,
        report.denied,
        report.ungated,
        yes(report.checks.integrity),
        yes(report.checks.monotonicity),
        yes(report.checks.containment),
        binding,
        report.checks.anchor,
        report.checks.checkpoint,
    );
}

/// The verdict of a bundle whose only fault is that another key than `--pub` signed it (its
/// checkpoint then fails under that key too): said as that, not as tampering.
fn other_key_line(report: &Report) -> Option<String> {
    let message = signed_by_another_key(report)?;
    Some(format!(
        "NOT VERIFIED: {message}. The hash chain of {} entries is intact, but nothing in it was checked against the key you gave",
        report.entries
    ))
}

/// When the only fault is that another key than the pinned one signed the bundle (its
/// checkpoint then failing under that key too), the failure's words saying so; `report`
/// shows them as `verify` does.
pub fn signed_by_another_key(report: &Report) -> Option<&str> {
    let mut other_key = None;
    for f in &report.failures {
        match f.name {
            FailureName::AnchorSignatureInvalid
                if f.detail.starts_with(super::anchor::NOT_SIGNED_BY_THAT_KEY) =>
            {
                other_key = Some(f.detail.as_str())
            }
            FailureName::CheckpointInvalid => {}
            _ => return None,
        }
    }
    other_key
}
