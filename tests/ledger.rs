//! The ledger: a hash chain per session that every call verifies (through its sealed
//! state) before appending, so tampering, truncation, rewritten sealed states and chains
//! removed are refused; raw capture keeps the ledger readable.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Session s1 after `calls` reviewer reads, with its ledger's first `fs.read` edited to
/// `fs.wrxx`. Returns the ledger's path and its edited text.
fn tampered_session(project: &Path, calls: usize) -> (PathBuf, String) {
    for i in 0..calls {
        reviewer_read(project, "s1", &format!("/x{i}"), &format!("t{i}"));
    }
    let path = ledger_path(project, "s1");
    let text = std::fs::read_to_string(&path).unwrap();
    let tampered = text.replacen("\"fs.read\"", "\"fs.wrxx\"", 1);
    assert_ne!(text, tampered);
    std::fs::write(&path, &tampered).unwrap();
    (path, tampered)
}

#[test]
fn a_tampered_ledger_is_refused_and_left_untouched() {
    let p = sample("tamper");
    let (path, tampered) = tampered_session(p.path(), 5);
    let out = reviewer_read(p.path(), "s1", "/y", "t9");
    assert_denied_with(&out, "ledger-unverifiable");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        tampered,
        "nothing is appended to a chain that does not verify"
    );
}

#[test]
fn tampering_anywhere_in_a_large_ledger_is_caught_on_the_next_call() {
    let p = sample("bigtamper");
    // 300 entries (the root, the reviewer's spawn, 298 decisions), one hook process each, so
    // the sealed state (not a full re-verify) is what every call trusts before the edits.
    let call = after_reads(p.path(), 298);
    let path = p.ledger("s1");
    assert_eq!(line_count(&path), 300);
    edits_of_first_middle_and_last_line_are_caught(&path, &call);
}

/// The same at the size the performance targets time (10,000 entries). Making that many hook processes
/// would take minutes in a debug build, so a real session is extended with copies of its last
/// decision, each sealed onto the chain; one real call then re-verifies the whole file from
/// GENESIS and seals its state, and the next trusts that sealed state.
#[test]
fn tampering_anywhere_in_a_10000_entry_ledger_is_caught_on_the_next_call() {
    let p = sample("hugetamper");
    let call = numbered_reads(p.path());
    let path = ledger_of_denials(&p, 9_998);
    assert_allowed(&call("1")); // the extended ledger re-verifies
    assert_allowed(&call("2")); // and the sealed state written for it holds
    assert_eq!(line_count(&path), 10_000);
    edits_of_first_middle_and_last_line_are_caught(&path, &call);
}

/// Session s1 opened by a refused call (a refusal is the template: it opens no call that would
/// wait for an outcome) and grown to `lines` lines by [`extended_by_denials`]: its ledger.
fn ledger_of_denials(p: &TempDir, lines: usize) -> PathBuf {
    let bash = json!({"command": "ls"});
    let refused = p.subagent("reviewer", "Bash").input(bash).id("t0").run();
    assert!(refused.denied());
    let path = p.ledger("s1");
    std::fs::write(&path, extended_by_denials(&path, lines)).unwrap();
    path
}

/// The ledger at `path` (ending with a deny) grown to `lines` lines by copies of that deny,
/// each sealed onto the chain; returns the new text (not yet written).
fn extended_by_denials(path: &Path, lines: usize) -> String {
    use attenu_hook::json::canonical;
    use attenu_hook::ledger::chain;
    let mut text = std::fs::read_to_string(path).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "deny", "{last}");
    let (mut seq, mut prev) = (
        last["seq"].as_u64().unwrap(),
        last["hash"].as_str().unwrap().to_string(),
    );
    for _ in text.lines().count()..lines {
        let mut entry = last.as_object().unwrap().clone();
        seq += 1;
        entry.insert("seq".into(), json!(seq));
        prev = chain::seal(&mut entry, &prev).unwrap();
        text.push_str(&canonical::to_string(&Value::Object(entry)).unwrap());
        text.push('\n');
    }
    text
}

/// Issue 27: a re-verify from GENESIS that could not finish within the deadline wrote
/// nothing, so every later call started over and was denied the same way: the session was
/// wedged. Now it keeps its sealed progress and each call goes on from there. (Here the
/// re-verify reads 256 KiB per step and each call may take one step, so a 3,000-entry ledger
/// needs several calls.)
#[test]
#[cfg_attr(not(feature = "test-faults"), ignore = "needs --features test-faults")]
fn a_reverify_that_runs_out_of_time_keeps_its_progress_and_the_next_call_finishes_it() {
    let p = sample("resume");
    write_config(p.path(), "deadline_ms = 1000\n");
    ledger_of_denials(&p, 3_000);
    remove_sealed_state(p.path());
    let (out, done) = reverify_in_steps(&p);
    assert_allowed(&out);
    assert!(done.len() >= 2, "several calls: {done:?}");
    assert!(
        done.windows(2).all(|w| w[0] < w[1]),
        "each goes on: {done:?}"
    );
    let (_, loss) = the_one_loss(p.path()); // the loss is recorded once
    assert_eq!(loss["entries"], 3_000);
    assert!(!p.path().join(".attenu/ledger-s1.reverify.json").exists());
    assert_allowed(&reviewer_read(p.path(), "s1", "/z", "t10"));
}

/// Calls the reviewer's read of `/y` (with a re-verify step of 256 KiB) until one is not denied
/// or 42 were: each denial must be `ledger-reverifying` and leave the ledger as it was. Returns
/// the last answer and the number of entries each denial said were verified so far.
fn reverify_in_steps(p: &TempDir) -> (Out, Vec<u64>) {
    let path = p.ledger("s1");
    let before = bytes_of(&path);
    let env = [("ATTENU_HOOK_TEST_REVERIFY_CHUNK", "262144")];
    let mut done = Vec::new();
    loop {
        let payload = reviewer_read_payload(p.path(), "s1", "/y", "t9");
        let out = common::faults::hook_with(&[], &env, p.path(), &payload);
        if !out.denied() || done.len() > 40 {
            return (out, done);
        }
        assert_denied_with(&out, "ledger-reverifying");
        assert_eq!(bytes_of(&path), before, "nothing appended meanwhile");
        done.push(entries_verified(&out.reason()));
    }
}

/// The count in a `ledger-reverifying` reason's "(N entries)".
fn entries_verified(why: &str) -> u64 {
    let count = why.split(" entries)").next().unwrap().rsplit('(').next();
    count.unwrap().parse().unwrap()
}

/// Edits one byte of the first line, one in the middle and the last, in turn, each a
/// same-length edit of a value with the file's mtime put back (so only its content and ctime
/// tell): `call` must deny each with `ledger-unverifiable` and append nothing, and must allow
/// again once the exact bytes are back.
fn edits_of_first_middle_and_last_line_are_caught(path: &Path, call: &dyn Fn(&str) -> Out) {
    for (k, which) in ["first", "middle", "last"].into_iter().enumerate() {
        // Each round's restored call appended one more entry.
        let original = std::fs::read(path).unwrap();
        let lines = line_starts(&original);
        let line = match which {
            "first" => 0,
            "middle" => lines.len() / 2,
            _ => lines.len() - 1,
        };
        let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
        let start = lines[line];
        let at = find_from(&original, start, b"\"event\":") + 9;
        let mut edited = original.clone();
        edited[at] = if edited[at] == b'a' { b'b' } else { b'a' };
        std::fs::write(path, &edited).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.set_modified(mtime).unwrap();
        drop(f);
        let out = call(&format!("edit{k}"));
        assert!(
            out.denied() && out.reason().contains("[ledger-unverifiable]"),
            "an edit of the {which} line (of {}) was not caught: {}",
            lines.len(),
            out.stdout
        );
        assert_unchanged(
            path,
            &edited,
            "nothing is appended to a ledger that does not verify",
        );
        // Restoring the exact bytes verifies again, though the file was rewritten.
        std::fs::write(path, &original).unwrap();
        assert_allowed(&call(&format!("restored{k}")));
        let now = std::fs::read(path).unwrap();
        assert_eq!(&now[..original.len()], &original[..]);
    }
}

/// Regression: every prefix of a valid chain is itself valid, so a ledger cut short (or
/// replaced by an older copy of itself) re-verified and was appended to, and the removed
/// decisions were gone without a trace. The sealed state remembers what was verified.
#[test]
fn a_ledger_cut_short_or_replaced_by_an_older_copy_is_refused() {
    let p = sample("truncate");
    let call = numbered_reads(p.path());
    let path = p.ledger("s1");
    assert_allowed(&call("0"));
    let older = bytes_of(&path);
    (1..4).for_each(|i| assert_allowed(&call(&i.to_string())));
    let full = bytes_of(&path);
    assert_rollback_refused(&call, &path, &without_last_lines(&full, 2), "cut short");
    assert_rollback_refused(&call, &path, &older, "an older copy");
    // Put back whole, it verifies and is appended to again.
    std::fs::write(&path, &full).unwrap();
    assert_allowed(&call("restored"));
    // Moved aside on purpose with its state file, as the refusal says: a new ledger starts.
    std::fs::rename(&path, p.path().join("ledger.kept")).unwrap();
    std::fs::rename(sealed_state_of(p.path()), p.path().join("state.kept")).unwrap();
    assert_allowed(&call("fresh"));
    assert_eq!(p.entries("s1")[0]["event"], "root");
}

/// The ledger at `path` replaced by `bytes` (`what`: cut short, an older copy): the next
/// `call` is refused, naming the sealed state, and nothing is appended.
fn assert_rollback_refused(call: &dyn Fn(&str) -> Out, path: &Path, bytes: &[u8], what: &str) {
    std::fs::write(path, bytes).unwrap();
    let out = call("after");
    assert!(
        out.denied() && out.reason().contains("no longer holds what was verified"),
        "{what}: {}",
        out.stdout
    );
    assert!(
        out.reason().contains("ledger-s1.state.json"),
        "{}",
        out.reason()
    );
    assert_unchanged(path, bytes, &format!("{what}: nothing appended"));
}

/// Regression: the prefix check reused the fast path's bounded read of the last line, so a
/// valid ledger whose last line is over 16 MiB (a large result kept by raw capture) was taken
/// for one cut short, and every later call of the session was denied.
#[test]
fn a_last_line_over_16_mib_is_verified_not_taken_for_truncation() {
    let p = sample("bigline");
    // What is tested is the verdict, not the time: a loaded machine's debug build can take
    // longer than the default deadline to hash 17 MiB twice.
    p.config("deadline_ms = 600000\n[privacy]\nraw_capture = true\n");
    let read = p.read_by("reviewer", "/a").id("t1");
    assert_allowed(&read.run());
    let big = json!({"content": "x".repeat(17 << 20)});
    assert_allowed(&read.post(big).run());
    assert_allowed(&reviewer_read(p.path(), "s1", "/b", "t2"));
}

/// With raw capture on, a value with no RFC 8785 form (an integer beyond 2^53) is kept as its
/// JSON text; it never makes the decision or the outcome unrecordable.
#[test]
fn raw_capture_of_a_value_without_a_canonical_form_still_records_the_call() {
    let p = sample("rawbig");
    p.config("[privacy]\nraw_capture = true\n");
    let input = json!({"file_path": "/a", "offset": 9_007_199_254_740_993u64});
    let call = p.subagent("reviewer", "Read").input(input).id("t1");
    assert_allowed(&call.run());
    let response = json!({"mtime_ns": 1_796_050_972_040_801_584u64});
    assert_allowed(&call.post(response).run());
    let es = p.entries("s1");
    let allow = &of_event(&es, "allow")[0]["context"];
    let kept = r#"{"file_path":"/a","offset":9007199254740993}"#;
    assert_eq!(allow["tool_input_json"], kept);
    let outcome = &of_event(&es, "outcome")[0]["context"];
    let kept = r#"{"mtime_ns":1796050972040801584}"#;
    assert_eq!(outcome["tool_response_json"], kept);
}

/// Regression: with raw capture on, a tool input nested just inside the payload's depth limit
/// was copied into an entry one level deeper, a line no reader could parse back. The next call
/// took the ledger for one cut short and every later call of the session was denied. A value
/// nested that deep is now kept as its JSON text.
#[test]
fn raw_capture_of_a_deeply_nested_input_does_not_make_the_ledger_unreadable() {
    let p = sample("rawdeep");
    p.config("[privacy]\nraw_capture = true\n");
    let nested = |levels: usize| (0..levels).fold(json!(1), |v, _| json!([v]));
    // 125 arrays inside `tool_input` inside the payload: 127 levels, which serde_json reads.
    let input = json!({"file_path": "/a", "deep": nested(125)});
    let read = |input: &Value, id: &str| p.subagent("reviewer", "Read").input(input.clone()).id(id);
    assert_allowed(&read(&input, "t1").run());
    let shallow = json!({"file_path": "/b", "deep": nested(10)});
    assert_allowed(&read(&shallow, "t2").run()); // the session must go on
    let es = p.entries("s1");
    let allows = of_event(&es, "allow");
    let kept = serde_json::to_string(&input).unwrap();
    assert_eq!(allows[0]["context"]["tool_input_json"], kept);
    assert_eq!(allows[1]["context"]["tool_input"], shallow);
    p.export("s1"); // which must succeed
}

#[test]
fn a_sealed_state_rewritten_to_match_an_edited_ledger_is_not_trusted() {
    let p = sample("forgedcp");
    let call = after_reads(p.path(), 5);
    edit_a_timestamp_in_the_middle(&p.ledger("s1"));
    // Someone without the anchor key updates the sealed state's stamp to the edited file's.
    restamp_sealed_state(p.path());
    assert_denied_with(&call("after"), "ledger-unverifiable");
}

/// Changes the last digit of the timestamp of an entry in the middle of the ledger at `path`.
fn edit_a_timestamp_in_the_middle(path: &Path) {
    let mut bytes = bytes_of(path);
    let at = find_from(&bytes, bytes.len() / 2, b"\"ts\":") + 5;
    let digits = bytes[at..]
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap();
    let end = at + digits - 1;
    bytes[end] = if bytes[end] == b'1' { b'2' } else { b'1' };
    std::fs::write(path, &bytes).unwrap();
}

/// Rewrites the stamp in session s1's sealed state (`attenu-checkpoint v4`) to the ledger file's
/// length and times as they are now, leaving its seal as it was.
fn restamp_sealed_state(p: &Path) {
    use std::os::unix::fs::MetadataExt;
    let state = sealed_state_of(p);
    let text = std::fs::read_to_string(&state).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    assert!(header.starts_with("attenu-checkpoint v4 "), "{header}");
    let mut body: Value = serde_json::from_str(body).unwrap();
    let m = std::fs::metadata(p.ledger("s1")).unwrap();
    body["stamp"]["len"] = json!(m.len());
    body["stamp"]["mtime_ns"] = json!(m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128);
    body["stamp"]["ctime_ns"] = json!(m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128);
    std::fs::write(&state, format!("{header}\n{body}")).unwrap();
}

/// A sealed state the hook will not read (here: absurdly large) is as good as none: the ledger
/// is re-verified and the call goes on. Only a state file that is not a file the hook may use
/// (a link, a FIFO, another user's) is refused.
#[test]
fn an_oversized_sealed_state_is_ignored_and_the_ledger_reverified() {
    let p = sample("bigckpt");
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let state = sealed_state_of(p.path());
    std::fs::write(&state, vec![b'x'; 17 << 20]).unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/y", "t2"));
    assert!(
        std::fs::metadata(&state).unwrap().len() < 1 << 20,
        "rewritten"
    );
}

#[test]
fn removing_a_whole_chain_from_the_middle_is_detected() {
    let p = sample("dropchain");
    reviewer_read(p.path(), "s1", "/x", "t1");
    for tools in ["Read, Bash", "Read, Grep"] {
        resumed_with_reviewer_tools(&p, tools);
        reviewer_read(p.path(), "s1", "/x", "t");
    }
    remove_the_second_of_three_chains(&p.ledger("s1"));
    let out = reviewer_read(p.path(), "s1", "/y", "t9");
    // The sealed state remembers the removed bytes.
    assert_denied_saying(&out, "no longer holds what was verified");
    // Without the sealed state, the chains' links still tell.
    remove_sealed_state(p.path());
    let out = reviewer_read(p.path(), "s1", "/y", "t9");
    assert_denied_saying(&out, "does not link");
}

/// The reviewer's tools changed to `tools` and session s1 resumed, which reads the edit and
/// opens a new chain.
fn resumed_with_reviewer_tools(p: &TempDir, tools: &str) {
    let text = format!("---\nname: reviewer\ntools: {tools}\n---\n");
    std::fs::write(p.path().join(".claude/agents/reviewer.md"), text).unwrap();
    assert_eq!(p.session_start("s1", "resume").code, 0);
}

/// Cuts the second of the three chains of the ledger at `path` out of it.
fn remove_the_second_of_three_chains(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("\"event\":\"root\""))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 3);
    let kept = [&lines[..starts[1]], &lines[starts[2]..]].concat();
    std::fs::write(path, kept.join("\n") + "\n").unwrap();
}

#[test]
fn a_session_start_on_a_tampered_ledger_warns_and_the_tool_call_is_still_denied() {
    let p = sample("sessionstart-tamper");
    let (path, tampered) = tampered_session(p.path(), 3);
    // SessionStart cannot block anything: it tells the user, with the reason code.
    let out = p.session_start("s1", "resume");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let says = [
        "[ledger-unverifiable]",
        "every tool call of this session is denied",
    ];
    assert_contains(&system_message(&out), &says);
    let out = reviewer_read(p.path(), "s1", "/y", "t9");
    assert_denied_with(&out, "ledger-unverifiable");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), tampered);
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs")
}

/// An installed sample project made a git repository, with its anchor key made by a first
/// call and everything added (`git add -A`).
fn git_project(tag: &str) -> TempDir {
    let p = sample(tag);
    assert_eq!(cli(&["install", p.dir(), "--command", BIN]).code, 0);
    assert!(git(p.path(), &["init", "-q"]).status.success());
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    assert!(p.path().join(".attenu/anchor.key").is_file());
    assert!(git(p.path(), &["add", "-A"]).status.success());
    p
}

/// Issue 26: `.attenu/` was never git-ignored, so the anchor key was one `git add -A` from
/// being committed. The hook now writes `.attenu/.gitignore`.
#[test]
fn the_anchor_key_is_git_ignored() {
    let p = git_project("gitignore");
    let tracked = String::from_utf8(git(p.path(), &["ls-files"]).stdout).unwrap();
    assert!(
        tracked.contains(".claude/"),
        "the project is added: {tracked}"
    );
    assert!(
        !tracked.contains(".attenu/"),
        "nothing under .attenu/: {tracked}"
    );
    let out = cli(&["doctor", p.dir()]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_contains(&out.stdout, &["git:anchor.key", "not tracked by git"]);
}

/// Issue 26: doctor fails when git tracks the key anyway (a `git add -f`, or a repository from
/// before).
#[test]
fn doctor_fails_when_git_tracks_the_anchor_key() {
    let p = git_project("gittracked");
    let added = git(p.path(), &["add", "-f", ".attenu/anchor.key"]);
    assert!(added.status.success());
    let (code, line) = doctor_check(p.path(), "git:anchor.key");
    assert_ne!(code, 0, "{line}");
    assert!(
        line.starts_with("FAIL") && line.contains("git rm --cached .attenu/anchor.key"),
        "{line}"
    );
}

/// The session's one bundle, verified under the pinned key: exit code 4 (valid, with a
/// notice), the NOTICE line, and the notice in `--json` at `entry`.
fn assert_bundle_shows_loss(p: &TempDir, entry: usize) {
    let bundles = p.export("s1");
    assert_eq!(bundles.len(), 1, "{bundles:?}");
    let bundle: Value = serde_json::from_slice(&bytes_of(Path::new(&bundles[0]))).unwrap();
    assert!(
        bundle["entries"][entry]["context"]["checkpoint_lost"].is_object(),
        "the bundle carries the record: {}",
        bundle["entries"][entry]
    );
    let out = p.verify_pinned(&bundles[0]);
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    let notice = format!("NOTICE checkpoint-lost (entry {entry}, seq {entry})");
    assert_contains(&out.stdout, &[&notice, "VALID (with NOTICE"]);
    let out = p.verify_pinned_json(&bundles[0]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["notices"][0]["name"], "checkpoint-lost", "{report}");
    assert_eq!(report["notices"][0]["index"], entry, "{report}");
}

/// `doctor`'s check of session s1's ledger.
const S1: &str = "ledger:ledger-s1.jsonl";

/// Issue 26: with the sealed state deleted, a ledger was re-verified and taken as a new one's,
/// so a cut could not be noticed and nothing said so. The loss is now recorded on the next
/// entry, shown by the bundle, `verify` and `doctor`, and recorded once.
#[test]
fn a_deleted_sealed_state_is_recorded_on_the_ledger_and_reported() {
    let p = sample("lostckpt");
    let call = after_reads(p.path(), 3);
    remove_sealed_state(p.path());
    let missing = "missing beside a non-empty ledger";
    assert_doctor_says(p.path(), S1, "FAIL", missing);
    assert_allowed(&call("after"));
    let (at, loss) = the_one_loss(p.path());
    assert_eq!(at, 5, "after root, the reviewer's spawn and 3 reads");
    assert_eq!(loss["cause"], "missing");
    assert_eq!(loss["entries"], 5);
    assert_allowed(&call("again"));
    assert_eq!(losses(p.path()).len(), 1, "recorded once");
    let recorded = "record a lost or broken sealed state";
    assert_doctor_says(p.path(), S1, "warn", recorded); // a recorded loss warns
    assert_bundle_shows_loss(&p, 5);
}

#[test]
fn a_sealed_state_with_one_byte_changed_is_recorded_and_kept_aside() {
    let p = sample("flipckpt");
    let call = after_reads(p.path(), 2);
    let path = sealed_state_of(p.path());
    let mut bytes = bytes_of(&path);
    let at = bytes.len() - 3;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert_allowed(&call("after"));
    let (at, loss) = the_one_loss(p.path());
    assert_eq!(loss["cause"], "seal-broken");
    let kept = attenu_file(p.path(), loss["kept_in"].as_str().unwrap());
    assert_eq!(bytes_of(&kept), bytes, "the broken state file, as found");
    assert_bundle_shows_loss(&p, at);
}

/// The rollback the issue describes: the ledger cut short and its sealed state deleted. The cut
/// itself cannot be seen on the machine, but the bundle now says the check did not run.
#[test]
fn a_ledger_cut_short_with_its_sealed_state_deleted_is_not_exported_silently() {
    let p = sample("cutlost");
    let call = after_reads(p.path(), 5);
    let path = p.ledger("s1");
    std::fs::write(&path, without_last_lines(&bytes_of(&path), 2)).unwrap();
    remove_sealed_state(p.path());
    assert_allowed(&call("after"));
    let (_, loss) = the_one_loss(p.path());
    assert_eq!(
        loss["entries"], 5,
        "7 entries (root, a spawn, 5 reads) cut to 5"
    );
    assert_bundle_shows_loss(&p, 5);
}

#[test]
fn a_new_sessions_first_calls_record_no_loss() {
    let p = sample("newsession");
    let out = p.session_start("s1", "startup");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(sealed_state_of(p.path()).exists(), "sealed at once");
    let _ = after_reads(p.path(), 2);
    assert!(losses(p.path()).is_empty(), "{:?}", p.entries("s1"));
    let bundles = p.export("s1");
    let out = p.verify_pinned(&bundles[0]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.stdout.contains("NOTICE"), "{}", out.stdout);
}
