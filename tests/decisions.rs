//! Decisions (PreToolUse) and outcomes (PostToolUse, PostToolUseFailure), through the real
//! binary, one process per call: what is allowed, what is denied and with which reason code,
//! and what each decision and outcome leaves on the ledger beyond what a case shows (ids,
//! hashes, the bytes on disk). Cases that are a sequence of events, files changed between
//! them included (the seed's two kinds of refusal, the main thread, undeclared agent types,
//! a configuration typo, retries, outcomes), are data under `tests/cases/`, run by
//! tests/decision_cases.rs.

mod common;
use common::decision_kit::*;
use common::*;
use serde_json::{json, Value};

#[test]
fn allow_is_silence_and_deny_has_the_documented_shape() {
    let p = sample("shape");
    let a = reviewer_read(p.path(), "s1", "/x", "t1");
    assert_eq!((a.code, a.stdout.trim()), (0, "{}"));
    let d = p.bash_by("reviewer", "ls").id("t2").run();
    assert_eq!(d.code, 0);
    assert_has(
        &d.json(),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}),
    );
    assert_starts(
        &d.reason(),
        "attenu-hook: [unresolved] Bash needs exec.bash",
    );
    assert!(!d.stdout.contains("\"allow\""), "never an explicit allow");
}

#[test]
fn the_record_carries_claude_code_identifiers_mode_and_time() {
    let p = sample("ids");
    p.bash_by("reviewer", "ls").id("toolu_9").run();
    let d = p.entries("s1").pop().unwrap();
    assert_has(
        &d,
        json!({"v": 2, "mode": "enforce", "context": {"session_id": "s1", "agent_id": "a-reviewer", "agent_type": "reviewer", "tool_use_id": "toolu_9", "enforced": true}}),
    );
    assert!(d["context"]["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(d["call_id"].as_str().unwrap().len(), 32);
}

#[test]
fn outcomes_bind_to_their_call_and_raw_data_never_reaches_the_disk() {
    let p = sample("privacy");
    let marker = "MARKER-7f3a9c";
    let read = |id| {
        p.subagent("reviewer", "Read")
            .input(json!({"file_path": format!("/p/{marker}"), "note": marker}))
            .id(id)
    };
    assert_allowed(&read("t1").run());
    assert_allowed(&read("t1").post(json!({"content": marker})).run());
    read("t2").run();
    assert_halted_saying(
        &read("t2").failure(&format!("boom {marker}")).run(),
        "[tool-failed]",
    );
    p.event("s1", "SessionEnd");
    let (allows, outcomes) = allows_and_outcomes(&p, "s1");
    assert_eq!(outcomes.len(), 2);
    // The binding below compares members; a missing one on both sides must not pass.
    let bound = |a: &Value| a["call_id"].as_str().is_some_and(|c| c.len() == 32);
    assert!(allows.iter().all(bound) && allows[0]["authorized_params_hash"].is_string());
    assert_has(
        &outcomes[0],
        json!({"call_id": allows[0]["call_id"], "body_state": "returned", "invoked_params_hash": allows[0]["authorized_params_hash"]}),
    );
    assert_has(
        &outcomes[1],
        json!({"call_id": allows[1]["call_id"], "body_state": "raised", "context": {"side_effects": "uncertain"}}),
    );
    assert_no_file_holds(&p.path().join(".attenu"), marker);
}

#[test]
fn input_changed_after_authorization_is_recorded_and_halts() {
    let p = sample("changed");
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "t1"));
    let out = p
        .read_by("reviewer", "/etc/shadow")
        .id("t1")
        .post(json!({}))
        .run();
    assert_halted_saying(&out, "[input-changed-after-authorization]");
    let (allows, outcomes) = allows_and_outcomes(&p, "s1");
    assert_ne!(
        outcomes[0]["invoked_params_hash"],
        allows[0]["authorized_params_hash"]
    );
}
