//! A session's roster is fixed when the session starts, as Claude Code loads its agent
//! definitions then (docs/DERIVATION.md, "The session's roster"): edits, additions and
//! removals of agent files mid-session change nothing in that session's decisions and take
//! effect in the next session (the case `tests/cases/agent-edits-wait-for-the-next-session/`;
//! here, the next session's digest); a warm call reads the pin and never the agent files (the
//! case `tests/cases/warm-call-reads-the-pin/`); a lost or forged pin is never widened. The operator's `.attenu/revoke` narrowing a running session on
//! its next call is the case `tests/cases/revoke-mid-session/`.

mod common;
use common::*;
use serde_json::json;
use std::path::PathBuf;

/// A project with three agents.
fn team(tag: &str) -> TempDir {
    ProjectBuilder::new(tag)
        .agent("reviewer", "description: reads\ntools: Read, Grep")
        .agent("ops", "description: runs\ntools: Read, Bash, WebFetch")
        .agent("helper", "description: inherits")
        .settings(json!({"permissions": {"allow": ["Read", "Glob"]}}))
        .build()
}

fn agent_file(p: &TempDir, name: &str) -> std::path::PathBuf {
    p.path().join(format!(".claude/agents/{name}.md"))
}

/// The next session, started after an agent file changed, is on another roster digest (what
/// the running and the next session decide is the case
/// `tests/cases/agent-edits-wait-for-the-next-session/`).
#[test]
fn the_next_session_pins_another_roster_digest() {
    let p = team("pin-digest");
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    std::fs::write(agent_file(&p, "ops"), "---\nname: ops\ntools: Read\n---\n").unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").session("s2").run());
    let digest = |s| p.entries(s)[0]["context"]["digest"].clone();
    assert!(digest("s1").is_string());
    assert_ne!(digest("s1"), digest("s2"));
}

/// `name`'s agent file now declares `tools`.
fn declare(p: &TempDir, name: &str, tools: &str) {
    let text = format!("---\nname: {name}\ntools: {tools}\n---\n");
    std::fs::write(agent_file(p, name), text).unwrap();
}

/// Session s1's pin file.
fn pin_of(p: &TempDir) -> PathBuf {
    p.path().join(".attenu/roster-s1.pin")
}

/// `bytes` with one bit of the byte at `at` flipped.
fn flipped(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut forged = bytes.to_vec();
    forged[at] ^= 1;
    forged
}

/// The last byte of `name` where it is first written as a string (its length in 4 bytes,
/// then its bytes) in `pin`: the slices come first in the pin's roster, so that is the name
/// in `name`'s own slice.
fn in_slice_of(pin: &[u8], name: &str) -> usize {
    let mut written = (name.len() as u32).to_le_bytes().to_vec();
    written.extend_from_slice(name.as_bytes());
    let found = pin.windows(written.len()).position(|w| w == written);
    found.unwrap_or_else(|| panic!("{name}'s slice")) + written.len() - 1
}

/// The call was refused as with a lost pin.
#[track_caller]
fn assert_pin_lost(out: &Out) {
    assert_denied_with(out, "roster-pin-lost");
}

/// A pin that is missing or forged is never trusted: the roster is derived again and used only
/// if it is the one the session's chain was opened with; a wider one is refused.
#[test]
fn a_lost_pin_with_the_files_unchanged_is_derived_again() {
    let p = team("pin-lost-again");
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    std::fs::remove_file(pin_of(&p)).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    assert!(pin_of(&p).exists(), "pinned again");
}

/// After a widening edit, a pin forged (one byte), lost, or another session's, refuses
/// every call; restored, the session goes on with its own roster.
#[test]
fn a_lost_or_forged_pin_never_widens_the_session() {
    let p = team("pin-lost");
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    let (pin, good) = (pin_of(&p), std::fs::read(pin_of(&p)).unwrap());
    declare(&p, "reviewer", "Read, Grep, Bash");
    std::fs::write(&pin, flipped(&good, good.len() - 2)).unwrap();
    assert_pin_lost(&p.bash_by("reviewer", "ls").id("t3").run());
    std::fs::remove_file(&pin).unwrap();
    let out = p.read_by("reviewer", "/p/x").id("t4").run();
    assert_pin_lost(&out);
    assert_denied_saying(&out, "start a new session");
    assert_allowed(&p.bash_by("reviewer", "ls").id("t5").session("s2").run());
    std::fs::copy(p.path().join(".attenu/roster-s2.pin"), &pin).unwrap();
    assert_pin_lost(&p.bash_by("reviewer", "ls").id("t6").run());
    std::fs::write(&pin, &good).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t7").run());
    assert!(p.bash_by("reviewer", "ls").id("t8").run().denied());
}

/// A tool call checks the seals of the pin's head and of its own agent's slice only
/// (docs/DERIVATION.md, "What a tool call reads of the pin"): a byte changed in another
/// agent's slice leaves this agent's calls as they were, and the other agent's calls, which
/// read it, are refused as a forged pin is.
#[test]
fn a_call_checks_its_own_slice_and_a_forged_one_fails_its_agent() {
    let p = team("pin-slice");
    // Each agent's node on the chain defined (a first call records its spawn, from the
    // whole pin).
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    assert_allowed(&p.read_by("helper", "/p/x").id("t1h").run());
    let good = std::fs::read(pin_of(&p)).unwrap();
    // A widening edit, so that the pin, once broken, cannot be derived again.
    declare(&p, "ops", "Read, Bash, WebFetch, Write");
    std::fs::write(pin_of(&p), flipped(&good, in_slice_of(&good, "ops"))).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    assert_allowed(&p.read_by("helper", "/p/x").id("t3").run());
    assert_pin_lost(&p.bash_by("ops", "ls").id("t4").run());
    // A refusal is decided on the whole pin, whose seal fails: refused as a forged pin.
    assert_pin_lost(&p.bash_by("reviewer", "ls").id("t5").run());
    std::fs::write(pin_of(&p), &good).unwrap();
    assert_allowed(&p.bash_by("ops", "ls").id("t6").run());
    assert!(p.bash_by("reviewer", "ls").id("t7").run().denied());
}

/// [`team`] after SessionStart, ops's Bash and reviewer's Read, then ops narrowed to Read and
/// `/clear`: the project and the pin of before the `/clear`.
fn pinned_then_narrowed(tag: &str) -> (TempDir, Vec<u8>) {
    let p = team(tag);
    assert_eq!(p.session_start("s1", "startup").code, 0);
    assert_allowed(&p.bash_by("ops", "ls").id("t1").run());
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    let old = std::fs::read(pin_of(&p)).unwrap();
    declare(&p, "ops", "Read");
    assert_eq!(p.session_start("s1", "clear").code, 0);
    assert!(p.bash_by("ops", "ls").id("t3").run().denied());
    (p, old)
}

/// A genuine pin of an earlier roster of the same session, put back after `/clear` pinned a
/// narrower one (or read just before the repin, by a call racing it), is not the roster the
/// session's chain is on: it is never used. The files still give the chain's roster:
/// derived again, pinned again, and used, on the same chain.
#[test]
fn an_earlier_pin_of_the_session_put_back_never_widens_it() {
    let (p, old) = pinned_then_narrowed("pin-replay");
    let roots = of_event(&p.entries("s1"), "root").len();
    std::fs::write(pin_of(&p), &old).unwrap();
    let out = p.bash_by("ops", "ls").id("t4").run();
    assert!(
        out.denied(),
        "the earlier pin widened the session: {}",
        out.stdout
    );
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t5").run());
    assert_ne!(std::fs::read(pin_of(&p)).unwrap(), old);
    let now = of_event(&p.entries("s1"), "root").len();
    assert_eq!(now, roots, "no chain reopened");
}

/// An earlier pin put back when the files no longer give the chain's roster: the session is
/// refused, as with a forged pin, on the slice path and the whole pin's.
#[test]
fn an_earlier_pin_put_back_after_another_edit_refuses_the_session() {
    let (p, old) = pinned_then_narrowed("pin-replay-edited");
    std::fs::write(pin_of(&p), &old).unwrap();
    declare(&p, "ops", "Bash");
    assert_pin_lost(&p.read_by("reviewer", "/p/x").id("t6").run());
    assert_pin_lost(&p.bash_by("ops", "ls").id("t7").run());
}

/// Four agents, one of them with argument rules, one with an MCP exclusion, and a settings
/// denial.
fn slice_rules_project() -> TempDir {
    ProjectBuilder::new("pin-slice-rules")
        .agent("tagger", "description: tags\ntools: Read, Bash(git tag:*)")
        .agent(
            "payer",
            "description: pays\ntools: mcp__pay\ndisallowedTools: mcp__pay__refund",
        )
        .agent("shell", "description: runs\ntools: Bash")
        .agent("spectator", "description: watches\ntools: Read")
        .settings(json!({"permissions": {"deny": ["Bash(curl:*)"]}}))
        .build()
}

/// On the slice path (the whole pin's seal broken by a byte in another agent's slice, so
/// that only a call decided on its own slice can be allowed), an agent is still held to its
/// argument rules, the settings' denials, its MCP exclusions and the operator's revocation,
/// as a subagent and as a `--agent` main thread.
#[test]
fn the_slice_path_keeps_rules_exclusions_denials_and_revocations() {
    let p = slice_rules_project();
    let as_main = |tool: &str, input: serde_json::Value, id: &str| {
        p.main_thread(tool)
            .with("agent_type", json!("tagger"))
            .input(input)
            .id(id)
            .run()
    };
    let mcp = |tool: &str, id: &str| p.subagent("payer", tool).id(id).run();
    // Each caller's node defined on the whole pin; then again on the slice path.
    let all_allowed = |v: &str, n: usize| {
        let (command, id) = (format!("git tag {v}"), |k: usize| format!("t{}", n + k));
        assert_allowed(&p.bash_by("tagger", &command).id(&id(0)).run());
        assert_allowed(&as_main("Bash", json!({ "command": command }), &id(1)));
        assert_allowed(&mcp("mcp__pay__charge", &id(2)));
        assert_allowed(&p.bash_by("shell", "ls").id(&id(3)).run());
    };
    all_allowed("v1", 1);
    let good = std::fs::read(pin_of(&p)).unwrap();
    declare(&p, "spectator", "Read, Write");
    std::fs::write(pin_of(&p), flipped(&good, in_slice_of(&good, "spectator"))).unwrap();
    all_allowed("v2", 5);
    for out in [
        p.bash_by("tagger", "git push").id("u1").run(),
        p.bash_by("tagger", "git tag v3 && rm -rf x").id("u2").run(),
        as_main("Bash", json!({"command": "git push"}), "u3"),
        as_main("Write", json!({"file_path": "/p/x", "content": "x"}), "u4"),
        mcp("mcp__pay__refund", "u5"),
        p.bash_by("shell", "curl https://example.com")
            .id("u6")
            .run(),
    ] {
        assert!(out.denied(), "{}", out.stdout);
    }
    let revoke = cli(&["revoke", "--project", p.dir(), "shell", "Bash"]);
    assert_eq!(revoke.code, 0, "{}", revoke.stderr);
    assert_denied_with(&p.bash_by("shell", "ls").id("u7").run(), "revoked");
    assert_allowed(&p.bash_by("tagger", "git tag v4").id("t9").run());
}
