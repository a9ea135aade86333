//! Derivation: each subagent's authority from `.claude/agents/**/*.md` frontmatter and the
//! settings' `permissions`, as `--derive` prints it and as the hook decides with it.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

#[test]
fn a_project_no_other_test_saw_is_derived_and_decided() {
    let p = project(
        "fresh",
        &[
            ("team/builder.md", "\u{feff}---\r\nname: builder\r\ndescription: builds\r\ntools:\r\n  - Read\r\n  - Bash\r\n  - 'Write'\r\n---\r\n"),
            ("helper.md", "---\nname: helper\ndescription: inherits\ndisallowedTools: [Write, Bash]\n---\n"),
            ("auditor.md", "---\nname: \"auditor\"\ndescription: x\ntools: [Grep, Glob]  # searching only\n---\n"),
            ("broken.md", "---\nname: broken\n  tools: Read\n---\n"),
        ],
        Some(json!({"permissions": {"allow": ["WebSearch", "Bash(git status)"], "deny": ["Read(./secrets/**)"]}})),
    );
    let out = cli(&["--derive", p.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let d: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        d["agents"]["builder"],
        json!(["exec.bash", "fs.read", "fs.write"])
    );
    assert_eq!(
        d["agents"]["helper"],
        json!([
            "agent.delegate.auditor",
            "agent.delegate.broken",
            "agent.delegate.builder",
            "agent.delegate.helper",
            "fs.glob",
            "fs.grep",
            "fs.read",
            "net.search"
        ])
    );
    assert_eq!(d["agents"]["auditor"], json!(["fs.glob", "fs.grep"]));
    assert_eq!(d["agents"]["broken"], json!([]));
    assert!(d["problems"][0].as_str().unwrap().contains("broken"));
    assert!(d["unrepresented"]
        .as_array()
        .unwrap()
        .iter()
        .any(|u| u == "settings permissions.allow Bash(git status)"));
    let decide = |agent: &str, tool: &str| {
        p.subagent(agent, tool)
            .input(json!({"file_path": "/p/x", "command": "ls"}))
            .run()
            .is_allow()
    };
    assert!(decide("builder", "Bash") && decide("builder", "Write"));
    assert!(decide("helper", "Read") && decide("helper", "WebSearch"));
    assert!(!decide("helper", "Write") && !decide("helper", "Bash"));
    assert!(decide("auditor", "Grep") && !decide("auditor", "Read"));
    assert!(
        !decide("broken", "Read"),
        "a broken declaration holds nothing"
    );
}

/// Regression: `disallowedTools: mcp__pay__refund` beside `tools: mcp__pay` (and a settings
/// deny of one tool of an allowed server) was dropped, so the denied tool was allowed.
#[test]
fn a_narrow_denial_under_a_wider_grant_is_enforced_and_recorded() {
    let p = project(
        "narrowdeny",
        &[(
            "ops.md",
            "---\nname: ops\ntools: mcp__pay, Read\ndisallowedTools: mcp__pay__refund\n---\n",
        )],
        Some(json!({"permissions": {"allow": ["mcp__pay"], "deny": ["mcp__pay__wipe"]}})),
    );
    let call = |tool: &str, id: &str| p.subagent("ops", tool).id(id).run();
    assert_allowed(&call("mcp__pay__charge", "t1"));
    for (tool, id, says) in [
        (
            "mcp__pay__refund",
            "t2",
            "`disallowedTools` in .claude/agents/ops.md has mcp__pay__refund",
        ),
        (
            "mcp__pay__wipe",
            "t3",
            "permissions.deny in .claude/settings.json has mcp__pay__wipe",
        ),
    ] {
        let out = call(tool, id);
        assert_denied_with(&out, "out-of-authority");
        assert_denied_saying_all(&out, &["holds only outside a narrower denial", says]);
    }
    // The main thread is recorded, not enforced, by default: what settings deny would be.
    p.main_thread("mcp__pay__wipe").id("t4").run();
    let es = p.entries("s1");
    assert!(
        es.last().unwrap()["context"]["would_deny"]["code"].is_string(),
        "{}",
        es.last().unwrap()
    );
    let spawn = es.iter().find(|e| e["event"] == "spawn").unwrap();
    assert_eq!(
        spawn["context"]["excluded"],
        json!(["mcp.pay.refund", "mcp.pay.wipe"])
    );
    assert_eq!(es[0]["context"]["excluded"], json!(["mcp.pay.wipe"]));
    let derived = cli(&["--derive", p.path().to_str().unwrap(), "--json"]);
    let d: Value = serde_json::from_str(&derived.stdout).unwrap();
    assert_eq!(
        d["excluded"]["agents"]["ops"],
        json!(["mcp.pay.refund", "mcp.pay.wipe"])
    );
}

#[test]
fn one_bad_declaration_never_denies_the_rest_of_the_project() {
    let mut agents: Vec<(String, String)> = (0..20)
        .map(|i| {
            (
                format!("a{i}.md"),
                format!("---\nname: agent-{i}\ntools: Read\n---\n"),
            )
        })
        .collect();
    agents.push((
        "weird.md".into(),
        "---\nname: Weird Name!\ntools: Read, Not A Tool(\n---\n".into(),
    ));
    agents.push((
        "dup.md".into(),
        "---\nname: agent-1\ntools: Bash\n---\n".into(),
    ));
    let refs: Vec<(&str, &str)> = agents
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let p = project("contain", &refs, None);
    assert_allowed(&p.read_by("agent-7", "/x").id("t1").run());
    assert_allowed(&p.read_by("Weird Name!", "/x").id("t2").run());
    assert_allowed(
        &p.main_thread("Read")
            .input(json!({"file_path": "/x"}))
            .id("t3")
            .run(),
    );
    let dup = p.read_by("agent-1", "/x").id("t4").run();
    assert_denied_with(&dup, "agent-declaration-invalid");
}

/// Guards the roster cache and the session's pin: the cache is used once the declarations are
/// settled, and an edit of an agent file, even one that keeps its size, changes nothing in the
/// running session (its roster was pinned when it started, as Claude Code loads its agents
/// then) and takes effect in the very next session.
#[test]
fn an_agent_edit_after_the_roster_was_cached_takes_effect_in_the_next_session() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let p = sample("rostercache");
    // A real project's declarations are older than the two seconds a derivation must settle.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let cache = p.path().join(".attenu/roster.cache");
    let first = std::fs::metadata(&cache).expect("the settled derivation is cached");
    assert_eq!(first.permissions().mode() & 0o777, 0o600);
    let pin = p.path().join(".attenu/roster-s1.pin");
    assert_eq!(
        std::fs::metadata(&pin)
            .expect("the session's roster is pinned")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_allowed(&reviewer_read(p.path(), "s2", "/x", "t2"));
    assert_eq!(
        std::fs::metadata(&cache).unwrap().ino(),
        first.ino(),
        "an unchanged project reads the cache and leaves it alone"
    );
    let agent = p.path().join(".claude/agents/reviewer.md");
    let text = std::fs::read_to_string(&agent).unwrap();
    let edited = text.replace("tools: Read,", "tools: Bash,");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&agent, edited).unwrap();
    // The running sessions keep the roster they started with.
    assert!(p.bash_by("reviewer", "ls").id("t3").run().denied());
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t4"));
    assert_allowed(&reviewer_read(p.path(), "s2", "/x", "t4"));
    // A new session reads the edit.
    assert_allowed(&p.bash_by("reviewer", "ls").id("t5").session("s3").run());
    let out = reviewer_read(p.path(), "s3", "/x", "t6");
    assert!(out.denied(), "Read was taken away: {}", out.stdout);
}

/// The roster cache keeps each agent file's parse under the file's own stamp, so a call after
/// an edit reads only the edited file. Whatever changes (an edit, a new file, a removal, a
/// rename), the chain each call opens is for the roster `--derive` derives from the files
/// alone, before the change has settled and after.
#[test]
fn an_incremental_derivation_is_the_one_from_the_files() {
    let mut agents: Vec<(String, String)> = (0..24)
        .map(|i| {
            let rest = match i % 4 {
                0 => "tools: Read, Grep".to_string(),
                1 => "disallowedTools: Bash".to_string(),
                2 => format!("tools: Read, Agent(a{})", (i + 1) % 24),
                _ => "model: inherit".to_string(),
            };
            (
                format!("team/a{i}.md"),
                format!("---\nname: a{i}\ndescription: x\n{rest}\n---\nbody\n"),
            )
        })
        .collect();
    agents.push(("b.md".into(), "---\nname: b\ntools: Read\n---\n".into()));
    let files: Vec<(&str, &str)> = agents
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    let p = project(
        "incremental",
        &files,
        Some(json!({"permissions": {"allow": ["Read"]}})),
    );
    let dir = p.path().join(".claude/agents");
    let settle = || std::thread::sleep(std::time::Duration::from_millis(2100));
    // The chain of the session's latest call is for the roster derived from the files now.
    // Each check is a new session: a running one keeps the roster it was pinned to.
    let mut n = 0;
    let mut agrees = |what: &str| {
        n += 1;
        let session = format!("s{n}");
        assert_allowed(
            &p.read_by("b", "/p/x")
                .id(&format!("t{n}"))
                .session(&session)
                .run(),
        );
        let out = cli(&["--derive", p.path().to_str().unwrap(), "--json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let derived: Value = serde_json::from_str(&out.stdout).unwrap();
        let es = p.entries(&session);
        let root = of_event(&es, "root").last().copied().unwrap().clone();
        assert_eq!(root["context"]["digest"], derived["digest"], "{what}");
    };
    settle();
    agrees("settled: the roster and the table are cached");
    assert!(p.path().join(".attenu/roster.cache").exists());
    let edit = |f: &str, from: &str, to: &str| {
        let path = dir.join(f);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{f}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    };
    edit("team/a0.md", "tools: Read, Grep", "tools: Bash, Grep");
    agrees("an edit, not settled");
    assert_allowed(&p.bash_by("a0", "ls").id("x1").session("s2").run());
    assert_denied_with(
        &p.read_by("a0", "/p/x").id("x2").session("s2").run(),
        "out-of-authority",
    );
    settle();
    agrees("the edit, settled");
    edit(
        "team/a1.md",
        "disallowedTools: Bash",
        "disallowedTools: Read",
    );
    std::fs::write(dir.join("c.md"), "---\nname: c\ntools: Glob\n---\n").unwrap();
    std::fs::remove_file(dir.join("team/a3.md")).unwrap();
    std::fs::rename(dir.join("team/a2.md"), dir.join("moved.md")).unwrap();
    agrees("an edit, an addition, a removal and a rename, not settled");
    settle();
    agrees("the same, settled");
    // Two files swapped, each under the other's name: both are read again.
    std::fs::rename(dir.join("team/a4.md"), dir.join("tmp")).unwrap();
    std::fs::rename(dir.join("team/a6.md"), dir.join("team/a4.md")).unwrap();
    std::fs::rename(dir.join("tmp"), dir.join("team/a6.md")).unwrap();
    agrees("two files swapped");
    settle();
    agrees("two files swapped, settled");
    // A file that no longer parses holds nothing, as the files say.
    edit("team/a8.md", "tools: Read, Grep", "tools: {Read: yes}");
    agrees("a broken file");
    assert_denied_with(
        &p.read_by("a8", "/p/x").id("x3").session("s8").run(),
        "agent-declaration-invalid",
    );
}

/// Regression: an agent file reached by two paths (a symlink beside it) was "declared
/// twice" and held nothing; Claude Code loads it once.
#[test]
fn an_agent_file_reached_through_a_symlink_is_one_declaration() {
    let p = project(
        "agentlink",
        &[("rev.md", "---\nname: rev\ntools: Read\n---\n")],
        None,
    );
    let agents = p.path().join(".claude/agents");
    std::os::unix::fs::symlink(agents.join("rev.md"), agents.join("link.md")).unwrap();
    let out = p.read_by("rev", "/p/a").id("t1").run();
    assert_allowed(&out);
    // Two files with one name are still refused.
    std::fs::remove_file(agents.join("link.md")).unwrap();
    std::fs::write(agents.join("copy.md"), "---\nname: rev\ntools: Read\n---\n").unwrap();
    let out = p.read_by("rev", "/p/a").id("t2").session("s2").run();
    assert_denied_saying(&out, "declared twice");
}

/// What `--derive --human` prints, pinned: the session root, each agent's scopes, what is left
/// to Claude Code, and a declaration that holds nothing and why.
#[test]
fn derive_human_is_pinned() {
    let p = ProjectBuilder::new("derive-human")
        .agent("reviewer", "description: reviews\ntools: Read, Grep, Glob")
        .agent("researcher", "tools: Read, WebFetch\ndisallowedTools: Write, Edit")
        .agent("ops", "tools: Bash(git status), mcp__pay")
        .agent_file("broken.md", "---\nname: broken\n  tools: Read\n---\n")
        .settings(json!({"permissions": {"allow": ["Read", "Grep", "Glob", "WebFetch", "mcp__pay", "Bash(npm run lint)"], "deny": ["Read(./.env)", "NotebookEdit"]}}))
        .build();
    let out = cli_with(
        &["--derive", p.dir(), "--human"],
        &[("COLUMNS", Path::new("100"))],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_snapshot(
        "derive-human.txt",
        &mask(&out.stdout, &[(p.dir(), "<project>")]),
    );
}

/// Each way a subagent can lack a tool, through the binary: the deny names the one change
/// that would allow the call, with the file to make it in, and the original name of a scope
/// that had to be encoded.
#[test]
fn each_deny_names_the_one_change_that_would_allow_it() {
    let p = ProjectBuilder::new("hints")
        .agent("helper", "description: inherits\ndisallowedTools: Grep")
        .agent("lister", "tools: Read")
        .agent_file(
            "pse.md",
            "---\nname: Python Security Expert\ntools: Read\n---\n",
        )
        .settings(json!({"permissions": {"allow": ["Glob"], "deny": ["WebFetch"]}}))
        .build();
    let table: &[(&str, &str, Value, &str, &[&str])] = &[
        (
            "helper",
            "Bash",
            json!({"command": "ls"}),
            "unresolved",
            &[
                "it inherits the session pool (.claude/agents/helper.md gives it no `tools` list)",
                "add Bash to permissions.allow in .claude/settings.json",
                "or give it a `tools:` line in .claude/agents/helper.md that lists Bash",
            ],
        ),
        (
            "helper",
            "Grep",
            json!({"pattern": "x"}),
            "unresolved",
            &[
                "`disallowedTools` in .claude/agents/helper.md has Grep",
                "remove Grep from disallowedTools there",
                "; and it inherits the session pool",
                "add Grep to permissions.allow",
            ],
        ),
        (
            "lister",
            "Glob",
            json!({"pattern": "*"}),
            "out-of-authority",
            &["its `tools` in .claude/agents/lister.md does not list Glob", "add Glob to that agent's `tools` there"],
        ),
        (
            "lister",
            "WebFetch",
            json!({"url": "https://x"}),
            "unresolved",
            &["permissions.deny in .claude/settings.json has WebFetch, which denies it to the whole session"],
        ),
        (
            "lister",
            "MultiEdit",
            json!({}),
            "unresolved",
            &["MultiEdit needs tool.x---4dulti-45dit (MultiEdit)", "add MultiEdit to that agent's `tools`"],
        ),
        (
            "lister",
            "Agent",
            json!({"subagent_type": "Python Security Expert", "prompt": "x"}),
            "out-of-authority",
            &[
                "agent.delegate.x---50ython-20-53ecurity-20-45xpert (Python Security Expert)",
                "add Agent(Python Security Expert) to that agent's `tools`",
            ],
        ),
    ];
    for (i, (agent, tool, input, code, texts)) in table.iter().enumerate() {
        let out = p
            .subagent(agent, tool)
            .input(input.clone())
            .id(&format!("t{i}"))
            .run();
        assert_denied_with(&out, code);
        assert_denied_saying_all(&out, texts);
    }
    assert_allowed(
        &p.subagent("helper", "Glob")
            .input(json!({"pattern": "*"}))
            .id("ok")
            .run(),
    );
    // The log shows the encoded scope with the name as written.
    let log = cli(&["log", "--project", p.dir()]);
    assert_eq!(log.code, 0, "{}", log.stderr);
    assert_contains(&log.stdout, &["tool.x---4dulti-45dit (MultiEdit)"]);
}

/// `[derive] session_pool` is what an agent without `tools` holds: no longer what an unrelated
/// agent file lists, still minus `permissions.deny`, and a deny names the key to change. A bad
/// entry denies every call, naming the key.
#[test]
fn a_configured_session_pool_is_what_inheriting_agents_hold() {
    let p = ProjectBuilder::new("pool")
        .agent("helper", "description: inherits")
        .agent("payer", "tools: mcp__pay, Read")
        .settings(json!({"permissions": {"allow": ["Glob"], "deny": ["Grep"]}}))
        .config("[derive]\nsession_pool = [\"Read\", \"Grep\", \"Bash(git *)\"]\n")
        .build();
    let call = |agent: &str, tool: &str, input: Value, id: &str| {
        p.subagent(agent, tool).input(input).id(id).run()
    };
    assert_allowed(&call("helper", "Read", json!({"file_path": "/x"}), "t1"));
    assert_allowed(&call(
        "helper",
        "Bash",
        json!({"command": "git status"}),
        "t2",
    ));
    let mcp = call("helper", "mcp__pay__charge", json!({}), "t3");
    assert_denied_with(&mcp, "out-of-authority");
    assert_denied_saying(
        &mcp,
        "[derive] session_pool in .attenu/config.toml names without mcp__pay__charge; add mcp__pay__charge to session_pool there",
    );
    let glob = call("helper", "Glob", json!({"pattern": "*"}), "t4");
    assert_denied_saying(&glob, "names without Glob");
    assert_denied_saying(
        &call("helper", "Grep", json!({"pattern": "x"}), "t5"),
        "permissions.deny in .claude/settings.json has Grep",
    );
    assert_allowed(&call("payer", "mcp__pay__charge", json!({}), "t6"));
    let derived = cli(&["--derive", "--json", p.dir()]);
    assert_eq!(derived.code, 0, "{}", derived.stderr);
    let d: Value = serde_json::from_str(&derived.stdout).unwrap();
    assert_eq!(d["agents"]["helper"], json!(["exec.bash", "fs.read"]));
    // The pool's `Bash(git *)` is Bash under that rule, for every agent that inherits it.
    assert_eq!(d["rules"]["agents"]["helper"], json!(["Bash(git *)"]));
    assert_denied_with(
        &call("helper", "Bash", json!({"command": "touch x"}), "t6b"),
        "argument-rule-unmatched",
    );
    // A bad value fails closed, naming the key.
    write_config(p.path(), "[derive]\nsession_pool = [\"*\"]\n");
    let bad = call("payer", "Read", json!({"file_path": "/x"}), "t7");
    assert_denied_with(&bad, "config-invalid");
    assert_denied_saying(&bad, "[derive] session_pool has '*'");
}

/// The pool is part of the roster cache's key: changing it takes effect in the next session
/// even when the files are settled and the roster is cached (a running session keeps the
/// roster it was pinned to, the pool included).
#[test]
fn a_session_pool_edit_takes_effect_with_a_cached_roster() {
    let p = ProjectBuilder::new("poolcache")
        .agent("helper", "description: inherits")
        .agent("other", "tools: Read, Bash")
        .build();
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_allowed(&p.bash_by("helper", "ls").id("t1").run());
    assert!(p.path().join(".attenu/roster.cache").exists());
    write_config(p.path(), "[derive]\nsession_pool = [\"Read\"]\n");
    assert_allowed(&p.bash_by("helper", "ls").id("t2").run());
    // `other` lists Bash, which no longer reaches `helper` in a new session.
    assert_denied_with(
        &p.bash_by("helper", "ls").id("t2").session("s2").run(),
        "out-of-authority",
    );
    assert_allowed(&p.read_by("helper", "/x").id("t3").session("s2").run());
}

/// A large roster where most agents inherit: `--derive --human` groups them by what they hold,
/// summarizes delegation, keeps to the width, and shows encoded names as written.
#[test]
fn derive_human_groups_a_large_roster_and_fits_the_width() {
    let mut b = ProjectBuilder::new("derive-big")
        .agent("noshell", "description: x\ndisallowedTools: Bash")
        .agent("lister", "tools: Read, Grep, MultiEdit, Agent(helper-0)")
        .agent_file(
            "pse.md",
            "---\nname: Python Security Expert\ntools: Read, mcp__GitHub__CreateIssue\n---\n",
        )
        .settings(
            json!({"permissions": {"allow": ["Read", "Bash", "Glob"], "deny": ["WebFetch"]}}),
        );
    for i in 0..40 {
        b = b.agent(&format!("helper-{i}"), "description: inherits");
    }
    let p = b.build();
    let out = cli_with(
        &["--derive", p.dir(), "--human"],
        &[("COLUMNS", Path::new("80"))],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = mask(&out.stdout, &[(p.dir(), "<project>")]);
    assert!(
        text.lines().all(|l| l.chars().count() <= 80),
        "a line is wider than COLUMNS:\n{text}"
    );
    assert!(text.lines().count() < 50, "{text}");
    assert!(!text.contains('\x1b'), "no colour off a terminal");
    assert_snapshot("derive-human-inherit.txt", &text);
    let json = cli(&["--derive", "--json", p.dir()]);
    let d: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(d["inheritance"]["inheriting"].as_array().unwrap().len(), 41);
    assert_eq!(
        d["inheritance"]["pool"]["fs.read"]["allow"],
        json!([".claude/settings.json"])
    );
    assert_eq!(d["names"]["tool.x---4dulti-45dit"], "MultiEdit");
    assert_eq!(
        d["names"]["agent.delegate.x---50ython-20-53ecurity-20-45xpert"],
        "Python Security Expert"
    );
}

/// `doctor` names the agents that inherit, what the pool holds and why, and warns where that
/// surprises: an empty pool, or an entry only another agent's file lists.
#[test]
fn doctor_explains_inheritance() {
    let line = |p: &TempDir| {
        let out = cli(&["doctor", p.path().to_str().unwrap()]);
        out.stdout
            .lines()
            .find(|l| l.contains(" inherit "))
            .unwrap_or_else(|| panic!("no inherit check:\n{}", out.stdout))
            .to_string()
    };
    let empty = ProjectBuilder::new("doc-empty")
        .agent("a", "description: x")
        .agent("b", "description: y")
        .build();
    let l = line(&empty);
    assert!(l.starts_with("warn"), "{l}");
    assert_contains(
        &l,
        &[
            "2 agent(s) without a `tools` list (a, b)",
            "empty session pool",
            "permissions.allow",
        ],
    );
    let borrowed = ProjectBuilder::new("doc-borrowed")
        .agent("helper", "description: x")
        .agent("payer", "tools: mcp__pay")
        .settings(json!({"permissions": {"allow": ["Read"]}}))
        .build();
    let l = line(&borrowed);
    assert!(l.starts_with("warn"), "{l}");
    assert_contains(&l, &["mcp.pay.* (tools of payer)", "[derive] session_pool"]);
    let written = ProjectBuilder::new("doc-written")
        .agent("helper", "description: x")
        .agent("payer", "tools: mcp__pay")
        .config("[derive]\nsession_pool = [\"Read\", \"Grep\"]\n")
        .build();
    let l = line(&written);
    assert!(l.starts_with("ok"), "{l}");
    assert_contains(&l, &["from [derive] session_pool): fs.grep, fs.read"]);
    // Nothing is said when every agent lists its tools.
    let out = cli(&["doctor", sample("doc-none").path().to_str().unwrap()]);
    assert!(!out.stdout.contains(" inherit "), "{}", out.stdout);
}
