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
        an_unusable_input_writes_no_page_and_exits_2,
        report_text_is_pinned,
        an_unusable_key_writes_no_page_and_exits_2,
        an_audit_status_the_audit_never_writes_is_refused,
        a_recorded_lost_sealed_state_is_shown_and_exits_4,
        an_audit_with_a_notice_does_not_pass,
        an_audit_with_a_fleet_finding_does_not_pass,
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

/// `report BUNDLE --pub KEY --out PAGE`, `KEY` the anchor.pub beside the bundle.
fn report_pinned(bundle: &Path, page: &Path) -> (Out, String) {
    report_pinned_by(bundle, bundle, page)
}

/// `report FILE --pub KEY --out PAGE`, `KEY` the anchor.pub beside `bundle`.
fn report_pinned_by(file: &Path, bundle: &Path, page: &Path) -> (Out, String) {
    let key = anchor_pub_of(bundle);
    report(
        &[file.to_str().unwrap(), "--pub", key.to_str().unwrap()],
        page,
    )
}

/// `report FILE... --pub <the project's anchor.pub> --out PAGE`.
fn report_in(p: &TempDir, files: &[&str], page: &Path) -> (Out, String) {
    let key = p.path().join(".attenu/anchor.pub");
    let mut args = files.to_vec();
    args.extend(["--pub", key.to_str().unwrap()]);
    report(&args, page)
}

/// The page's verdict (the text of its `data-verdict` element).
fn verdict(dom: &str) -> &str {
    text_of(dom, "data-verdict")
}

/// The text of the element counting `what` (`calls`, `denied`, `sessions`, ...).
fn count_of<'a>(dom: &'a str, what: &str) -> &'a str {
    text_of(dom, &format!("data-count=\"{what}\""))
}

/// `first` stands in `dom` before `then`, both being there.
#[track_caller]
fn assert_before(dom: &str, first: &str, then: &str) {
    let at = |part: &str| dom.find(part).unwrap_or_else(|| panic!("no {part}: {dom}"));
    assert!(at(first) < at(then), "{first} is not before {then}: {dom}");
}

/// The attribute marking a session of `status` on an audit's page.
fn status(status: &str) -> String {
    format!("data-session-status=\"{status}\"")
}

/// The page up to the end of its `<header>`: what the first screen shows.
fn header_of(dom: &str) -> &str {
    &dom[..dom.find("</header>").unwrap()]
}

/// The SHA-256 of the file at `path`, in hex.
fn sha256_of(path: &Path) -> String {
    attenu_hook::ledger::chain::sha256_hex(&bytes_of(path))
}

/// Writes `doc` as JSON at `path`.
fn write_json(path: &Path, doc: &Value) {
    std::fs::write(path, serde_json::to_vec(doc).unwrap()).unwrap();
}

/// Parts of a page that would come from elsewhere: a script, link, image or remote URL.
const FROM_ELSEWHERE: [&str; 8] = [
    "<script", "<link", "<img", "src=", "http://", "https://", "@import", "url(",
];

fn the_demos_session_renders_with_its_verdict_and_three_denials() {
    let (t, bundle) = demo_session();
    let page = t.path().join("report.html");
    let (run, html) = report_pinned(&bundle, &page);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_lacks(&html, &FROM_ELSEWHERE, "needs nothing from elsewhere");
    let browser = chromium();
    let dom = rendered_dom(&browser, &page);
    assert_eq!(verdict(&dom), "VALID", "{dom}");
    assert_contains(&dom, &[PINNED]);
    assert!(!dom.contains("data-notice"), "{dom}");
    assert_demo_counts(&dom);
    // Two groups: the reviewer's two unresolved denials, and its out-of-authority one.
    assert_eq!(count(&dom, "data-denial-group"), 2, "{dom}");
    assert_contains(&dom, &[NEEDS_NET, ">out-of-authority<", ">unresolved<"]);
    // The tree: the root and both subagents with what they were granted.
    assert_eq!(count(&dom, "class=\"node\""), 3, "{dom}");
    assert_contains(&dom, &[">researcher<", ">reviewer<"]);
    // The verdict comes first; where it came from: the bundle's own SHA-256.
    assert_before(&dom, "data-verdict", "<article");
    assert_contains(&dom, &[&sha256_of(&bundle)]);
    screenshot(&browser, &page, "demo-desktop.png", 1280, 2400);
    screenshot(&browser, &page, "demo-phone.png", 390, 4200);
}

const HASH_MISMATCH: &str = "data-failure=\"hash-mismatch\"";
const PINNED: &str = "Key pinned</strong>: signed by <code>attenu-hook-";
const NEEDS_NET: &str =
    "WebFetch needs net.fetch, which the project declares but not for subagent 'reviewer'";

/// The demo's counts: five calls, two allowed, three denied (three denials), none open.
#[track_caller]
fn assert_demo_counts(dom: &str) {
    let counts = [("calls", "5"), ("allowed", "2"), ("denied", "3")];
    for (what, n) in counts.into_iter().chain([("denials", "3"), ("open", "0")]) {
        assert_eq!(count_of(dom, what), n, "{what}");
    }
    assert_eq!(count(dom, "data-call=\"deny\""), 3, "{dom}");
    assert_eq!(count(dom, "data-call=\"allow\""), 2, "{dom}");
}

fn an_invalid_bundle_says_invalid_first_and_marks_the_rest_unproven() {
    let browser = chromium();
    let (t, bundle) = demo_session();
    let forged = t.path().join("forged.json");
    write_json(&forged, &write_made_an_allow(&bundle));
    let page = t.path().join("forged.html");
    let (run, _) = report_pinned_by(&forged, &bundle, &page);
    // The exit of `verify` on an invalid bundle.
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dom = rendered_dom(&browser, &page);
    assert_eq!(verdict(&dom), "INVALID", "{dom}");
    assert_before(&dom, "data-verdict", "<article");
    // The title and the first screen carry the verifier's verdict, never the bundle's words,
    // and name no signer of a bundle that does not verify.
    let title = text_of(&dom, "<title");
    assert_eq!(title, "INVALID: attenu-hook report", "{dom}");
    let header = header_of(&dom);
    assert_lacks(header, &["VALID and signed", "signed by"], "the header");
    assert_contains(header, &["signature does NOT hold", "NOT proven"]);
    assert_contains(&dom, &["data-valid=\"false\"", HASH_MISMATCH]);
    // Every section after the checks says it is unproven: tree, timeline, denials, open calls.
    assert_eq!(count(&dom, ">UNPROVEN<"), 4, "{dom}");
    assert_contains(&dom, &["NOT what happened"]);
    screenshot(&browser, &page, "invalid-desktop.png", 1280, 2400);
}

/// The demo's bundle with the reviewer's Write changed from a deny into an allow, and the
/// session named in the bundle's own words, which must not reach the title.
fn write_made_an_allow(bundle: &Path) -> Value {
    let mut doc: Value = serde_json::from_slice(&bytes_of(bundle)).unwrap();
    let entries = doc["entries"].as_array_mut().unwrap();
    let write = entries.iter_mut().find(|e| e["tool"] == "Write").unwrap();
    write["event"] = json!("allow");
    entries[0]["context"]["session_id"] = json!("VALID and signed by the reviewer");
    doc
}

fn hostile_names_are_escaped_in_the_rendered_page() {
    let p = sample("report-hostile");
    three_denials_with_hostile_names(&p);
    let bundles = p.export("s1");
    let page = p.path().join("hostile.html");
    let (run, html) = report_in(&p, &[&bundles[0]], &page);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_lacks(&html, &["<script", "<img", "<b id"], "the page as written");
    let dom = rendered_dom(&chromium(), &page);
    // Chromium parsed no element out of a name, and ran nothing.
    assert_lacks(&dom, &["<script", "<img", "<b "], "reached the DOM");
    assert_contains(&dom, &[VALID_S1]);
    // The names are there, as text.
    assert_contains(&dom, &[SCRIPT_AS_TEXT, AGENT_AS_TEXT, TOOL_AS_TEXT]);
    assert_eq!(count_of(&dom, "denied"), "3");
}

const HOSTILE_AGENT: &str =
    "<script>document.title='pwned'</script><img src=x onerror=alert(1)>\"'&";
const HOSTILE_TOOL: &str = "mcp__x__<b id=\"injected\">bold</b>";
const VALID_S1: &str = "<title>VALID: attenu-hook report, session s1</title>";
const SCRIPT_AS_TEXT: &str = "&lt;script&gt;document.title=";
const AGENT_AS_TEXT: &str = "onerror=alert(1)&gt;\"'&amp; (undeclared)";
const TOOL_AS_TEXT: &str = "mcp__x__&lt;b id=\"injected\"&gt;bold&lt;/b&gt;";

/// Session s1: an undeclared agent with a hostile name, the reviewer's call of a tool with a
/// hostile name, and its out-of-authority WebFetch, each denied.
fn three_denials_with_hostile_names(p: &TempDir) {
    let out = p.subagent(HOSTILE_AGENT, "Read").id("t1").run();
    assert_denied_with(&out, "undeclared-agent");
    let out = p.subagent("reviewer", HOSTILE_TOOL).id("t2").run();
    assert!(out.denied(), "{}", out.stdout);
    let fetch = p.subagent("reviewer", "WebFetch").id("t3");
    let out = fetch.input(json!({"url": "https://x"})).run();
    assert_denied_with(&out, "out-of-authority");
}

/// A store on disk (`file://`) with one session ended and one not, shipped with the real
/// shipper, audited with `audit --json`: the page lists the open one first.
fn an_audit_renders_the_fleet_with_sessions_not_complete_first() {
    let browser = chromium();
    let (p, _share, url) = shipping_project("report-fleet");
    for (session, end) in [("done-session", true), ("open-session", false)] {
        one_read_in(&p, session, "/p/a", "t1", end);
    }
    drain(p.path());
    let mut doc = audit_json(&p, &url, 0);
    // The audit lists the open one first; reorder the file so the page has to sort itself.
    doc["sessions"].as_array_mut().unwrap().reverse();
    assert_eq!(doc["sessions"][0]["status"], "complete", "{doc}");
    let (run, dom) = render_audit(&browser, &p, &doc);
    assert_eq!(run.code, 0, "{}", run.stderr); // every session complete or open
    assert_eq!(verdict(&dom), "AUDIT PASSED", "{dom}");
    assert_eq!(count_of(&dom, "sessions"), "2");
    assert_before(&dom, &status("open"), &status("complete"));
    // A directory store's times are the shipping machine's own, and the page says so.
    assert_contains(&dom, &["re-checks nothing", "data-store-times=\"machine\""]);
    // A session the audit found rewritten fails the page as it fails the audit.
    doc["sessions"][0]["status"] = json!("rewritten");
    let (run, dom) = render_audit(&browser, &p, &doc);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(verdict(&dom), "AUDIT FAILED: 1 of 2 sessions", "{dom}");
    assert_before(&dom, &status("rewritten"), &status("open"));
    screenshot(&browser, &page_of(&p), "fleet-desktop.png", 1280, 1200);
}

/// A project with a reviewer (tools: Read) shipping to a fresh directory store:
/// (project, the store's directory, its `file://` URL).
fn shipping_project(tag: &str) -> (TempDir, TempDir, String) {
    let share = TempDir::new(&format!("{tag}-share"));
    let url = format!("file://{}", share.path().display());
    let p = ProjectBuilder::new(tag)
        .agent("reviewer", "tools: Read")
        .config(&format!("[ship]\nurl = \"{url}\"\n"))
        .build();
    (p, share, url)
}

/// Session `session` started, the reviewer's read of `file` as `id` allowed, and the session
/// ended when `end`.
fn one_read_in(p: &TempDir, session: &str, file: &str, id: &str, end: bool) {
    p.session_start(session, "startup");
    assert_allowed(&p.read_by("reviewer", file).session(session).id(id).run());
    if end {
        p.event(session, "SessionEnd");
    }
}

/// `audit URL --json --pub <the project's anchor.pub>`, which must exit `code`: its JSON.
#[track_caller]
fn audit_json(p: &TempDir, url: &str, code: i32) -> Value {
    let key = p.path().join(".attenu/anchor.pub");
    let audit = cli(&["audit", url, "--json", "--pub", key.to_str().unwrap()]);
    assert_eq!(audit.code, code, "{}{}", audit.stdout, audit.stderr);
    serde_json::from_str(&audit.stdout).unwrap()
}

/// The project's page (`fleet.html`).
fn page_of(p: &TempDir) -> PathBuf {
    p.path().join("fleet.html")
}

/// `doc` written as the project's `audit.json`, reported on the project's page, and rendered:
/// the run and the DOM.
fn render_audit(browser: &Path, p: &TempDir, doc: &Value) -> (Out, String) {
    let audit = p.path().join("audit.json");
    write_json(&audit, doc);
    let (run, _) = report(&[audit.to_str().unwrap()], &page_of(p));
    (run, rendered_dom(browser, &page_of(p)))
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
    let not_pinned = "<h1 data-verdict>VALID, key NOT pinned</h1>";
    assert_contains(&html, &[not_pinned, "<strong>Key NOT pinned</strong>"]);
    // Each section about the session says what its proof rests on.
    assert_eq!(count(&html, ">key not pinned</span>"), 4, "{html}");
    let alone = t.path().join("alone.json");
    std::fs::copy(&bundle, &alone).unwrap();
    let (run, html) = report(&[alone.to_str().unwrap()], &page);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let no_key = ["<h1 data-verdict>INVALID</h1>", "<strong>No key</strong>"];
    assert_contains(&html, &no_key);
    assert_contains(&html, &["data-failure=\"anchor-not-checked\""]);
}

/// Two chains of one session (an agent file edited, then the session resumed) and an audit on
/// one page.
fn several_chains_and_an_audit_go_on_one_page() {
    let p = sample("report-chains");
    let bundles = two_chains(&p);
    let audit = p.path().join("audit.json");
    std::fs::write(&audit, r#"{"sessions":[]}"#).unwrap();
    let page = p.path().join("chains.html");
    let files = [bundles[0].as_str(), &bundles[1], audit.to_str().unwrap()];
    let (run, html) = report_in(&p, &files, &page);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_contains(
        &html,
        &[ALL_VERIFY, ", chain 1 of 2</h2>", ", chain 2 of 2</h2>"],
    );
    assert_eq!(count(&html, "<article class=\"bundle\""), 2);
    assert_eq!(count(&html, "<article class=\"fleet\""), 1);
    assert_contains(&html, &[SUMMARY]);
}

const ALL_VERIFY: &str = "VALID: all 2 bundles verify under the pinned key";
const SUMMARY: &str = "2 calls: 1 allowed, 1 denied, 1 open; 1 subagent(s) seen in 2 bundles";

/// Session s1 in two chains: a reviewer's read, the agent file edited (read when the session
/// is resumed, which opens the second chain), a denied Bash; its two bundles.
fn two_chains(p: &TempDir) -> Vec<String> {
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/a", "t1"));
    std::fs::write(
        p.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep\n---\nbody\n",
    )
    .unwrap();
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert!(p.subagent("reviewer", "Bash").id("t2").run().denied());
    let bundles = p.export("s1");
    assert_eq!(bundles.len(), 2, "{bundles:?}");
    bundles
}

fn an_unusable_input_writes_no_page_and_exits_2() {
    let t = TempDir::new("report-unusable");
    let page = t.path().join("page.html");
    let junk = t.path().join("junk.json");
    std::fs::write(&junk, "not json {").unwrap();
    let (run, html) = report(&[junk.to_str().unwrap()], &page);
    assert_refused(&run, "not JSON");
    assert!(html.is_empty() && !page.exists());
    let missing = t.path().join("missing.json");
    let (run, _) = report(&[missing.to_str().unwrap()], &page);
    assert_refused(&run, "cannot read");
}

/// What `report` prints beside its page, pinned: the page written under the pinned key (exit
/// 0), under the key beside the bundle (3), with no key at all (1), and no page for input that
/// is not JSON (2).
fn report_text_is_pinned() {
    let (t, bundle) = demo_session();
    let page = t.path().join("page.html");
    let run = |args: &[&str]| report(args, &page).0;
    let (b, key) = (bundle.to_str().unwrap(), anchor_pub_of(&bundle));
    let pinned = run(&[b, "--pub", key.to_str().unwrap()]);
    let mut text = transcript("report BUNDLE --pub KEY --out PAGE", &pinned);
    text += &transcript("report BUNDLE --out PAGE", &run(&[b]));
    let (alone, junk) = (t.path().join("alone.json"), t.path().join("junk.json"));
    std::fs::copy(&bundle, &alone).unwrap();
    text += &transcript("report ALONE --out PAGE", &run(&[alone.to_str().unwrap()]));
    std::fs::write(&junk, "not json {").unwrap();
    text += &transcript("report JUNK --out PAGE", &run(&[junk.to_str().unwrap()]));
    assert_snapshot("report.txt", &mask(&text, &[(t.dir(), "<dir>")]));
}

fn an_unusable_key_writes_no_page_and_exits_2() {
    let (t, bundle) = demo_session();
    let (bad_key, page) = (t.path().join("bad.pub"), t.path().join("page.html"));
    std::fs::write(&bad_key, "0123").unwrap();
    let args = [bundle.to_str().unwrap(), "--pub", bad_key.to_str().unwrap()];
    assert_refused(&report(&args, &page).0, "cannot use the key file");
    assert!(!page.exists());
}

/// An audit's JSON with a status the audit never writes is not read as one.
fn an_audit_status_the_audit_never_writes_is_refused() {
    let t = TempDir::new("report-unusable-audit");
    let audit = t.path().join("audit.json");
    std::fs::write(&audit, FINE).unwrap();
    let (run, _) = report(&[audit.to_str().unwrap()], &t.path().join("page.html"));
    assert_refused(&run, "audit --json");
}

const FINE: &str =
    r#"{"sessions":[{"project":"p","session":"s","status":"fine","why":"","chains":[]}]}"#;

/// `report` exited 2 saying `why` on stderr.
#[track_caller]
fn assert_refused(run: &Out, why: &str) {
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains(why), "{}", run.stderr);
}

/// A ledger that recorded a lost sealed state (its state file removed between two calls): the
/// page shows the verifier's NOTICE on the first screen and in the checks, says `VALID with
/// NOTICE`, and exits 4 as `verify` does.
fn a_recorded_lost_sealed_state_is_shown_and_exits_4() {
    let browser = chromium();
    let p = sample("report-lost");
    let bundle = a_bundle_with_a_lost_sealed_state(&p);
    let page = p.path().join("lost.html");
    let (run, _) = report_in(&p, &[&bundle], &page);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let dom = rendered_dom(&browser, &page);
    assert_eq!(verdict(&dom), "VALID with NOTICE", "{dom}");
    assert_contains(&dom, &[NOTICE_TITLE]);
    let header = header_of(&dom);
    let notice = "data-notice=\"checkpoint-lost\"";
    assert_contains(header, &[notice, "sealed state missing"]);
    assert!(!header.contains("class=\"verdict good\""), "{header}");
    assert_contains(&dom, &["1 notice(s)"]);
}

const NOTICE_TITLE: &str = "<title>VALID with NOTICE: attenu-hook report</title>";

/// Session s1's bundle, which `verify` finds valid with a notice (exit 4): its sealed state
/// was removed between two reads.
fn a_bundle_with_a_lost_sealed_state(p: &TempDir) -> String {
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/a", "t1"));
    remove_sealed_state(p.path());
    assert_allowed(&reviewer_read(p.path(), "s1", "/p/b", "t2"));
    let bundles = p.export("s1");
    assert_eq!(p.verify_pinned(&bundles[0]).code, 4);
    bundles[0].clone()
}

/// An audit that found a session with a lost sealed state does not pass, on the page either.
fn an_audit_with_a_notice_does_not_pass() {
    let browser = chromium();
    let (p, _share, url) = shipping_project("report-notice");
    p.session_start("s1", "startup");
    assert_allowed(&p.read_by("reviewer", "/p/a").session("s1").id("t1").run());
    // No shipper may hold the ledger when its sealed state goes: one that read the state
    // before and wrote it back after would undo the loss (seen once in CI under load).
    drain(p.path());
    remove_sealed_state(p.path());
    assert_allowed(&p.read_by("reviewer", "/p/b").session("s1").id("t2").run());
    p.event("s1", "SessionEnd");
    drain(p.path());
    let doc = audit_json(&p, &url, 1);
    assert_eq!(doc["sessions"][0]["status"], "notice", "{doc}");
    let why = doc["sessions"][0]["why"].as_str().unwrap();
    let phrase = "(checkpoint-lost, as `verify` notices)";
    assert!(why.contains(phrase) && !why.contains("  "), "{why}");
    let (run, dom) = render_audit(&browser, &p, &doc);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(verdict(&dom), "AUDIT FAILED: 1 of 1 sessions", "{dom}");
    assert_contains(&dom, &["data-session-status=\"notice\""]);
}

/// An audit whose JSON carries a finding about the fleet (no session of a pinned key) does not
/// pass, on the page either.
fn an_audit_with_a_fleet_finding_does_not_pass() {
    let t = TempDir::new("report-finding");
    let (empty, page) = (t.path().join("empty.json"), t.path().join("finding.html"));
    std::fs::write(&empty, NO_SESSION).unwrap();
    let (run, _) = report(&[empty.to_str().unwrap()], &page);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let dom = rendered_dom(&chromium(), &page);
    assert!(!dom.contains("AUDIT PASSED"), "{dom}");
    assert_eq!(
        verdict(&dom),
        "AUDIT FAILED: 1 finding(s) about the fleet",
        "{dom}"
    );
    assert_contains(&dom, &["no session of the pinned CA", FINDING_TITLE]);
}

const NO_SESSION: &str =
    r#"{"sessions":[],"findings":["no session of the pinned CA's fleet is in the store"]}"#;
const FINDING_TITLE: &str =
    "<title>AUDIT FAILED: 1 finding(s) about the fleet: attenu-hook report, fleet audit</title>";
