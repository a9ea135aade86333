//! Unit tests of `derive::resolve`.
use super::*;
use crate::json::canonical;
use crate::ledger::chain::sha256_hex;
use serde_json::json;

fn decl(agents: &[(&str, &str)], allow: &[&str], deny: &[&str]) -> Declarations {
    let mut d = Declarations::default();
    for (name, text) in agents {
        d.agents.insert(
            name.to_string(),
            (format!("{name}.md"), frontmatter::parse_agent(text)),
        );
    }
    d.allow = allow.iter().map(|s| s.to_string()).collect();
    d.deny = deny.iter().map(|s| s.to_string()).collect();
    d
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_seed_sample_project() {
    let r = resolve(decl(
        &[
            (
                "reviewer",
                "---\nname: reviewer\ntools: Read, Grep, Glob\n---\n",
            ),
            (
                "researcher",
                "---\nname: researcher\ntools: Read, WebFetch\ndisallowedTools: Write, Edit\n---\n",
            ),
        ],
        &["Read", "Grep", "Glob", "Bash(npm run lint)"],
        &["Read(./.env)", "NotebookEdit"],
    ));
    assert_eq!(
        r.root,
        set(&[
            "agent.delegate.researcher",
            "agent.delegate.reviewer",
            "fs.glob",
            "fs.grep",
            "fs.read",
            "net.fetch"
        ])
    );
    assert_eq!(
        r.agents["reviewer"].scopes,
        set(&["fs.glob", "fs.grep", "fs.read"])
    );
    assert_eq!(
        r.agents["researcher"].scopes,
        set(&["fs.read", "net.fetch"])
    );
    // The denial with arguments is held at each call, the allowance left to Claude Code.
    assert_eq!(
        r.unrepresented,
        ["settings permissions.allow Bash(npm run lint)"]
    );
    assert_eq!(r.settings_rules.len(), 1);
    assert_eq!(r.settings_rules[0].rule, "Read(./.env)");
}

/// An argument in an agent's `tools` holds the tool under that rule (Claude Code offers the
/// whole tool); in its `disallowedTools` it takes the whole tool away, with Monitor for Bash.
#[test]
fn agent_rules_with_arguments_and_bash_denials_follow_claude_code() {
    let r = resolve(decl(
        &[
            ("git", "---\nname: git\ntools: Bash(git status), Read\n---\n"),
            (
                "nobash",
                "---\nname: nobash\ntools: Bash, Monitor, Read\ndisallowedTools: Bash(rm *), Read(./.env)\n---\n",
            ),
            ("inherit", "---\nname: inherit\ndisallowedTools: Bash\n---\n"),
        ],
        &[],
        &[],
    ));
    assert_eq!(r.agents["git"].scopes, set(&["exec.bash", "fs.read"]));
    assert_eq!(
        r.agents["git"].rules,
        [("exec.bash".to_string(), set(&["Bash(git status)"]))].into()
    );
    // The session holds Bash only under that rule too, and so does an inheriting agent.
    assert_eq!(r.root_rules, r.agents["git"].rules);
    assert!(
        r.agents["inherit"].rules.is_empty(),
        "it has no Bash at all"
    );
    assert!(
        r.agents["nobash"].scopes.is_empty(),
        "{:?}",
        r.agents["nobash"].scopes
    );
    let inherit = &r.agents["inherit"].scopes;
    assert!(
        !inherit.contains("exec.bash") && !inherit.contains("exec.monitor"),
        "{inherit:?}"
    );
    assert!(inherit.contains("fs.read"), "{inherit:?}");
    assert!(!r.unrepresented.iter().any(|u| u.contains("git: tools")));
    // In settings, a denial of Bash takes Monitor with it too; one with arguments does not.
    let r = resolve(decl(
        &[("m", "---\nname: m\ntools: Monitor, Bash, Read\n---\n")],
        &[],
        &["Bash"],
    ));
    assert_eq!(r.agents["m"].scopes, set(&["fs.read"]));
    let r = resolve(decl(
        &[("m", "---\nname: m\ntools: Monitor, Bash, Read\n---\n")],
        &[],
        &["Bash(rm *)"],
    ));
    assert_eq!(
        r.agents["m"].scopes,
        set(&["exec.bash", "exec.monitor", "fs.read"])
    );
}

/// Regression: a denial narrower than a held scope (one tool of an allowed MCP server, one
/// agent among all) was dropped, because only a whole held pattern can be removed.
#[test]
fn a_denial_inside_a_wider_held_scope_is_kept_as_an_exclusion() {
    let r = resolve(decl(
        &[
            (
                "ops",
                "---\nname: ops\ntools: mcp__pay, Read\ndisallowedTools: mcp__pay__refund\n---\n",
            ),
            (
                "helper",
                "---\nname: helper\ndisallowedTools: mcp__pay__refund, Agent(ops)\n---\n",
            ),
        ],
        &["mcp__pay", "Agent"],
        &["mcp__pay__wipe"],
    ));
    assert_eq!(r.root_excluded, set(&["mcp.pay.wipe"]));
    let ops = &r.agents["ops"];
    assert_eq!(ops.excluded, set(&["mcp.pay.refund", "mcp.pay.wipe"]));
    assert!(ops.holds("mcp.pay.charge"));
    assert!(!ops.holds("mcp.pay.refund") && ops.excludes("mcp.pay.refund"));
    assert!(!ops.holds("mcp.pay.wipe"));
    let helper = &r.agents["helper"];
    // `disallowedTools: Agent(ops)` takes the whole Agent tool away in Claude Code.
    assert!(!helper.holds("agent.delegate.ops") && !helper.holds("agent.delegate.ops2"));
    assert!(helper.holds("fs.read") || helper.holds("mcp.pay.charge"));
    assert!(!helper.holds("mcp.pay.refund") && !helper.holds("mcp.pay.wipe"));
    assert!(!r.declared_anywhere("mcp.pay.wipe"));
    assert!(
        r.declared_anywhere("mcp.pay.refund"),
        "other agents may hold it"
    );
    // A roster without exclusions keeps the digest it had before they existed.
    let plain = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
    assert!(plain.root_excluded.is_empty() && plain.agents["r"].excluded.is_empty());
    assert_eq!(
        plain.digest,
        sha256_hex(
            &canonical::to_vec(&json!({
                "root": plain.root,
                "agents": {"r": {"scopes": plain.agents["r"].scopes, "invalid": null}},
            }))
            .unwrap()
        )
    );
}

#[test]
fn inheritance_with_disallowed_and_operator_deny() {
    let r = resolve(decl(
        &[
            (
                "builder",
                "---\nname: builder\ntools: [Bash, Write, Read]\n---\n",
            ),
            ("worker", "---\nname: worker\ndisallowedTools: Write\n---\n"),
        ],
        &[],
        &["Bash"],
    ));
    assert!(!r.root.contains("exec.bash"));
    assert_eq!(r.agents["builder"].scopes, set(&["fs.read", "fs.write"]));
    assert_eq!(
        r.agents["worker"].scopes,
        set(&["agent.delegate.builder", "agent.delegate.worker", "fs.read"])
    );
}

#[test]
fn a_bad_agent_holds_nothing_and_others_are_untouched() {
    let r = resolve(decl(
        &[
            ("bad", "---\nname: bad\ntools: 42\n---\n"),
            ("good", "---\nname: good\ntools: Read\n---\n"),
        ],
        &[],
        &[],
    ));
    assert!(r.agents["bad"].scopes.is_empty());
    assert!(r.agents["bad"].invalid.is_some());
    assert_eq!(r.agents["good"].scopes, set(&["fs.read"]));
}

#[test]
fn digest_changes_with_the_declarations() {
    let a = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
    let b = resolve(decl(
        &[("r", "---\nname: r\ntools: Read, Grep\n---\n")],
        &[],
        &[],
    ));
    let a2 = resolve(decl(&[("r", "---\nname: r\ntools: Read\n---\n")], &[], &[]));
    assert_ne!(a.digest, b.digest);
    assert_eq!(a.digest, a2.digest);
}

/// `subtract` by ranges is the filter its definition states.
#[test]
fn subtract_takes_exactly_what_a_pattern_covers() {
    let scopes = set(&[
        "a",
        "a.",
        "a.*",
        "a.b",
        "a.b.c",
        "a.bc",
        "a/",
        "a0",
        "ab.c",
        "mcp.pay.*",
        "mcp.pay.refund",
        "mcp.payx.y",
        "mcp.pay",
        "agent.delegate.x",
        "fs.read",
    ]);
    let patterns: [&[&str]; 7] = [
        &["a.*"],
        &["a.b.*", "fs.read"],
        &["mcp.pay.*"],
        &["mcp.*", "a"],
        &["*", "a.", ".*"],
        &["agent.delegate.*", "zz.*", "a.b"],
        &[],
    ];
    for p in patterns {
        let p = set(p);
        let by_filter: BTreeSet<String> = scopes
            .iter()
            .filter(|s| !set_covers(&p, s))
            .cloned()
            .collect();
        assert_eq!(subtract(&scopes, &p), by_filter, "{p:?}");
    }
}

/// Agents that take the same tools away share one set; others do not.
#[test]
fn equal_denials_share_one_set() {
    let r = resolve(decl(
        &[
            ("a", "---\nname: a\ndisallowedTools: Bash, Write\n---\n"),
            ("b", "---\nname: b\ndisallowedTools: Write, Bash\n---\n"),
            ("c", "---\nname: c\ndisallowedTools: Bash\n---\n"),
            ("d", "---\nname: d\ntools: Read, Write, Bash\n---\n"),
        ],
        &[],
        &[],
    ));
    let (a, b, c) = (
        &r.agents["a"].scopes,
        &r.agents["b"].scopes,
        &r.agents["c"].scopes,
    );
    assert!(a.same(b));
    assert!(!a.same(c) && a != c);
    assert!(c.contains("fs.write") && !c.contains("exec.bash"));
    assert!(!a.contains("fs.write") && a.contains("fs.read"));
}
