//! The hostile-input machinery of `hostile.rs` and `hostile_names.rs`: a deterministic
//! pseudo-random generator (xorshift, no crate) of adversarial payloads, each run as its own hook
//! process under a watchdog, and what every answer must satisfy.
#![allow(dead_code)]

use crate::common::*;
use attenu_hook::ops::EVENTS;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest any single hook process may take before the watchdog kills it.
pub const WATCHDOG: Duration = Duration::from_secs(20);

/// The hook's stdin limit (`hook::payload::MAX_PAYLOAD_BYTES`).
pub const MAX_PAYLOAD: usize = attenu_hook::protocol::payload::MAX_PAYLOAD_BYTES;

/// Agent types the sample project declares, and the tools each holds.
pub const DECLARED: &[(&str, &[&str])] = &[
    ("reviewer", &["Read", "Grep", "Glob"]),
    ("researcher", &["Read", "WebFetch"]),
];

// ------------------------------------------------------------------------------------------
// Running the binary under a watchdog
// ------------------------------------------------------------------------------------------

/// [`run_hook`] on a JSON payload.
pub fn run_payload(project: &Path, payload: &Value, what: &str) -> Run {
    run_hook(project, payload.to_string().as_bytes(), what)
}

/// What one hook process did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub answer: Value,
    pub elapsed: Duration,
    /// The largest resident set size seen while it ran (VmHWM, kB), sampled.
    pub peak_rss_kb: u64,
}

impl Run {
    pub fn denied(&self) -> bool {
        self.answer
            .pointer("/hookSpecificOutput/permissionDecision")
            .and_then(Value::as_str)
            == Some("deny")
    }
    pub fn reason(&self) -> &str {
        self.answer
            .pointer("/hookSpecificOutput/permissionDecisionReason")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    pub fn is_allow(&self) -> bool {
        self.code == 0 && self.answer == json!({})
    }
}

pub fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs the hook on `stdin` with `project` as CLAUDE_PROJECT_DIR. Fails the test when the
/// process outlives [`WATCHDOG`] (after killing it), dies by a signal, exits with anything but
/// 0 or 2, or prints anything but one JSON object on one line.
pub fn run_hook(project: &Path, stdin: &[u8], what: &str) -> Run {
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

pub fn truncate(s: &str) -> String {
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
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Fragments hostile strings are made of: path tricks, control, bidi and invisible characters,
/// look-alikes, quoting and escape characters, names that mean something elsewhere.
pub const FRAGMENTS: &[&str] = &[
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

pub fn hostile_string(rng: &mut Rng) -> String {
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
pub fn lookalikes(name: &str) -> Vec<String> {
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

pub fn random_value(rng: &mut Rng, depth: usize) -> Value {
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
pub fn fields() -> Vec<&'static str> {
    [PAYLOAD_FIELDS, &["transcript_path", "brand_new_field"]].concat()
}

/// The events a payload names: each the hook is wired for, PreToolUse three times as often
/// as the others, and one it does not handle.
pub fn events() -> Vec<&'static str> {
    let mut events = EVENTS.to_vec();
    events.splice(1..1, ["PreToolUse", "PreToolUse"]);
    events.push("Notification");
    events
}

/// One adversarial payload, as bytes.
pub fn generate(rng: &mut Rng, project: &Path, i: usize) -> Vec<u8> {
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
pub fn nested(kind: usize, depth: usize) -> Value {
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
pub enum Expect {
    /// Malformed: a deny (JSON, exit 0 or 2).
    Deny,
    /// A well-formed PreToolUse the hook must refuse: an undeclared caller, or a tool not held.
    Refuse,
    /// Well-formed main-thread PreToolUse, or an event the hook does not handle: `{}`.
    Silence,
    /// Well formed, and anything but a crash is acceptable (allows, outcomes, exports).
    Any,
}

pub fn expect(bytes: &[u8]) -> Expect {
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
    // Who is calling (docs/DERIVATION.md): an agent_id, even empty, is a subagent; an
    // agent_type alone is a `--agent` main thread, held like that agent.
    let subagent = matches!(obj.get("agent_id"), Some(Value::String(_)));
    if !subagent && !nonempty("agent_type") {
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

pub fn check(run: &Run, bytes: &[u8], what: &str) {
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
