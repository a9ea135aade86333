//! The answer when the hook itself fails (a panic, the deadline, an error before the event's
//! handler could answer): a deny that also blocks by its exit code for a tool not yet run; for
//! one that has run, a stop and a reconciliation marker for a person.

use super::faults;
use crate::gate::reconcile::NewMarker;
use crate::protocol::Answer;
use crate::reason::{Code, Reason};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

/// Set once the payload is known to be a PostToolUse or PostToolUseFailure: the tool has run,
/// so a failure of the hook itself (a panic, the deadline) must stop Claude and leave a
/// reconciliation marker, not answer with a PreToolUse deny that Claude Code ignores there.
static POST_EVENT: AtomicBool = AtomicBool::new(false);

/// Where such a marker goes, once the project is known.
static POST_CALL: OnceLock<PostCall> = OnceLock::new();

/// The call whose outcome a marker is about.
pub(super) struct PostCall {
    pub attenu: PathBuf,
    pub session_id: String,
    pub tool_use_id: Option<String>,
    pub tool: String,
}

/// The tool has run: from now on a failure stops Claude.
pub(super) fn note_post_event() {
    POST_EVENT.store(true, Ordering::SeqCst);
}

/// Where a marker for this process's call goes.
pub(super) fn note_post_call(call: PostCall) {
    let _ = POST_CALL.set(call);
}

/// How long the last-resort answers wait for the gate database's lock to store a marker.
const LAST_RESORT_BUSY: Duration = Duration::from_millis(250);

/// How long they wait for the marker at all: the disk that made the hook miss its deadline
/// may be the one the marker goes to, and the stop must still reach Claude Code in time.
const LAST_RESORT_WAIT: Duration = Duration::from_millis(400);

/// The answer when the hook itself failed (`code`, `what`).
///
/// The marker is stored before the answer is claimed, so when the main thread stores one and
/// the deadline passes meanwhile, the watchdog may store a second for the same call; and a
/// watchdog firing just after an outcome was written leaves a marker for a recorded call.
/// Both err on the side of a person looking; claiming first would lose the watchdog as the
/// fallback for a main thread stuck in the marker itself.
pub(super) fn failure_answer(code: Code, what: &str) -> Answer {
    if !POST_EVENT.load(Ordering::SeqCst) {
        return Answer::DenyAndBlock(Reason::new(code, what));
    }
    let where_ = match POST_CALL.get() {
        Some(c) => marker_in_time(c, what),
        None => "no reconciliation marker could be stored (the project was not found); note the call's tool_use_id by hand".into(),
    };
    Answer::Stop(Reason::new(
        code,
        format!("{what}. The tool has already run and its outcome may not be on the ledger, so Claude stops; {where_}. Do not retry it automatically"),
    ))
}

/// Stores a marker for `c` on its own thread, so a stuck disk cannot keep the answer from
/// Claude Code (a panic there only ends that thread); says where it is or why there is none.
fn marker_in_time(c: &'static PostCall, what: &str) -> String {
    let (tx, rx) = mpsc::channel();
    let cause = what.to_string();
    let spawned = std::thread::Builder::new()
        .name("attenu-marker".into())
        .spawn(move || {
            faults::stall("ATTENU_HOOK_TEST_MARKER_STALL_MS");
            let m = NewMarker {
                session_id: &c.session_id,
                tool_use_id: c.tool_use_id.as_deref(),
                tool: &c.tool,
                call_id: None,
                cause: &cause,
            };
            let _ = tx.send(store_marker(&c.attenu, m, LAST_RESORT_BUSY));
        });
    match spawned {
        Ok(_) => rx.recv_timeout(LAST_RESORT_WAIT).unwrap_or_else(|e| match e {
            mpsc::RecvTimeoutError::Timeout => "no reconciliation marker could be stored in time either (the state directory does not answer); note the call's tool_use_id by hand".into(),
            mpsc::RecvTimeoutError::Disconnected => "storing a reconciliation marker failed too (a panic); note the call's tool_use_id by hand".into(),
        }),
        Err(e) => format!("no reconciliation marker could be stored ({e}); note the call's tool_use_id by hand"),
    }
}

/// Stores a reconciliation marker; says where it is, or why there is none, for the answer.
pub(super) fn store_marker(attenu: &Path, marker: NewMarker<'_>, busy: Duration) -> String {
    match crate::gate::reconcile::add_marker(attenu, marker, busy) {
        Ok(id) => {
            format!("reconciliation marker {id} was stored; see `attenu-hook reconcile list`")
        }
        Err(m) => format!(
            "no reconciliation marker could be stored either ({m}); note tool_use_id {} by hand",
            marker.tool_use_id.unwrap_or("?")
        ),
    }
}
