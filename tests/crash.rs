//! Crashes with real processes: SIGKILL at random moments, a panic and a stall past the
//! deadline (before and after the tool ran), clock jumps, and a session's first calls racing
//! an agent edit. Each ends in a deny (or a halt) with a reason, and nothing committed is lost.

mod common;
use common::faults::{feed, hook_with, Paused};
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    harness::run(tests![
        sigkill_at_random_moments_never_loses_an_answered_decision_or_wedges_the_session,
        concurrent_sigkills_leave_one_verifiable_chain,
        a_panic_answers_with_a_deny_and_exit_2,
        a_stall_past_the_internal_deadline_denies_before_claude_codes_timeout,
        a_panic_after_the_tool_ran_stops_claude_and_leaves_a_marker,
        a_stall_after_the_tool_ran_stops_claude_and_leaves_a_marker,
        a_stuck_disk_under_the_last_resort_marker_does_not_hold_back_the_stop,
        a_clock_jump_changes_no_decision_and_breaks_no_chain,
        a_clock_moved_past_an_authorizations_expiry_refuses_it,
        a_first_call_that_derived_before_an_edit_decides_with_the_pin_it_finds_under_the_lock
    ]);
}

/// A tiny deterministic generator, so a failing run can be replayed.
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Starts the hook, kills it after `delay` (if still running); returns its stdout if it exited
/// on its own.
fn run_and_maybe_kill(project: &Path, payload: &Value, delay: Duration) -> Option<String> {
    let mut child = Command::new(BIN)
        .env("CLAUDE_PROJECT_DIR", project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    feed(&mut child, payload);
    std::thread::sleep(delay);
    let _ = child.kill(); // SIGKILL; harmless if it already exited
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code().is_some() && stdout.trim_start().starts_with('{')).then_some(stdout)
}

/// Twice the median duration of a normal call on this machine, in microseconds.
fn call_span(project: &Path) -> u64 {
    let mut times: Vec<u64> = (0..5)
        .map(|i| {
            let t = std::time::Instant::now();
            project
                .subagent("reviewer", "Read")
                .session("warmup")
                .id(&format!("w{i}"))
                .run();
            t.elapsed().as_micros() as u64
        })
        .collect();
    times.sort();
    (2 * times[2]).max(1000)
}

fn sigkill_at_random_moments_never_loses_an_answered_decision_or_wedges_the_session() {
    let p = sample("sigkill");
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let span = call_span(p.path());
    let answered: Vec<_> = (0..300)
        .filter_map(|i| killed_at_random(&p, &mut rng, span, i))
        .collect();
    let n = answered.len();
    assert!(
        n > 20 && n < 300,
        "the delays must both hit and miss: {n} answered"
    );
    // The session is not wedged: the next call is decided normally.
    assert_allowed(&reviewer_read(p.path(), "s1", "/after", "after"));
    assert_answers_are_on_the_ledger(&p, &answered);
    // And the whole ledger still exports and verifies.
    let verify = p.verify_pinned(&p.export("s1")[0]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// Call `i` (the reviewer's Bash every third, its Read otherwise), killed after a random delay
/// of up to twice a call's duration (`span`), so kills land before, during and after the
/// work: its id and answer when it answered.
fn killed_at_random(
    p: &TempDir,
    rng: &mut XorShift,
    span: u64,
    i: usize,
) -> Option<(String, String)> {
    let id = format!("k{i}");
    let tool = if i.is_multiple_of(3) { "Bash" } else { "Read" };
    let input = json!({"file_path": format!("/f{i}"), "command": "ls"});
    let payload = p.subagent("reviewer", tool).input(input).id(&id).value();
    let delay = Duration::from_micros(rng.next() % span);
    run_and_maybe_kill(p.path(), &payload, delay).map(|out| (id, out))
}

/// Every answered decision is on the ledger, with the verdict that was answered.
fn assert_answers_are_on_the_ledger(p: &TempDir, answered: &[(String, String)]) {
    let es = p.entries("s1");
    for (id, out) in answered {
        let e = es
            .iter()
            .find(|e| e["context"]["tool_use_id"] == id.as_str())
            .unwrap_or_else(|| panic!("answered call {id} is missing from the ledger"));
        let denied = out.contains("\"deny\"");
        assert_eq!(
            e["event"] == "deny",
            denied,
            "{id}: ledger says {} but the answer was {out}",
            e["event"]
        );
    }
}

fn concurrent_sigkills_leave_one_verifiable_chain() {
    let p = sample("sigkill-par");
    let (dir, span) = (p.path(), call_span(p.path()));
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || forty_killed_at_random(dir, t, span));
        }
    });
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "final"));
    p.export("s1");
}

/// Killer `t`'s forty reviewer reads, each killed after a random delay of up to `span`.
fn forty_killed_at_random(dir: &Path, t: u64, span: u64) {
    let mut rng = XorShift(0x1234_5678 + t);
    for i in 0..40 {
        let payload = dir
            .read_by("reviewer", "/x")
            .id(&format!("c{t}-{i}"))
            .value();
        run_and_maybe_kill(dir, &payload, Duration::from_micros(rng.next() % span));
    }
}

/// The reviewer's Read as t1, with one of the hook's test-only fault switches set.
fn read_with_fault(p: &TempDir, fault: (&str, &str)) -> Out {
    let call = p.subagent("reviewer", "Read").id("t1");
    hook_with(&[], &[fault], p.path(), call.payload())
}

fn a_panic_answers_with_a_deny_and_exit_2() {
    need_test_faults();
    let p = sample("panic");
    let out = read_with_fault(&p, ("ATTENU_HOOK_TEST_PANIC", "1"));
    assert_eq!(out.code, 2);
    assert_denied_with(&out, "internal-error");
}

fn a_stall_past_the_internal_deadline_denies_before_claude_codes_timeout() {
    need_test_faults();
    let p = sample("stall");
    write_config(p.path(), "deadline_ms = 300\n");
    let started = std::time::Instant::now();
    let out = read_with_fault(&p, ("ATTENU_HOOK_TEST_STALL_MS", "20000"));
    assert_eq!(out.code, 2);
    assert_denied_with(&out, "deadline-exceeded");
    // The deadline, not the stall, ended the process.
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A PostToolUse or PostToolUseFailure comes after the tool ran: a PreToolUse deny there is
/// ignored by Claude Code, so a panic or the deadline must stop Claude and leave a marker.
fn a_panic_after_the_tool_ran_stops_claude_and_leaves_a_marker() {
    need_test_faults();
    let panic = ("ATTENU_HOOK_TEST_PANIC", "1");
    assert_stopped_with_a_marker("panic", panic, "PostToolUse", "[internal-error]");
}

fn a_stall_after_the_tool_ran_stops_claude_and_leaves_a_marker() {
    need_test_faults();
    let stall = ("ATTENU_HOOK_TEST_STALL_MS", "20000");
    let event = "PostToolUseFailure";
    assert_stopped_with_a_marker("stall", stall, event, "[deadline-exceeded]");
}

/// The reviewer's Read of /p/a answered as `event` (after the tool ran) with the fault `env`
/// and a 300 ms deadline: Claude is stopped (exit 0, `continue: false`) with `code`, and a
/// reconciliation marker for the call is stored.
fn assert_stopped_with_a_marker(case: &str, env: (&str, &str), event: &str, code: &str) {
    let p = sample(&format!("post-{case}"));
    write_config(p.path(), "deadline_ms = 300\n");
    let mut payload = p
        .read_by("reviewer", "/p/a")
        .id("t1")
        .post(json!({}))
        .value();
    payload["hook_event_name"] = json!(event);
    // A backtrace asked for by the caller's RUST_BACKTRACE can take longer than this
    // 300 ms deadline to capture, and then the deadline, not the panic, answers.
    let out = hook_with(&[], &[env, ("RUST_BACKTRACE", "0")], p.path(), &payload);
    assert_eq!(
        out.code, 0,
        "{case}: a stop is JSON with exit 0: {}",
        out.stdout
    );
    assert_eq!(out.json()["continue"], false, "{case}: {}", out.stdout);
    let reason = stop_reason(&out);
    let stored = reason.contains("reconciliation marker 1 was stored");
    assert!(reason.contains(code) && stored, "{case}: {reason}");
    let list = reconcile_list(p.path(), &[]).stdout;
    assert!(
        list.contains("t1") && list.contains("Read"),
        "{case}: {list}"
    );
}

/// A stop's `stopReason` ("" when it has none).
fn stop_reason(out: &Out) -> String {
    out.json()["stopReason"].as_str().unwrap_or("").to_string()
}

fn a_stuck_disk_under_the_last_resort_marker_does_not_hold_back_the_stop() {
    need_test_faults();
    let p = sample("post-marker-stuck");
    let outcome = p.read_by("reviewer", "/p/a").id("t1").post(json!({}));
    // A panic after the tool ran, while storing its marker stalls for 20 s: the stop must
    // reach Claude Code without the marker, and say that none was stored.
    let stuck = [PANIC, ("ATTENU_HOOK_TEST_MARKER_STALL_MS", "20000")];
    let out = hook_with(&[], &stuck, p.path(), outcome.payload());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_halted_saying_all(&out, &["[internal-error]", NONE_IN_TIME]);
    let list = reconcile_list(p.path(), &[]);
    assert!(!list.stdout.contains("t1"), "{}", list.stdout);
}

const NONE_IN_TIME: &str = "no reconciliation marker could be stored in time either";
const PANIC: (&str, &str) = ("ATTENU_HOOK_TEST_PANIC", "1");

/// Runs the hook under libfaketime with the clock moved by `offset` (e.g. "-2d", "+2h").
/// Skips the test where `faketime` is missing.
fn hook_at(offset: &str, project: &Path, payload: &Value) -> Out {
    need_tool("faketime", "--help");
    hook_with(&["faketime", "-f", offset], &[], project, payload)
}

fn a_clock_jump_changes_no_decision_and_breaks_no_chain() {
    let p = sample("clock");
    let call = |tool: &str, id: &str| p.subagent("reviewer", tool).id(id);
    assert_allowed(&call("Read", "now").run());
    let back = hook_at("-2d", p.path(), call("Read", "back").payload());
    assert!(back.is_allow(), "{}{}", back.stdout, back.stderr);
    let fwd = hook_at("+400d", p.path(), call("Bash", "fwd").payload());
    assert_denied_with(&fwd, "unresolved");
    assert_allowed(&call("Read", "after").run());
    let es = p.entries("s1");
    let ts = |id: &str| {
        let e = es.iter().find(|e| e["context"]["tool_use_id"] == id);
        e.unwrap()["ts"].as_u64().unwrap()
    };
    let as_it_was = ts("back") < ts("now") && ts("fwd") > ts("after");
    assert!(
        as_it_was,
        "the record shows the jump as it was, not corrected"
    );
    assert_eq!(p.verify_pinned(&p.export("s1")[0]).code, 0);
}

fn a_clock_moved_past_an_authorizations_expiry_refuses_it() {
    let (p, key) = gated_project("clock-gate", "Bash");
    let input = json!({"command": "ls"});
    let out = authorize(
        p.path(),
        &key,
        &input,
        &["--expires-in", "1h", "--uses", "2"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let call = |id: &str| p.subagent("ops", "Bash").input(input.clone()).id(id);
    let late = hook_at("+2h", p.path(), call("late").payload());
    assert_denied_with(&late, "gate-authorization-expired");
    assert_allowed(&call("ontime").run());
}

/// Two first calls of one session race an agent edit: the slow one derived the roster before
/// the edit and waits before the ledger lock; the fast one derived after it, took the lock
/// first and pinned the edited roster for the session. The slow call decides with that pin
/// once it holds the lock: a session has the one roster its first event pinned under the lock,
/// and one chain (before pinning, chains could flip back and forth between two derivations).
/// A later edit, racing a warm call or not, changes nothing in the session.
fn a_first_call_that_derived_before_an_edit_decides_with_the_pin_it_finds_under_the_lock() {
    need_test_faults();
    let p = sample("derive-race");
    // The slow call has derived (the reviewer holds Read) and waits before the lock.
    let read = p.read_by("reviewer", "/b").id("t2").value();
    let slow = Paused::start(p.path(), "slow", read);
    set_agent_tools(p.path(), "reviewer", "Grep, Glob");
    let out = reviewer_read(p.path(), "s1", "/c", "t3");
    assert!(out.denied(), "the edit took Read away: {}", out.stdout);
    let out = slow.release();
    // The slow call decides with the roster the session was pinned to.
    assert!(out.denied(), "{}", out.stdout);
    // Giving Read back mid-session changes nothing in it; a new session has it.
    set_agent_tools(p.path(), "reviewer", "Read");
    assert!(reviewer_read(p.path(), "s1", "/d", "t4").denied());
    assert_allowed(&reviewer_read(p.path(), "s2", "/d", "t5"));
    let roots = of_event(&p.entries("s1"), "root").len();
    assert_eq!(roots, 1, "one roster, one chain");
}
