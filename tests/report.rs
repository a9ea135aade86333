//! `attenu-hook report`: the reviewer's page, from bundles the real binary wrote, opened in a
//! real browser. Headless Chromium loads the page from disk and dumps the DOM it rendered; the
//! tests read the verdict, the counts, a denial's reason and hostile names back from that DOM,
//! and save screenshots (desktop and phone width) under the target directory. Without Chromium
//! (`ATTENU_CHROMIUM_BIN`, or `chromium` / `chromium-browser` on PATH) those tests show as
//! ignored; `.ci/run` installs it and fails them instead.

mod common;
use common::harness::{self, skip};
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    harness::run(tests![
        the_demos_session_renders_with_its_verdict_and_three_denials,
        an_invalid_bundle_says_invalid_first_and_marks_the_rest_unproven,
        hostile_names_are_escaped_in_the_rendered_page,
        an_audit_renders_the_fleet_with_sessions_not_complete_first,
        without_pub_the_key_is_not_pinned_and_without_any_key_it_is_invalid,
        several_chains_and_an_audit_go_on_one_page,
        an_unusable_input_or_key_writes_no_page_and_exits_2,
        a_recorded_lost_checkpoint_is_shown_and_exits_4,
        an_audit_with_a_fleet_finding_or_a_notice_does_not_pass,
    ]);
}

/// The browser: `ATTENU_CHROMIUM_BIN`, else `chromium` or `chromium-browser` on PATH, or the
/// test is skipped.
fn chromium() -> PathBuf {
    let candidates: Vec<PathBuf> = match std::env::var_os("ATTENU_CHROMIUM_BIN") {
        Some(b) if !b.is_empty() => vec![PathBuf::from(b)],
        _ => ["chromium", "chromium-browser"]
            .iter()
            .map(PathBuf::from)
            .collect(),
    };
    for c in candidates {
        let runs = Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if runs {
            return c;
        }
    }
    skip("needs Chromium: apt-get install chromium, or set ATTENU_CHROMIUM_BIN (.ci/run installs it)")
}

fn headless(browser: &Path, extra: &[&str], page: &Path) -> std::process::Output {
    let profile = TempDir::new("report-chromium-profile");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The DOM Chromium rendered from the page at `page`.
fn rendered_dom(browser: &Path, page: &Path) -> String {
    String::from_utf8(headless(browser, &["--dump-dom"], page).stdout).unwrap()
}

/// A screenshot of `page` at `width` columns, saved as `name` under the target directory and
/// checked to be a PNG of that width: its path.
fn screenshot(browser: &Path, page: &Path, name: &str, width: u32, height: u32) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join(name);
    let _ = std::fs::remove_file(&png);
    headless(
        browser,
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={width},{height}"),
        ],
        page,
    );
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot {}: {e}", png.display()));
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        png.display()
    );
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    assert_eq!(w, width, "{}", png.display());
    eprintln!("screenshot: {}", png.display());
    png
}

/// `report ARGS --out DIR/NAME`: exit code, the page's text (empty when none was written).
fn report(args: &[&str], out: &Path) -> (Out, String) {
    let mut all: Vec<&str> = vec!["report"];
    all.extend_from_slice(args);
    let out_s = out.to_str().unwrap();
    all.extend_from_slice(&["--out", out_s]);
    let run = cli(&all);
    let page = std::fs::read_to_string(out).unwrap_or_default();
    (run, page)
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// The text of the first element carrying attribute `attr` (`data-count="calls"`).
fn text_of<'a>(dom: &'a str, attr: &str) -> &'a str {
    let at = dom
        .find(attr)
        .unwrap_or_else(|| panic!("no {attr} in the DOM"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    let end = start + dom[start..].find('<').unwrap();
    &dom[start..end]
}

/// The demo's session: `examples/payloads/` replayed through the binary in a copy of
/// `sample_project/`, as `cargo run --example demo` does (reviewer Read, Write, Bash, WebFetch,
/// researcher WebFetch; three denials), exported at SessionEnd. The project and the bundle.
fn demo_session() -> (TempDir, PathBuf) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let t = TempDir::new("report-demo");
    let project = t.path().join("project");
    copy_dir(&repo.join("sample_project"), &project);
    let home = t.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut session = String::new();
    for name in [
        "session-start",
        "pre-1-reviewer-read",
        "post-1-reviewer-read",
        "pre-2-reviewer-write",
        "pre-3-reviewer-bash",
        "pre-4-reviewer-webfetch",
        "pre-5-researcher-webfetch",
        "post-5-researcher-webfetch",
        "session-end",
    ] {
        let text =
            std::fs::read_to_string(repo.join(format!("examples/payloads/{name}.json"))).unwrap();
        let slug: String = project
            .display()
            .to_string()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let text = text
            .replace("${PROJECT_DIR}", project.to_str().unwrap())
            .replace("${PROJECT_SLUG}", &slug)
            .replace("${HOME}", home.to_str().unwrap());
        let payload: Value = serde_json::from_str(&text).unwrap();
        session = payload["session_id"].as_str().unwrap().to_string();
        let out = hook(&project, &payload);
        assert_eq!(out.code, 0, "{name}: {}{}", out.stdout, out.stderr);
    }
    let bundle = project.join(format!(".attenu/bundle-{session}.json"));
    assert!(bundle.exists(), "SessionEnd wrote no bundle");
    (t, bundle)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn anchor_pub_of(bundle: &Path) -> PathBuf {
    bundle.parent().unwrap().join("anchor.pub")
}

fn the_demos_session_renders_with_its_verdict_and_three_denials() {
    let (t, bundle) = demo_session();
    let page = t.path().join("report.html");
    let key = anchor_pub_of(&bundle);
    let (run, html) = report(
        &[bundle.to_str().unwrap(), "--pub", key.to_str().unwrap()],
        &page,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Nothing the page needs comes from elsewhere: no script, link, image or remote URL.
    for outside in [
        "<script", "<link", "<img", "src=", "http://", "https://", "@import", "url(",
    ] {
        assert!(!html.contains(outside), "the page holds {outside:?}");
    }
    let browser = chromium();
    let dom = rendered_dom(&browser, &page);
    assert_eq!(text_of(&dom, "data-verdict"), "VALID", "{dom}");
    assert!(dom.contains("Key pinned"), "{dom}");
    assert!(
        dom.contains("Key pinned</strong>: signed by <code>attenu-hook-"),
        "{dom}"
    );
    assert!(!dom.contains("data-notice"), "{dom}");
    assert_eq!(text_of(&dom, "data-count=\"calls\""), "5");
    assert_eq!(text_of(&dom, "data-count=\"allowed\""), "2");
    assert_eq!(text_of(&dom, "data-count=\"denied\""), "3");
    assert_eq!(text_of(&dom, "data-count=\"denials\""), "3");
    assert_eq!(text_of(&dom, "data-count=\"open\""), "0");
    assert_eq!(count(&dom, "data-call=\"deny\""), 3, "{dom}");
    assert_eq!(count(&dom, "data-call=\"allow\""), 2, "{dom}");
    // Two groups: the reviewer's two unresolved denials, and its out-of-authority one.
    assert_eq!(count(&dom, "data-denial-group"), 2, "{dom}");
    assert!(
        dom.contains(
            "WebFetch needs net.fetch, which the project declares but not for subagent 'reviewer'"
        ),
        "{dom}"
    );
    assert!(
        dom.contains(">out-of-authority<") && dom.contains(">unresolved<"),
        "{dom}"
    );
    // The tree: the root and both subagents with what they were granted.
    assert_eq!(count(&dom, "class=\"node\""), 3, "{dom}");
    assert!(
        dom.contains(">researcher<") && dom.contains(">reviewer<"),
        "{dom}"
    );
    // The verdict comes first, before any section about the session.
    assert!(dom.find("data-verdict").unwrap() < dom.find("<article").unwrap());
    // Where it came from: the bundle's own SHA-256.
    let sha = attenu_hook::ledger::chain::sha256_hex(&std::fs::read(&bundle).unwrap());
    assert!(dom.contains(&sha), "{dom}");
    screenshot(&browser, &page, "demo-desktop.png", 1280, 2400);
    screenshot(&browser, &page, "demo-phone.png", 390, 4200);
}

fn an_invalid_bundle_says_invalid_first_and_marks_the_rest_unproven() {
    let browser = chromium();
    let (t, bundle) = demo_session();
    // The reviewer's Write, changed from a deny into an allow.
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let entries = doc["entries"].as_array_mut().unwrap();
    let write = entries.iter_mut().find(|e| e["tool"] == "Write").unwrap();
    write["event"] = json!("allow");
    // ...and the session named in the bundle's own words, which must not reach the title.
    entries[0]["context"]["session_id"] = json!("VALID and signed by the reviewer");
    let forged = t.path().join("forged.json");
    std::fs::write(&forged, serde_json::to_vec(&doc).unwrap()).unwrap();
    let page = t.path().join("forged.html");
    let key = anchor_pub_of(&bundle);
    let (run, _) = report(
        &[forged.to_str().unwrap(), "--pub", key.to_str().unwrap()],
        &page,
    );
    assert_eq!(
        run.code, 1,
        "the exit of `verify` on an invalid bundle: {}",
        run.stderr
    );
    let dom = rendered_dom(&browser, &page);
    assert_eq!(text_of(&dom, "data-verdict"), "INVALID", "{dom}");
    assert!(dom.find("data-verdict").unwrap() < dom.find("<article").unwrap());
    // The title and the first screen carry the verifier's verdict, never the bundle's words,
    // and name no signer of a bundle that does not verify.
    assert_eq!(
        text_of(&dom, "<title"),
        "INVALID: attenu-hook report",
        "{dom}"
    );
    let header = &dom[..dom.find("</header>").unwrap()];
    assert!(!header.contains("VALID and signed"), "{header}");
    assert!(!header.contains("signed by"), "{header}");
    assert!(header.contains("signature does NOT hold"), "{header}");
    assert!(header.contains("NOT proven"), "{header}");
    assert!(dom.contains("data-valid=\"false\""), "{dom}");
    assert!(dom.contains("data-failure=\"hash-mismatch\""), "{dom}");
    // Every section after the checks says it is unproven: tree, timeline, denials, open calls.
    assert_eq!(count(&dom, ">UNPROVEN<"), 4, "{dom}");
    assert!(dom.contains("NOT what happened"), "{dom}");
    screenshot(&browser, &page, "invalid-desktop.png", 1280, 2400);
}

fn hostile_names_are_escaped_in_the_rendered_page() {
    let p = sample("report-hostile");
    let hostile_agent = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>\"'&";
    let hostile_tool = "mcp__x__<b id=\"injected\">bold</b>";
    assert_denied_with(
        &p.subagent(hostile_agent, "Read").id("t1").run(),
        "undeclared-agent",
    );
    let out = p.subagent("reviewer", hostile_tool).id("t2").run();
    assert!(out.denied(), "{}", out.stdout);
    assert_denied_with(
        &p.subagent("reviewer", "WebFetch")
            .id("t3")
            .input(json!({"url": "https://x"}))
            .run(),
        "out-of-authority",
    );
    let bundles = p.export("s1");
    let page = p.path().join("hostile.html");
    let key = p.path().join(".attenu/anchor.pub");
    let (run, html) = report(&[&bundles[0], "--pub", key.to_str().unwrap()], &page);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !html.contains("<script") && !html.contains("<img") && !html.contains("<b id"),
        "{html}"
    );
    let browser = chromium();
    let dom = rendered_dom(&browser, &page);
    // Chromium parsed no element out of a name, and ran nothing.
    for injected in ["<script", "<img", "<b "] {
        assert!(!dom.contains(injected), "{injected} reached the DOM: {dom}");
    }
    assert!(
        dom.contains("<title>VALID: attenu-hook report, session s1</title>"),
        "{dom}"
    );
    // The names are there, as text.
    assert!(dom.contains("&lt;script&gt;document.title="), "{dom}");
    assert!(
        dom.contains("onerror=alert(1)&gt;\"'&amp; (undeclared)"),
        "{dom}"
    );
    assert!(
        dom.contains("mcp__x__&lt;b id=\"injected\"&gt;bold&lt;/b&gt;"),
        "{dom}"
    );
    assert_eq!(text_of(&dom, "data-count=\"denied\""), "3");
}

/// A store on disk (`file://`) with one session ended and one not, shipped with the real
/// shipper, audited with `audit --json`: the page lists the open one first.
fn an_audit_renders_the_fleet_with_sessions_not_complete_first() {
    let browser = chromium();
    let share = TempDir::new("report-share");
    let url = format!("file://{}", share.path().display());
    let p = ProjectBuilder::new("report-fleet")
        .agent("reviewer", "tools: Read")
        .config(&format!("[ship]\nurl = \"{url}\"\n"))
        .build();
    for (session, end) in [("done-session", true), ("open-session", false)] {
        p.session_start(session, "startup");
        assert_allowed(
            &p.read_by("reviewer", "/p/a")
                .session(session)
                .id("t1")
                .run(),
        );
        if end {
            p.event(session, "SessionEnd");
        }
    }
    drain(p.path());
    let key = p.path().join(".attenu/anchor.pub");
    let audit = cli(&["audit", &url, "--json", "--pub", key.to_str().unwrap()]);
    assert_eq!(audit.code, 0, "{}{}", audit.stdout, audit.stderr);
    let audit_json = p.path().join("audit.json");
    std::fs::write(&audit_json, &audit.stdout).unwrap();
    // The audit lists the open one first; reorder the file so the page has to sort itself.
    let mut doc: Value = serde_json::from_str(&audit.stdout).unwrap();
    doc["sessions"].as_array_mut().unwrap().reverse();
    assert_eq!(doc["sessions"][0]["status"], "complete", "{doc}");
    std::fs::write(&audit_json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let page = p.path().join("fleet.html");
    let (run, _) = report(&[audit_json.to_str().unwrap()], &page);
    assert_eq!(
        run.code, 0,
        "every session complete or open: {}",
        run.stderr
    );
    let dom = rendered_dom(&browser, &page);
    assert_eq!(text_of(&dom, "data-verdict"), "AUDIT PASSED", "{dom}");
    assert_eq!(text_of(&dom, "data-count=\"sessions\""), "2");
    let open = dom
        .find("data-session-status=\"open\"")
        .expect("the open session");
    let complete = dom
        .find("data-session-status=\"complete\"")
        .expect("the complete one");
    assert!(open < complete, "not complete first: {dom}");
    assert!(dom.contains("re-checks nothing"), "{dom}");
    // A directory store's times are the shipping machine's own, and the page says so.
    assert!(dom.contains("data-store-times=\"machine\""), "{dom}");
    // A session the audit found rewritten fails the page as it fails the audit.
    doc["sessions"][0]["status"] = json!("rewritten");
    std::fs::write(&audit_json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (run, _) = report(&[audit_json.to_str().unwrap()], &page);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dom = rendered_dom(&browser, &page);
    assert_eq!(
        text_of(&dom, "data-verdict"),
        "AUDIT FAILED: 1 of 2 sessions",
        "{dom}"
    );
    let rewritten = dom.find("data-session-status=\"rewritten\"").unwrap();
    assert!(
        rewritten < dom.find("data-session-status=\"open\"").unwrap(),
        "{dom}"
    );
    screenshot(&browser, &page, "fleet-desktop.png", 1280, 1200);
}

/// `attenu-hook ship --project P` until the outbox is empty (a detached shipper may hold it).
fn drain(project: &Path) {
    let mut last = String::new();
    for _ in 0..100 {
        let out = cli(&["ship", "--project", project.to_str().unwrap()]);
        if out.code == 0 {
            return;
        }
        last = out.stderr;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the outbox did not drain: {last}");
}

/// The key choice and exit codes of `verify`: the anchor.pub beside the bundle is used but not
/// pinned (exit 3); no key at all is invalid (exit 1). Read from the page as written.
fn without_pub_the_key_is_not_pinned_and_without_any_key_it_is_invalid() {
    let (t, bundle) = demo_session();
    let page = t.path().join("side.html");
    let (run, html) = report(&[bundle.to_str().unwrap()], &page);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        html.contains("<h1 data-verdict>VALID, key NOT pinned</h1>"),
        "{html}"
    );
    assert!(html.contains("<strong>Key NOT pinned</strong>"), "{html}");
    // Each section about the session says what its proof rests on.
    assert_eq!(count(&html, ">key not pinned</span>"), 4, "{html}");
    let alone = t.path().join("alone.json");
    std::fs::copy(&bundle, &alone).unwrap();
    let (run, html) = report(&[alone.to_str().unwrap()], &page);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(html.contains("<h1 data-verdict>INVALID</h1>"), "{html}");
    assert!(html.contains("<strong>No key</strong>"), "{html}");
    assert!(
        html.contains("data-failure=\"anchor-not-checked\""),
        "{html}"
    );
}

/// Two chains of one session (an agent file edited, then the session resumed) and an audit on
/// one page.
fn several_chains_and_an_audit_go_on_one_page() {
    let p = sample("report-chains");
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/a", "t1"));
    std::fs::write(
        p.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep\n---\nbody\n",
    )
    .unwrap();
    // Read when the session is resumed, which opens the second chain.
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert!(p.subagent("reviewer", "Bash").id("t2").run().denied());
    let bundles = p.export("s1");
    assert_eq!(bundles.len(), 2, "{bundles:?}");
    let audit = p.path().join("audit.json");
    std::fs::write(&audit, r#"{"sessions":[]}"#).unwrap();
    let key = p.path().join(".attenu/anchor.pub");
    let page = p.path().join("chains.html");
    let (run, html) = report(
        &[
            &bundles[0],
            &bundles[1],
            audit.to_str().unwrap(),
            "--pub",
            key.to_str().unwrap(),
        ],
        &page,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        html.contains("VALID: all 2 bundles verify under the pinned key"),
        "{html}"
    );
    assert!(
        html.contains(", chain 1 of 2</h2>") && html.contains(", chain 2 of 2</h2>"),
        "{html}"
    );
    assert_eq!(count(&html, "<article class=\"bundle\""), 2);
    assert_eq!(count(&html, "<article class=\"fleet\""), 1);
    assert!(
        html.contains("2 calls: 1 allowed, 1 denied, 1 open; 1 subagent(s) seen in 2 bundles"),
        "{html}"
    );
}

fn an_unusable_input_or_key_writes_no_page_and_exits_2() {
    let t = TempDir::new("report-unusable");
    let page = t.path().join("page.html");
    let junk = t.path().join("junk.json");
    std::fs::write(&junk, "not json {").unwrap();
    let (run, html) = report(&[junk.to_str().unwrap()], &page);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not JSON"), "{}", run.stderr);
    assert!(html.is_empty() && !page.exists());
    let missing = t.path().join("missing.json");
    let (run, _) = report(&[missing.to_str().unwrap()], &page);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
    let (_p, bundle) = demo_session();
    let bad_key = t.path().join("bad.pub");
    std::fs::write(&bad_key, "0123").unwrap();
    let (run, _) = report(
        &[bundle.to_str().unwrap(), "--pub", bad_key.to_str().unwrap()],
        &page,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cannot use the key file"),
        "{}",
        run.stderr
    );
    assert!(!page.exists());
    // An audit's JSON with a status the audit never writes is not read as one.
    let audit = t.path().join("audit.json");
    std::fs::write(
        &audit,
        r#"{"sessions":[{"project":"p","session":"s","status":"fine","why":"","chains":[]}]}"#,
    )
    .unwrap();
    let (run, _) = report(&[audit.to_str().unwrap()], &page);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("audit --json"), "{}", run.stderr);
}

/// A ledger that recorded a lost checkpoint (its sealed state removed between two calls): the
/// page shows the verifier's NOTICE on the first screen and in the checks, says `VALID with
/// NOTICE`, and exits 4 as `verify` does.
fn a_recorded_lost_checkpoint_is_shown_and_exits_4() {
    let browser = chromium();
    let p = sample("report-lost");
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/a", "t1"));
    std::fs::remove_file(p.path().join(".attenu/ledger-s1.state.json")).unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/b", "t2"));
    let bundles = p.export("s1");
    assert_eq!(p.verify_pinned(&bundles[0]).code, 4);
    let key = p.path().join(".attenu/anchor.pub");
    let page = p.path().join("lost.html");
    let (run, _) = report(&[&bundles[0], "--pub", key.to_str().unwrap()], &page);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let dom = rendered_dom(&browser, &page);
    assert_eq!(text_of(&dom, "data-verdict"), "VALID with NOTICE", "{dom}");
    assert!(
        dom.contains("<title>VALID with NOTICE: attenu-hook report</title>"),
        "{dom}"
    );
    let header = &dom[..dom.find("</header>").unwrap()];
    assert!(
        header.contains("data-notice=\"checkpoint-lost\""),
        "{header}"
    );
    assert!(header.contains("checkpoint missing"), "{header}");
    assert!(!header.contains("class=\"verdict good\""), "{header}");
    assert!(dom.contains("1 notice(s)"), "{dom}");
}

/// An audit whose JSON carries a finding about the fleet (no session of a pinned key) does not
/// pass, on the page either; nor does a session the audit found with a lost checkpoint.
fn an_audit_with_a_fleet_finding_or_a_notice_does_not_pass() {
    let browser = chromium();
    let share = TempDir::new("report-notice-share");
    let url = format!("file://{}", share.path().display());
    let p = ProjectBuilder::new("report-notice")
        .agent("reviewer", "tools: Read")
        .config(&format!("[ship]\nurl = \"{url}\"\n"))
        .build();
    p.session_start("s1", "startup");
    assert_allowed(&p.read_by("reviewer", "/p/a").session("s1").id("t1").run());
    // No shipper may hold the ledger when its sealed state goes: one that read the state
    // before and wrote it back after would undo the loss (seen once in CI under load).
    drain(p.path());
    std::fs::remove_file(p.path().join(".attenu/ledger-s1.state.json")).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/b").session("s1").id("t2").run());
    p.event("s1", "SessionEnd");
    drain(p.path());
    let key = p.path().join(".attenu/anchor.pub");
    let audit = cli(&["audit", &url, "--json", "--pub", key.to_str().unwrap()]);
    assert_eq!(audit.code, 1, "{}{}", audit.stdout, audit.stderr);
    let doc: Value = serde_json::from_str(&audit.stdout).unwrap();
    assert_eq!(doc["sessions"][0]["status"], "notice", "{doc}");
    assert!(
        doc["sessions"][0]["why"]
            .as_str()
            .unwrap()
            .contains("checkpoint-lost"),
        "{doc}"
    );
    let audit_json = p.path().join("audit.json");
    std::fs::write(&audit_json, &audit.stdout).unwrap();
    let page = p.path().join("notice.html");
    let (run, _) = report(&[audit_json.to_str().unwrap()], &page);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dom = rendered_dom(&browser, &page);
    assert_eq!(
        text_of(&dom, "data-verdict"),
        "AUDIT FAILED: 1 of 1 sessions",
        "{dom}"
    );
    assert!(dom.contains("data-session-status=\"notice\""), "{dom}");
    // No session at all, and a finding about the fleet: not a pass.
    let empty = p.path().join("empty.json");
    std::fs::write(
        &empty,
        r#"{"sessions":[],"findings":["no session of the pinned CA's fleet is in the store"]}"#,
    )
    .unwrap();
    let (run, _) = report(&[empty.to_str().unwrap()], &page);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dom = rendered_dom(&browser, &page);
    assert!(!dom.contains("AUDIT PASSED"), "{dom}");
    assert_eq!(
        text_of(&dom, "data-verdict"),
        "AUDIT FAILED: 1 finding(s) about the fleet",
        "{dom}"
    );
    assert!(dom.contains("no session of the pinned CA"), "{dom}");
    assert!(
        dom.contains("<title>AUDIT FAILED: 1 finding(s) about the fleet: attenu-hook report, fleet audit</title>"),
        "{dom}"
    );
}
