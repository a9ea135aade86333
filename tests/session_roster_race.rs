//! A call that read the session's pin just before a `SessionStart` repinned it (`/clear` or a
//! resume after an agent file was narrowed) and opened a new chain under the ledger lock: once
//! it holds the lock, the pin it read is not the roster of the session's chain, so it never
//! decides, opens a chain or defines a node with it (docs/DERIVATION.md, "The session's
//! roster"). The interleaving is forced with the test-only pause before the ledger lock.

mod common;
use common::faults::Paused;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

fn main() {
    harness::run(tests![
        a_subagent_start_that_read_the_pin_before_a_repin_spawns_on_the_new_roster,
        tool_calls_that_read_the_pin_before_a_repin_decide_with_the_new_roster
    ]);
}

/// A project where `ops` may run Bash.
fn team(tag: &str) -> TempDir {
    ProjectBuilder::new(tag)
        .agent("reviewer", "description: reads\ntools: Read, Grep")
        .agent("ops", "description: runs\ntools: Read, Bash")
        .build()
}

/// Runs `payload` in a hook process that stops after reading the session's pin, before the
/// ledger lock, until [`release`]; returns once it has stopped there.
fn paused(project: &Path, payload: Value) -> Paused {
    let id = payload["tool_use_id"]
        .as_str()
        .unwrap_or("start")
        .to_string();
    Paused::start(project, &id, payload)
}

fn release(paused: Paused) -> Out {
    let out = paused.release();
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// Narrows `ops` (Bash taken away), declares `newcomer` (Read) and starts the session again
/// from `source` (`clear` or `resume`), which repins it: the digest of the new roster.
fn narrow_and_restart(p: &TempDir, source: &str) -> Value {
    let old = p.entries("s1")[0]["context"]["digest"].clone();
    std::fs::write(
        p.path().join(".claude/agents/ops.md"),
        "---\nname: ops\ntools: Read\n---\n",
    )
    .unwrap();
    std::fs::write(
        p.path().join(".claude/agents/newcomer.md"),
        "---\nname: newcomer\ntools: Read\n---\n",
    )
    .unwrap();
    assert_eq!(p.session_start("s1", source).code, 0);
    let new = of_event(&p.entries("s1"), "root").last().unwrap()["context"]["digest"].clone();
    assert_ne!(old, new, "the restart repinned a narrower roster");
    new
}

/// Every chain opened after the first (by the repin, or by anything racing it) is on the new
/// roster, every spawn after the repin is on such a chain and grants no Bash, and the
/// session's chain ends on the new roster.
fn assert_on_new_roster(p: &TempDir, new: &Value) {
    let es = p.entries("s1");
    let roots = of_event(&es, "root");
    let on_new: Vec<&Value> = roots[1..]
        .iter()
        .filter(|r| r["context"]["digest"] == *new)
        .map(|r| &r["chain_id"])
        .collect();
    assert_eq!(
        on_new.len(),
        roots.len() - 1,
        "a chain on the old roster: {es:#?}"
    );
    let spawns: Vec<&Value> = of_event(&es, "spawn")
        .into_iter()
        .filter(|s| s["chain_id"] != roots[0]["chain_id"])
        .collect();
    assert!(!spawns.is_empty(), "a spawn after the repin: {es:#?}");
    for spawn in spawns {
        assert!(on_new.contains(&&spawn["chain_id"]), "{spawn:#}");
        let granted = spawn["granted"]["scopes"].to_string();
        assert!(!granted.contains("exec.bash"), "Bash granted: {spawn:#}");
    }
    let last = roots.last().unwrap();
    assert_eq!(last["context"]["digest"], *new);
}

/// A SubagentStart that read the old pin before a resume's repin: once it holds the lock it
/// finds the chain on the new roster and spawns `ops` there, as the new roster has it.
fn a_subagent_start_that_read_the_pin_before_a_repin_spawns_on_the_new_roster() {
    need_test_faults();
    let p = team("race-spawn");
    assert_eq!(p.session_start("s1", "startup").code, 0);
    let mut start = p.subagent("ops", "Bash").value();
    start["hook_event_name"] = json!("SubagentStart");
    let a = paused(p.path(), start);
    let new = narrow_and_restart(&p, "resume");
    let out = release(a);
    assert!(!out.denied(), "{}", out.stdout);
    assert_on_new_roster(&p, &new);
    assert_eq!(
        of_event(&p.entries("s1"), "root").len(),
        2,
        "no chain reopened"
    );
    let out = p.bash_by("ops", "ls").id("t1").run();
    assert!(
        out.denied(),
        "ops lost Bash with the resume: {}",
        out.stdout
    );
    assert_allowed(&p.read_by("ops", "/p/x").id("t2").run());
    assert_on_new_roster(&p, &new);
}

/// Tool events that read the old pin before the clear's repin: a Bash by `ops` on its slice of
/// the pin (which allows it), a Read by `newcomer`, whom the old pin does not declare, so that
/// the whole pin is read, and Claude Code's own refusal of a Bash by `ops`. Once they hold the
/// lock the calls are decided on the new roster (the Bash denied, the Read allowed) and all
/// three are recorded on its chain.
fn tool_calls_that_read_the_pin_before_a_repin_decide_with_the_new_roster() {
    need_test_faults();
    let p = team("race-call");
    assert_eq!(p.session_start("s1", "startup").code, 0);
    // `ops`'s node is defined on the chain, so the call would be allowed on its slice alone.
    assert_allowed(&p.bash_by("ops", "ls").id("t1").run());
    let bash = paused(p.path(), p.bash_by("ops", "ls").id("t2").value());
    let read = paused(p.path(), p.read_by("newcomer", "/p/x").id("t3").value());
    let mut refusal = p.bash_by("ops", "rm -rf x").id("t5").value();
    refusal["hook_event_name"] = json!("PermissionDenied");
    refusal["reason"] = json!("denied by the user");
    let refused = paused(p.path(), refusal);
    let new = narrow_and_restart(&p, "clear");
    // `ops` spawned after the clear: its node is defined on the new chain too, so only the
    // chain's roster tells the old slice from the new one.
    let mut start = p.subagent("ops", "Read").value();
    start["hook_event_name"] = json!("SubagentStart");
    assert!(!hook(p.path(), &start).denied());
    let bash = release(bash);
    assert!(bash.denied(), "allowed on the old roster: {}", bash.stdout);
    assert_allowed(&release(read));
    assert_eq!(release(refused).stdout.trim(), "{}");
    assert_on_new_roster(&p, &new);
    let es = p.entries("s1");
    assert_eq!(of_event(&es, "root").len(), 2, "no chain reopened");
    let chain = &of_event(&es, "root").last().unwrap()["chain_id"];
    for id in ["t2", "t3", "t5"] {
        let decided = es
            .iter()
            .rfind(|e| e["context"]["tool_use_id"] == id)
            .expect("the raced call is recorded");
        assert_eq!(
            decided["chain_id"], *chain,
            "{id} recorded on the new chain"
        );
    }
    assert!(p.bash_by("ops", "ls").id("t4").run().denied());
    assert_on_new_roster(&p, &new);
}
