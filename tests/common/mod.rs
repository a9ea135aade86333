//! Shared helpers for the integration tests: temporary projects, and the real binary run as a
//! subprocess with a payload on stdin, the way Claude Code runs it.
#![allow(dead_code)]

pub mod harness;
#[allow(unused_imports)]
pub use harness::{need_reference_python, need_root, need_test_faults, need_tool, skip};

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
        &pre(
            session,
            project,
            Some("reviewer"),
            "Read",
            json!({ "file_path": file_path }),
            tool_use_id,
        ),
    )
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

pub fn post(
    session: &str,
    project: &Path,
    agent: Option<&str>,
    tool: &str,
    input: Value,
    tool_use_id: &str,
    response: Value,
) -> Value {
    let mut p = pre(session, project, agent, tool, input, tool_use_id);
    p["hook_event_name"] = json!("PostToolUse");
    p["tool_response"] = response;
    p
}

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
