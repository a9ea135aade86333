//! Processes of `live_claude.rs`: the hook installed, Claude Code found and its version
//! checked, the mock Messages API, commands under a deadline, the scratch directory; and the
//! constants every live test shares.
use super::*;
use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The binary under test, which the live tests install where the snippet's command names it.
pub const HOOK_BIN: &str = env!("CARGO_BIN_EXE_attenu-hook");
/// The repository: `settings.snippet.json`, `tests/support/mock_messages_api.py`.
pub const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// The Claude Code release the live tests are written against.
pub const PINNED_VERSION: &str = "2.1.332";
/// How long one `claude -p` may run before it is killed (`live_claude.rs` has its own).
pub const CLAUDE_DEADLINE: Duration = Duration::from_secs(90);
/// How long any other command may run before it is killed.
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(30);
/// How long the mock Messages API serves before it exits by itself.
pub const MOCK_LIFETIME_SECS: u64 = 150;

/// Put our binary where the snippet's command expects it. The command names a path inside
/// the project through `$CLAUDE_PROJECT_DIR` (quoted or braced), e.g.
/// `"$CLAUDE_PROJECT_DIR"/.claude/hooks/attenu-hook.sh` (the launcher, then the binary beside it).
pub fn install_hook(command: &str, project: &Path) {
    let p = project.to_str().expect("scratch path is not UTF-8");
    let expanded = command
        .replace("\"$CLAUDE_PROJECT_DIR\"", p)
        .replace("\"${CLAUDE_PROJECT_DIR}\"", p)
        .replace("${CLAUDE_PROJECT_DIR}", p)
        .replace("$CLAUDE_PROJECT_DIR", p);
    let program = match expanded.strip_prefix('"') {
        Some(rest) => rest.split('"').next().unwrap_or(""),
        None => expanded.split_whitespace().next().unwrap_or(""),
    };
    assert!(
        program.starts_with(p),
        "the snippet's hook command {command:?} does not name a file under $CLAUDE_PROJECT_DIR; this test does not know where to install the binary"
    );
    let target = PathBuf::from(program);
    if target.exists() {
        return;
    }
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    // The launcher `install` writes runs the binary beside it, as a developer's link would.
    let target = if target.file_name() == Some(std::ffi::OsStr::new("attenu-hook.sh")) {
        fs::write(&target, attenu_hook::ops::launcher_script()).unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
        target.with_file_name("attenu-hook")
    } else {
        target
    };
    common::place_executable(Path::new(HOOK_BIN), &target);
}

/// The repository's `settings.snippet.json`, and `true`; a test cannot run without it.
pub fn load_snippet() -> (Value, bool) {
    load_snippet_or(|| {
        panic!("{REPO}/settings.snippet.json is missing; the live tests wire the hook with it")
    })
}

/// [`load_snippet`], or `fallback()` and `false` when the file is missing.
pub fn load_snippet_or(fallback: impl FnOnce() -> Value) -> (Value, bool) {
    let path = Path::new(REPO).join("settings.snippet.json");
    match fs::read_to_string(&path) {
        Ok(text) => (
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display())),
            true,
        ),
        Err(_) => (fallback(), false),
    }
}

/// A clean environment: nothing from the developer's own Claude Code setup (or from a Claude
/// Code session running this test) leaks in.
pub fn claude_env<'a>(cmd: &'a mut Command, home: &Path, tmp: &Path) -> &'a mut Command {
    cmd.env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        )
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .env("CLAUDE_CODE_TMPDIR", tmp)
        .env("LANG", "C.UTF-8")
        .env("ANTHROPIC_API_KEY", "test")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
}

// =============================================================================================
// the mock server
// =============================================================================================

pub struct Killed(pub Option<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub fn start_mock(python: &str, dir: &Path, project: &Path, log: &Path) -> (Killed, u16) {
    start_mock_with(python, dir, project, log, &[])
}

/// [`start_mock`], with more arguments for the server (a `--scenario`).
pub fn start_mock_with(
    python: &str,
    dir: &Path,
    project: &Path,
    log: &Path,
    extra: &[&std::ffi::OsStr],
) -> (Killed, u16) {
    let script = Path::new(REPO).join("tests/support/mock_messages_api.py");
    let stderr = fs::File::create(dir.join("mock.stderr")).unwrap();
    let mut child = Command::new(python)
        .arg(&script)
        .arg("--trace-dir")
        .arg(project.join("trace"))
        .arg("--read-target")
        .arg(project.join("README.md"))
        .arg("--timeout")
        .arg(MOCK_LIFETIME_SECS.to_string())
        .arg("--log")
        .arg(log)
        .arg("--exit-on-stdin-eof")
        .args(extra)
        .stdin(Stdio::piped()) // held open by `Killed`; closing it stops the server
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the mock server with {python:?} ({e}); set ATTENU_PYTHON to a Python 3"));
    let stdout = child.stdout.take().unwrap();
    let guard = Killed(Some(child));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(15)).unwrap_or_default();
    let port: u16 = line.trim().parse().unwrap_or_else(|_| {
        panic!(
            "the mock server did not print its port (got {line:?}); stderr: {}",
            fs::read_to_string(dir.join("mock.stderr")).unwrap_or_default()
        )
    });
    (guard, port)
}

// =============================================================================================
// processes with deadlines
// =============================================================================================

/// Runs to completion with stdout/stderr in files (no pipe a grandchild could hold open).
/// Past the deadline the whole process group is killed and `None` returned.
pub fn run_to_files(
    cmd: &mut Command,
    deadline: Duration,
    out: &Path,
    err: &Path,
) -> Option<ExitStatus> {
    cmd.stdin(Stdio::null())
        .stdout(fs::File::create(out).unwrap())
        .stderr(fs::File::create(err).unwrap())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() >= deadline {
            // the group we created for it: the child and anything it started (hooks, shells)
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg("--")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub struct Output {
    pub what: String,
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
    /// `attenu-hook verify` without `--pub`: valid under the key beside the bundle.
    pub fn valid_key_not_pinned(&self) -> bool {
        self.status.and_then(|s| s.code()) == Some(3)
    }
    pub fn describe(&self) -> String {
        let status = match self.status {
            Some(s) => s.to_string(),
            None => "killed after its deadline".to_string(),
        };
        format!(
            "[{}: {status}]\nstdout: {}\nstderr: {}",
            self.what,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

pub fn run_command(cmd: &mut Command, deadline: Duration, scratch: &Path, what: &str) -> Output {
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let out = scratch.join(format!("{what}-{n}.stdout"));
    let err = scratch.join(format!("{what}-{n}.stderr"));
    let status = run_to_files(cmd, deadline, &out, &err);
    Output {
        what: format!("{cmd:?}"),
        status,
        stdout: fs::read_to_string(&out).unwrap_or_default(),
        stderr: fs::read_to_string(&err).unwrap_or_default(),
    }
}

pub fn tail(s: &str) -> String {
    let n = s.chars().count();
    if n <= 3000 {
        s.to_string()
    } else {
        format!("...{}", s.chars().skip(n - 3000).collect::<String>())
    }
}

pub fn list_dir(p: &Path) -> Vec<String> {
    fs::read_dir(p)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

// =============================================================================================
// finding claude
// =============================================================================================

/// `claude`: `ATTENU_CLAUDE_BIN`, else on `PATH`, else under `node_modules/.bin`; or the test
/// is skipped (failed under `ATTENU_REQUIRE_LIVE=1`).
pub fn find_claude() -> PathBuf {
    if let Some(explicit) = std::env::var_os("ATTENU_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&explicit);
        assert!(
            is_executable(&p),
            "ATTENU_CLAUDE_BIN={} is not an executable file",
            p.display()
        );
        return p;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("claude"))
            .find(|p| is_executable(p))
    });
    let local = Path::new(REPO).join("node_modules/.bin/claude");
    if let Some(p) = on_path.or_else(|| is_executable(&local).then_some(local)) {
        return p;
    }
    skip(format!(
        "needs the real Claude Code: nothing about attenu-hook inside Claude Code was tested \
         (set ATTENU_CLAUDE_BIN, or `npm install @anthropic-ai/claude-code@{PINNED_VERSION}` in \
         {REPO}; .ci/run does)"
    ))
}

/// Straight to the process's stderr: unlike `eprintln!`, not captured by the test harness, so
/// a skip or a warning shows in a plain `cargo test` run too.
pub fn loud(msg: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(msg.as_bytes());
    let _ = err.flush();
}

pub fn is_executable(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub fn check_version(claude: &Path, scratch: &Path) {
    let home = scratch.join("version-home");
    fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(claude);
    cmd.arg("--version");
    claude_env(&mut cmd, &home, scratch);
    let out = run_command(&mut cmd, COMMAND_DEADLINE, scratch, "claude-version");
    assert!(out.ok(), "`claude --version` failed: {}", out.describe());
    if !out.stdout.contains(PINNED_VERSION) {
        loud(&format!(
            "live_claude: WARNING: this test is written against Claude Code {PINNED_VERSION}, found {:?}; results may differ\n",
            out.stdout.trim()
        ));
    }
}

// =============================================================================================
// scratch directory
// =============================================================================================

pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new() -> Scratch {
        let n = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir().join(format!("attenu-live-{}-{n}", std::process::id()));
        fs::create_dir_all(&path).unwrap();
        // canonical, so paths Claude Code reports (cwd, file_path) compare equal to ours
        let path = path.canonicalize().unwrap();
        Scratch { path }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("ATTENU_LIVE_KEEP").is_some() {
            eprintln!(
                "live_claude: scratch directory kept: {}",
                self.path.display()
            );
        } else {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
