//! Who is calling (docs/DERIVATION.md, "Who is calling"): the identity rules, through the real
//! binary, with payloads of the shapes Claude Code has been reported to send. Each case is one
//! row: the two identity fields as sent, the call, and what must come of it. Add a row for a
//! new shape.

mod common;
use common::*;
use serde_json::{json, Value};

/// One identity field as the payload carries it.
#[derive(Clone, Copy)]
enum Field {
    Absent,
    Is(&'static str),
}

struct Case {
    /// What the row stands for (a Claude Code issue, or the rule it pins).
    what: &'static str,
    agent_id: Field,
    agent_type: Field,
    tool: &'static str,
    input: fn(&std::path::Path) -> Value,
    /// `None`: allowed; `Some(code)`: denied with this reason code.
    denied: Option<&'static str>,
    /// Words the deny's sentence must carry (it says what to do).
    says: &'static [&'static str],
}

fn file(_: &std::path::Path) -> Value {
    json!({"file_path": "/p/src/main.rs"})
}
fn ls(_: &std::path::Path) -> Value {
    json!({"command": "ls"})
}
fn anchor_key(p: &std::path::Path) -> Value {
    json!({"file_path": p.join(".attenu/anchor.key")})
}

const CASES: &[Case] = &[
    Case {
        what: "#90662: an agent_id with no agent_type and no SubagentStart fails closed",
        agent_id: Field::Is("a9f31c0d2b7e4a815"),
        agent_type: Field::Absent,
        tool: "Read",
        input: file,
        denied: Some("agent-unidentified"),
        says: &["a9f31c0d2b7e4a815", "no agent_type", "#90662"],
    },
    Case {
        what: "#90662: an empty agent_type is no type either",
        agent_id: Field::Is("a9f31c0d2b7e4a815"),
        agent_type: Field::Is(""),
        tool: "Read",
        input: file,
        denied: Some("agent-unidentified"),
        says: &["cannot be matched"],
    },
    Case {
        what: "#86285: a teammate with agent_id \"\" is judged by its type (held)",
        agent_id: Field::Is(""),
        agent_type: Field::Is("reviewer"),
        tool: "Read",
        input: file,
        denied: None,
        says: &[],
    },
    Case {
        what: "#86285: a teammate with agent_id \"\" is judged by its type (not held)",
        agent_id: Field::Is(""),
        agent_type: Field::Is("reviewer"),
        tool: "Bash",
        input: ls,
        denied: Some("unresolved"),
        says: &["subagent 'reviewer'"],
    },
    Case {
        what: "#86285: a teammate of an undeclared type holds nothing",
        agent_id: Field::Is(""),
        agent_type: Field::Is("tester"),
        tool: "Read",
        input: file,
        denied: Some("undeclared-agent"),
        says: &["'tester'", ".claude/agents/"],
    },
    Case {
        what: "#86285: a teammate with neither field set is unidentified, never the main thread",
        agent_id: Field::Is(""),
        agent_type: Field::Absent,
        tool: "Bash",
        input: ls,
        denied: Some("agent-unidentified"),
        says: &["no agent_type"],
    },
    Case {
        what: "--agent reviewer: the main thread holds what reviewer declares",
        agent_id: Field::Absent,
        agent_type: Field::Is("reviewer"),
        tool: "Read",
        input: file,
        denied: None,
        says: &[],
    },
    Case {
        what: "--agent reviewer: and nothing more, enforced without enforce_main_thread",
        agent_id: Field::Absent,
        agent_type: Field::Is("reviewer"),
        tool: "Bash",
        input: ls,
        denied: Some("unresolved"),
        says: &["agent 'reviewer' (this session's main thread, --agent)"],
    },
    Case {
        what: "--agent reviewer: self-protection holds as for a subagent",
        agent_id: Field::Absent,
        agent_type: Field::Is("reviewer"),
        tool: "Read",
        input: anchor_key,
        denied: Some("self-protection"),
        says: &[],
    },
    Case {
        what: "--agent ghost: an undeclared main-thread agent holds nothing",
        agent_id: Field::Absent,
        agent_type: Field::Is("ghost"),
        tool: "Read",
        input: file,
        denied: Some("undeclared-agent"),
        says: &["'ghost'", "without --agent"],
    },
    Case {
        what: "the plain main thread is recorded, not enforced (unchanged)",
        agent_id: Field::Absent,
        agent_type: Field::Absent,
        tool: "Bash",
        input: ls,
        denied: None,
        says: &[],
    },
];

/// A PreToolUse payload carrying exactly the identity fields of `case`.
fn payload(p: &std::path::Path, case: &Case, n: usize) -> Value {
    let mut v = pre("s1", p, None, case.tool, (case.input)(p), &format!("t{n}"));
    for (key, field) in [("agent_id", case.agent_id), ("agent_type", case.agent_type)] {
        if let Field::Is(s) = field {
            v[key] = json!(s);
        }
    }
    v
}

#[test]
fn every_identity_shape_has_its_rule() {
    let p = sample("identity");
    for (n, case) in CASES.iter().enumerate() {
        let out = hook(p.path(), &payload(p.path(), case, n));
        assert_eq!(out.code, 0, "{}: {}", case.what, out.stderr);
        match case.denied {
            None => assert!(out.is_allow(), "{}: {}", case.what, out.stdout),
            Some(code) => {
                assert_denied_with(&out, code);
                for word in case.says {
                    assert!(
                        out.reason().contains(word),
                        "{}: {word:?} not in {}",
                        case.what,
                        out.reason()
                    );
                }
            }
        }
    }
    // Every ruling is on the record, with the identity fields as sent.
    let es = p.entries("s1");
    let ruled: Vec<&Value> = es
        .iter()
        .filter(|e| e["event"] == "allow" || e["event"] == "deny")
        .collect();
    assert_eq!(ruled.len(), CASES.len());
    let unidentified = ruled
        .iter()
        .filter(|e| e["context"]["reason_code"] == "agent-unidentified")
        .count();
    assert_eq!(unidentified, 3);
}

#[test]
fn an_agent_main_thread_is_recorded_on_its_agents_node() {
    let p = sample("identity-node");
    let case = &CASES[6];
    assert!(hook(p.path(), &payload(p.path(), case, 0)).is_allow());
    let es = p.entries("s1");
    let spawn = es
        .iter()
        .find(|e| e["event"] == "spawn" && e["agent"] == "reviewer")
        .expect("reviewer's node is defined");
    let allow = of_event(&es, "allow")[0];
    assert_eq!(allow["node"], spawn["node"]);
    assert_eq!(allow["context"]["agent_type"], "reviewer");
    assert!(allow["context"].get("agent_id").is_none());
}

/// #89555: a SubagentStop with an id no SubagentStart or call ever had grants and closes
/// nothing: it exports the session's bundle like any other, which still verifies, and the
/// id it named is no more identified afterwards.
#[test]
fn an_orphan_subagent_stop_changes_nothing() {
    let p = sample("identity-orphan");
    assert!(reviewer_read(p.path(), "s1", "/p/a", "t1").is_allow());
    for agent_type in [Some("reviewer"), None] {
        let mut stop = event("s1", p.path(), "SubagentStop");
        stop["agent_id"] = json!("a0000fresh0000id");
        stop["agent_transcript_path"] = json!("/home/u/.claude/projects/p/s1/subagents/x.jsonl");
        stop["stop_hook_active"] = json!(false);
        if let Some(t) = agent_type {
            stop["agent_type"] = json!(t);
        }
        let out = hook(p.path(), &stop);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(!out.denied(), "{}", out.stdout);
    }
    let mut call = pre(
        "s1",
        p.path(),
        None,
        "Read",
        json!({"file_path": "/p/b"}),
        "t2",
    );
    call["agent_id"] = json!("a0000fresh0000id");
    assert_denied_with(&hook(p.path(), &call), "agent-unidentified");
    for bundle in p.export("s1") {
        let v = p.verify_pinned(&bundle);
        assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    }
}

/// A SubagentStart without a type says what will happen to the subagent's calls.
#[test]
fn a_subagent_start_without_a_type_warns() {
    let p = sample("identity-start");
    let mut start = event("s1", p.path(), "SubagentStart");
    start["agent_id"] = json!("a77");
    let out = hook(p.path(), &start);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("agent-unidentified"), "{}", out.stdout);
}
