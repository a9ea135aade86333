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

#[test]
fn a_torn_final_line_is_moved_aside_and_the_recovery_recorded() {
    let p = sample("torn");
    reviewer_read(p.path(), "s1", "/x", "t1");
    tear_ledger_tail(p.path(), "s1");
    let out = reviewer_read(p.path(), "s1", "/y", "t2");
    assert_allowed(&out);
    let last = p.entries("s1").pop().unwrap();
    assert_eq!(last["context"]["recovered_torn_tail"]["bytes"], 19);
    let kept: Vec<_> = std::fs::read_dir(p.path().join(".attenu"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".torn-"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        std::fs::read(kept[0].path()).unwrap(),
        b"{\"c14n\":\"JCS\",\"half"
    );
}

/// Regression: a crash in the middle of a chain's opening (root and spawn are one write)
/// left a chain without some agent's spawn, and that agent's calls were then recorded on the
/// session root's node. An agent without a node on the current chain is now spawned again.
#[test]
fn an_opening_cut_short_by_a_crash_spawns_the_agent_and_no_call_lands_on_the_root() {
    let p = sample("tornopen");
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let path = p.ledger("s1");
    let text = std::fs::read_to_string(&path).unwrap();
    // Lines: root, reviewer's spawn, the decision. Keep the root and a torn piece of the
    // spawn, as a crash mid-write would.
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].contains("\"agent\":\"reviewer\""), "{}", lines[1]);
    let cut = format!("{}\n{}", lines[0], &lines[1][..100]);
    std::fs::write(&path, cut).unwrap();
    std::fs::remove_file(p.path().join(".attenu/ledger-s1.state.json")).unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/y", "t2"));
    let es = p.entries("s1");
    assert_eq!(of_event(&es, "root").len(), 1, "the chain goes on");
    let reviewer_node = of_event(&es, "spawn")
        .into_iter()
        .find(|e| e["agent"] == "reviewer")
        .expect("the reviewer is spawned again")["node"]
        .clone();
    assert_ne!(reviewer_node, es[0]["node"]);
    let allow = es.last().unwrap();
    assert_eq!(allow["event"], "allow");
    assert_eq!(
        allow["node"], reviewer_node,
        "recorded on the reviewer's node"
    );
}

/// A torn tail cut by an event that appends nothing (SessionStart on a resumed session, whose
/// chain is current) stays owed in the checkpoint and is recorded by the next entry, once.
#[test]
fn a_torn_tail_cut_at_session_start_is_recorded_by_the_next_entry() {
    let p = sample("torn-start");
    reviewer_read(p.path(), "s1", "/x", "t1");
    let before = p.entries("s1");
    tear_ledger_tail(p.path(), "s1");
    let out = hook(p.path(), &session_start("s1", p.path(), "resume"));
    assert_eq!((out.code, out.json()), (0, json!({})), "{}", out.stderr);
    assert_eq!(p.entries("s1"), before, "the tail is cut, nothing appended");
    // A PostToolUse (its own path, which records outcomes) appends the next entry.
    let out = p.read_by("reviewer", "/x").id("t1").post(json!("ok")).run();
    assert_allowed(&out);
    let after = p.entries("s1");
    assert_eq!(after.len(), before.len() + 1);
    let recorded = &after[before.len()]["context"]["recovered_torn_tail"];
    assert_eq!(recorded["bytes"], 19, "{}", after[before.len()]);
    assert_allowed(&reviewer_read(p.path(), "s1", "/y", "t2"));
    let last = p.entries("s1").pop().unwrap();
    assert!(
        last["context"].get("recovered_torn_tail").is_none(),
        "recorded once: {last}"
    );
}

#[test]
fn parallel_hook_processes_keep_one_valid_chain() {
    let p = sample("parallel");
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let dir = p.path().to_path_buf();
            std::thread::spawn(move || {
                for i in 0..8 {
                    let out =
                        reviewer_read(&dir, "s1", &format!("/f{t}-{i}"), &format!("t{t}-{i}"));
                    assert_allowed(&out);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let es = p.entries("s1");
    // The root, the reviewer's spawn (once, whoever came first), every decision.
    assert_eq!(es.len(), 2 + 16 * 8);
    assert_eq!(of_event(&es, "spawn").len(), 1);
    for (i, e) in es.iter().enumerate() {
        assert_eq!(e["seq"], i, "one chain, no gaps or forks");
    }
    p.export("s1");
}

/// An agent edit mid-session changes nothing in the running session, as in Claude Code, which
/// loads its agents when the session starts; resuming it (which loads them afresh, as `/clear`
/// does) opens a new chain linked to the last, for the edited roster.
#[test]
fn a_mid_session_agent_edit_takes_effect_when_the_session_is_resumed_on_a_new_linked_chain() {
    let p = sample("edit");
    reviewer_read(p.path(), "s1", "/x", "t1");
    assert!(p.subagent("reviewer", "Bash").id("t2").run().denied());
    std::fs::write(
        p.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: now runs commands\ntools: Read, Bash\n---\n",
    )
    .unwrap();
    assert_denied_with(&p.subagent("reviewer", "Bash").id("t3").run(), "unresolved");
    assert_eq!(of_event(&p.entries("s1"), "root").len(), 1);
    // A compaction keeps Claude Code's agent definitions: still the pinned roster.
    assert_eq!(p.session_start("s1", "compact").code, 0);
    assert!(p.subagent("reviewer", "Bash").id("t4").run().denied());
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert_allowed(&p.subagent("reviewer", "Bash").id("t5").run());
    let es = p.entries("s1");
    let roots = of_event(&es, "root");
    assert_eq!(roots.len(), 2);
    assert_ne!(roots[0]["chain_id"], roots[1]["chain_id"]);
    assert_eq!(
        roots[1]["seq"], 0,
        "each chain starts at seq 0 from GENESIS"
    );
    assert_eq!(
        roots[1]["context"]["previous_chain"]["chain_id"],
        roots[0]["chain_id"]
    );
    let out = p.export("s1");
    let files = out;
    assert_eq!(files.len(), 2);
    assert!(files[0].ends_with("bundle-s1.json") && files[1].ends_with("bundle-s1.chain2.json"));
}

/// Regression: the open calls of the chain an edit ended (now: a resume after an edit) stayed
/// open on the next chain, so the
/// outcome of a call allowed before the edit was written into the new chain (an outcome
/// without an allow there, which fails verification) and, hashed with the new chain's salt,
/// halted Claude as "input changed after authorization". No chain can carry that outcome: it
/// is not recorded, Claude stops with the true cause, and a reconciliation marker is left.
#[test]
fn an_outcome_arriving_after_a_mid_session_edit_is_not_bound_to_the_new_chain() {
    let p = sample("editspan");
    let read = |id: &str| p.read_by("reviewer", "/a").id(id).value();
    let outcome = |id: &str| {
        let input = json!({"file_path": "/a"});
        p.subagent("reviewer", "Read")
            .input(input)
            .id(id)
            .post(json!({}))
            .value()
    };
    assert_allowed(&hook(p.path(), &read("t1")));
    std::fs::write(
        p.path().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ntools: Read, Grep\n---\n",
    )
    .unwrap();
    // A resumed session reads the edit (and so opens a new chain) while t1 is still open.
    assert_eq!(p.session_start("s1", "resume").code, 0);
    assert_allowed(&hook(p.path(), &read("t2")));
    // Through the checkpoint, and through a full re-verify without it: the same answer.
    for drop_checkpoint in [false, true] {
        if drop_checkpoint {
            std::fs::remove_file(p.path().join(".attenu/ledger-s1.state.json")).unwrap();
        }
        let out = hook(p.path(), &outcome("t1"));
        assert_eq!(out.json()["continue"], false, "{}", out.stdout);
        let why = out.json()["stopReason"].as_str().unwrap().to_string();
        assert!(
            why.contains("[outcome-not-recorded]") && why.contains("which ended"),
            "{why}"
        );
    }
    // The call of the current chain is bound as usual.
    assert_allowed(&hook(p.path(), &outcome("t2")));
    let es = p.entries("s1");
    assert_eq!(
        of_event(&es, "outcome").len(),
        1,
        "only t2's outcome, on the chain of its allow"
    );
    let list = reconcile_list(p.path(), &[]);
    assert_contains(&list.stdout, &["t1"]);
    let out = p.export("s1");
    for (i, bundle) in out.iter().enumerate() {
        let v = p.verify_pinned(bundle);
        // The checkpoint dropped above is recorded on the current (last) chain: valid, with
        // a notice (exit 4).
        let want = if i + 1 == out.len() { 4 } else { 0 };
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
    let out = hook(p.path(), &session_start("s1", p.path(), "startup"));
    assert_eq!((out.code, out.json()), (0, json!({})), "{}", out.stderr);
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

    // SessionStart again (after a compaction or a resume) adds nothing to a current chain.
    let bytes = std::fs::read(p.ledger("s1")).unwrap();
    for source in ["compact", "resume"] {
        let out = hook(p.path(), &session_start("s1", p.path(), source));
        assert_eq!((out.code, out.json()), (0, json!({})), "{}", out.stderr);
    }
    assert_eq!(std::fs::read(p.ledger("s1")).unwrap(), bytes);
    let dir = p.path().to_str().unwrap();
    let out = cli(&["export", "--project", dir, "--session", "s1"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let bundle = p.path().join(".attenu/bundle-s1.json");
    // The key beside the bundle: valid, not pinned, exit 3.
    let out = cli(&["verify", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert_contains(&out.stdout, &["VALID (key NOT pinned)"]);
}
