//! A project with a public collection's worth of agents (200 files, 187 without `tools:`),
//! through the real binary: every agent decides as declared, from the files and from the
//! roster cache alike; a new chain opens with its root alone and each agent's spawn is written
//! when the agent is first seen; and the reference verifier accepts the session's bundle.
//! No timing here: bench/roster.py measures what such a roster costs.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

fn main() {
    harness::run(tests![
        every_agent_of_a_large_roster_decides_as_declared,
        the_cached_roster_decides_as_the_files_do,
        a_new_chain_opens_with_its_root_alone,
        each_agent_is_spawned_when_first_seen,
        each_call_is_on_its_agents_node,
        a_first_call_without_session_start_opens_the_chain,
        the_reference_accepts_a_large_roster_session,
    ]);
}

const AGENTS: usize = 200;

/// The name of agent `i`: kebab-case, CamelCase and words with spaces, as collections write them.
fn name(i: usize) -> String {
    match i % 3 {
        0 => format!("python-security-expert-{i}"),
        1 => format!("DataPipelineArchitect{i}"),
        _ => format!("Cloud Cost Reviewer {i}"),
    }
}

/// What agent `i` declares besides its name: one in fifteen lists tools (some MCP tools among
/// them), and one in seven of the others takes Bash away.
fn declares(i: usize) -> &'static str {
    match (i % 15, i % 7) {
        (7, _) if i.is_multiple_of(2) => "tools: Read, Bash, mcp__github__create_issue",
        (7, _) => "tools: Read, Write, Edit",
        (_, 3) => "disallowedTools: Bash\nmodel: sonnet",
        _ => "model: inherit",
    }
}

/// The 200-agent project, with settings that allow Read, Grep and Glob.
fn large_project(tag: &str) -> TempDir {
    let mut b = ProjectBuilder::new(tag).settings(json!({
        "permissions": {"allow": ["Read", "Grep", "Glob"], "deny": ["NotebookEdit"]}
    }));
    for i in 0..AGENTS {
        let n = name(i);
        let body = "You review what you are shown and report back.\n".repeat(40);
        let text = format!(
            "---\nname: {n}\ndescription: \"Reviews code for agent {i}. Use PROACTIVELY.\"\n{}\n---\n{body}",
            declares(i)
        );
        b = b.agent_file(&format!("{}.md", n.replace(' ', "-").to_lowercase()), &text);
    }
    b.build()
}

/// Agent `i`'s calls and whether each is allowed: what the derivation documented in
/// docs/DERIVATION.md gives (the root holds what any agent lists; an agent without `tools`
/// holds the root minus its `disallowedTools`).
fn expected(i: usize) -> Vec<(&'static str, Value, bool)> {
    let inherits = i % 15 != 7;
    let no_bash = inherits && i % 7 == 3;
    let bash_lister = !inherits && i.is_multiple_of(2);
    vec![
        ("Read", json!({"file_path": "/p/a"}), true),
        (
            "Bash",
            json!({"command": "ls"}),
            if inherits { !no_bash } else { bash_lister },
        ),
        (
            "Write",
            json!({"file_path": "/p/b", "content": "x"}),
            inherits || !bash_lister,
        ),
        ("WebFetch", json!({"url": "https://x"}), false),
        ("NotebookEdit", json!({"notebook_path": "/p/n"}), false),
        (
            "mcp__github__create_issue",
            json!({}),
            inherits || bash_lister,
        ),
        (
            "Agent",
            json!({"subagent_type": name((i + 1) % AGENTS)}),
            inherits,
        ),
        ("Agent", json!({"subagent_type": "Explore"}), false),
    ]
}

/// Runs agent `i`'s expected calls on `session`, failing on any decision that differs.
fn check_agent(p: &Path, session: &str, i: usize) {
    for (k, (tool, input, allowed)) in expected(i).into_iter().enumerate() {
        let out = p
            .subagent(&name(i), tool)
            .input(input)
            .session(session)
            .id(&format!("t{i}-{k}"))
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(
            out.is_allow(),
            allowed,
            "{} {tool}: {}",
            name(i),
            out.stdout
        );
    }
}

/// A sample of the roster: every kind of agent, a few of each.
const SAMPLED: [usize; 10] = [0, 1, 2, 3, 7, 22, 52, 100, 178, 199];

fn every_agent_of_a_large_roster_decides_as_declared() {
    let p = large_project("roster-decide");
    for i in SAMPLED {
        check_agent(p.path(), "s1", i);
    }
    // An agent's Bash denial names the agent's own declaration, not a missing tool.
    let out = p.bash_by(&name(3), "ls").id("t-x").run();
    assert_denied_with(&out, "out-of-authority");
    // Undeclared types hold nothing, whatever the roster's size.
    let explore = p.read_by("Explore", "/p/a").id("t-y").run();
    assert_denied_with(&explore, "undeclared-agent");
}

fn the_cached_roster_decides_as_the_files_do() {
    let p = large_project("roster-cache");
    // The files are new, so the first call derives from them; once they are two seconds old
    // (src/derive/cache.rs, SETTLE) the roster is cached, and later calls read the cache.
    check_agent(p.path(), "s1", 0);
    std::thread::sleep(std::time::Duration::from_millis(2300));
    // A new session derives (a running one decides with its pin and derives nothing).
    let warm = p.read_by(&name(1), "/p/a").id("t-warm").session("s-warm");
    assert_allowed(&warm.run());
    let cache = p.path().join(".attenu/roster.cache");
    assert!(cache.exists(), "a settled roster is cached");
    for i in SAMPLED {
        check_agent(p.path(), "s2", i);
    }
    // Stored once per distinct set: far below one copy of the root per inheriting agent
    // (each agent's slice, which a session's call reads alone, names the root's set).
    let size = std::fs::metadata(&cache).unwrap().len();
    assert!(size < 96 * 1024, "roster cache of {size} bytes");
    // Both sessions' chains were opened for one and the same derivation.
    let digest = |s: &str| p.entries(s)[0]["context"]["digest"].clone();
    assert_eq!(digest("s1"), digest("s2"));
}

fn line_bytes(p: &Path, session: &str) -> Vec<(String, usize)> {
    std::fs::read_to_string(ledger_path(p, session))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["event"].as_str().unwrap().to_string(), l.len() + 1)
        })
        .collect()
}

/// SessionStart opens the chain with its root alone, well under 64 KiB for 200 agents.
fn a_new_chain_opens_with_its_root_alone() {
    let p = large_project("roster-open");
    assert_eq!(p.session_start("s1", "startup").code, 0);
    let opened = line_bytes(p.path(), "s1");
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0].0, "root");
    assert!(opened[0].1 < 64 * 1024, "root of {} bytes", opened[0].1);
}

/// After SessionStart: agent 0's two Reads, agent 2's SubagentStart then Read, the main
/// thread's Read; session s1's entries, and agents 0 and 2's names.
fn spawned_as_seen(tag: &str) -> (TempDir, Vec<Value>, String, String) {
    let p = large_project(tag);
    assert_eq!(p.session_start("s1", "startup").code, 0);
    let (a, b) = (name(0), name(2));
    assert_allowed(&p.read_by(&a, "/p/a").id("t1").run());
    assert_allowed(&p.read_by(&a, "/p/b").id("t2").run());
    let mut start = event("s1", p.path(), "SubagentStart");
    start["agent_id"] = json!("a-b");
    start["agent_type"] = json!(b);
    assert_eq!(hook(p.path(), &start).code, 0);
    assert_allowed(&p.read_by(&b, "/p/c").id("t3").run());
    assert_allowed(
        &p.main_thread("Read")
            .input(json!({"file_path": "/p/d"}))
            .id("t4")
            .run(),
    );
    let es = p.entries("s1");
    (p, es, a, b)
}

/// An agent's first call writes its spawn, then the decision; its second call, only that.
/// SubagentStart writes the spawn before the subagent's first call. The main thread's calls
/// go on the root: no spawn.
fn each_agent_is_spawned_when_first_seen() {
    let (_p, es, a, b) = spawned_as_seen("roster-spawns");
    let events: Vec<&str> = es.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        ["root", "spawn", "allow", "allow", "spawn", "allow", "allow"]
    );
    let spawns = of_event(&es, "spawn");
    let agents = (spawns[0]["agent"].as_str(), spawns[1]["agent"].as_str());
    assert_eq!(agents, (Some(a.as_str()), Some(b.as_str())));
}

/// Each call is on its agent's node, the spawn's, whose id depends on the roster alone.
fn each_call_is_on_its_agents_node() {
    let (_p, es, a, b) = spawned_as_seen("roster-nodes");
    let spawns = of_event(&es, "spawn");
    assert_eq!(es[2]["node"], spawns[0]["node"]);
    assert_eq!(es[3]["node"], spawns[0]["node"]);
    assert_eq!(es[5]["node"], spawns[1]["node"]);
    assert_eq!(es[6]["node"], es[0]["node"]);
    let chain = es[0]["chain_id"].as_str().unwrap();
    let mut names: Vec<String> = (0..AGENTS).map(name).collect();
    names.sort();
    let index = |n: &str| names.iter().position(|m| m == n).unwrap() + 1;
    assert_eq!(spawns[0]["node"], format!("{chain}:n{}", index(&a)));
    assert_eq!(spawns[1]["node"], format!("{chain}:n{}", index(&b)));
}

/// A session's first call without SessionStart: the root, the agent's spawn, the decision,
/// the opening well under 64 KiB.
fn a_first_call_without_session_start_opens_the_chain() {
    let p = large_project("roster-first-call");
    assert_allowed(&p.read_by(&name(0), "/p/a").session("s2").id("t1").run());
    let first = line_bytes(p.path(), "s2");
    let kinds: Vec<&str> = first.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(kinds, ["root", "spawn", "allow"]);
    let opening: usize = first[..2].iter().map(|(_, n)| n).sum();
    assert!(opening < 64 * 1024, "opening of {opening} bytes");
}

fn the_reference_accepts_a_large_roster_session() {
    let py = need_reference_python();
    let p = large_project("roster-ref");
    assert_eq!(p.session_start("s1", "startup").code, 0);
    for i in SAMPLED {
        check_agent(p.path(), "s1", i);
        let out = p
            .read_by(&name(i), "/p/a")
            .id(&format!("t{i}-0"))
            .post(json!({"ok": true}))
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    // An edit mid-session changes nothing until Claude Code is resumed, which loads the agents
    // afresh: the resumed session opens a second chain, whose agents are spawned afresh.
    std::fs::write(
        p.path().join(".claude/agents/python-security-expert-0.md"),
        "---\nname: python-security-expert-0\ntools: Read\n---\n",
    )
    .unwrap();
    check_agent(p.path(), "s1", 0);
    assert_eq!(p.session_start("s1", "resume").code, 0);
    check_agent_after_edit(p.path());
    p.event("s1", "SessionEnd");
    let bundles = p.export("s1");
    assert_eq!(bundles.len(), 2);
    for b in &bundles {
        let report = reference_verify(&py, Path::new(b), &p.path().join(".attenu/anchor.pub"));
        assert_eq!(report["ok"], true, "reference rejected {b}: {report}");
        let ours = p.verify_pinned(b);
        assert_eq!(ours.code, 0, "{}{}", ours.stdout, ours.stderr);
    }
}

/// After the edit, agent 0 holds Read alone; another agent is unchanged.
fn check_agent_after_edit(p: &Path) {
    assert_allowed(&p.read_by(&name(0), "/p/a").id("e1").run());
    assert_denied_with(
        &p.bash_by(&name(0), "ls").id("e2").run(),
        "out-of-authority",
    );
    check_agent(p, "s1", 1);
}
