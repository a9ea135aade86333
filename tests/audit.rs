//! `attenu-hook audit` against a real S3 engine (Garage, single node on loopback) and a
//! directory. Sessions are made by the real hook binary with `[ship] url` set, drained with
//! `attenu-hook ship`, then changed on the machine the way the threat model says anyone who
//! can write `.attenu/` can (a rollback, a rewrite from GENESIS, a truncation, a deletion),
//! and the audit must report each from what the store holds. The Garage tests are reported as
//! ignored without a Garage binary (ATTENU_GARAGE_BIN or `garage` on PATH), and fail under
//! ATTENU_REQUIRE_LIVE=1.

mod common;
#[path = "common/s3.rs"]
mod s3;

use attenu_hook::ship::{Store, Target};
use common::{assert_snapshot, event, mask, pre, session_start, Out, ProjectBuilder, TempDir};
use s3::Garage;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    common::harness::run(tests![
        an_untouched_session_is_complete_and_one_not_ended_is_open,
        a_rollback_of_ledger_and_state_is_caught,
        a_chain_rewritten_from_genesis_is_caught,
        entries_cut_off_the_ledger_are_caught,
        a_bundle_of_a_cut_ledger_shipped_by_hand_is_truncated,
        a_session_deleted_on_the_machine_stays_open_with_its_age,
        a_bad_signature_or_an_unknown_key_is_unverifiable,
        a_store_that_cannot_be_read_exits_2_and_says_what_to_check,
        a_directory_store_is_audited_the_same_way,
        a_directory_store_that_is_not_there_exits_2,
        a_huge_object_or_a_name_that_is_not_utf8_is_a_finding_not_an_abort,
    ]);
}

/// A project with a reviewer that may Read, shipping to `url` with a checkpoint every 4
/// entries, and the store's environment for its hook processes and shippers.
struct Machine {
    dir: TempDir,
    env: Vec<(String, String)>,
}

impl Machine {
    fn new(tag: &str, url: &str, env: Vec<(String, String)>) -> Machine {
        let dir = ProjectBuilder::new(tag)
            .agent("reviewer", "tools: Read")
            .config(&format!("[ship]\nurl = \"{url}\"\ncheckpoint_every = 4\n"))
            .build();
        Machine { dir, env }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        s3::isolated_command(args, &self.env)
    }

    /// One hook process, as Claude Code runs it, with the store's environment (so the
    /// detached shipper it starts can ship).
    fn hook(&self, payload: &Value) -> Out {
        let mut child = self
            .command(&[])
            .env("CLAUDE_PROJECT_DIR", self.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let out = Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert_eq!(out.code, 0, "hook: {}{}", out.stdout, out.stderr);
        out
    }

    fn start(&self, session: &str) {
        self.hook(&session_start(session, self.root(), "startup"));
    }

    /// The reviewer's Reads of `/p/<i>` for i in `range`, each allowed.
    fn reads(&self, session: &str, range: std::ops::Range<usize>) {
        for i in range {
            let call = pre(
                session,
                self.root(),
                Some("reviewer"),
                "Read",
                json!({"file_path": format!("/p/{i}")}),
                &format!("t{i}"),
            );
            let out = self.hook(&call);
            assert_eq!(out.stdout.trim(), "{}", "read {i}: {}", out.stderr);
        }
    }

    fn end(&self, session: &str) {
        self.hook(&event(session, self.root(), "SessionEnd"));
    }

    /// Drains the outbox with `attenu-hook ship`, waiting out a detached shipper that holds
    /// the lock, until the outbox is empty.
    fn drain(&self) {
        let mut last = String::new();
        for _ in 0..100 {
            let out = self
                .command(&["ship", "--project"])
                .arg(self.root())
                .output()
                .unwrap();
            if out.status.code() == Some(0) {
                return;
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the outbox did not drain: {last}");
    }

    fn attenu(&self) -> PathBuf {
        self.root().join(".attenu")
    }

    fn anchor_pub(&self) -> PathBuf {
        self.attenu().join("anchor.pub")
    }

    fn ledger(&self, session: &str) -> (PathBuf, PathBuf) {
        let a = self.attenu();
        (
            a.join(format!("ledger-{session}.jsonl")),
            a.join(format!("ledger-{session}.state.json")),
        )
    }

    /// `audit URL --pub KEYS --json`: the exit code and the report.
    fn audit(&self, url: &str, keys: &[&Path]) -> (i32, Value, String) {
        let mut cmd = self.command(&["audit", url, "--json", "--pub"]);
        cmd.args(keys);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let report = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), report, stderr)
    }

    /// Session `session` started, with `n` reads, and ended when `end`.
    fn session(&self, session: &str, n: usize, end: bool) {
        self.start(session);
        self.reads(session, 0..n);
        if end {
            self.end(session);
        }
    }

    /// Removes session s1's ledger and its sealed state.
    fn forget_s1(&self) {
        let (lp, sp) = self.ledger("s1");
        std::fs::remove_file(lp).unwrap();
        std::fs::remove_file(sp).unwrap();
    }

    /// Cuts session s1's ledger to its first five lines and removes its sealed state: what
    /// is left of the ledger.
    fn cut_s1_to_five_lines(&self) -> String {
        let (lp, sp) = self.ledger("s1");
        let text = std::fs::read_to_string(&lp).unwrap();
        let kept: String = text.split_inclusive('\n').take(5).collect();
        std::fs::write(&lp, &kept).unwrap();
        std::fs::remove_file(sp).unwrap();
        kept
    }

    /// `audit URL --pub <anchor.pub>` in text form, with `COLUMNS=80`: its stdout.
    fn audit_text(&self, url: &str) -> String {
        let mut cmd = self.command(&["audit", url, "--pub"]);
        let out = cmd
            .arg(self.anchor_pub())
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The audited status and why of `session`.
    fn status_of(&self, url: &str, session: &str) -> (String, String) {
        let (_, report, stderr) = self.audit(url, &[&self.anchor_pub()]);
        let s = report["sessions"]
            .as_array()
            .unwrap_or_else(|| panic!("no report: {stderr}"))
            .iter()
            .find(|s| s["session"] == session)
            .unwrap_or_else(|| panic!("{session} is not in the report: {report}"));
        (
            s["status"].as_str().unwrap().to_string(),
            s["why"].as_str().unwrap().to_string(),
        )
    }
}

/// The audited status of `session` is `status`, and its why says each of `texts`.
#[track_caller]
fn assert_status(m: &Machine, url: &str, session: &str, status: &str, texts: &[&str]) {
    let (found, why) = m.status_of(url, session);
    assert_eq!(found, status, "{why}");
    for text in texts {
        assert!(why.contains(text), "{text:?}: {why}");
    }
}

/// A machine shipping to a fresh directory store: it, the store and its `file://` URL.
fn directory_machine(tag: &str) -> (Machine, TempDir, String) {
    let share = TempDir::new(&format!("{tag}-store"));
    let url = format!("file://{}", share.path().display());
    (Machine::new(tag, &url, Vec::new()), share, url)
}

fn garage_machine(g: &Garage, tag: &str) -> (Machine, String) {
    let url = format!("s3://{}/{tag}", g.bucket);
    (Machine::new(tag, &url, g.env()), url)
}

/// A session of `n` reads shipped, the ledger and state copied aside after `copy_at`.
fn shipped_session(m: &Machine, session: &str, copy_at: usize, n: usize) -> (Vec<u8>, Vec<u8>) {
    m.start(session);
    m.reads(session, 0..copy_at);
    m.drain();
    let (ledger, state) = m.ledger(session);
    let copy = (
        std::fs::read(&ledger).unwrap(),
        std::fs::read(&state).unwrap(),
    );
    m.reads(session, copy_at..n);
    m.drain();
    copy
}

fn an_untouched_session_is_complete_and_one_not_ended_is_open() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "honest");
    m.session("done", 9, true);
    m.session("going", 5, false);
    m.drain();
    let (code, report, stderr) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 0, "{report} {stderr}");
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{report}");
    // Not complete first.
    assert_eq!(sessions[0]["session"], "going");
    assert_eq!(sessions[0]["status"], "open", "{report}");
    assert!(
        sessions[0]["why"].as_str().unwrap().contains("ago"),
        "{report}"
    );
    assert_eq!(sessions[1]["status"], "complete", "{report}");
    assert_complete_chain(&sessions[1]["chains"][0]);
    assert_eq!(sessions[1]["project"].as_str().unwrap().len(), 28);
}

/// A complete chain's record: three checkpoints or more, stored at the store's own times in
/// RFC 3339, and a bundle the size of the last.
#[track_caller]
fn assert_complete_chain(chain: &Value) {
    let checkpoints = chain["checkpoints"].as_array().unwrap();
    assert!(checkpoints.len() >= 3, "{chain}");
    assert_eq!(chain["bundle"]["size"], checkpoints.last().unwrap()["size"]);
    let stored = checkpoints[0]["stored"].as_str().unwrap();
    assert!(stored.len() == 24 && stored.ends_with('Z'), "{stored}");
}

fn a_rollback_of_ledger_and_state_is_caught() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "rollback");
    let (ledger, state) = shipped_session(&m, "s1", 4, 12);
    let (lp, sp) = m.ledger("s1");
    std::fs::write(&lp, ledger).unwrap();
    std::fs::write(&sp, state).unwrap();
    goes_on_and_is_caught(&m, &url, 20..23);
}

/// The session goes on with `reads`, ends and ships; the audit must see its history change.
fn goes_on_and_is_caught(m: &Machine, url: &str, reads: std::ops::Range<usize>) {
    m.reads("s1", reads);
    m.end("s1");
    m.drain();
    let (status, why) = m.status_of(url, "s1");
    let caught = status == "rewritten" || status == "forked";
    assert!(caught, "{status}: {why}");
}

fn a_chain_rewritten_from_genesis_is_caught() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "genesis");
    shipped_session(&m, "s1", 4, 10);
    m.forget_s1();
    // The same session goes on: a new chain from GENESIS, signed with the same key.
    goes_on_and_is_caught(&m, &url, 30..33);
}

fn entries_cut_off_the_ledger_are_caught() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "truncate");
    shipped_session(&m, "s1", 4, 10);
    m.cut_s1_to_five_lines();
    m.end("s1");
    m.drain();
    // SessionEnd records each idle node's end after the cut, so the shortened chain has new
    // entries where the shipped one had others: rewritten, or forked when its new size is one
    // a shipped checkpoint has.
    let (status, why) = m.status_of(&url, "s1");
    let caught = ["truncated", "rewritten", "forked"].contains(&status.as_str());
    assert!(caught, "{status}: {why}");
    let (code, _, _) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 1);
}

/// The machine cuts the ledger after checkpoints shipped, exports what is left and puts that
/// bundle in the outbox itself, under the name the hook would give it, without the hook
/// adding anything: a bundle that is a prefix of what was shipped, and shorter.
fn a_bundle_of_a_cut_ledger_shipped_by_hand_is_truncated() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "cut-by-hand");
    shipped_session(&m, "s1", 4, 10);
    let kept = m.cut_s1_to_five_lines();
    let mut export = m.command(&["export", "--session", "s1", "--project"]);
    let out = export.arg(m.root()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let queued = m.attenu().join("outbox").join(bundle_name(&m, &kept));
    std::fs::create_dir_all(queued.parent().unwrap()).unwrap();
    std::fs::copy(m.attenu().join("bundle-s1.json"), &queued).unwrap();
    m.drain();
    assert_status(&m, &url, "s1", "truncated", &["bundle 5", "were cut off"]);
}

/// The name the hook gives session s1's bundle of the ledger text `kept`.
fn bundle_name(m: &Machine, kept: &str) -> String {
    use attenu_hook::evidence::checkpoint::{tree_of, ObjectNames};
    let entries: Vec<Value> = kept
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tree = tree_of(&entries).unwrap();
    let kid: Value = serde_json::from_slice(&std::fs::read(m.anchor_pub()).unwrap()).unwrap();
    let names = ObjectNames {
        kid: kid["kid"].as_str().unwrap(),
        session: "s1",
        chain_id: entries[0]["chain_id"].as_str().unwrap(),
    };
    names.bundle(tree.size(), &tree.root())
}

fn a_session_deleted_on_the_machine_stays_open_with_its_age() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "deleted");
    shipped_session(&m, "s1", 4, 9);
    m.forget_s1();
    let _ = std::fs::remove_file(m.attenu().join("bundle-s1.json"));
    assert_status(&m, &url, "s1", "open", &["no closing bundle yet", " ago"]);
}

fn a_bad_signature_or_an_unknown_key_is_unverifiable() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "badsig");
    m.session("s1", 5, true);
    m.drain();
    assert_eq!(m.status_of(&url, "s1").0, "complete");
    // Another project's key: nothing of this one can be checked.
    let other = TempDir::new("other-key");
    let (code, report, stderr) = m.audit(&url, &[&another_key(&other)]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["sessions"][0]["status"], "unverifiable", "{report}");
    let why = report["sessions"][0]["why"].as_str().unwrap();
    assert!(why.contains("no --pub key has the id"));
    // A checkpoint whose signature is not the key's, put in the store beside the others.
    badly_signed_copy_as_s2(&Store::from_env_with(&url, &g.env()));
    let no_valid = "no valid signature by the pinned key";
    assert_status(&m, &url, "s2", "unverifiable", &[no_valid]);
}

/// A key made in `dir` (another project's): its public key file.
fn another_key(dir: &TempDir) -> PathBuf {
    let other_pub = dir.path().join("other.pub");
    let key = dir.path().join("other.key");
    let made = common::cli(&["keygen", "--out", key.to_str().unwrap()]);
    let public = made.stdout.lines().last().unwrap().trim().to_string();
    std::fs::write(&other_pub, format!("{public}\n")).unwrap();
    other_pub
}

/// Copies a checkpoint of session s1 in `store` as one of session s2, its signature changed.
fn badly_signed_copy_as_s2(store: &Store) {
    let rt = attenu_hook::ship::runtime().unwrap();
    let listed = rt.block_on(store.list("")).unwrap();
    let note = listed.iter().find(|o| o.key.contains("/checkpoint/"));
    let note_key = note.unwrap().key.clone();
    let note = String::from_utf8(rt.block_on(store.get(&note_key)).unwrap().unwrap()).unwrap();
    let dir = note_key.split("/checkpoint/").next().unwrap();
    let session_dir = dir.replace("/s1/", "/s2/");
    let (body, sig) = note.rsplit_once(' ').unwrap();
    let bad_sig = format!("{body} {}", flip_base64(sig));
    let file = note_key.rsplit('/').next().unwrap();
    let key = format!("{session_dir}/checkpoint/{file}");
    rt.block_on(store.create(&key, bad_sig.into_bytes()))
        .unwrap();
}

/// A signature line's base64 with one character changed (still valid base64).
fn flip_base64(sig: &str) -> String {
    let mut chars: Vec<char> = sig.trim_end().chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect::<String>() + "\n"
}

fn a_store_that_cannot_be_read_exits_2_and_says_what_to_check() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "unreadable");
    m.start("s1");
    let m_bad = Machine::new("unreadable-bad", &url, with_wrong_secret(g.env()));
    let (code, _, stderr) = m_bad.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 2, "{stderr}");
    common::assert_contains(&stderr, &["cannot read the store", "AWS_SECRET_ACCESS_KEY"]);
}

/// The store's variables `env` with a secret key that is not the store's.
fn with_wrong_secret(mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    for (_, v) in env.iter_mut().filter(|(k, _)| k == "AWS_SECRET_ACCESS_KEY") {
        *v = "0".repeat(64);
    }
    env
}

fn a_directory_store_is_audited_the_same_way() {
    let (m, share, url) = directory_machine("audit-dir");
    m.session("s1", 6, true);
    m.session("s2", 3, false);
    m.drain();
    let (code, report, stderr) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 0, "{report} {stderr}");
    assert_eq!(m.status_of(&url, "s1").0, "complete");
    assert_eq!(m.status_of(&url, "s2").0, "open");
    // The text form, worst first, fitting 80 columns.
    let text = m.audit_text(&url);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("open "), "{text}");
    assert!(text.contains("2 session(s): 1 open, 1 complete"), "{text}");
    let store = share.path().to_str().unwrap();
    let masked = mask(&ages_masked(&text), &[(store, "<store>")]);
    assert_snapshot("audit.txt", &masked);
}

/// A directory that does not exist cannot be read.
fn a_directory_store_that_is_not_there_exits_2() {
    let (m, _share, _) = directory_machine("audit-no-dir");
    m.start("s1");
    let (code, _, stderr) = m.audit("file:///nonexistent/attenu-audit", &[&m.anchor_pub()]);
    assert_eq!(code, 2, "{stderr}");
}

/// `text` with each age (`0 s ago`, `3 min ago`) as `<age> ago`: how long the test took.
fn ages_masked(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let unit = words.get(i + 1).copied().unwrap_or("");
        let ago = words.get(i + 2).is_some_and(|a| a.starts_with("ago"));
        if ago && ["s", "min", "h", "days"].contains(&unit) && words[i].parse::<u64>().is_ok() {
            out.push("<age>");
            i += 2;
        } else {
            out.push(words[i]);
            i += 1;
        }
    }
    out.join(" ")
}

/// One object of 3 GiB (sparse: no disk is used) and one name that is not UTF-8 in the store:
/// the audit reads neither, says so, and still judges every other session.
fn a_huge_object_or_a_name_that_is_not_utf8_is_a_finding_not_an_abort() {
    let (m, share, url) = directory_machine("audit-hostile");
    m.session("s1", 3, true);
    m.session("s2", 2, true);
    m.drain();
    a_huge_bundle_and_a_name_not_utf8(share.path());
    let (code, report, stderr) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 1, "{report} {stderr}");
    assert_eq!(m.status_of(&url, "s1").0, "complete", "{report}");
    let larger = "larger than any object attenu-hook ships";
    assert_status(&m, &url, "s2", "unverifiable", &[larger]);
    let findings = report["findings"].to_string();
    assert!(findings.contains("whose name is not UTF-8"), "{report}");
}

/// Puts in the directory store `share` a sparse 3 GiB bundle in session s2's first chain and
/// a file whose name is not UTF-8.
fn a_huge_bundle_and_a_name_not_utf8(share: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let first_in = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    };
    let chain = first_in(&first_in(share).join("s2"));
    let name = format!("{:020}-{}.json", 99, "a".repeat(64));
    let huge = std::fs::File::create(chain.join("bundle").join(name)).unwrap();
    huge.set_len(3 << 30).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"stray-\xff\xfe.json");
    std::fs::write(share.join(odd), b"x").unwrap();
}

/// The store at `url` opened with `env`, as the shipper opens it.
trait OpenWith {
    fn from_env_with(url: &str, env: &[(String, String)]) -> Store;
}

impl OpenWith for Store {
    fn from_env_with(url: &str, env: &[(String, String)]) -> Store {
        Store::with_env(url, &Target::parse(url).unwrap(), env.to_vec()).unwrap()
    }
}
