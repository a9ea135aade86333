//! Shared helpers for the integration tests (tests/README.md shows them in use): temporary
//! projects and their builders, hook calls built up and run as the real binary with a payload on
//! stdin (the way Claude Code runs it), assertions, and the operator commands.
#![allow(dead_code)]

pub mod faults;
pub mod gated;
pub mod harness;
pub mod operator;
pub mod snapshot;
#[allow(unused_imports)]
pub use harness::{need_reference_python, need_root, need_test_faults, need_tool, skip};
#[allow(unused_imports)]
pub use snapshot::{assert_snapshot, mask};

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const BIN: &str = env!("CARGO_BIN_EXE_attenu-hook");

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "attenu-test-{tag}-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A project with the given agent files (name → file text) and optional settings.json.
pub fn project(tag: &str, agents: &[(&str, &str)], settings: Option<Value>) -> TempDir {
    let t = TempDir::new(tag);
    let dir = t.path().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in agents {
        let p = dir.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    if let Some(s) = settings {
        std::fs::write(
            t.path().join(".claude/settings.json"),
            serde_json::to_string_pretty(&s).unwrap(),
        )
        .unwrap();
    }
    t
}

/// The seed's sample project (reviewer and researcher).
pub fn sample(tag: &str) -> TempDir {
    project(
        tag,
        &[
            ("reviewer.md", "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep, Glob\n---\nbody\n"),
            ("researcher.md", "---\nname: researcher\ndescription: researches\ntools: Read, WebFetch\ndisallowedTools: Write, Edit\n---\nbody\n"),
        ],
        Some(json!({"permissions": {"allow": ["Read", "Grep", "Glob", "Bash(npm run lint)"], "deny": ["Read(./.env)", "NotebookEdit"]}})),
    )
}

/// Building a project step by step: `ProjectBuilder::new("tag").agent("ops", "tools: Bash")
/// .settings(json!(..)).config("mode = \"shadow\"\n").build()`.
pub struct ProjectBuilder {
    tag: String,
    agents: Vec<(String, String)>,
    settings: Option<Value>,
    config: Option<String>,
}

impl ProjectBuilder {
    pub fn new(tag: &str) -> ProjectBuilder {
        ProjectBuilder {
            tag: tag.to_string(),
            agents: Vec::new(),
            settings: None,
            config: None,
        }
    }
    /// An agent `name` (in `.claude/agents/<name>.md`) whose frontmatter holds `name` and the
    /// given lines (`"tools: Read, Grep"`, `"disallowedTools: Write"`, ...).
    pub fn agent(self, name: &str, frontmatter: &str) -> ProjectBuilder {
        let text = format!("---\nname: {name}\n{frontmatter}\n---\n");
        self.agent_file(&format!("{name}.md"), &text)
    }
    /// An agent file with exactly this text, at `.claude/agents/<file>`.
    pub fn agent_file(mut self, file: &str, text: &str) -> ProjectBuilder {
        self.agents.push((file.to_string(), text.to_string()));
        self
    }
    /// `.claude/settings.json`.
    pub fn settings(mut self, settings: Value) -> ProjectBuilder {
        self.settings = Some(settings);
        self
    }
    /// `.attenu/config.toml`.
    pub fn config(mut self, toml: &str) -> ProjectBuilder {
        self.config = Some(toml.to_string());
        self
    }
    pub fn build(self) -> TempDir {
        let agents: Vec<(&str, &str)> = self
            .agents
            .iter()
            .map(|(f, t)| (f.as_str(), t.as_str()))
            .collect();
        let p = project(&self.tag, &agents, self.settings);
        if let Some(toml) = self.config {
            write_config(p.path(), toml);
        }
        p
    }
}

/// One hook event for a project, built up and then run as one hook process: by default
/// session `s1`, tool_use_id `t`, an empty `tool_input`.
#[derive(Clone)]
pub struct Call {
    project: PathBuf,
    payload: Value,
}

impl Call {
    /// A PreToolUse of `tool` by `agent` (None: the main thread).
    pub fn pre(project: &Path, agent: Option<&str>, tool: &str) -> Call {
        Call {
            project: project.to_path_buf(),
            payload: pre("s1", project, agent, tool, json!({}), "t"),
        }
    }
    pub fn input(mut self, input: Value) -> Call {
        self.payload["tool_input"] = input;
        self
    }
    pub fn id(mut self, tool_use_id: &str) -> Call {
        self.payload["tool_use_id"] = json!(tool_use_id);
        self
    }
    pub fn session(mut self, session: &str) -> Call {
        self.payload["session_id"] = json!(session);
        self.payload["transcript_path"] =
            json!(format!("/home/u/.claude/projects/p/{session}.jsonl"));
        self
    }
    /// Any other field of the payload.
    pub fn with(mut self, key: &str, value: Value) -> Call {
        self.payload[key] = value;
        self
    }
    /// The same call's PostToolUse, with this `tool_response`.
    pub fn post(self, response: Value) -> Call {
        self.with("hook_event_name", json!("PostToolUse"))
            .with("tool_response", response)
    }
    /// The same call's PostToolUseFailure, with this `error`.
    pub fn failure(self, error: &str) -> Call {
        self.with("hook_event_name", json!("PostToolUseFailure"))
            .with("error", json!(error))
    }
    pub fn payload(&self) -> &Value {
        &self.payload
    }
    pub fn value(self) -> Value {
        self.payload
    }
    pub fn run(&self) -> Out {
        hook(&self.project, &self.payload)
    }
}

/// What a test does with its project: calls, its ledger, the operator commands.
pub trait ProjectExt {
    fn root(&self) -> &Path;
    /// A PreToolUse by the subagent of type `agent` (agent_id `a-<agent>`).
    fn subagent(&self, agent: &str, tool: &str) -> Call {
        Call::pre(self.root(), Some(agent), tool)
    }
    /// `agent`'s Read of `file_path`.
    fn read_by(&self, agent: &str, file_path: &str) -> Call {
        self.subagent(agent, "Read")
            .input(json!({ "file_path": file_path }))
    }
    /// `agent`'s Bash running `command`.
    fn bash_by(&self, agent: &str, command: &str) -> Call {
        self.subagent(agent, "Bash")
            .input(json!({ "command": command }))
    }
    /// A PreToolUse by the main thread.
    fn main_thread(&self, tool: &str) -> Call {
        Call::pre(self.root(), None, tool)
    }
    /// A session-level event (`SessionEnd`, `SubagentStop`, ...) of session `session`.
    fn event(&self, session: &str, name: &str) -> Out {
        hook(self.root(), &event(session, self.root(), name))
    }
    /// A SessionStart as Claude Code 2.1.332 sends it, `source` being startup, resume, ...
    fn session_start(&self, session: &str, source: &str) -> Out {
        hook(self.root(), &session_start(session, self.root(), source))
    }
    fn config(&self, toml: &str) {
        write_config(self.root(), toml)
    }
    fn ledger(&self, session: &str) -> PathBuf {
        ledger_path(self.root(), session)
    }
    fn entries(&self, session: &str) -> Vec<Value> {
        entries(self.root(), session)
    }
    fn dir(&self) -> &str {
        self.root().to_str().unwrap()
    }
    /// `export --project P --session S`, which must succeed: the bundles' paths.
    fn export(&self, session: &str) -> Vec<String> {
        let out = cli(&["export", "--project", self.dir(), "--session", session]);
        assert_eq!(out.code, 0, "export: {}{}", out.stdout, out.stderr);
        out.stdout.lines().map(str::to_string).collect()
    }
    /// `verify BUNDLE --pub <the project's anchor.pub>`.
    fn verify_pinned(&self, bundle: &str) -> Out {
        let key = self.root().join(".attenu/anchor.pub");
        cli(&["verify", bundle, "--pub", key.to_str().unwrap()])
    }
    /// [`verify_pinned`](ProjectExt::verify_pinned) with `--json`.
    fn verify_pinned_json(&self, bundle: &str) -> Out {
        let key = self.root().join(".attenu/anchor.pub");
        cli(&["verify", bundle, "--pub", key.to_str().unwrap(), "--json"])
    }
}

impl ProjectExt for TempDir {
    fn root(&self) -> &Path {
        self.path()
    }
}

impl ProjectExt for Path {
    fn root(&self) -> &Path {
        self
    }
}

impl ProjectExt for PathBuf {
    fn root(&self) -> &Path {
        self
    }
}

/// A SessionStart payload as Claude Code 2.1.332 sends it.
pub fn session_start(session: &str, project: &Path, source: &str) -> Value {
    json!({"session_id": session, "transcript_path": format!("/home/u/.claude/projects/p/{session}.jsonl"),
           "cwd": project, "hook_event_name": "SessionStart", "source": source})
}

/// The hook allowed (exit 0, `{}`).
#[track_caller]
pub fn assert_allowed(out: &Out) {
    assert!(
        out.is_allow(),
        "expected an allow: {}{}",
        out.stdout,
        out.stderr
    );
}

/// The hook denied, with the reason code `[code]` in its reason.
#[track_caller]
pub fn assert_denied_with(out: &Out, code: &str) {
    assert_denied_saying(out, &format!("[{code}]"));
}

/// The hook denied, with `text` in its reason.
#[track_caller]
pub fn assert_denied_saying(out: &Out, text: &str) {
    assert!(
        out.denied() && out.reason().contains(text),
        "expected a deny saying {text:?}: {}{}",
        out.stdout,
        out.stderr
    );
}

/// The hook denied, with every one of `texts` in its reason.
#[track_caller]
pub fn assert_denied_saying_all(out: &Out, texts: &[&str]) {
    for text in texts {
        assert_denied_saying(out, text);
    }
}

/// The hook stopped Claude (`continue: false`) with `text` in its stopReason.
#[track_caller]
pub fn assert_halted_saying(out: &Out, text: &str) {
    let j = out.json();
    assert_eq!(j["continue"], false, "expected a halt: {}", out.stdout);
    let why = j["stopReason"].as_str().unwrap_or("");
    assert!(
        why.contains(text),
        "expected a stopReason saying {text:?}: {why}"
    );
}

/// `text` contains every one of `needles`.
#[track_caller]
pub fn assert_contains(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
    }
}

/// Runs `f(0)` .. `f(n-1)` on `n` threads released together: whether every one returned true.
pub fn all_at_once(n: usize, f: impl Fn(usize) -> bool + Sync) -> bool {
    let barrier = std::sync::Barrier::new(n);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..n)
            .map(|i| {
                let (barrier, f) = (&barrier, &f);
                s.spawn(move || {
                    barrier.wait();
                    f(i)
                })
            })
            .collect();
        threads.into_iter().all(|t| t.join().unwrap())
    })
}

/// The entries of `event` (`allow`, `deny`, `outcome`, `root`, `spawn`, ...).
pub fn of_event<'a>(entries: &'a [Value], event: &str) -> Vec<&'a Value> {
    entries.iter().filter(|e| e["event"] == event).collect()
}

/// The files in `dir` whose names contain `part`.
pub fn files_named(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(part))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The paths below `dir`, relative to it, each with whether it is a directory: depth first,
/// links not followed; an entry `skip` names is left out with everything below it.
pub fn walk(dir: &Path, skip: impl Fn(&std::fs::DirEntry) -> bool) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if skip(&e) {
                continue;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                todo.push(e.path());
            }
            out.push((e.path().strip_prefix(dir).unwrap().to_path_buf(), is_dir));
        }
    }
    out
}

/// Runs `mkfifo path`.
pub fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

// ---- the gate ----------------------------------------------------------------------------

/// A project whose Bash is gated (`[gate] require = ["exec.bash"]`), with an `ops` agent holding
/// `ops_tools` and reviewer alice; returns (project, alice's key file).
pub fn gated_project(tag: &str, ops_tools: &str) -> (TempDir, PathBuf) {
    let p = ProjectBuilder::new(tag)
        .agent("ops", &format!("tools: {ops_tools}"))
        .build();
    let (key, public) = alice_key(p.path());
    write_config(
        p.path(),
        format!("[gate]\nrequire = [\"exec.bash\"]\nreviewers = {{ alice = \"{public}\" }}\n"),
    );
    (p, key)
}

/// Reviewer alice's key, made in the project: (key file, public key in hex).
pub fn alice_key(project: &Path) -> (PathBuf, String) {
    let key = project.join("alice.key");
    let out = cli(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let public = out.stdout.lines().last().unwrap().trim().to_string();
    assert_eq!(public.len(), 64);
    (key, public)
}

/// `authorize --project P --tool Bash --reviewer alice --key KEY --input INPUT EXTRA...`.
pub fn authorize(p: &Path, key: &Path, input: &Value, extra: &[&str]) -> Out {
    let mut args = vec![
        "authorize",
        "--project",
        p.to_str().unwrap(),
        "--tool",
        "Bash",
        "--reviewer",
        "alice",
        "--key",
        key.to_str().unwrap(),
    ];
    let input = input.to_string();
    args.extend(["--input", input.as_str()]);
    args.extend(extra);
    cli(&args)
}

/// `reconcile list --project P` (and `extra` after it).
pub fn reconcile_list(p: &Path, extra: &[&str]) -> Out {
    let mut args = vec!["reconcile", "list", "--project", p.to_str().unwrap()];
    args.extend(extra);
    cli(&args)
}

/// `reconcile resolve MARKER --project P --outcome OUTCOME --evidence EVIDENCE` (and `extra`).
pub fn reconcile_resolve(
    p: &Path,
    marker: &str,
    outcome: &str,
    evidence: &str,
    extra: &[&str],
) -> Out {
    let mut args = vec![
        "reconcile",
        "resolve",
        marker,
        "--project",
        p.to_str().unwrap(),
    ];
    args.extend(["--outcome", outcome, "--evidence", evidence]);
    args.extend(extra);
    cli(&args)
}

/// What one hook process answered.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }
    pub fn denied(&self) -> bool {
        self.json()
            .pointer("/hookSpecificOutput/permissionDecision")
            .and_then(Value::as_str)
            == Some("deny")
    }
    pub fn reason(&self) -> String {
        self.json()
            .pointer("/hookSpecificOutput/permissionDecisionReason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    }
    pub fn is_allow(&self) -> bool {
        self.code == 0 && self.json() == json!({})
    }
}

/// Runs the hook with raw stdin bytes; `project` becomes CLAUDE_PROJECT_DIR when given.
pub fn hook_raw(project: Option<&Path>, stdin: &[u8]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("CLAUDE_PROJECT_DIR");
    if let Some(p) = project {
        cmd.env("CLAUDE_PROJECT_DIR", p);
    }
    let mut child = cmd.spawn().expect("spawn attenu-hook");
    {
        let mut stdin_pipe = child.stdin.take().unwrap();
        let _ = stdin_pipe.write_all(stdin);
    }
    let out = child.wait_with_output().unwrap();
    let code = out.status.code().expect("the hook was killed by a signal");
    assert!(
        code == 0 || code == 2,
        "hook mode exited {code}: only 0 and 2 are allowed\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Out {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn hook(project: &Path, payload: &Value) -> Out {
    hook_raw(Some(project), payload.to_string().as_bytes())
}

/// The call most tests make: a `reviewer` subagent's `Read` of `file_path`, as one hook process.
pub fn reviewer_read(project: &Path, session: &str, file_path: &str, tool_use_id: &str) -> Out {
    hook(
        project,
        &reviewer_read_payload(project, session, file_path, tool_use_id),
    )
}

/// [`reviewer_read`]'s PreToolUse payload.
pub fn reviewer_read_payload(
    project: &Path,
    session: &str,
    file_path: &str,
    tool_use_id: &str,
) -> Value {
    let input = json!({ "file_path": file_path });
    pre(
        session,
        project,
        Some("reviewer"),
        "Read",
        input,
        tool_use_id,
    )
}

/// The reviewer's Read of `/p/a` as `t1` in session s1, asserted allowed: the call whose
/// outcome a test then sends (`call.clone().post(json!({})).run()`).
pub fn allowed_read(project: &Path) -> Call {
    let call = Call::pre(project, Some("reviewer"), "Read")
        .input(json!({"file_path": "/p/a"}))
        .id("t1");
    assert_allowed(&call.run());
    call
}

/// Numbered reviewer reads in session s1: `call("3")` reads `/x3` as tool_use_id `t3`.
pub fn numbered_reads(project: &Path) -> impl Fn(&str) -> Out + '_ {
    move |i| reviewer_read(project, "s1", &format!("/x{i}"), &format!("t{i}"))
}

/// [`numbered_reads`] after `n` of them (`"0"` to `n-1`), each asserted allowed.
pub fn after_reads(project: &Path, n: usize) -> impl Fn(&str) -> Out + '_ {
    let call = numbered_reads(project);
    for i in 0..n {
        assert_allowed(&call(&i.to_string()));
    }
    call
}

/// A PreToolUse payload as Claude Code sends it.
pub fn pre(
    session: &str,
    project: &Path,
    agent: Option<&str>,
    tool: &str,
    input: Value,
    tool_use_id: &str,
) -> Value {
    let mut p = json!({
        "session_id": session,
        "transcript_path": format!("/home/u/.claude/projects/p/{session}.jsonl"),
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": tool_use_id,
    });
    if let Some(a) = agent {
        p["agent_id"] = json!(format!("a-{a}"));
        p["agent_type"] = json!(a);
    }
    p
}

/// Every payload field the hook reads (`src/protocol/payload.rs`).
pub const PAYLOAD_FIELDS: &[&str] = &[
    "hook_event_name",
    "session_id",
    "cwd",
    "permission_mode",
    "agent_id",
    "agent_type",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "tool_response",
    "error",
    "is_interrupt",
    "duration_ms",
];

pub fn event(session: &str, project: &Path, name: &str) -> Value {
    json!({"session_id": session, "cwd": project, "hook_event_name": name, "reason": "other"})
}

/// Writes the project's `.attenu/config.toml` (creating `.attenu/` if need be).
pub fn write_config(project: &Path, toml: impl AsRef<[u8]>) {
    std::fs::create_dir_all(project.join(".attenu")).unwrap();
    std::fs::write(project.join(".attenu/config.toml"), toml).unwrap();
}

pub fn ledger_path(project: &Path, session: &str) -> PathBuf {
    project
        .join(".attenu")
        .join(format!("ledger-{session}.jsonl"))
}

/// The ledger entries of a session.
pub fn entries(project: &Path, session: &str) -> Vec<Value> {
    std::fs::read_to_string(ledger_path(project, session))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs the binary with arguments (not hook mode).
pub fn cli(args: &[&str]) -> Out {
    cli_with(args, &[])
}

/// [`cli`] with extra environment variables. The user's Claude Code configuration directory
/// is one that does not exist unless `env` names another (`CLAUDE_CONFIG_DIR`), so `doctor`
/// never reads the settings of whoever runs the tests.
pub fn cli_with(args: &[&str], env: &[(&str, &std::path::Path)]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove("CLAUDE_PROJECT_DIR").env(
        "CLAUDE_CONFIG_DIR",
        "/nonexistent/attenu-test-claude-config",
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The reference verdict on a bundle file, using only the given anchor.pub.
pub fn reference_verify(py: &str, bundle: &Path, anchor_pub: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/ref_verify.py");
    let out = Command::new(py)
        .arg(script)
        .arg(bundle)
        .arg(anchor_pub)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ref_verify.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
