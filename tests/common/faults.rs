//! Running the hook with extra environment or behind a wrapper (crash, disk_faults).
use super::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `payload` to the child's stdin and closes it.
pub fn feed(child: &mut std::process::Child, payload: &Value) {
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
}

/// Runs the hook with extra environment, optionally behind a wrapper command (`faketime`).
pub fn hook_with(wrapper: &[&str], env: &[(&str, &str)], project: &Path, payload: &Value) -> Out {
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(BIN);
            c
        }
        None => Command::new(BIN),
    };
    // A RUST_BACKTRACE=1 inherited from the shell makes a panicking debug build symbolise its
    // backtrace, which can take longer than the 300 ms deadline a test sets, so the deadline's
    // answer (and a second marker) would come first.
    cmd.env("CLAUDE_PROJECT_DIR", project)
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    feed(&mut child, payload);
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A hook process stopped after reading its roster (or the session's pin), before the ledger
/// lock (`ATTENU_HOOK_TEST_PAUSE_BEFORE_LOCK`, `test-faults` builds): the interleaving a race
/// test forces, with no sleep standing in for synchronisation.
pub struct Paused {
    call: std::thread::JoinHandle<Out>,
    handshake: std::path::PathBuf,
}

impl Paused {
    /// Runs `payload` and returns once the process has stopped before the lock; `name` names
    /// its handshake directory inside the project.
    pub fn start(project: &Path, name: &str, payload: Value) -> Paused {
        let handshake = project.join(format!("handshake-{name}"));
        std::fs::create_dir(&handshake).unwrap();
        let call = {
            let dir = project.to_path_buf();
            let handshake = handshake.to_str().unwrap().to_string();
            std::thread::spawn(move || {
                hook_with(
                    &[],
                    &[("ATTENU_HOOK_TEST_PAUSE_BEFORE_LOCK", &handshake)],
                    &dir,
                    &payload,
                )
            })
        };
        let waited = std::time::Instant::now();
        while !handshake.join("derived").exists() {
            assert!(!call.is_finished(), "the call ended before the lock");
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(10),
                "the call never reached the pause"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Paused { call, handshake }
    }

    /// Lets the process take the lock and finish; its answer.
    pub fn release(self) -> Out {
        std::fs::write(self.handshake.join("go"), b"").unwrap();
        self.call.join().unwrap()
    }
}
