//! Running the binary: one hook process per event (what it answered), the CLI, the reference
//! verifier.
use super::*;

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
    hook_raw_env(project, stdin, &[])
}

/// [`hook`] with these variables set in the hook's environment (`CLAUDE_CONFIG_DIR`, `PATH`).
pub fn hook_env(project: &Path, payload: &Value, env: &[(&str, &std::ffi::OsStr)]) -> Out {
    hook_raw_env(Some(project), payload.to_string().as_bytes(), env)
}

fn hook_raw_env(project: Option<&Path>, stdin: &[u8], env: &[(&str, &std::ffi::OsStr)]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.envs(env.iter().copied());
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
