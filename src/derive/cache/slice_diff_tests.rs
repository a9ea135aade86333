//! A call decided with its slice of the pin and with the whole pin, over a roster of every
//! kind of agent and a spread of calls: the slice path allows exactly what the whole pin
//! allows (for the scopes it decides, every one but `agent.` ones), and nothing else.

use super::pin;
use super::slice::decides_exactly;
use super::slice_tests::{derive, pinned, scratch, settings, KEY, TEAM};
use crate::config::Config;
use crate::policy::{decide, reach::Reach, Call, Decision};
use serde_json::{json, Value};
use std::path::Path;

fn calls(dir: &Path) -> Vec<(&'static str, Value)> {
    let at = |p: &str| dir.join(p).display().to_string();
    let mut calls = vec![
        ("Read", json!({"file_path": at("x")})),
        ("Read", json!({"file_path": at(".env")})),
        ("Read", json!({"file_path": at("secret/k")})),
        (
            "Write",
            json!({"file_path": at("docs/a.md"), "content": "x"}),
        ),
        ("Write", json!({"file_path": at("x"), "content": "x"})),
        (
            "Edit",
            json!({"file_path": at("x"), "old_string": "a", "new_string": "b"}),
        ),
        ("Grep", json!({"pattern": "x"})),
        ("Glob", json!({"pattern": "*"})),
        (
            "WebFetch",
            json!({"url": "https://example.com", "prompt": "p"}),
        ),
        ("Monitor", json!({"command": "ls"})),
        ("mcp__pay__charge", json!({})),
        ("mcp__pay__refund", json!({})),
        ("mcp__other__x", json!({})),
    ];
    for command in [
        "ls",
        "git tag v1",
        "git status",
        "git push",
        "rm -rf /tmp/x",
        "npm test",
        "curl https://example.com",
        "git tag v1 && rm -rf /tmp/x",
        "ls; curl https://example.com",
    ] {
        calls.push(("Bash", json!({"command": command})));
    }
    for ty in ["ops", "OPS", "h", "dup", "nobody"] {
        calls.push(("Agent", json!({"subagent_type": ty, "prompt": "p"})));
        calls.push(("Task", json!({"subagent_type": ty, "prompt": "p"})));
    }
    calls
}

/// Who calls: `(agent_id, agent_type)`.
fn actors() -> Vec<(Option<&'static str>, Option<&'static str>)> {
    let mut actors = vec![(None, None), (Some("a1"), None), (None, Some(""))];
    for ty in [
        "r",
        "g",
        "i",
        "x",
        "ops",
        "h",
        "m",
        "w",
        "dup",
        "rev",
        "Rev",
        "REV",
        "caf\u{e9}",
        "cafe\u{301}",
        "Caf\u{e9}",
        "nobody",
    ] {
        actors.push((Some("a1"), Some(ty)));
        actors.push((None, Some(ty)));
    }
    actors
}

/// What a slice path's decision must agree with the whole pin's on.
fn verdict(d: &Decision) -> (bool, &str, Option<&str>, bool, bool) {
    let node = d.node_agent.as_deref();
    (d.held, d.scope.as_str(), node, d.enforced, d.gated)
}

/// Whether the slice path stands on `d` (the decision half of `hook::context::slice_suffices`).
fn stands(d: &Decision) -> bool {
    d.held && d.reason.is_none() && decides_exactly(&d.scope)
}

#[test]
fn a_slice_decides_as_the_whole_pin() {
    let dir = scratch("differential");
    let roster = derive(&dir, TEAM, settings());
    let a = |n: &str| &roster.agents[n];
    assert!(a("dup").invalid.is_some() && !a("g").rules.is_empty());
    // A disallowed tool with arguments takes the whole tool away, as in Claude Code.
    assert!(a("x").scopes.is_empty() && a("x").invalid.is_none());
    assert!(!a("ops").excluded.is_empty() && !a("h").excluded.is_empty());
    assert!(!a("m").excluded.is_empty());
    assert!(a("rev").scopes != a("Rev").scopes && a("caf\u{e9}").scopes != a("cafe\u{301}").scopes);
    assert!(!roster.settings_rules.is_empty());
    pinned(&dir, "s1", &roster);
    let whole = pin::read(&dir, "s1", &KEY).unwrap();
    let (config, reach) = (Config::default(), Reach::default());
    let (mut fast, mut refused) = (0, 0);
    for (agent_id, agent_type) in actors() {
        // What `hook::context::Ctx::agent` reads the pin for.
        let agent = agent_type.filter(|t| !t.is_empty());
        let slice = pin::read_slice(&dir, "s1", &KEY, agent);
        let whole_for = pin::read_for(&dir, "s1", &KEY, agent).unwrap();
        for (tool_name, input) in calls(&dir) {
            let call = Call {
                tool_name,
                tool_input: &input,
                agent_id,
                agent_type,
                reach: &reach,
            };
            let what = format!("{agent_id:?} {agent_type:?} {tool_name} {input}");
            let by_whole = decide(&whole, &config, &call, &dir);
            let by_for = decide(&whole_for, &config, &call, &dir);
            assert_eq!(verdict(&by_for), verdict(&by_whole), "{what}");
            let by_slice = slice.as_ref().map(|s| decide(s, &config, &call, &dir));
            if let Some(d) = by_slice.as_ref().filter(|d| stands(d)) {
                assert_eq!(verdict(d), verdict(&by_whole), "slice allows: {what}");
                fast += 1;
            }
            // And every allow the slice can decide is decided on it.
            if stands(&by_whole) {
                assert!(by_slice.as_ref().is_some_and(stands), "slow: {what}");
            } else {
                refused += 1;
            }
        }
    }
    assert!(
        fast > 100 && refused > 100,
        "{fast} allowed on the slice, {refused} not"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
