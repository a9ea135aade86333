//! A session's roster is fixed when the session starts, as Claude Code loads its agent
//! definitions then (docs/DERIVATION.md, "The session's roster"): edits, additions and
//! removals of agent files mid-session change nothing in that session's decisions and take
//! effect in the next session (the case `tests/cases/agent-edits-wait-for-the-next-session/`;
//! here, the next session's digest); a warm call reads the pin and never the agent files; a lost or
//! forged pin is never widened. The operator's `.attenu/revoke` narrowing a running session on
//! its next call is the case `tests/cases/revoke-mid-session/`.

mod common;
use common::*;
use serde_json::json;

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

/// A warm call reads the session's pin, never the agent files: with `.claude/agents` turned
/// into something that cannot be listed, a running session decides as before, while a new
/// session, which must derive, is refused.
#[test]
fn a_warm_call_reads_the_pin_and_no_agent_file() {
    let p = team("pin-warm");
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    let agents = p.path().join(".claude/agents");
    std::fs::rename(&agents, p.path().join("agents-away")).unwrap();
    std::fs::write(&agents, "not a directory").unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    assert_allowed(&p.bash_by("ops", "ls").id("t3").run());
    let out = p.read_by("reviewer", "/p/x").id("t4").session("s2").run();
    assert_denied_with(&out, "declarations-unreadable");
}

/// A pin that is missing or forged is never trusted: the roster is derived again and used only
/// if it is the one the session's chain was opened with; a wider one is refused.
#[test]
fn a_lost_or_forged_pin_never_widens_the_session() {
    let p = team("pin-lost");
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    let pin = p.path().join(".attenu/roster-s1.pin");
    // Lost, files unchanged: derived again, the same roster, pinned again.
    std::fs::remove_file(&pin).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    assert!(pin.exists(), "pinned again");
    let good = std::fs::read(&pin).unwrap();
    std::fs::write(
        agent_file(&p, "reviewer"),
        "---\nname: reviewer\ntools: Read, Grep, Bash\n---\n",
    )
    .unwrap();
    // Forged (one byte), or lost, after a widening edit: every call is refused.
    let mut forged = good.clone();
    let at = forged.len() - 2;
    forged[at] ^= 1;
    std::fs::write(&pin, &forged).unwrap();
    assert_denied_with(
        &p.bash_by("reviewer", "ls").id("t3").run(),
        "roster-pin-lost",
    );
    std::fs::remove_file(&pin).unwrap();
    let out = p.read_by("reviewer", "/p/x").id("t4").run();
    assert_denied_with(&out, "roster-pin-lost");
    assert_denied_saying(&out, "start a new session");
    // Another session's pin under this session's name is not its pin either.
    assert_allowed(&p.bash_by("reviewer", "ls").id("t5").session("s2").run());
    std::fs::copy(p.path().join(".attenu/roster-s2.pin"), &pin).unwrap();
    assert_denied_with(
        &p.bash_by("reviewer", "ls").id("t6").run(),
        "roster-pin-lost",
    );
    // The pin restored: the session goes on with its own roster.
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
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t1").run());
    // Each agent's node on the chain defined (a first call records its spawn, from the
    // whole pin).
    assert_allowed(&p.read_by("helper", "/p/x").id("t1h").run());
    let pin = p.path().join(".attenu/roster-s1.pin");
    let good = std::fs::read(&pin).unwrap();
    // A widening edit, so that the pin, once broken, cannot be derived again.
    std::fs::write(
        agent_file(&p, "ops"),
        "---\nname: ops\ntools: Read, Bash, WebFetch, Write\n---\n",
    )
    .unwrap();
    // The slices come first in the pin's roster, so the first `ops` written as a string
    // (its length, then its bytes) is the name in ops's slice.
    let at = good
        .windows(7)
        .position(|w| w == b"\x03\0\0\0ops")
        .expect("ops's slice")
        + 6;
    let mut forged = good.clone();
    forged[at] ^= 1;
    std::fs::write(&pin, &forged).unwrap();
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    assert_allowed(&p.read_by("helper", "/p/x").id("t3").run());
    assert_denied_with(&p.bash_by("ops", "ls").id("t4").run(), "roster-pin-lost");
    // A refusal is decided on the whole pin, whose seal fails: refused as a forged pin.
    assert_denied_with(
        &p.bash_by("reviewer", "ls").id("t5").run(),
        "roster-pin-lost",
    );
    std::fs::write(&pin, &good).unwrap();
    assert_allowed(&p.bash_by("ops", "ls").id("t6").run());
    assert!(p.bash_by("reviewer", "ls").id("t7").run().denied());
}

/// A genuine pin of an earlier roster of the same session, put back after `/clear` pinned a
/// narrower one (or read just before the repin, by a call racing it), is not the roster the
/// session's chain is on: it is never used, on the slice path or the whole pin's.
#[test]
fn an_earlier_pin_of_the_session_put_back_never_widens_it() {
    let p = team("pin-replay");
    assert_eq!(p.session_start("s1", "startup").code, 0);
    assert_allowed(&p.bash_by("ops", "ls").id("t1").run());
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t2").run());
    let pin = p.path().join(".attenu/roster-s1.pin");
    let old = std::fs::read(&pin).unwrap();
    std::fs::write(agent_file(&p, "ops"), "---\nname: ops\ntools: Read\n---\n").unwrap();
    assert_eq!(p.session_start("s1", "clear").code, 0);
    assert!(p.bash_by("ops", "ls").id("t3").run().denied());
    let roots = of_event(&p.entries("s1"), "root").len();
    std::fs::write(&pin, &old).unwrap();
    let out = p.bash_by("ops", "ls").id("t4").run();
    assert!(
        out.denied(),
        "the earlier pin widened the session: {}",
        out.stdout
    );
    // The files still give the chain's roster: derived again, pinned again, and used.
    assert_allowed(&p.read_by("reviewer", "/p/x").id("t5").run());
    assert_ne!(std::fs::read(&pin).unwrap(), old);
    assert_eq!(
        of_event(&p.entries("s1"), "root").len(),
        roots,
        "no chain reopened"
    );
    // When they do not, the session is refused, as with a forged pin.
    std::fs::write(&pin, &old).unwrap();
    std::fs::write(agent_file(&p, "ops"), "---\nname: ops\ntools: Bash\n---\n").unwrap();
    assert_denied_with(
        &p.read_by("reviewer", "/p/x").id("t6").run(),
        "roster-pin-lost",
    );
    assert_denied_with(&p.bash_by("ops", "ls").id("t7").run(), "roster-pin-lost");
}

/// On the slice path (the whole pin's seal broken by a byte in another agent's slice, so
/// that only a call decided on its own slice can be allowed), an agent is still held to its
/// argument rules, the settings' denials, its MCP exclusions and the operator's revocation,
/// as a subagent and as a `--agent` main thread.
#[test]
fn the_slice_path_keeps_rules_exclusions_denials_and_revocations() {
    let p = ProjectBuilder::new("pin-slice-rules")
        .agent("tagger", "description: tags\ntools: Read, Bash(git tag:*)")
        .agent(
            "payer",
            "description: pays\ntools: mcp__pay\ndisallowedTools: mcp__pay__refund",
        )
        .agent("shell", "description: runs\ntools: Bash")
        .agent("spectator", "description: watches\ntools: Read")
        .settings(json!({"permissions": {"deny": ["Bash(curl:*)"]}}))
        .build();
    let as_main = |tool: &str, input: serde_json::Value, id: &str| {
        let call = p.main_thread(tool).with("agent_type", json!("tagger"));
        call.input(input).id(id).run()
    };
    let mcp = |tool: &str, id: &str| p.subagent("payer", tool).id(id).run();
    // Each caller's node defined, on the whole pin.
    assert_allowed(&p.bash_by("tagger", "git tag v1").id("t1").run());
    assert_allowed(&as_main("Bash", json!({"command": "git tag v1"}), "t2"));
    assert_allowed(&mcp("mcp__pay__charge", "t3"));
    assert_allowed(&p.bash_by("shell", "ls").id("t4").run());
    let pin = p.path().join(".attenu/roster-s1.pin");
    let good = std::fs::read(&pin).unwrap();
    std::fs::write(
        agent_file(&p, "spectator"),
        "---\nname: spectator\ntools: Read, Write\n---\n",
    )
    .unwrap();
    let at = good
        .windows(13)
        .position(|w| w == b"\x09\0\0\0spectator")
        .expect("spectator's slice")
        + 12;
    let mut forged = good.clone();
    forged[at] ^= 1;
    std::fs::write(&pin, &forged).unwrap();
    assert_allowed(&p.bash_by("tagger", "git tag v2").id("t5").run());
    assert_allowed(&as_main("Bash", json!({"command": "git tag v2"}), "t6"));
    assert_allowed(&mcp("mcp__pay__charge", "t7"));
    assert_allowed(&p.bash_by("shell", "ls").id("t8").run());
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
