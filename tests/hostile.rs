//! Hostile input through the real binary: a deterministic pseudo-random generator (xorshift, no
//! crate) builds a few hundred adversarial payloads (wrong types for every field, deep nesting,
//! megabyte strings, control and bidi characters, path tricks in session ids and tool names,
//! look-alikes of a declared agent type, duplicate keys, byte-level corruption) and sends each
//! to `attenu-hook` as its own process, the way Claude Code runs it.
//!
//! Every process must exit 0 or 2, print exactly one JSON object, deny whenever the payload is
//! malformed, never let an undeclared agent type (or a look-alike of a declared one) through,
//! and finish within [`WATCHDOG`]: a watchdog kills a process that does not, and the test fails.
//!
//! Names, session ids and agent files are in `hostile_names.rs`; the generator is
//! `support/hostile.rs`.

mod common;
#[path = "support/hostile.rs"]
mod hostile;

use common::*;
use hostile::*;
use serde_json::{json, Value};
use std::time::Instant;

// ------------------------------------------------------------------------------------------
// The tests
// ------------------------------------------------------------------------------------------

/// The index of `bytes`'s expected answer kind in `[Deny, Refuse, Silence, Any]`.
fn kind(bytes: &[u8]) -> usize {
    match expect(bytes) {
        Expect::Deny => 0,
        Expect::Refuse => 1,
        Expect::Silence => 2,
        Expect::Any => 3,
    }
}

#[test]
fn a_few_hundred_random_adversarial_payloads_are_answered_cleanly() {
    let p = sample("hostile-random");
    let mut rng = Rng::new(0x5eed_a77e_0001);
    let (mut seen, mut allows, started) = ([0usize; 4], 0, Instant::now());
    for i in 0..300 {
        let bytes = generate(&mut rng, p.path(), i);
        let run = run_hook(p.path(), &bytes, &format!("payload {i}"));
        check(&run, &bytes, &format!("payload {i}"));
        seen[kind(&bytes)] += 1;
        allows += usize::from(run.is_allow());
    }
    // The generator reaches every kind of answer, so no assertion above is vacuous.
    let reached = seen.iter().all(|&n| n >= 10) && allows >= 10;
    assert!(
        reached,
        "malformed/refused/silent/other = {seen:?}, allows = {allows}"
    );
    let took = started.elapsed();
    eprintln!(
        "300 payloads in {took:?}: malformed/refused/silent/other = {seen:?}, allows = {allows}"
    );
}

/// A value of each JSON type, some shaped like what a field holds.
fn wrong_values() -> [Value; 8] {
    [
        json!("7"),
        json!(7),
        json!(-1.5),
        json!(true),
        json!([]),
        json!(["PreToolUse"]),
        json!({}),
        json!({"x": "y"}),
    ]
}

/// Whether `v` has the type `field` holds.
fn fits(field: &str, v: &Value) -> bool {
    match field {
        "tool_input" => v.is_object(),
        "is_interrupt" => v.is_boolean(),
        "duration_ms" => v.is_number(),
        _ => v.is_string(),
    }
}

#[test]
fn wrong_types_for_every_field_are_denied() {
    let p = sample("hostile-types");
    let base = reviewer_read_payload(p.path(), "types", "/p/a", "t");
    let mut n = 0;
    // Every field with a type (a tool_response may be any JSON).
    for &field in PAYLOAD_FIELDS.iter().filter(|&&f| f != "tool_response") {
        for v in wrong_values().iter().filter(|v| !fits(field, v)) {
            let mut payload = base.clone();
            payload[field] = v.clone();
            let (bytes, what) = (payload.to_string().into_bytes(), format!("{field} = {v}"));
            let run = run_hook(p.path(), &bytes, &what);
            assert!(run.denied(), "{what}: {}", run.stdout);
            assert_eq!(expect(&bytes), Expect::Deny, "{what}");
            n += 1;
        }
    }
    // More than 80 with the 23 payloads of the two tests below, as when they were one.
    assert!(n + 23 > 80);
    // And the unmutated payload is allowed, so the denies above are about the mutation.
    assert!(run_payload(p.path(), &base, "base").is_allow());
}

/// Empty strings where an identifier is required.
#[test]
fn empty_identifiers_are_denied() {
    let p = sample("hostile-empty");
    for field in ["hook_event_name", "session_id", "tool_name"] {
        let mut payload = reviewer_read_payload(p.path(), "types", "/p/a", "t");
        payload[field] = json!("");
        let run = run_payload(p.path(), &payload, field);
        assert!(run.denied(), "empty {field}: {}", run.stdout);
    }
}

/// Whole payloads that are not JSON, not an object, or not one with a usable event name.
const NOT_A_PAYLOAD: [&[u8]; 20] = [
    b"",
    b"\n",
    b"   ",
    b"not json",
    b"null",
    b"[]",
    b"42",
    b"{}",
    b"\"PreToolUse\"",
    b"1e999",
    br#"{"hook_event_name": null}"#,
    br#"{"hook_event_name": ["PreToolUse"]}"#,
    b"\xff\xfe",
    b"{\"hook_event_name\":\"PreToolUse\"",
    b"{\"hook_event_name\":\"PreToolUse\"}}",
    b"{\"hook_event_name\":\"PreToolUse\"} {}",
    b"\xef\xbb\xbf{}",
    b"{\"hook_event_name\":\"Pre\xffToolUse\"}",
    b"{\"hook_event_name\":\"\\ud800\"}",
    b"\0",
];

#[test]
fn payloads_that_are_no_usable_object_are_denied() {
    let p = sample("hostile-raw");
    for raw in NOT_A_PAYLOAD {
        let what = String::from_utf8_lossy(raw);
        let run = run_hook(p.path(), raw, &what);
        assert!(run.denied(), "{what:?}: {}", run.stdout);
    }
}

/// The reviewer's Read with `levels` of `open`..`close` nesting around `1` as `field`.
fn nested_in(p: &TempDir, field: &str, (open, close): (&str, &str), levels: usize) -> String {
    let mut payload = reviewer_read_payload(p.path(), "deep", "/p/a", "t");
    payload[field] = json!("__DEEP__");
    let deep = format!("{}1{}", open.repeat(levels), close.repeat(levels));
    payload.to_string().replace("\"__DEEP__\"", &deep)
}

#[test]
fn deep_nesting_is_denied_without_a_stack_overflow() {
    let p = sample("hostile-deep");
    let levels = 100_000;
    for brackets in [("[", "]"), ("{\"a\":", "}"), ("[{\"a\":", "}]")] {
        for field in [
            "tool_input",
            "tool_response",
            "brand_new_field",
            "agent_type",
        ] {
            let what = format!("{levels} levels of {} in {field}", brackets.0);
            let run = run_hook(
                p.path(),
                nested_in(&p, field, brackets, levels).as_bytes(),
                &what,
            );
            assert!(run.denied(), "{what}: {}", run.stdout);
            assert!(
                run.reason().contains("[payload-invalid]"),
                "{what}: {}",
                run.reason()
            );
        }
    }
    // Unclosed nesting, and nesting as the whole payload.
    for text in ["[".repeat(levels), "{\"a\":".repeat(levels)] {
        assert!(run_hook(p.path(), text.as_bytes(), "unclosed nesting").denied());
    }
}

/// The reviewer's Read with a 5 MB argument (control, bidi and path characters repeated).
fn five_mb_read(p: &TempDir) -> Value {
    let five_mb = "A\u{202e}\u{0}/..".repeat(5 << 20 >> 3);
    let input = json!({"file_path": "/p/a", "pad": five_mb});
    pre("big", p.path(), Some("reviewer"), "Read", input, "t1")
}

#[test]
fn megabyte_strings_are_answered_within_the_bound() {
    let p = sample("hostile-big");
    // A 5 MB argument to a tool the agent holds: recorded (as a commitment) and allowed.
    let big_input = five_mb_read(&p);
    let run = run_payload(p.path(), &big_input, "5 MB tool_input");
    assert!(run.is_allow(), "5 MB tool_input: {}", run.stdout);
    // The same through an agent that does not hold it, and through an undeclared one.
    for (agent, tool) in [("reviewer", "Bash"), ("Explore", "Read")] {
        let mut payload = big_input.clone();
        payload["agent_type"] = json!(agent);
        payload["tool_name"] = json!(tool);
        payload["tool_use_id"] = json!(format!("t-{agent}"));
        let run = run_payload(p.path(), &payload, agent);
        assert!(
            run.denied(),
            "5 MB tool_input via {agent}/{tool}: {}",
            run.stdout
        );
    }
}

/// A megabyte in each identifier; a name that long is denied.
#[test]
fn megabyte_identifiers_are_answered_within_the_bound() {
    let p = sample("hostile-big-ids");
    let mb = "r".repeat(1 << 20);
    for (field, value) in [
        ("session_id", mb.clone()),
        ("session_id", "../".repeat(400_000)),
        ("tool_name", mb.clone()),
        ("tool_name", format!("mcp__{mb}__{mb}")),
        ("agent_type", format!("reviewer{mb}")),
        ("agent_id", mb.clone()),
        ("tool_use_id", mb.clone()),
    ] {
        let mut payload = reviewer_read_payload(p.path(), "big-ids", "/p/a", "t2");
        payload[field] = json!(value);
        let (bytes, what) = (payload.to_string().into_bytes(), format!("1 MB {field}"));
        let run = run_hook(p.path(), &bytes, &what);
        check(&run, &bytes, &what);
        let a_name = field == "tool_name" || field == "agent_type";
        assert!(!a_name || run.denied(), "{what}: {}", run.stdout);
    }
}

/// A megabyte of whitespace before the object is still one valid payload.
#[test]
fn a_megabyte_of_whitespace_before_the_payload_is_read_through() {
    let p = sample("hostile-padded");
    let mut padded = vec![b' '; 1 << 20];
    let read = pre("pad", p.path(), Some("reviewer"), "Read", json!({}), "t3");
    padded.extend_from_slice(read.to_string().as_bytes());
    assert!(run_hook(p.path(), &padded, "padded").is_allow());
}

/// Members after which the last `agent_type` or `tool_name` is an undeclared agent or a tool
/// it does not hold. JSON.parse (Claude Code) keeps the last member; whichever the hook
/// reads, the call is denied.
const LAST_MEMBER_NARROWS: &[&str] = &[
    r#""agent_type":"reviewer","agent_type":"Explore","tool_name":"Read""#,
    r#""agent_type":"reviewer","tool_name":"Read","tool_name":"Bash""#,
    r#""agent_type":"reviewer","agent_type":"reviewer ","tool_name":"Read""#,
    r#""agent_type":"reviewer","tool_name":"Read","tool_name":"Read","tool_name":"Write""#,
    r#""agent_type":"reviewer","tool_name":"Read","agent_id":null,"agent_id":"a2","agent_type":"Explore""#,
];

/// A malformed duplicate is malformed, wherever it comes.
const MALFORMED_DUPLICATE: &[&str] = &[
    r#""agent_type":"reviewer","tool_name":"Read","tool_input":7"#,
    r#""agent_type":"reviewer","tool_name":"Read","session_id":5"#,
    r#""agent_type":"reviewer","tool_name":"Read","hook_event_name":null"#,
];

#[test]
fn duplicate_keys_follow_the_last_member_and_never_widen() {
    let p = sample("hostile-dupes");
    let dir = p.path().display().to_string();
    for extra in LAST_MEMBER_NARROWS.iter().chain(MALFORMED_DUPLICATE) {
        let text = format!(
            r#"{{"session_id":"dupes","cwd":{dir:?},"hook_event_name":"PreToolUse","agent_id":"a1","tool_use_id":"t","tool_input":{{"file_path":"/p/a"}},{extra}}}"#
        );
        let run = run_hook(p.path(), text.as_bytes(), extra);
        assert!(run.denied(), "{extra}: {}", run.stdout);
    }
}

/// The reviewer's Read with a `pad` string of `n` bytes: a syntactically plausible payload.
fn padded_read(p: &TempDir, n: usize) -> Vec<u8> {
    let mut huge = reviewer_read_payload(p.path(), "huge", "/p/a", "t")
        .to_string()
        .into_bytes();
    huge.pop();
    huge.extend_from_slice(b",\"pad\":\"");
    huge.resize(huge.len() + n, b'A');
    huge.extend_from_slice(b"\"}");
    huge
}

#[test]
fn a_70_mb_payload_is_denied_without_a_memory_blow_up() {
    let p = sample("hostile-huge");
    let huge = padded_read(&p, 70_000_000);
    assert!(huge.len() > MAX_PAYLOAD);
    let run = run_hook(p.path(), &huge, "70 MB payload");
    assert!(run.denied(), "70 MB payload: {}", run.stdout);
    assert!(
        run.reason().contains("[payload-too-large]"),
        "{}",
        run.reason()
    );
    // The hook reads at most 64 MiB + 1 bytes; anything near 4x that is a blow-up.
    let kb = run.peak_rss_kb;
    assert!(kb < 400 * 1024, "peak RSS {kb} kB for a 70 MB payload");
    eprintln!(
        "70 MB payload: denied in {:?}, peak RSS seen {kb} kB",
        run.elapsed
    );
}

#[test]
fn the_payload_limit_is_exact() {
    let p = sample("hostile-limit");
    // Exactly MAX bytes (whitespace after the object) is accepted; one more is refused.
    let mut at_limit = reviewer_read_payload(p.path(), "limit", "/p/a", "t")
        .to_string()
        .into_bytes();
    at_limit.resize(MAX_PAYLOAD, b' ');
    let run = run_hook(p.path(), &at_limit, "payload of exactly the limit");
    assert!(run.is_allow(), "at the limit: {}", run.stdout);
    at_limit.push(b' ');
    let run = run_hook(p.path(), &at_limit, "one byte over the limit");
    assert!(
        run.reason().contains("[payload-too-large]"),
        "{}",
        run.stdout
    );
}

// ------------------------------------------------------------------------------------------
// Malformed and hostile payloads, one at a time
// ------------------------------------------------------------------------------------------

#[test]
fn malformed_input_always_blocks_with_exit_0_or_2() {
    let p = sample("malformed");
    // Bytes that are no JSON object at all: in wrong_types_for_every_field_are_denied.
    for payload in [
        json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": 5, "tool_input": {}}),
        json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Read", "tool_input": []}),
        json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Read"}),
        json!({"hook_event_name": "PreToolUse", "session_id": 7, "tool_name": "Read", "tool_input": {}}),
        json!({"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Read", "tool_input": {}, "agent_type": {"x": 1}, "agent_id": "a"}),
    ] {
        let out = hook(p.path(), &payload);
        assert!(out.denied(), "{payload} -> {}", out.stdout);
        assert!(
            out.reason().contains("[payload-invalid]"),
            "{}",
            out.reason()
        );
    }
}

#[test]
fn unknown_events_and_unknown_fields_are_accepted() {
    let p = sample("unknown");
    assert_allowed(&hook(
        p.path(),
        &json!({"hook_event_name": "Notification", "session_id": "s"}),
    ));
    let mut payload = reviewer_read_payload(p.path(), "s1", "/x", "t1");
    payload["brand_new_field"] = json!({"nested": [1, 2]});
    payload["effort"] = json!({"level": "high"});
    assert_allowed(&hook(p.path(), &payload));
}
