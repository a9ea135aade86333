//! Who is calling (docs/DERIVATION.md, "Who is calling"). Every shape of `agent_id` and
//! `agent_type` Claude Code has been reported to send, and its rule, is a line of the case
//! `tests/cases/identity-shapes/` (add a line for a new shape); an orphan SubagentStop and a
//! SubagentStart without a type are `tests/cases/identity-orphan-stop/`. Here: what the
//! ledger view of a case does not show, the node a call is recorded on.

mod common;
use common::*;
use serde_json::json;

/// `claude --agent reviewer`: the main thread's calls are on reviewer's node, with the type
/// and without an agent_id.
#[test]
fn an_agent_main_thread_is_recorded_on_its_agents_node() {
    let p = sample("identity-node");
    let call = p.main_thread("Read").with("agent_type", json!("reviewer"));
    assert_allowed(&call.input(json!({"file_path": "/p/src/main.rs"})).run());
    let es = p.entries("s1");
    let spawn = es
        .iter()
        .find(|e| e["event"] == "spawn" && e["agent"] == "reviewer");
    let allow = of_event(&es, "allow")[0];
    assert_eq!(
        allow["node"],
        spawn.expect("reviewer's node is defined")["node"]
    );
    assert_eq!(allow["context"]["agent_type"], "reviewer");
    assert!(allow["context"].get("agent_id").is_none());
}
