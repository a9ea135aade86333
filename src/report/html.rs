//! The page: one HTML file with its stylesheet inline and no script, no link and no image, so
//! it opens the same from a disk, a mail attachment or a printout. Every string from an input
//! goes through [`esc`]; the page's own words are constants.

use super::escape::text as esc;
use super::model::{BundleView, KeyOrigin, KeyUsed, Source};
use super::{fleet, sections, Input, Page};
use crate::evidence::verify::{signed_by_another_key, AnchorStatus, KeyTrust, Verdict};
use std::fmt::Write as _;

const STYLE: &str = include_str!("style.css");

/// How the page judges its inputs, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tone {
    Bad,
    Warn,
    Good,
}

impl Tone {
    pub fn class(self) -> &'static str {
        match self {
            Tone::Bad => "bad",
            Tone::Warn => "warn",
            Tone::Good => "good",
        }
    }
}

/// A bundle's verdict in words, and its tone: the verifier's `valid`, `key` and notices, nothing
/// else (the exit order of `verify`: an unpinned key before a notice).
pub fn verdict(b: &BundleView) -> (&'static str, Tone) {
    match (b.report.verdict(), b.report.key) {
        (Verdict::Invalid, _) if signed_by_another_key(&b.report).is_some() => {
            ("NOT VERIFIED: not signed by that key", Tone::Bad)
        }
        (Verdict::Invalid, _) => ("INVALID", Tone::Bad),
        (Verdict::ValidWithNotice, KeyTrust::Pinned) => ("VALID with NOTICE", Tone::Warn),
        (_, KeyTrust::Pinned) => ("VALID", Tone::Good),
        (_, KeyTrust::Hmac) => ("VALID under an HMAC test secret", Tone::Warn),
        (_, _) => ("VALID, key NOT pinned", Tone::Warn),
    }
}

pub fn render(page: &Page) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = page_title(page);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&title)
    );
    overall(&mut out, page);
    for (i, input) in page.inputs.iter().enumerate() {
        match input {
            Input::Bundle(b) => sections::bundle(&mut out, i + 1, b),
            Input::Audit(a) => fleet::render(&mut out, i + 1, a),
        }
    }
    sources(&mut out, page);
    if page.bundles().next().is_some() {
        limits(&mut out);
    }
    out.push_str(
        "<footer>Written by <code>attenu-hook report</code> from the files listed above, and \
         nothing else. Check it again with <code>attenu-hook verify BUNDLE --pub anchor.pub</code>.\
         </footer>\n</main>\n</body>\n</html>\n",
    );
    out
}

/// The verifier's verdict, then the page's own words. A session id is the bundle's own word,
/// so it is named only when every input verified under the pinned key.
pub(super) fn page_title(page: &Page) -> String {
    let headline = headline(page);
    let all_good = page.tone() == Tone::Good;
    let sessions: Vec<&str> = page
        .bundles()
        .filter_map(|b| b.chain.session.as_deref())
        .collect();
    let what = match sessions.first() {
        Some(s) if page.audits() == 0 && all_good => format!("session {s}"),
        _ if page.audits() > 0 => "fleet audit".into(),
        _ => String::new(),
    };
    match (headline.is_empty(), what.is_empty()) {
        (true, true) => "attenu-hook report".into(),
        (true, false) => format!("attenu-hook report: {what}"),
        (false, true) => format!("{headline}: attenu-hook report"),
        (false, false) => format!("{headline}: attenu-hook report, {what}"),
    }
}

/// The verdict over every input in words: the bundles', else the audits'.
fn headline(page: &Page) -> String {
    let bundles: Vec<&BundleView> = page.bundles().collect();
    let invalid = bundles.iter().filter(|b| !b.report.valid).count();
    let unpinned = bundles
        .iter()
        .filter(|b| b.report.valid && b.report.key != KeyTrust::Pinned)
        .count();
    let noticed = bundles
        .iter()
        .filter(|b| b.report.valid && !b.report.notices.is_empty())
        .count();
    let audit = audit_headline(page);
    let bundles_say = match (bundles.len(), invalid, unpinned, noticed) {
        (0, ..) => return audit,
        (1, ..) => verdict(bundles[0]).0.to_string(),
        (n, 0, 0, 0) => format!("VALID: all {n} bundles verify under the pinned key"),
        (n, 0, 0, k) => format!("VALID with NOTICE for {k} of {n} bundles"),
        (n, 0, u, _) => format!("VALID, key NOT pinned for {u} of {n} bundles"),
        (n, i, ..) => format!("INVALID: {i} of {n} bundles do not verify"),
    };
    match page.audits_iter().all(|a| a.report.passes()) {
        true => bundles_say,
        false => format!("{bundles_say}; {audit}"),
    }
}

/// The verdict over every input, first on the page.
fn overall(out: &mut String, page: &Page) {
    let tone = page.tone();
    let bundles: Vec<&BundleView> = page.bundles().collect();
    let invalid = bundles.iter().filter(|b| !b.report.valid).count();
    let headline = headline(page);
    let _ = write!(
        out,
        "<header class=\"verdict {}\" id=\"verdict\">\n<p class=\"kicker\">attenu-hook evidence report</p>\n",
        tone.class()
    );
    if !headline.is_empty() {
        let _ = writeln!(out, "<h1 data-verdict>{}</h1>", esc(&headline));
    }
    if !bundles.is_empty() {
        summary(out, &bundles);
    }
    for b in &bundles {
        key_statement(out, b, bundles.len() > 1);
        notices(out, b, bundles.len() > 1);
    }
    for a in page.audits_iter() {
        let failing = a
            .report
            .sessions
            .iter()
            .filter(|s| !s.status.passes())
            .count();
        let line = match (failing, a.report.sessions.len()) {
            (_, 0) => "Fleet audit: the store holds no session the audit could name.".to_string(),
            (0, n) => format!("Fleet audit: every one of {n} session(s) is complete or open."),
            (f, n) => format!(
                "Fleet audit: {f} of {n} session(s) with a notice, unverifiable, truncated, rewritten or forked."
            ),
        };
        let _ = writeln!(
            out,
            "<p class=\"fleet-verdict\" data-fleet-verdict>{}</p>",
            esc(&line)
        );
        fleet::findings(out, &a.report);
    }
    if invalid > 0 {
        out.push_str(
            "<p class=\"unproven-note\"><strong>Everything below about an invalid bundle is what \
             its file says, NOT what happened:</strong> it is marked UNPROVEN.</p>\n",
        );
    }
    out.push_str("</header>\n");
}

/// The counts over every bundle, as the entries say.
fn summary(out: &mut String, bundles: &[&BundleView]) {
    let sum = |f: fn(&BundleView) -> usize| bundles.iter().map(|b| f(b)).sum::<usize>();
    let calls = sum(|b| b.totals.calls);
    let allowed = sum(|b| b.totals.allowed + b.totals.unenforced);
    let denied = sum(|b| b.totals.denied);
    let open = sum(|b| b.report.calls.open.len());
    let agents = bundles
        .iter()
        .flat_map(|b| b.nodes.iter().filter(|n| !n.is_root()).map(|n| &n.agent))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let claimed = if bundles.iter().any(|b| !b.report.valid) {
        "As the files claim (NOT proven, an input is INVALID): "
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<p class=\"summary\" data-summary>{claimed}{calls} calls: {allowed} allowed, {denied} denied, {open} open; \
         {agents} subagent(s) seen{}</p>",
        if bundles.len() > 1 {
            format!(" in {} bundles", bundles.len())
        } else {
            String::new()
        }
    );
}

/// The headline of a page of audits only.
fn audit_headline(page: &Page) -> String {
    let sessions: Vec<_> = page
        .audits_iter()
        .flat_map(|a| &a.report.sessions)
        .collect();
    let failing = sessions.iter().filter(|s| !s.status.passes()).count();
    let fleet: usize = page.audits_iter().map(|a| a.report.findings.len()).sum();
    match (failing, fleet) {
        (0, 0) => "AUDIT PASSED".into(),
        (0, f) => format!("AUDIT FAILED: {f} finding(s) about the fleet"),
        (n, 0) => format!("AUDIT FAILED: {n} of {} sessions", sessions.len()),
        (n, f) => format!(
            "AUDIT FAILED: {n} of {} sessions, and {f} finding(s) about the fleet",
            sessions.len()
        ),
    }
}

/// The verifier's notices of a bundle (a lost sealed state the ledger records), on the first
/// screen: a valid bundle with one makes `report` exit 4, as `verify` does.
fn notices(out: &mut String, b: &BundleView, several: bool) {
    let name = if several {
        format!("{}: ", esc(&b.source.path))
    } else {
        String::new()
    };
    for n in &b.report.notices {
        let seq = n.seq.map(|s| format!(", seq {s}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "<p class=\"notice\" data-notice=\"{}\"><strong>NOTICE {}</strong> {name}(entry {}{seq}): {}</p>",
            esc(n.name),
            esc(n.name),
            n.index,
            esc(&n.detail)
        );
    }
}

/// Which key the anchor was checked with, and what that is worth.
fn key_statement(out: &mut String, b: &BundleView, several: bool) {
    let name = if several {
        format!("{}: ", esc(&b.source.path))
    } else {
        String::new()
    };
    // A signer is named only when the signature held and the bundle verified under it.
    let anchor_ok = b.report.checks.anchor == AnchorStatus::Verified;
    let held = anchor_ok && b.report.valid;
    let (class, words) = match b.report.key {
        KeyTrust::Pinned if held => (
            "key pinned",
            format!(
                "<strong>Key pinned</strong>: {name}signed by {}, {}.",
                key_words(&b.key),
                pinned_how(&b.key)
            ),
        ),
        KeyTrust::Pinned => (
            "key pinned",
            format!(
                "<strong>Key pinned</strong>: {name}checked with {}, {}. {}",
                key_words(&b.key),
                pinned_how(&b.key),
                if anchor_ok {
                    "The anchor's signature holds, but the bundle does NOT verify: nothing shows what that key signed.".to_string()
                } else if let Some(why) = signed_by_another_key(&b.report) {
                    format!(
                        "{}. This is not a sign of tampering: the hash chain is intact, but nothing \
                         in it was checked against the key you gave.",
                        esc(&capitalized(why))
                    )
                } else {
                    "The signature does NOT hold under it: nothing here shows that this key signed the bundle.".to_string()
                }
            ),
        ),
        KeyTrust::BundleSide => (
            "key unpinned",
            format!(
                "<strong>Key NOT pinned</strong>: {name}the signature was checked with {}",
                key_words(&b.key)
            ) + &unpinned_how(&b.key),
        ),
        KeyTrust::Hmac => (
            "key unpinned",
            format!("<strong>HMAC test secret</strong>: {name}reference test vectors only."),
        ),
        KeyTrust::None => (
            "key unpinned",
            format!(
                "<strong>No key</strong>: {name}the anchor signature was NOT checked, so a bundle \
                 rewritten from its first entry would look consistent. Pass the project's anchor.pub \
                 with <code>--pub</code>."
            ),
        ),
    };
    let _ = writeln!(out, "<p class=\"{class}\" data-key>{words}</p>");
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// How a pinned key was pinned: a key file (`--pub`) or a team CA (`--ca`).
fn pinned_how(k: &KeyUsed) -> String {
    match &k.origin {
        KeyOrigin::TeamCa { key_id, ca } => format!(
            "the key that the signer certificate <code>{}</code> certifies, vouched for by the \
             team CA you passed with <code>--ca</code> ({}) when the bundle was signed",
            esc(key_id),
            esc(ca)
        ),
        _ => "the key you passed with <code>--pub</code>".into(),
    }
}

/// Where an unpinned key came from, and what to pass instead.
fn unpinned_how(k: &KeyUsed) -> String {
    match &k.origin {
        KeyOrigin::CarriedCertificate { key_id } => format!(
            ", the key named by the signer certificate <code>{}</code> that the bundle carries. \
             No CA you pinned vouched for it, and whoever rewrote the bundle could have put in a \
             certificate of their own. Pass the team CA you trust: <code>attenu-hook report BUNDLE \
             --ca ca.pub --out report.html</code>.",
            esc(key_id)
        ),
        _ => ", read from beside the bundle. Whoever rewrote the bundle could have re-signed it \
              and replaced that file. Pass the key you trust: <code>attenu-hook report BUNDLE \
              --pub anchor.pub --out report.html</code>."
            .into(),
    }
}

fn key_words(k: &KeyUsed) -> String {
    match (&k.kid, &k.file) {
        (Some(kid), Some(file)) => format!("<code>{}</code> ({})", esc(kid), esc(file)),
        (Some(kid), None) => format!("<code>{}</code>", esc(kid)),
        (None, Some(file)) => esc(file),
        (None, None) => "no key".into(),
    }
}

/// Every input file with its size and hash, computed here from its bytes.
fn sources(out: &mut String, page: &Page) {
    out.push_str(
        "<section id=\"sources\">\n<h2>Where this came from</h2>\n<p class=\"note\">Sizes and SHA-256 \
         were computed from the files when this page was written; compare them with the files you \
         were given (<code>sha256sum FILE</code>).</p>\n<table class=\"rows\">\n<thead><tr><th>file</th>\
         <th>kind</th><th>bytes</th><th>SHA-256</th><th>details</th></tr></thead>\n<tbody>\n",
    );
    for input in &page.inputs {
        let (source, kind, details) = match input {
            Input::Bundle(b) => (&b.source, "bundle", bundle_details(b)),
            Input::Audit(a) => (
                &a.source,
                "audit JSON",
                "the output of <code>attenu-hook audit --json</code>, not signed".to_string(),
            ),
        };
        source_row(out, source, kind, &details);
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn bundle_details(b: &BundleView) -> String {
    let mut d = String::new();
    if let Some(c) = &b.chain.chain_id {
        let _ = write!(d, "chain <code>{}</code>", esc(c));
    }
    if let Some(kid) = &b.chain.anchor_kid {
        let _ = write!(d, "; anchor names key <code>{}</code>", esc(kid));
    }
    if let Some(f) = &b.key.file {
        let _ = write!(d, "; checked with {}", esc(f));
    }
    match &b.key.origin {
        KeyOrigin::TeamCa { key_id, ca } => {
            let _ = write!(
                d,
                "; checked with the key certified as <code>{}</code> by the CA {}",
                esc(key_id),
                esc(ca)
            );
        }
        KeyOrigin::CarriedCertificate { key_id } => {
            let _ = write!(
                d,
                "; checked with the key of the certificate <code>{}</code> it carries (no CA pinned)",
                esc(key_id)
            );
        }
        KeyOrigin::File => {}
    }
    if let Some(p) = &b.chain.producer {
        let _ = write!(d, "; producer {} (claimed, not signed)", esc(p));
    }
    if let Some(id) = &b.chain.identity {
        let signed = if b.report.valid {
            "signed with the chain"
        } else {
            "not proven"
        };
        let _ = write!(d, "; recorded by {} ({signed})", esc(id));
    }
    d
}

fn source_row(out: &mut String, s: &Source, kind: &str, details: &str) {
    let _ = writeln!(
        out,
        "<tr><td data-label=\"file\"><code>{}</code></td><td data-label=\"kind\">{kind}</td>\
         <td data-label=\"bytes\">{}</td><td data-label=\"SHA-256\"><code class=\"hash\">{}</code></td>\
         <td data-label=\"details\">{details}</td></tr>",
        esc(&s.path),
        s.bytes,
        esc(&s.sha256)
    );
}

/// What no bundle can prove, said once for every page.
fn limits(out: &mut String) {
    out.push_str(
        "<section id=\"limits\">\n<h2>What this page cannot prove</h2>\n<ul>\n\
         <li>A valid bundle proves that these entries were written in this order, unchanged since, and \
         signed by the key shown. It does not prove that the key was kept secret.</li>\n\
         <li>Times are the recording machine's clock, not a trusted timestamp.</li>\n\
         <li>Agent names and types are what Claude Code sent to the hook.</li>\n\
         <li>An allowed call is not proof that the tool did anything; an outcome is what Claude Code \
         reported after the call, not an observation of its effect.</li>\n\
         <li>A call Claude Code refused itself never reached the hook and is not here; nor is \
         anything done outside Claude Code.</li>\n\
         <li>A bundle is one chain. How many chains the session had (<q>chain k of n</q>) is claimed \
         by the bundle, not signed: count the bundles you were given, or run the fleet audit.</li>\n\
         </ul>\n</section>\n",
    );
}
