//! A session's chains over time: torn tails and crashed openings recovered and recorded,
//! parallel processes keeping one chain, a stuck lock, a mid-session agent edit changing
//! nothing until the session is resumed on a new linked chain, and SessionStart opening the
//! ledger.

mod common;
use common::*;
use serde_json::json;
use std::path::Path;

/// Leaves the session's ledger as a hook killed mid-write would: a final line of 19 bytes
/// without its newline.
fn tear_ledger_tail(project: &Path, session: &str) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(ledger_path(project, session))
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"c14n\":\"JCS\",\"half").unwrap();
}

/// A SessionStart of session s1 (`source`: startup, resume, compact) answered with exit 0 and
/// `{}`.
#[track_caller]
fn assert_quiet_start(p: &TempDir, source: &str) {
    let out = p.session_start("s1", source);
    assert_eq!((out.code, out.json()), (0, json!({})), "{}", out.stderr);
}

#[test]
fn a_torn_final_line_is_moved_aside_and_the_recovery_recorded() {
    let p = sample("torn");
    reviewer_read(p.path(), "s1", "/x", "t1");
    tear_ledger_tail(p.path(), "s1");
    assert_allowed(&reviewer_read(p.path(), "s1", "/y", "t2"));
    let last = p.entries("s1").pop().unwrap();
    assert_eq!(last["context"]["recovered_torn_tail"]["bytes"], 19);
    let kept = files_named(&p.path().join(".attenu"), ".torn-");
    assert_eq!(kept.len(), 1);
    assert_eq!(bytes_of(&kept[0]), b"{\"c14n\":\"JCS\",\"half");
}

#[test]
fn an_opening_cut_short_by_a_crash_spawns_the_agent_and_no_call_lands_on_the_root() {
    let p = sample("tornopen");
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    keep_the_root_and_a_torn_spawn(&p.ledger("s1"));
    remove_sealed_state(p.path());
    assert_allowed(&reviewer_read(p.path(), "s1", "/y", "t2"));
    let es = p.entries("s1");
    assert_eq!(of_event(&es, "root").len(), 1, "the chain goes on");
    let spawns = of_event(&es, "spawn");
    let spawn = spawns.into_iter().find(|e| e["agent"] == "reviewer");
    let reviewer_node = &spawn.expect("the reviewer is spawned again")["node"];
    assert_ne!(*reviewer_node, es[0]["node"]);
    let allow = es.last().unwrap();
    assert_eq!(allow["event"], "allow");
    assert_eq!(
        allow["node"], *reviewer_node,
        "recorded on the reviewer's node"
    );
}

/// The ledger at `path` (root, the reviewer's spawn, a decision) cut to the root and a torn
/// piece of the spawn, as a crash mid-write would leave it.
fn keep_the_root_and_a_torn_spawn(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].contains("\"agent\":\"reviewer\""), "{}", lines[1]);
    std::fs::write(path, format!("{}\n{}", lines[0], &lines[1][..100])).unwrap();
}

/// A torn tail cut by an event that appends nothing (SessionStart on a resumed session, whose
/// chain is current) stays owed in the sealed state and is recorded by the next entry, once.
#[test]
fn a_torn_tail_cut_at_session_start_is_recorded_by_the_next_entry() {
    let p = sample("torn-start");
    reviewer_read(p.path(), "s1", "/x", "t1");
    let before = p.entries("s1");
    tear_ledger_tail(p.path(), "s1");
    assert_quiet_start(&p, "resume");
    assert_eq!(p.entries("s1"), before, "the tail is cut, nothing appended");
    // A PostToolUse (its own path, which records outcomes) appends the next entry.
    assert_allowed(&p.read_by("reviewer", "/x").id("t1").post(json!("ok")).run());
    let after = p.entries("s1");
    assert_eq!(after.len(), before.len() + 1);
    let recorded = &after[before.len()]["context"]["recovered_torn_tail"];
    assert_eq!(recorded["bytes"], 19, "{}", after[before.len()]);
    assert_allowed(&reviewer_read(p.path(), "s1", "/y", "t2"));
    let last = p.entries("s1").pop().unwrap();
    let again = last["context"].get("recovered_torn_tail");
    assert!(again.is_none(), "recorded once: {last}");
}

#[test]
fn parallel_hook_processes_keep_one_valid_chain() {
    let p = sample("parallel");
    let dir = p.path();
    std::thread::scope(|s| {
        for t in 0..16 {
            s.spawn(move || eight_reads(dir, t));
        }
    });
    let es = p.entries("s1");
    // The root, the reviewer's spawn (once, whoever came first), every decision.
    assert_eq!(es.len(), 2 + 16 * 8);
    assert_eq!(of_event(&es, "spawn").len(), 1);
    for (i, e) in es.iter().enumerate() {
        assert_eq!(e["seq"], i, "one chain, no gaps or forks");
    }
    p.export("s1");
}

/// Reader `t`'s eight reviewer reads in session s1, each allowed.
fn eight_reads(dir: &Path, t: usize) {
    for i in 0..8 {
        assert_allowed(&reviewer_read(
            dir,
            "s1",
            &format!("/f{t}-{i}"),
            &format!("t{t}-{i}"),
        ));
    }
}

#[test]
fn a_mid_session_agent_edit_takes_effect_when_the_session_is_resumed_on_a_new_linked_chain() {
    let p = sample("edit");
    reviewer_read(p.path(), "s1", "/x", "t1");
    let bash = |id: &str| p.subagent("reviewer", "Bash").id(id).run();
    assert!(bash("t2").denied());
    std::fs::write(p.path().join(".claude/agents/reviewer.md"), RUNS_COMMANDS).unwrap();
    assert_denied_with(&bash("t3"), "unresolved");
    assert_eq!(of_event(&p.entries("s1"), "root").len(), 1);
    // A compaction keeps Claude Code's agent definitions: still the pinned roster.
    assert_eq!(p.session_start("s1", "compact").code, 0);
    assert!(bash("t4").denied());
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert_allowed(&bash("t5"));
    assert_two_linked_chains(&p.entries("s1"));
    let files = p.export("s1");
    assert_eq!(files.len(), 2);
    let named = files[0].ends_with("bundle-s1.json") && files[1].ends_with("bundle-s1.chain2.json");
    assert!(named);
}

const RUNS_COMMANDS: &str =
    "---\nname: reviewer\ndescription: now runs commands\ntools: Read, Bash\n---\n";

/// Two chains, the second starting at seq 0 (from GENESIS) and naming the first as previous.
#[track_caller]
fn assert_two_linked_chains(es: &[serde_json::Value]) {
    let roots = of_event(es, "root");
    assert_eq!(roots.len(), 2);
    assert_ne!(roots[0]["chain_id"], roots[1]["chain_id"]);
    assert_eq!(
        roots[1]["seq"], 0,
        "each chain starts at seq 0 from GENESIS"
    );
    let previous = &roots[1]["context"]["previous_chain"]["chain_id"];
    assert_eq!(*previous, roots[0]["chain_id"]);
}

#[test]
fn an_outcome_arriving_after_a_mid_session_edit_is_not_bound_to_the_new_chain() {
    let p = sample("editspan");
    let read = |id: &str| p.read_by("reviewer", "/a").id(id);
    assert_allowed(&read("t1").run());
    set_agent_tools(p.path(), "reviewer", "Read, Grep");
    // A resumed session reads the edit (and so opens a new chain) while t1 is still open.
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert_allowed(&read("t2").run());
    // Through the sealed state, and through a full re-verify without it: the same answer.
    assert_outcome_not_recorded(&read("t1").post(json!({})).run());
    remove_sealed_state(p.path());
    assert_outcome_not_recorded(&read("t1").post(json!({})).run());
    // The call of the current chain is bound as usual.
    assert_allowed(&read("t2").post(json!({})).run());
    let outcomes = of_event(&p.entries("s1"), "outcome").len();
    assert_eq!(outcomes, 1, "only t2's outcome, on the chain of its allow");
    assert_contains(&reconcile_list(p.path(), &[]).stdout, &["t1"]);
    assert_chains_verify_the_last_with_a_notice(&p);
}

/// Claude is stopped: the outcome is not recorded, on a chain which ended.
#[track_caller]
fn assert_outcome_not_recorded(out: &Out) {
    assert_eq!(out.json()["continue"], false, "{}", out.stdout);
    let why = out.json()["stopReason"].as_str().unwrap().to_string();
    assert_contains(&why, &["[outcome-not-recorded]", "which ended"]);
}

/// Every bundle of session s1 verifies under the pinned key; the sealed state dropped is recorded
/// on the current (last) chain: valid, with a notice (exit 4).
fn assert_chains_verify_the_last_with_a_notice(p: &TempDir) {
    let bundles = p.export("s1");
    for (i, bundle) in bundles.iter().enumerate() {
        let v = p.verify_pinned(bundle);
        let want = if i + 1 == bundles.len() { 4 } else { 0 };
        assert_eq!(v.code, want, "{bundle}: {}{}", v.stdout, v.stderr);
    }
}

#[test]
fn a_lock_held_by_a_stuck_process_denies_within_the_timeout() {
    let p = sample("stuck");
    reviewer_read(p.path(), "s1", "/x", "t1");
    write_config(p.path(), "lock_timeout_ms = 300\n");
    // Every hook process of the session locks the ledger file itself.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .open(p.path().join(".attenu/ledger-s1.jsonl"))
        .unwrap();
    lock.lock().unwrap();
    let out = reviewer_read(p.path(), "s1", "/x", "t2");
    assert_denied_with(&out, "ledger-lock-timeout");
    drop(lock);
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t3"));
}

#[test]
fn session_start_opens_the_ledger_so_the_first_tool_call_only_appends() {
    let p = sample("sessionstart");
    assert_quiet_start(&p, "startup");
    let opened = p.entries("s1");
    assert_eq!(opened[0]["event"], "root");
    assert_eq!(opened[0]["context"]["hook_event"], "SessionStart");
    assert_eq!(
        opened.len(),
        1,
        "the root alone: agents are spawned when first seen"
    );
    // The session's first tool call appends the reviewer's spawn and its decision, to the
    // same chain.
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let after = p.entries("s1");
    assert_eq!(after.len(), opened.len() + 2);
    assert_eq!(after[..opened.len()], opened[..]);
    assert_eq!(after[1]["event"], "spawn");
    assert_eq!(after[2]["event"], "allow");
    assert_eq!(after[2]["node"], after[1]["node"]);
    assert_eq!(after[2]["chain_id"], opened[0]["chain_id"]);
}

/// SessionStart again (after a compaction or a resume) adds nothing to a current chain.
#[test]
fn session_start_again_adds_nothing_to_a_current_chain() {
    let p = sample("sessionstart-again");
    assert_quiet_start(&p, "startup");
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let bytes = bytes_of(&p.ledger("s1"));
    assert_quiet_start(&p, "compact");
    assert_quiet_start(&p, "resume");
    assert_eq!(bytes_of(&p.ledger("s1")), bytes);
    p.export("s1"); // which must succeed
    let bundle = p.path().join(".attenu/bundle-s1.json");
    // The key beside the bundle: valid, not pinned, exit 3.
    let out = cli(&["verify", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, &["VALID (key NOT pinned)"]);
}
