//! The hook process: read stdin, answer once on stdout, and never outlive the deadline.

use super::dispatch::handle_bytes;
use super::last_resort::failure_answer;
use crate::protocol::payload::MAX_PAYLOAD_BYTES;
use crate::protocol::{Answer, Exit};
use crate::reason::{Code, Reason};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Until the configuration is read, the hook answers within this much time.
pub(super) const DEFAULT_DEADLINE: Duration = Duration::from_millis(8000);

/// Set by whichever of the main thread and the deadline watchdog answers first; the other
/// never prints. Claude Code must see exactly one answer.
static ANSWERED: AtomicBool = AtomicBool::new(false);

fn claim_answer() -> bool {
    !ANSWERED.swap(true, Ordering::SeqCst)
}

/// Runs hook mode on this process's stdin and stdout. Returns the exit code to use.
///
/// The work runs on the main thread (its 8 MiB stack, the main malloc arena); a small watchdog
/// thread only waits for the deadline and, if it passes first, answers (a deny; after the tool
/// ran, a stop with a marker) and exits the process, so a stuck read, lock or disk never
/// outlives Claude Code's own timeout.
///
/// Why a thread and not a timer signal (which would save about 0.1 ms of every call here): a
/// signal handler runs on a thread of this process, and a main thread in a killable kernel wait
/// (a file on a hung NFS, sshfs or FUSE mount) never leaves it for a signal that is not fatal.
/// The watchdog's exit kills that thread (exit_group sends it SIGKILL), so the process still
/// ends with its answer.
pub fn run() -> Exit {
    let started = Instant::now();
    // A person who runs `attenu-hook` by hand would otherwise wait out the deadline for an
    // event that never comes, then read `deadline-exceeded`.
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        claim_answer();
        return emit(&Answer::DenyAndBlock(Reason::new(
            Code::PayloadInvalid,
            "stdin is a terminal: hook mode reads one Claude Code event (JSON) on stdin and answers it; Claude Code runs it so. By hand, try `attenu-hook doctor`, `attenu-hook --derive`, `attenu-hook log` or `attenu-hook --help`",
        )));
    }
    let (tx, rx) = mpsc::channel::<Instant>();
    let watchdog = std::thread::Builder::new()
        .name("attenu-deadline".into())
        .stack_size(64 * 1024)
        .spawn(move || watch(&rx, started + DEFAULT_DEADLINE));
    if let Err(e) = watchdog {
        claim_answer();
        return emit(&Answer::DenyAndBlock(Reason::new(
            Code::InternalError,
            format!("cannot start the hook's deadline watchdog: {e}"),
        )));
    }
    let work = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut input = Vec::new();
        let read = std::io::stdin()
            .lock()
            .take(MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut input);
        match read {
            Err(e) => Answer::DenyAndBlock(Reason::new(
                Code::PayloadInvalid,
                format!("cannot read stdin: {e}"),
            )),
            Ok(_) => handle_bytes(&input, started, &|d| {
                // Waking the watchdog for an unchanged deadline would cost a cross-CPU wakeup.
                if d != started + DEFAULT_DEADLINE {
                    let _ = tx.send(d);
                }
            }),
        }
    }));
    let answer = work.unwrap_or_else(|_| {
        failure_answer(
            Code::InternalError,
            "the hook failed internally (a panic; see stderr). Please report it with the payload that caused it",
        )
    });
    if !claim_answer() {
        // The watchdog has answered and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let code = emit(&answer);
    // Dropping the sender would wake the watchdog only to have the exit kill it.
    std::mem::forget(tx);
    code
}

/// The watchdog: waits for the deadline (moved by the configuration once it is read) and, if
/// the main thread has not answered by then, answers as [`failure_answer`] does and exits.
fn watch(rx: &mpsc::Receiver<Instant>, mut deadline: Instant) {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(d) => deadline = d,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if claim_answer() {
                    let code = emit(&failure_answer(
                        Code::DeadlineExceeded,
                        "the hook did not finish within its deadline (deadline_ms in .attenu/config.toml); it answers now rather than let Claude Code's own timeout pass the call through. Run `attenu-hook doctor` to find the slow part",
                    ));
                    std::process::exit(code.code().into());
                }
                return;
            }
        }
    }
}

/// Prints the answer; the process exits with the returned code.
pub fn emit(answer: &Answer) -> Exit {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let ok = writeln!(out, "{}", answer.to_json())
        .and_then(|_| out.flush())
        .is_ok();
    if let Some(r) = answer.block_message() {
        // Not eprintln!, which panics when stderr is gone: exit 2 must still happen.
        let _ = writeln!(std::io::stderr(), "{r}");
    }
    // If stdout is gone, the only blocking signal left is exit 2.
    if ok {
        answer.exit()
    } else {
        Exit::BLOCK
    }
}
