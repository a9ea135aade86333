//! Hostile input through the real binary: a deterministic pseudo-random generator (xorshift, no
//! crate) builds a few hundred adversarial payloads (wrong types for every field, deep nesting,
//! megabyte strings, control and bidi characters, path tricks in session ids and tool names,
//! look-alikes of a declared agent type, duplicate keys, byte-level corruption) and sends each
//! to `attenu-hook` as its own process, the way Claude Code runs it.
//!
//! Every process must exit 0 or 2, print exactly one JSON object, deny whenever the payload is
//! malformed, never let an undeclared agent type (or a look-alike of a declared one) through,
//! and finish within [`WATCHDOG`]: a watchdog kills a process that does not, and the test fails.
//! Session ids with path tricks must never create a file outside `.attenu/`.

mod common;

use attenu_hook::ops::EVENTS;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest any single hook process may take before the watchdog kills it.
const WATCHDOG: Duration = Duration::from_secs(20);

/// The hook's stdin limit (`hook::payload::MAX_PAYLOAD_BYTES`).
const MAX_PAYLOAD: usize = attenu_hook::protocol::payload::MAX_PAYLOAD_BYTES;

/// Agent types the sample project declares, and the tools each holds.
const DECLARED: &[(&str, &[&str])] = &[
    ("reviewer", &["Read", "Grep", "Glob"]),
    ("researcher", &["Read", "WebFetch"]),
];

// ------------------------------------------------------------------------------------------
// Running the binary under a watchdog
// ------------------------------------------------------------------------------------------

/// [`run_hook`] on a JSON payload.
fn run_payload(project: &Path, payload: &Value, what: &str) -> Run {
    run_hook(project, payload.to_string().as_bytes(), what)
}

/// What one hook process did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    answer: Value,
    elapsed: Duration,
    /// The largest resident set size seen while it ran (VmHWM, kB), sampled.
    peak_rss_kb: u64,
}

impl Run {
    fn denied(&self) -> bool {
        self.answer
            .pointer("/hookSpecificOutput/permissionDecision")
            .and_then(Value::as_str)
            == Some("deny")
    }
    fn reason(&self) -> &str {
        self.answer
            .pointer("/hookSpecificOutput/permissionDecisionReason")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    fn is_allow(&self) -> bool {
        self.code == 0 && self.answer == json!({})
    }
}

fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs the hook on `stdin` with `project` as CLAUDE_PROJECT_DIR. Fails the test when the
/// process outlives [`WATCHDOG`] (after killing it), dies by a signal, exits with anything but
/// 0 or 2, or prints anything but one JSON object on one line.
fn run_hook(project: &Path, stdin: &[u8], what: &str) -> Run {
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("ATTENU_HOOK_TEST_PANIC")
        .env_remove("ATTENU_HOOK_TEST_STALL_MS")
        .env("CLAUDE_PROJECT_DIR", project)
        .current_dir(project)
        .spawn()
        .expect("spawn attenu-hook");
    let pid = child.id();
    let mut stdin_pipe = child.stdin.take().expect("stdin");
    let mut stdout_pipe = child.stdout.take().expect("stdout");
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    std::thread::scope(|s| {
        // The hook may stop reading early (an oversized payload): a broken pipe is expected.
        s.spawn(move || {
            let _ = stdin_pipe.write_all(stdin);
        });
        let out = s.spawn(move || {
            let mut b = Vec::new();
            let _ = stdout_pipe.read_to_end(&mut b);
            b
        });
        let err = s.spawn(move || {
            let mut b = Vec::new();
            let _ = stderr_pipe.read_to_end(&mut b);
            b
        });
        let mut peak = 0;
        let status = loop {
            if let Some(kb) = vm_hwm_kb(pid) {
                peak = peak.max(kb);
            }
            match child.try_wait().expect("wait for attenu-hook") {
                Some(status) => break status,
                None if started.elapsed() > WATCHDOG => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("{what}: the hook did not finish within {WATCHDOG:?}; killed it");
                }
                None => std::thread::sleep(Duration::from_millis(2)),
            }
        };
        let elapsed = started.elapsed();
        let stdout = String::from_utf8_lossy(&out.join().unwrap()).into_owned();
        let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
        let code = status.code().unwrap_or_else(|| {
            panic!("{what}: the hook was killed by a signal ({status:?})\nstderr: {stderr}")
        });
        assert!(
            code == 0 || code == 2,
            "{what}: hook mode exited {code}; only 0 and 2 are allowed\nstderr: {stderr}"
        );
        assert!(
            stdout.ends_with('\n') && stdout.trim_end().lines().count() == 1,
            "{what}: stdout is not exactly one line: {:?}",
            truncate(&stdout)
        );
        let answer: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("{what}: stdout is not JSON ({e}): {:?}", truncate(&stdout))
        });
        assert!(
            answer.is_object(),
            "{what}: the answer is not a JSON object"
        );
        assert!(
            !stderr.contains("panicked"),
            "{what}: the hook panicked: {}",
            truncate(&stderr)
        );
        Run {
            code,
            stdout,
            stderr,
            answer,
            elapsed,
            peak_rss_kb: peak,
        }
    })
}

fn truncate(s: &str) -> String {
    if s.len() <= 400 {
        return s.to_string();
    }
    let mut end = 400;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

// ------------------------------------------------------------------------------------------
// A deterministic generator of adversarial payloads
// ------------------------------------------------------------------------------------------

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Fragments hostile strings are made of: path tricks, control, bidi and invisible characters,
/// look-alikes, quoting and escape characters, names that mean something elsewhere.
const FRAGMENTS: &[&str] = &[
    "../",
    "..",
    "/",
    "\\",
    "..\\",
    "./",
    "/etc/passwd",
    ".attenu",
    ".claude/settings.json",
    "\u{202e}",
    "\u{202d}",
    "\u{2066}",
    "\u{0}",
    "\u{1}",
    "\u{7}",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{200b}",
    "\u{200d}",
    "\r\n",
    "\n",
    "\t",
    " ",
    "%2e%2e%2f",
    "%00",
    "~",
    "$HOME",
    "`id`",
    "$(id)",
    "C:\\Windows",
    "\"",
    "'",
    "{",
    "}",
    "\\u0000",
    "😀",
    "\u{10ffff}",
    "\u{fffd}",
    "reviewer",
    "Reviewer",
    "r\u{0435}viewer",
    "ｒｅｖｉｅｗｅｒ",
    "Read",
    "read",
    "Bash",
    "Agent",
    "mcp__",
    "__",
    "*",
    ".",
    "-",
    "x--",
    "NUL",
    "ledger-",
    ".jsonl",
];

fn hostile_string(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(6) {
        let f: &&str = rng.pick(FRAGMENTS);
        s.push_str(f);
    }
    if rng.chance(5) {
        // A long one: thousands of repetitions of a fragment.
        let f = *rng.pick(FRAGMENTS);
        s.push_str(&f.repeat(1000 + rng.below(20_000)));
    }
    s
}

/// Variants of a declared agent name that are not that name.
fn lookalikes(name: &str) -> Vec<String> {
    let mut upper_first = name.to_string();
    upper_first[..1].make_ascii_uppercase();
    let cyrillic_e = name.replacen('e', "\u{0435}", 1);
    let fullwidth: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() {
                char::from_u32(c as u32 - 'a' as u32 + 0xFF41).unwrap_or(c)
            } else {
                c
            }
        })
        .collect();
    let mut out = vec![
        upper_first,
        name.to_uppercase(),
        format!(" {name}"),
        format!("{name} "),
        format!("{name}\n"),
        format!("\t{name}"),
        format!("{name}\u{0}"),
        format!("{name}\u{200b}"),
        format!("\u{feff}{name}"),
        format!("{name}\u{202e}"),
        format!("\u{202e}{name}"),
        format!("{}\u{200d}{}", &name[..2], &name[2..]),
        cyrillic_e,
        fullwidth,
        format!("../{name}"),
        format!("./{name}"),
        format!("agents/{name}"),
        format!("{name}.md"),
        format!("{name}/"),
        format!("{name}-2"),
        format!("{name}s"),
        name[..name.len() - 1].to_string(),
        format!("plugin:{name}"),
        format!("{name}:{name}"),
        // A combining acute accent after the last letter.
        format!("{name}\u{301}"),
    ];
    out.retain(|v| v != name);
    out
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 9 } else { 12 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.next() as i64),
        3 => json!(*rng.pick(&[0.5, -0.0, 1e300, -1e-300, 9007199254740993.0])),
        4 => json!(u64::MAX),
        5 | 6 => json!(hostile_string(rng)),
        7 => json!(""),
        8 => json!(*rng.pick(&["PreToolUse", "reviewer", "Read", "Explore"])),
        9 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        10 => Value::Object(
            (0..rng.below(4))
                .map(|_| (hostile_string(rng), random_value(rng, depth + 1)))
                .collect(),
        ),
        _ => json!({"file_path": random_value(rng, depth + 1)}),
    }
}

/// The fields a payload may carry: each the hook reads, one Claude Code sends that it does not
/// read, and one no version sends.
fn fields() -> Vec<&'static str> {
    [PAYLOAD_FIELDS, &["transcript_path", "brand_new_field"]].concat()
}

/// The events a payload names: each the hook is wired for, PreToolUse three times as often
/// as the others, and one it does not handle.
fn events() -> Vec<&'static str> {
    let mut events = EVENTS.to_vec();
    events.splice(1..1, ["PreToolUse", "PreToolUse"]);
    events.push("Notification");
    events
}

/// One adversarial payload, as bytes.
fn generate(rng: &mut Rng, project: &Path, i: usize) -> Vec<u8> {
    let event = *rng.pick(&events());
    let (agent, tool, input) = match rng.below(5) {
        0 => (
            Some("reviewer"),
            "Read",
            json!({"file_path": "/p/src/app.py"}),
        ),
        1 => (
            Some("researcher"),
            "WebFetch",
            json!({"url": "https://example.com", "prompt": "x"}),
        ),
        2 => (Some("reviewer"), "Bash", json!({"command": "ls"})),
        3 => (Some("Explore"), "Read", json!({"file_path": "/p/a"})),
        _ => (None, "Bash", json!({"command": "ls"})),
    };
    let mut p = pre(
        &format!("hostile-{}", i % 7),
        project,
        agent,
        tool,
        input,
        &format!("toolu_{i}"),
    );
    p["hook_event_name"] = json!(event);
    if event.starts_with("PostToolUse") {
        p["tool_response"] = json!({"ok": true});
    }
    let obj = p.as_object_mut().unwrap();
    for _ in 0..1 + rng.below(3) {
        let field = (*rng.pick(&fields())).to_string();
        match rng.below(7) {
            0 | 1 => {
                obj.insert(field, random_value(rng, 0));
            }
            2 => {
                obj.remove(&field);
            }
            3 => {
                let f = *rng.pick(&[
                    "session_id",
                    "tool_name",
                    "agent_type",
                    "agent_id",
                    "tool_use_id",
                ]);
                obj.insert(f.into(), json!(hostile_string(rng)));
            }
            4 => {
                let (name, _) = *rng.pick(DECLARED);
                let v = lookalikes(name);
                obj.insert("agent_type".into(), json!(rng.pick(&v)));
                obj.insert("agent_id".into(), json!("a-lookalike"));
            }
            5 => {
                let f = *rng.pick(&["tool_input", "tool_response", "brand_new_field"]);
                obj.insert(f.into(), nested(rng.below(3), 20 + rng.below(200)));
            }
            _ => {
                let mut input = obj.get("tool_input").cloned().unwrap_or(json!({}));
                if let Value::Object(m) = &mut input {
                    m.insert(hostile_string(rng), random_value(rng, 0));
                }
                obj.insert("tool_input".into(), input);
            }
        }
    }
    let mut bytes = serde_json::to_vec(&p).unwrap();
    // Duplicate keys, spliced in as raw text (JSON.parse and serde_json keep the last one).
    if rng.chance(12) && bytes.last() == Some(&b'}') {
        let key = *rng.pick(&[
            "agent_type",
            "tool_name",
            "session_id",
            "hook_event_name",
            "agent_id",
        ]);
        let v = serde_json::to_string(&random_value(rng, 2)).unwrap();
        bytes.pop();
        bytes.extend_from_slice(format!(",\"{key}\":{v}}}").as_bytes());
    }
    // Byte-level corruption.
    if rng.chance(15) && !bytes.is_empty() {
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes.insert(at, *rng.pick(&[0u8, b'"', b'{', b']', b'\\', 0xff, 0xc3])),
                2 => {
                    bytes.remove(at);
                }
                _ => bytes.truncate(at),
            }
            if bytes.is_empty() {
                break;
            }
        }
    }
    bytes
}

/// Nested JSON: arrays, objects, or both alternating, `depth` levels.
fn nested(kind: usize, depth: usize) -> Value {
    let mut v = json!("leaf");
    for level in 0..depth {
        v = match (kind, level % 2) {
            (0, _) | (2, 0) => json!([v]),
            _ => json!({ "k": v }),
        };
    }
    v
}

// ------------------------------------------------------------------------------------------
// The oracle: what the answer must be, from the hook contract alone
// ------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Expect {
    /// Malformed: a deny (JSON, exit 0 or 2).
    Deny,
    /// A well-formed PreToolUse the hook must refuse: an undeclared caller, or a tool not held.
    Refuse,
    /// Well-formed main-thread PreToolUse, or an event the hook does not handle: `{}`.
    Silence,
    /// Well formed, and anything but a crash is acceptable (allows, outcomes, exports).
    Any,
}

fn expect(bytes: &[u8]) -> Expect {
    if bytes.len() > MAX_PAYLOAD {
        return Expect::Deny;
    }
    let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(bytes) else {
        return Expect::Deny;
    };
    let event = match obj.get("hook_event_name") {
        Some(Value::String(s)) if !s.is_empty() => s.as_str(),
        _ => return Expect::Deny,
    };
    if !EVENTS.contains(&event) {
        return Expect::Silence;
    }
    let str_or_null = |k: &str| matches!(obj.get(k), None | Some(Value::Null | Value::String(_)));
    let nonempty = |k: &str| matches!(obj.get(k), Some(Value::String(s)) if !s.is_empty());
    let well_formed = nonempty("session_id")
        && [
            "cwd",
            "permission_mode",
            "agent_id",
            "agent_type",
            "tool_use_id",
            "error",
        ]
        .iter()
        .all(|k| str_or_null(k))
        && matches!(
            obj.get("is_interrupt"),
            None | Some(Value::Null | Value::Bool(_))
        )
        && matches!(
            obj.get("duration_ms"),
            None | Some(Value::Null | Value::Number(_))
        );
    if !well_formed {
        return Expect::Deny;
    }
    let tool_event = event.starts_with("PreToolUse") || event.starts_with("PostToolUse");
    if tool_event
        && !(nonempty("tool_name") && matches!(obj.get("tool_input"), Some(Value::Object(_))))
    {
        return Expect::Deny;
    }
    if event != "PreToolUse" {
        return Expect::Any;
    }
    if !nonempty("agent_id") {
        // The main thread is recorded, not enforced, in the default configuration.
        return Expect::Silence;
    }
    let ty = obj.get("agent_type").and_then(Value::as_str).unwrap_or("");
    let tool = obj.get("tool_name").and_then(Value::as_str).unwrap_or("");
    match DECLARED.iter().find(|(name, _)| *name == ty) {
        None => Expect::Refuse,
        Some((_, tools)) if !tools.contains(&tool) => Expect::Refuse,
        Some(_) => Expect::Any,
    }
}

fn check(run: &Run, bytes: &[u8], what: &str) {
    let e = expect(bytes);
    match e {
        Expect::Deny | Expect::Refuse => assert!(
            run.denied(),
            "{what}: expected a deny ({e:?}), got {}\npayload: {}",
            truncate(&run.stdout),
            truncate(&String::from_utf8_lossy(bytes))
        ),
        Expect::Silence => assert!(
            run.is_allow(),
            "{what}: expected {{}}, got {}\nstderr: {}\npayload: {}",
            truncate(&run.stdout),
            truncate(&run.stderr),
            truncate(&String::from_utf8_lossy(bytes))
        ),
        Expect::Any => {}
    }
    if e == Expect::Deny {
        // A deny for malformed input names why; the exit code is 0 (PreToolUse) or 2.
        assert!(
            run.reason().starts_with("attenu-hook: ["),
            "{what}: {}",
            run.reason()
        );
    }
    if e == Expect::Refuse {
        assert!(!run.is_allow());
    }
}

// ------------------------------------------------------------------------------------------
// The tests
// ------------------------------------------------------------------------------------------

#[test]
fn a_few_hundred_random_adversarial_payloads_are_answered_cleanly() {
    let p = sample("hostile-random");
    let mut rng = Rng::new(0x5eed_a77e_0001);
    let mut seen = [0usize; 4];
    let mut allows = 0;
    let started = Instant::now();
    for i in 0..300 {
        let bytes = generate(&mut rng, p.path(), i);
        let run = run_hook(p.path(), &bytes, &format!("payload {i}"));
        check(&run, &bytes, &format!("payload {i}"));
        seen[match expect(&bytes) {
            Expect::Deny => 0,
            Expect::Refuse => 1,
            Expect::Silence => 2,
            Expect::Any => 3,
        }] += 1;
        allows += usize::from(run.is_allow());
    }
    // The generator reaches every kind of answer, so no assertion above is vacuous.
    assert!(
        seen.iter().all(|&n| n >= 10) && allows >= 10,
        "malformed/refused/silent/other = {seen:?}, allows = {allows}"
    );
    eprintln!(
        "300 payloads in {:?}: malformed/refused/silent/other = {seen:?}, allows = {allows}",
        started.elapsed()
    );
}

#[test]
fn wrong_types_for_every_field_are_denied() {
    let p = sample("hostile-types");
    let base = reviewer_read_payload(p.path(), "types", "/p/a", "t");
    let wrong: Vec<Value> = vec![
        json!("7"),
        json!(7),
        json!(-1.5),
        json!(true),
        json!([]),
        json!(["PreToolUse"]),
        json!({}),
        json!({"x": "y"}),
    ];
    let mut n = 0;
    // Every field with a type (a tool_response may be any JSON).
    for &field in PAYLOAD_FIELDS.iter().filter(|&&f| f != "tool_response") {
        for v in &wrong {
            let fits = match field {
                "tool_input" => v.is_object(),
                "is_interrupt" => v.is_boolean(),
                "duration_ms" => v.is_number(),
                _ => v.is_string(),
            };
            if fits {
                continue;
            }
            let mut payload = base.clone();
            payload[field] = v.clone();
            let bytes = payload.to_string().into_bytes();
            let what = format!("{field} = {v}");
            let run = run_hook(p.path(), &bytes, &what);
            assert!(run.denied(), "{what}: {}", run.stdout);
            assert_eq!(expect(&bytes), Expect::Deny, "{what}");
            n += 1;
        }
    }
    // Empty strings where an identifier is required.
    for field in ["hook_event_name", "session_id", "tool_name"] {
        let mut payload = base.clone();
        payload[field] = json!("");
        let run = run_payload(p.path(), &payload, field);
        assert!(run.denied(), "empty {field}: {}", run.stdout);
        n += 1;
    }
    // Whole payloads that are not JSON, not an object, or not one with a usable event name.
    for raw in [
        &b""[..],
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
    ] {
        let run = run_hook(p.path(), raw, &String::from_utf8_lossy(raw));
        assert!(
            run.denied(),
            "{:?}: {}",
            String::from_utf8_lossy(raw),
            run.stdout
        );
        n += 1;
    }
    assert!(n > 80);
    // And the unmutated payload is allowed, so the denies above are about the mutation.
    assert!(run_payload(p.path(), &base, "base").is_allow());
}

#[test]
fn deep_nesting_is_denied_without_a_stack_overflow() {
    let p = sample("hostile-deep");
    let levels = 100_000;
    for (open, close) in [("[", "]"), ("{\"a\":", "}"), ("[{\"a\":", "}]")] {
        for field in [
            "tool_input",
            "tool_response",
            "brand_new_field",
            "agent_type",
        ] {
            let mut payload = reviewer_read_payload(p.path(), "deep", "/p/a", "t");
            payload[field] = json!("__DEEP__");
            let text = payload.to_string().replace(
                "\"__DEEP__\"",
                &format!("{}1{}", open.repeat(levels), close.repeat(levels)),
            );
            let what = format!("{levels} levels of {open} in {field}");
            let run = run_hook(p.path(), text.as_bytes(), &what);
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
        let run = run_hook(p.path(), text.as_bytes(), "unclosed nesting");
        assert!(run.denied());
    }
}

#[test]
fn megabyte_strings_are_answered_within_the_bound() {
    let p = sample("hostile-big");
    let five_mb = "A\u{202e}\u{0}/..".repeat(5 << 20 >> 3);
    // A 5 MB argument to a tool the agent holds: recorded (as a commitment) and allowed.
    let big_input = pre(
        "big",
        p.path(),
        Some("reviewer"),
        "Read",
        json!({"file_path": "/p/a", "pad": five_mb}),
        "t1",
    );
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
    // Megabyte identifiers.
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
        let bytes = payload.to_string().into_bytes();
        let what = format!("1 MB {field}");
        let run = run_hook(p.path(), &bytes, &what);
        check(&run, &bytes, &what);
        if field == "tool_name" || field == "agent_type" {
            assert!(run.denied(), "{what}: {}", run.stdout);
        }
    }
    // A megabyte of whitespace before the object is still one valid payload.
    let mut padded = vec![b' '; 1 << 20];
    padded.extend_from_slice(
        pre("pad", p.path(), Some("reviewer"), "Read", json!({}), "t3")
            .to_string()
            .as_bytes(),
    );
    assert!(run_hook(p.path(), &padded, "padded").is_allow());
}

#[test]
fn control_bidi_and_path_characters_in_names_never_grant() {
    let p = sample("hostile-chars");
    let nasty = [
        "\u{202e}",
        "\u{0}",
        "\u{2028}",
        "\u{2029}",
        "\u{feff}",
        "\u{200b}",
        "\u{1b}[2J",
        "\r\n",
        "../",
        "/",
        "\\",
        "..\\..\\",
        "\u{7f}",
        "%00",
        "😀",
    ];
    let mut n = 0;
    for c in nasty {
        for (field, value) in [
            ("tool_name", format!("Read{c}")),
            ("tool_name", format!("{c}Read")),
            ("tool_name", format!("mcp__{c}__Read")),
            ("agent_type", format!("reviewer{c}")),
            ("agent_type", format!("{c}reviewer")),
            ("agent_type", format!("re{c}viewer")),
        ] {
            let mut payload = reviewer_read_payload(p.path(), "chars", "/p/a", &format!("t{n}"));
            payload[field] = json!(value);
            let what = format!("{field} = {value:?}");
            let run = run_payload(p.path(), &payload, &what);
            assert!(run.denied(), "{what}: {}", run.stdout);
            n += 1;
        }
    }
    // The answer is one JSON line however the name was written: no raw control character
    // (NUL, a newline, a terminal escape sequence) reaches the terminal or breaks the line.
    let mut payload = pre(
        "chars",
        p.path(),
        Some("Explore\u{2028}\u{1b}[2J\u{202e}"),
        "Read",
        json!({}),
        "tz",
    );
    payload["tool_name"] = json!("Re\u{0}ad\n");
    let run = run_payload(p.path(), &payload, "control characters");
    assert!(run.denied());
    assert!(
        !run.stdout.trim_end().contains(['\u{0}', '\u{1b}', '\n']),
        "raw control characters in the answer: {:?}",
        run.stdout
    );
}

#[test]
fn lookalikes_of_a_declared_agent_type_hold_nothing() {
    let p = sample("hostile-lookalike");
    let mut n = 0;
    for (name, tools) in DECLARED {
        // The control: the declared name itself holds its tools.
        let ok = pre(
            "look",
            p.path(),
            Some(name),
            tools[0],
            json!({"file_path": "/p/a"}),
            "t",
        );
        assert!(run_payload(p.path(), &ok, name).is_allow());
        for variant in lookalikes(name) {
            let payload = pre(
                "look",
                p.path(),
                Some(&variant),
                tools[0],
                json!({"file_path": "/p/a"}),
                &format!("t{n}"),
            );
            let what = format!("agent_type {variant:?}");
            let run = run_payload(p.path(), &payload, &what);
            assert!(run.denied(), "{what} was not denied: {}", run.stdout);
            assert!(
                run.reason().contains("[undeclared-agent]"),
                "{what}: {}",
                run.reason()
            );
            n += 1;
        }
    }
    // A subagent without a type, or with a null one, holds nothing either.
    for ty in [Value::Null, json!("")] {
        let mut payload = pre("look", p.path(), Some("reviewer"), "Read", json!({}), "tn");
        payload["agent_type"] = ty.clone();
        let run = run_payload(p.path(), &payload, "no agent_type");
        assert!(run.denied(), "agent_type {ty}: {}", run.stdout);
        payload.as_object_mut().unwrap().remove("agent_type");
        assert!(run_payload(p.path(), &payload, "absent").denied());
    }
    assert!(n >= 40);
}

#[test]
fn duplicate_keys_follow_the_last_member_and_never_widen() {
    let p = sample("hostile-dupes");
    let dir = p.path().display().to_string();
    let template = |extra: &str| {
        format!(
            r#"{{"session_id":"dupes","cwd":{dir:?},"hook_event_name":"PreToolUse","agent_id":"a1","tool_use_id":"t","tool_input":{{"file_path":"/p/a"}},{extra}}}"#
        )
    };
    // JSON.parse (Claude Code) keeps the last member; whichever the hook reads, the call is
    // denied whenever the last member names an undeclared agent or a tool it does not hold.
    for extra in [
        r#""agent_type":"reviewer","agent_type":"Explore","tool_name":"Read""#,
        r#""agent_type":"reviewer","tool_name":"Read","tool_name":"Bash""#,
        r#""agent_type":"reviewer","agent_type":"reviewer ","tool_name":"Read""#,
        r#""agent_type":"reviewer","tool_name":"Read","tool_name":"Read","tool_name":"Write""#,
        r#""agent_type":"reviewer","tool_name":"Read","agent_id":null,"agent_id":"a2","agent_type":"Explore""#,
    ] {
        let text = template(extra);
        let run = run_hook(p.path(), text.as_bytes(), extra);
        assert!(run.denied(), "{extra}: {}", run.stdout);
    }
    // A malformed duplicate is malformed, wherever it comes.
    for extra in [
        r#""agent_type":"reviewer","tool_name":"Read","tool_input":7"#,
        r#""agent_type":"reviewer","tool_name":"Read","session_id":5"#,
        r#""agent_type":"reviewer","tool_name":"Read","hook_event_name":null"#,
    ] {
        let text = template(extra);
        let run = run_hook(p.path(), text.as_bytes(), extra);
        assert!(run.denied(), "{extra}: {}", run.stdout);
    }
}

#[test]
fn a_70_mb_payload_is_denied_without_a_memory_blow_up() {
    let p = sample("hostile-huge");
    // 70 MB of a syntactically plausible payload: a huge tool_input string.
    let mut huge = reviewer_read_payload(p.path(), "huge", "/p/a", "t")
        .to_string()
        .into_bytes();
    huge.pop();
    huge.extend_from_slice(b",\"pad\":\"");
    huge.resize(huge.len() + 70_000_000, b'A');
    huge.extend_from_slice(b"\"}");
    assert!(huge.len() > MAX_PAYLOAD);
    let run = run_hook(p.path(), &huge, "70 MB payload");
    assert!(run.denied(), "70 MB payload: {}", run.stdout);
    assert!(
        run.reason().contains("[payload-too-large]"),
        "{}",
        run.reason()
    );
    // The hook reads at most 64 MiB + 1 bytes; anything near 4x that is a blow-up.
    assert!(
        run.peak_rss_kb < 400 * 1024,
        "peak RSS {} kB for a 70 MB payload",
        run.peak_rss_kb
    );
    eprintln!(
        "70 MB payload: denied in {:?}, peak RSS seen {} kB",
        run.elapsed, run.peak_rss_kb
    );
}

#[test]
fn the_payload_limit_is_exact() {
    let p = sample("hostile-limit");
    let body = reviewer_read_payload(p.path(), "limit", "/p/a", "t")
        .to_string()
        .into_bytes();
    // Exactly MAX bytes (whitespace after the object) is accepted; one more is refused.
    let mut at_limit = body.clone();
    at_limit.resize(MAX_PAYLOAD, b' ');
    let run = run_hook(p.path(), &at_limit, "payload of exactly the limit");
    assert!(run.is_allow(), "at the limit: {}", run.stdout);
    let mut over = at_limit;
    over.push(b' ');
    let run = run_hook(p.path(), &over, "one byte over the limit");
    assert!(
        run.reason().contains("[payload-too-large]"),
        "{}",
        run.stdout
    );
}

/// Every regular file and directory under `dir`, relative to it.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    walk(dir, |_| false)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn session_ids_with_path_tricks_never_leave_the_state_directory() {
    // The project sits two levels inside a directory of its own, so an escape upwards shows.
    let outer = TempDir::new("hostile-escape");
    let project_dir = outer.path().join("a/project");
    let src = sample("hostile-escape-src");
    std::fs::create_dir_all(&project_dir).unwrap();
    copy_tree(src.path(), &project_dir);
    let marker = format!("attenu-escaped-{}", std::process::id());
    let abs = std::env::temp_dir().join(&marker);
    let ids: Vec<String> = vec![
        "../escaped".into(),
        "../../escaped".into(),
        "../../../escaped".into(),
        "..\\..\\escaped".into(),
        "a/../../escaped".into(),
        abs.display().to_string(),
        format!("{}/", abs.display()),
        "/".into(),
        ".".into(),
        "..".into(),
        "./.".into(),
        "~".into(),
        "$HOME".into(),
        "escaped\u{0}.jsonl".into(),
        "../escaped\u{202e}lnosj.".into(),
        "escaped\u{2028}".into(),
        "%2e%2e%2fescaped".into(),
        "..%2fescaped".into(),
        "x/".repeat(2000),
        "../".repeat(5000),
        "e".repeat(300),
        "ledger-x.jsonl".into(),
        "anchor".into(),
        "h.0000".into(),
        "CON".into(),
        "-rf".into(),
    ];
    let before_outer = tree(outer.path());
    for (i, sid) in ids.iter().enumerate() {
        for event in ["PreToolUse", "PostToolUse", "SubagentStop", "SessionEnd"] {
            let mut payload = pre(
                sid,
                &project_dir,
                Some("reviewer"),
                "Read",
                json!({"file_path": "/p/a"}),
                &format!("t{i}"),
            );
            payload["hook_event_name"] = json!(event);
            payload["tool_response"] = json!({"ok": true});
            // A tool name with path tricks too: it names no file either.
            if event == "PostToolUse" {
                payload["tool_name"] = json!("../../Read");
            }
            let what = format!("session id {sid:?} ({event})");
            let run = run_payload(&project_dir, &payload, &what);
            if event == "PreToolUse" {
                assert!(run.is_allow(), "{what}: {}", run.stdout);
            }
        }
    }
    assert!(!abs.exists(), "{} was created", abs.display());
    let attenu = project_dir.join(".attenu");
    let after: BTreeSet<PathBuf> = tree(outer.path())
        .difference(&before_outer)
        .cloned()
        .collect();
    let prefix = Path::new("a/project/.attenu");
    for p in &after {
        assert!(
            p == prefix || p.starts_with(prefix),
            "a file outside .attenu/ appeared: {}",
            p.display()
        );
    }
    // Inside .attenu/ every file is flat: no id made a subdirectory.
    for e in std::fs::read_dir(&attenu).unwrap().flatten() {
        assert!(
            e.file_type().unwrap().is_file(),
            "{} is not a plain file",
            e.path().display()
        );
    }
    let ledgers = std::fs::read_dir(&attenu)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .count();
    assert_eq!(ledgers, ids.len(), "one ledger per distinct session id");
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A 600-byte YAML "billion laughs" (nine levels of anchors, each alias repeated nine times):
/// `yaml-rust2` clones an anchored node at every alias, so it would expand to about 3.9e9
/// scalars.
fn alias_bomb(levels: usize) -> String {
    let mut s =
        String::from("---\nname: bomb\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..levels {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    s.push_str("tools: Read\n---\nbody\n");
    s
}

/// The README: "One bad agent file affects only that agent, which then holds nothing." An
/// agent file is project content a subagent with Write may create, so one hostile file must not
/// stall or blow up every other agent's calls.
#[test]
fn a_yaml_alias_bomb_in_one_agent_file_stalls_no_other_agent() {
    let p = sample("hostile-bomb");
    std::fs::write(p.path().join(".claude/agents/bomb.md"), alias_bomb(9)).unwrap();
    let read = |agent: &str, id: &str, what: &str| {
        let call = p.subagent(agent, "Read").session("bomb").id(id);
        run_payload(
            p.path(),
            call.input(json!({"file_path": "/p/a"})).payload(),
            what,
        )
    };
    let run = read("reviewer", "t", "reviewer beside a bomb");
    assert!(
        run.is_allow(),
        "reviewer beside an alias bomb: {}",
        run.stdout
    );
    assert!(
        run.elapsed < Duration::from_secs(3),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.peak_rss_kb < 256 * 1024,
        "peak RSS {} kB",
        run.peak_rss_kb
    );
    let run = read("bomb", "t2", "the bomb agent itself");
    assert!(run.denied(), "the bomb agent: {}", run.stdout);
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

#[test]
fn session_ids_never_leave_the_state_directory_or_share_a_ledger() {
    let p = sample("escape");
    for (i, sid) in [
        "../../escaped",
        "/etc/passwd",
        "a/b",
        "a_b",
        "..",
        "ABC",
        "abc",
    ]
    .iter()
    .enumerate()
    {
        let out = reviewer_read(p.path(), sid, "/x", &format!("t{i}"));
        assert!(out.is_allow(), "{sid}: {}", out.stdout);
    }
    assert!(
        !p.path().join("escaped").exists() && !p.path().parent().unwrap().join("escaped").exists()
    );
    let ledgers: Vec<_> = std::fs::read_dir(p.path().join(".attenu"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .collect();
    assert_eq!(ledgers.len(), 7, "seven different ids, seven ledgers");
}

#[test]
fn injection_in_tool_input_tool_names_and_frontmatter_grants_nothing() {
    let p = project(
        "inject",
        &[(
            "sneaky.md",
            "---\nname: sneaky\ndescription: \"tools: Bash, Write\"\ntools: Read # , Bash\n---\ntools: Bash\n---\nname: other\ntools: Bash\n---\n",
        )],
        None,
    );
    let out = p
        .subagent("sneaky", "Bash")
        .input(json!({"command": "ls", "permissionDecision": "allow"}))
        .id("t1")
        .run();
    assert!(out.denied());
    for tool in [
        "Read ",
        "read",
        "Read\u{0}",
        "Bash(ls)",
        "mcp__x__y",
        "../Read",
    ] {
        let out = p.subagent("sneaky", tool).id("t2").run();
        assert!(out.denied(), "tool name {tool:?} must not resolve to Read");
    }
    assert_allowed(&p.read_by("sneaky", "/x").id("t3").run());
    let out = p.subagent("other", "Bash").id("t4").run();
    assert!(
        out.denied(),
        "a second frontmatter block in the body declares nothing"
    );
}
