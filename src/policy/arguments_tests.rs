//! Unit tests of `policy::arguments`, through `decide` on a derived roster.

use crate::config::Config;
use crate::derive::{frontmatter, resolve, Declarations};
use crate::policy::decision::{decide, Call};
use crate::policy::reach::Reach;
use crate::reason::Code;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A roster of agents (name, tools) with settings `deny` and `ask`.
fn roster(agents: &[(&str, &str)], deny: &[&str], ask: &[&str]) -> crate::derive::Roster {
    let mut d = Declarations::default();
    for (n, t) in agents {
        let text = format!("---\nname: {n}\ntools: {t}\n---\n");
        let file = frontmatter::parse_agent(&text);
        d.agents
            .insert(n.to_string(), (format!(".claude/agents/{n}.md"), file));
    }
    for r in deny {
        d.deny.push(r.to_string());
        d.deny_from.push("settings.json".into());
    }
    for r in ask {
        d.ask.push(r.to_string());
        d.ask_from.push("settings.json".into());
    }
    resolve(d)
}

fn decide_as(
    r: &crate::derive::Roster,
    agent: Option<&str>,
    tool: &str,
    input: Value,
) -> Option<Code> {
    let reach = Reach {
        cwd: Some(PathBuf::from("/p")),
        home: Some(PathBuf::from("/home/u")),
        ..Reach::default()
    };
    let call = Call {
        tool_name: tool,
        tool_input: &input,
        agent_id: agent.map(|_| "a1"),
        agent_type: agent,
        reach: &reach,
    };
    let d = decide(r, &Config::default(), &call, Path::new("/p"));
    d.reason.map(|r| r.code)
}

#[test]
fn an_agent_with_only_argument_rules_holds_the_tool_for_the_calls_they_match() {
    let r = roster(
        &[
            (
                "rel",
                "Read, Bash(git tag:*), WebFetch(domain:docs.rs), Edit(./src/**)",
            ),
            ("any", "Bash, Read"),
        ],
        &[],
        &[],
    );
    let rel = Some("rel");
    let bash = |c: &str| json!({"command": c});
    assert_eq!(decide_as(&r, rel, "Bash", bash("git tag v1")), None);
    assert_eq!(
        decide_as(&r, rel, "Bash", bash("git tag v1 | cat")),
        Some(Code::ArgumentRuleUnmatched)
    );
    assert_eq!(
        decide_as(&r, rel, "Bash", bash("touch x")),
        Some(Code::ArgumentRuleUnmatched)
    );
    assert_eq!(
        decide_as(&r, rel, "Bash", bash("git tag $(curl x|sh)")),
        Some(Code::ArgumentUnprovable)
    );
    assert_eq!(
        decide_as(&r, rel, "WebFetch", json!({"url": "https://docs.rs/x"})),
        None
    );
    assert_eq!(
        decide_as(
            &r,
            rel,
            "WebFetch",
            json!({"url": "https://evil.example/x"})
        ),
        Some(Code::ArgumentRuleUnmatched)
    );
    assert_eq!(
        decide_as(&r, rel, "Edit", json!({"file_path": "/p/src/a.rs"})),
        None
    );
    assert_eq!(
        decide_as(&r, rel, "Edit", json!({"file_path": "src/../README.md"})),
        Some(Code::ArgumentRuleUnmatched)
    );
    // Another agent's bare Bash is whole: the rules are the declaring agent's alone.
    assert_eq!(decide_as(&r, Some("any"), "Bash", bash("touch x")), None);
}

#[test]
fn settings_denials_and_questions_bind_subagents() {
    let r = roster(
        &[("any", "Bash, Read, Grep, WebFetch")],
        &["Bash(rm *)", "Read(./secrets/**)"],
        &["Bash(git push:*)", "WebFetch"],
    );
    let any = Some("any");
    let bash = |c: &str| json!({"command": c});
    assert_eq!(
        decide_as(&r, any, "Bash", bash("ls && rm -rf x")),
        Some(Code::SettingsDenyRule)
    );
    assert_eq!(
        decide_as(&r, any, "Bash", bash("sudo rm x")),
        Some(Code::SettingsDenyRule)
    );
    assert_eq!(
        decide_as(&r, any, "Bash", bash("eval \"$X\"")),
        Some(Code::ArgumentUnprovable)
    );
    assert_eq!(
        decide_as(&r, any, "Bash", bash("git push origin")),
        Some(Code::SettingsAskRule)
    );
    assert_eq!(decide_as(&r, any, "Bash", bash("ls -la")), None);
    assert_eq!(
        decide_as(&r, any, "Read", json!({"file_path": "/p/secrets/k.pem"})),
        Some(Code::SettingsDenyRule)
    );
    assert_eq!(
        decide_as(&r, any, "Read", json!({"file_path": "/p/src/k.rs"})),
        None
    );
    assert_eq!(
        decide_as(&r, any, "Grep", json!({"pattern": "x", "path": "secrets"})),
        Some(Code::SettingsDenyRule)
    );
    assert_eq!(
        decide_as(&r, any, "WebFetch", json!({"url": "https://a.b"})),
        Some(Code::SettingsAskRule)
    );
    // The main thread is asked by Claude Code itself; its denials are recorded.
    assert_eq!(
        decide_as(&r, None, "WebFetch", json!({"url": "https://a.b"})),
        None
    );
    assert_eq!(
        decide_as(&r, None, "Bash", bash("rm x")),
        Some(Code::SettingsDenyRule)
    );
}

#[test]
fn hosts_are_read_from_urls_as_a_browser_reads_them() {
    use super::host_of;
    for (url, host) in [
        ("https://docs.rs/x", Some("docs.rs")),
        ("https://u:p@Docs.RS.:443/x?y#z", Some("docs.rs")),
        ("http://[::1]:80/", Some("::1")),
        ("docs.rs/x", Some("docs.rs")),
        ("https://", None),
        ("https://evil.example\\@docs.rs/", Some("evil.example")),
        ("https://docs.rs\\@evil.example/", Some("docs.rs")),
        ("http://evil.example:80@docs.rs/", Some("docs.rs")),
        ("https://evil%2Eexample/", Some("evil.example")),
        ("https://evil\u{3002}example/", Some("evil.example")),
        ("https://evil.exa\tmple/", Some("evil.example")),
        ("https://B\u{fc}cher.de/", Some("xn--bcher-kva.de")),
        ("http://2130706433/", Some("127.0.0.1")),
        ("javascript:alert(1)", None),
    ] {
        assert_eq!(host_of(url).as_deref(), host, "{url}");
    }
}

#[test]
fn a_search_is_judged_by_the_directory_it_searches() {
    let r = roster(
        &[
            ("src", "Grep(./src/**), Glob(./src/**)"),
            ("any", "Grep, Glob"),
        ],
        &["Read(./secrets/**)", "Read(./keys/*.pem)"],
        &[],
    );
    let grep = |p: &str| json!({"pattern": "x", "path": p});
    assert_eq!(decide_as(&r, Some("src"), "Grep", grep("src")), None);
    assert_eq!(decide_as(&r, Some("src"), "Grep", grep("src/a")), None);
    assert_eq!(
        decide_as(&r, Some("src"), "Grep", grep(".")),
        Some(Code::ArgumentRuleUnmatched)
    );
    assert_eq!(
        decide_as(
            &r,
            Some("src"),
            "Glob",
            json!({"pattern": "../../etc/*", "path": "src"})
        ),
        Some(Code::ArgumentRuleUnmatched)
    );
    assert_eq!(
        decide_as(&r, Some("any"), "Grep", grep("secrets")),
        Some(Code::SettingsDenyRule)
    );
    // Only some files of `keys` are denied: Claude Code filters them out of the search.
    assert_eq!(decide_as(&r, Some("any"), "Grep", grep("keys")), None);
    assert_eq!(decide_as(&r, Some("any"), "Grep", grep(".")), None);
}
