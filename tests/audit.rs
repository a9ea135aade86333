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
    m.start("done");
    m.reads("done", 0..9);
    m.end("done");
    m.start("going");
    m.reads("going", 0..5);
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
    let chain = &sessions[1]["chains"][0];
    let checkpoints = chain["checkpoints"].as_array().unwrap();
    assert!(checkpoints.len() >= 3, "{chain}");
    assert_eq!(chain["bundle"]["size"], checkpoints.last().unwrap()["size"]);
    // The store's own times, in RFC 3339.
    let stored = checkpoints[0]["stored"].as_str().unwrap();
    assert!(stored.len() == 24 && stored.ends_with('Z'), "{stored}");
    assert_eq!(sessions[1]["project"].as_str().unwrap().len(), 28);
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
    assert!(
        status == "rewritten" || status == "forked",
        "{status}: {why}"
    );
}

fn a_chain_rewritten_from_genesis_is_caught() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "genesis");
    shipped_session(&m, "s1", 4, 10);
    let (lp, sp) = m.ledger("s1");
    std::fs::remove_file(lp).unwrap();
    std::fs::remove_file(sp).unwrap();
    // The same session goes on: a new chain from GENESIS, signed with the same key.
    goes_on_and_is_caught(&m, &url, 30..33);
}

fn entries_cut_off_the_ledger_are_caught() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "truncate");
    shipped_session(&m, "s1", 4, 10);
    let (lp, sp) = m.ledger("s1");
    let text = std::fs::read_to_string(&lp).unwrap();
    let kept: String = text.split_inclusive('\n').take(5).collect();
    std::fs::write(&lp, kept).unwrap();
    std::fs::remove_file(sp).unwrap();
    m.end("s1");
    m.drain();
    // SessionEnd records each idle node's end after the cut, so the shortened chain has new
    // entries where the shipped one had others: rewritten, or forked when its new size is one
    // a shipped checkpoint has.
    let (status, why) = m.status_of(&url, "s1");
    assert!(
        ["truncated", "rewritten", "forked"].contains(&status.as_str()),
        "{status}: {why}"
    );
    let (code, _, _) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 1);
}

/// The machine cuts the ledger after checkpoints shipped, exports what is left and puts that
/// bundle in the outbox itself, under the name the hook would give it, without the hook
/// adding anything: a bundle that is a prefix of what was shipped, and shorter.
fn a_bundle_of_a_cut_ledger_shipped_by_hand_is_truncated() {
    use attenu_hook::evidence::checkpoint::{tree_of, ObjectNames};
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "cut-by-hand");
    shipped_session(&m, "s1", 4, 10);
    let (lp, sp) = m.ledger("s1");
    let text = std::fs::read_to_string(&lp).unwrap();
    let kept: String = text.split_inclusive('\n').take(5).collect();
    std::fs::write(&lp, &kept).unwrap();
    std::fs::remove_file(sp).unwrap();
    let out = m
        .command(&["export", "--session", "s1", "--project"])
        .arg(m.root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let key = names.bundle(tree.size(), &tree.root());
    let queued = m.attenu().join("outbox").join(&key);
    std::fs::create_dir_all(queued.parent().unwrap()).unwrap();
    std::fs::copy(m.attenu().join("bundle-s1.json"), &queued).unwrap();
    m.drain();
    let (status, why) = m.status_of(&url, "s1");
    assert_eq!(status, "truncated", "{why}");
    assert!(
        why.contains("bundle 5") && why.contains("were cut off"),
        "{why}"
    );
}

fn a_session_deleted_on_the_machine_stays_open_with_its_age() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "deleted");
    shipped_session(&m, "s1", 4, 9);
    let (lp, sp) = m.ledger("s1");
    std::fs::remove_file(lp).unwrap();
    std::fs::remove_file(sp).unwrap();
    let _ = std::fs::remove_file(m.attenu().join("bundle-s1.json"));
    let (status, why) = m.status_of(&url, "s1");
    assert_eq!(status, "open", "{why}");
    assert!(
        why.contains("no closing bundle yet") && why.contains(" ago"),
        "{why}"
    );
}

fn a_bad_signature_or_an_unknown_key_is_unverifiable() {
    let g = Garage::start();
    let (m, url) = garage_machine(&g, "badsig");
    m.start("s1");
    m.reads("s1", 0..5);
    m.end("s1");
    m.drain();
    assert_eq!(m.status_of(&url, "s1").0, "complete");
    // Another project's key: nothing of this one can be checked.
    let other = TempDir::new("other-key");
    let other_pub = other.path().join("other.pub");
    let made = common::cli(&[
        "keygen",
        "--out",
        other.path().join("other.key").to_str().unwrap(),
    ]);
    let public = made.stdout.lines().last().unwrap().trim().to_string();
    std::fs::write(&other_pub, format!("{public}\n")).unwrap();
    let (code, report, stderr) = m.audit(&url, &[&other_pub]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(report["sessions"][0]["status"], "unverifiable", "{report}");
    assert!(report["sessions"][0]["why"]
        .as_str()
        .unwrap()
        .contains("no --pub key has the id"));
    // A checkpoint whose signature is not the key's, put in the store beside the others.
    let store = Store::from_env_with(&url, &g.env());
    let rt = attenu_hook::ship::runtime().unwrap();
    let listed = rt.block_on(store.list("")).unwrap();
    let note_key = listed
        .iter()
        .find(|o| o.key.contains("/checkpoint/"))
        .unwrap()
        .key
        .clone();
    let note = String::from_utf8(rt.block_on(store.get(&note_key)).unwrap().unwrap()).unwrap();
    let session_dir = note_key
        .split("/checkpoint/")
        .next()
        .unwrap()
        .replace("/s1/", "/s2/");
    let (body, sig) = note.rsplit_once(' ').unwrap();
    let bad_sig = format!("{body} {}", flip_base64(sig));
    let file = note_key.rsplit('/').next().unwrap();
    rt.block_on(store.create(
        &format!("{session_dir}/checkpoint/{file}"),
        bad_sig.into_bytes(),
    ))
    .unwrap();
    let (status, why) = m.status_of(&url, "s2");
    assert_eq!(status, "unverifiable", "{why}");
    assert!(
        why.contains("no valid signature by the pinned key"),
        "{why}"
    );
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
    let bad: Vec<(String, String)> = g
        .env()
        .into_iter()
        .map(|(k, v)| {
            if k == "AWS_SECRET_ACCESS_KEY" {
                (k, "0".repeat(64))
            } else {
                (k, v)
            }
        })
        .collect();
    let m_bad = Machine {
        dir: TempDir::new("unreadable-bad"),
        env: bad,
    };
    let (code, _, stderr) = m_bad.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("cannot read the store") && stderr.contains("AWS_SECRET_ACCESS_KEY"),
        "{stderr}"
    );
}

fn a_directory_store_is_audited_the_same_way() {
    let share = TempDir::new("audit-share");
    let url = format!("file://{}", share.path().display());
    let m = Machine::new("audit-dir", &url, Vec::new());
    m.start("s1");
    m.reads("s1", 0..6);
    m.end("s1");
    m.start("s2");
    m.reads("s2", 0..3);
    m.drain();
    let (code, report, stderr) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 0, "{report} {stderr}");
    assert_eq!(m.status_of(&url, "s1").0, "complete");
    assert_eq!(m.status_of(&url, "s2").0, "open");
    // The text form, worst first, fitting 80 columns.
    let out = m
        .command(&["audit", &url, "--pub"])
        .arg(m.anchor_pub())
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let first_row = text.lines().nth(1).unwrap();
    assert!(first_row.starts_with("open "), "{text}");
    assert!(text.contains("2 session(s): 1 open, 1 complete"), "{text}");
    let store = share.path().to_str().unwrap();
    assert_snapshot(
        "audit.txt",
        &mask(&ages_masked(&text), &[(store, "<store>")]),
    );
    // A directory that does not exist cannot be read.
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
    use std::os::unix::ffi::OsStrExt;
    let share = TempDir::new("audit-hostile-store");
    let url = format!("file://{}", share.path().display());
    let m = Machine::new("audit-hostile", &url, Vec::new());
    m.start("s1");
    m.reads("s1", 0..3);
    m.end("s1");
    m.start("s2");
    m.reads("s2", 0..2);
    m.end("s2");
    m.drain();
    let s2 = std::fs::read_dir(share.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("s2");
    let chain = std::fs::read_dir(&s2)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let huge = std::fs::File::create(chain.join("bundle").join(format!(
        "{:020}-{}.json",
        99,
        "a".repeat(64)
    )))
    .unwrap();
    huge.set_len(3 << 30).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"stray-\xff\xfe.json");
    std::fs::write(share.path().join(odd), b"x").unwrap();
    let (code, report, stderr) = m.audit(&url, &[&m.anchor_pub()]);
    assert_eq!(code, 1, "{report} {stderr}");
    assert_eq!(m.status_of(&url, "s1").0, "complete", "{report}");
    let (status, why) = m.status_of(&url, "s2");
    assert_eq!(status, "unverifiable", "{report}");
    assert!(
        why.contains("larger than any object attenu-hook ships"),
        "{why}"
    );
    let findings = report["findings"].to_string();
    assert!(findings.contains("whose name is not UTF-8"), "{report}");
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
