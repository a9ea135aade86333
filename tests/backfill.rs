//! Sessions recorded before shipping was turned on are shipped once it is: `attenu-hook ship`
//! queues every ledger's unqueued chains (and the closing bundle of an ended session), and so
//! does the detached shipper the hook starts at the next SessionStart. Real binaries, real
//! files, a `file://` store, and the audit reading it.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    harness::run(tests![
        sessions_recorded_before_shipping_are_shipped_by_hand,
        a_session_shipped_by_hand_goes_on_from_where_it_was_queued,
        the_first_session_start_with_shipping_on_ships_the_earlier_sessions,
    ]);
}

/// A project with two sessions recorded while shipping was off, one ended and one not, a
/// deny in each; then `[ship] url` set to a fresh `file://` store. The project and store.
fn recorded_then_shipping_on(tag: &str) -> (TempDir, TempDir, String) {
    let share = TempDir::new(&format!("{tag}-share"));
    let url = format!("file://{}", share.path().display());
    let p = ProjectBuilder::new(tag)
        .agent("reviewer", "tools: Read")
        .build();
    for (session, end) in [("ended-before", true), ("running-before", false)] {
        assert_eq!(p.session_start(session, "startup").code, 0);
        assert_allowed(
            &p.read_by("reviewer", "/p/a")
                .session(session)
                .id("t1")
                .run(),
        );
        assert!(p
            .subagent("reviewer", "Bash")
            .session(session)
            .id("t2")
            .run()
            .denied());
        if end {
            assert_eq!(p.event(session, "SessionEnd").code, 0);
        }
    }
    let outbox = p.path().join(".attenu/outbox");
    assert!(
        std::fs::read_dir(&outbox).map_or(true, |mut d| d.next().is_none()),
        "nothing is queued while shipping is off"
    );
    p.config(&format!("[ship]\nurl = \"{url}\"\n"));
    (p, share, url)
}

/// `audit URL --pub anchor.pub --json`: session name → status.
fn audit(p: &Path, url: &str) -> (i32, Vec<(String, String)>) {
    let key = p.join(".attenu/anchor.pub");
    let out = cli(&["audit", url, "--json", "--pub", key.to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    let mut sessions: Vec<(String, String)> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    sessions.sort();
    (out.code, sessions)
}

fn stored_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn sessions_recorded_before_shipping_are_shipped_by_hand() {
    let (p, share, url) = recorded_then_shipping_on("backfill-hand");
    let ship = ship_by_hand(&p);
    assert_contains(&ship.stderr, &[QUEUED_BOTH]);
    let (code, sessions) = audit(p.path(), &url);
    // The ended one with its closing bundle, the other open.
    let want = statuses(&[("ended-before", "complete"), ("running-before", "open")]);
    assert_eq!(sessions, want);
    assert_eq!(code, 0);
    // Queued once: a second run queues and ships nothing new.
    let before = stored_files(share.path());
    assert!(!ship_by_hand(&p).stderr.contains("queued"));
    assert_eq!(stored_files(share.path()), before);
}

/// The running session goes on with shipping on: it checkpoints from where it was queued.
fn a_session_shipped_by_hand_goes_on_from_where_it_was_queued() {
    let (p, _share, url) = recorded_then_shipping_on("backfill-goes-on");
    ship_by_hand(&p);
    let bash = p.subagent("reviewer", "Bash").session("running-before");
    assert!(bash.id("t3").run().denied());
    assert_eq!(p.event("running-before", "SessionEnd").code, 0);
    ship_by_hand(&p);
    let (code, sessions) = audit(p.path(), &url);
    assert!(
        sessions.iter().all(|(_, s)| s == "complete"),
        "{sessions:?}"
    );
    assert_eq!(code, 0);
}

const QUEUED_BOTH: &str = "queued 2 session(s) not shipped before: ended-before, running-before";

/// `ship --project P`, which must succeed.
#[track_caller]
fn ship_by_hand(p: &TempDir) -> Out {
    let ship = cli(&["ship", "--project", p.dir()]);
    assert_eq!(ship.code, 0, "{}", ship.stderr);
    ship
}

/// (session, status) pairs, as [`audit`] lists them.
fn statuses(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(s, t)| (s.to_string(), t.to_string()))
        .collect()
}

fn the_first_session_start_with_shipping_on_ships_the_earlier_sessions() {
    let (p, _share, url) = recorded_then_shipping_on("backfill-start");
    // No `ship` by hand: the hook's SessionStart starts a detached shipper, which queues the
    // earlier sessions once for this URL.
    assert_eq!(p.session_start("after", "startup").code, 0);
    let sessions = audited_once_the_ended_one_is_complete(p.path(), &url);
    let names: Vec<&str> = sessions.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["after", "ended-before", "running-before"],
        "{sessions:?}"
    );
    assert_eq!(sessions[1].1, "complete", "{sessions:?}");
    let marker = p.path().join(".attenu/outbox/.backfilled");
    assert_eq!(std::fs::read_to_string(marker).unwrap(), url);
}

/// The audit's (session, status) pairs once it lists three sessions with the second complete,
/// or after ten seconds (bounded; how long it took is not asserted).
fn audited_once_the_ended_one_is_complete(p: &Path, url: &str) -> Vec<(String, String)> {
    let until = Instant::now() + Duration::from_secs(10);
    let mut sessions = Vec::new();
    while Instant::now() < until {
        sessions = audit(p, url).1;
        if sessions.len() == 3 && sessions[1].1 == "complete" {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    sessions
}
