//! Derivation: each subagent's authority from `.claude/agents/**/*.md` frontmatter and the
//! settings' `permissions`, as `--derive` prints it and as the hook decides with it: the
//! roster cache and its settling, `--derive --human`, `doctor` on inheritance. What a
//! project's files derive to and decide is mostly data under `tests/cases/` (a fresh project,
//! a narrow denial, a broken declaration, an agent file through a link, each deny's remedy,
//! a configured session pool).

mod common;
use common::project_kit::*;
use common::*;
use serde_json::json;

/// Guards the roster cache and the session's pin: the cache is used once the declarations are
/// settled, and an edit of an agent file, even one that keeps its size, changes nothing in the
/// running session (its roster was pinned when it started, as Claude Code loads its agents
/// then) and takes effect in the very next session.
#[test]
fn an_agent_edit_after_the_roster_was_cached_takes_effect_in_the_next_session() {
    use std::os::unix::fs::MetadataExt;
    let p = sample("rostercache");
    settle(); // a real project's declarations are older than the settling time
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t1"));
    let cache = p.path().join(".attenu/roster.cache");
    let inode = std::fs::metadata(&cache)
        .expect("the settled derivation is cached")
        .ino();
    assert_eq!(mode_of(&cache), 0o600);
    assert_eq!(mode_of(&p.path().join(".attenu/roster-s1.pin")), 0o600);
    assert_allowed(&reviewer_read(p.path(), "s2", "/x", "t2"));
    let unchanged = std::fs::metadata(&cache).unwrap().ino();
    assert_eq!(
        unchanged, inode,
        "an unchanged project reads the cache and leaves it alone"
    );
    let agent = p.path().join(".claude/agents/reviewer.md");
    edit_file(&agent, "tools: Read,", "tools: Bash,"); // the same size
                                                       // The running sessions keep the roster they started with; a new session reads the edit.
    assert!(p.bash_by("reviewer", "ls").id("t3").run().denied());
    assert_allowed(&reviewer_read(p.path(), "s1", "/x", "t4"));
    assert_allowed(&reviewer_read(p.path(), "s2", "/x", "t4"));
    assert_allowed(&p.bash_by("reviewer", "ls").id("t5").session("s3").run());
    assert!(
        reviewer_read(p.path(), "s3", "/x", "t6").denied(),
        "Read was taken away"
    );
}

/// 24 agent files of four kinds in a subfolder, and one beside it.
fn incremental_project() -> TempDir {
    let mut agents: Vec<(String, String)> = (0..24)
        .map(|i| {
            let rest = match i % 4 {
                0 => "tools: Read, Grep".to_string(),
                1 => "disallowedTools: Bash".to_string(),
                2 => format!("tools: Read, Agent(a{})", (i + 1) % 24),
                _ => "model: inherit".to_string(),
            };
            let text = format!("---\nname: a{i}\ndescription: x\n{rest}\n---\nbody\n");
            (format!("team/a{i}.md"), text)
        })
        .collect();
    agents.push(("b.md".into(), "---\nname: b\ntools: Read\n---\n".into()));
    let settings = json!({"permissions": {"allow": ["Read"]}});
    project_of("incremental", &agents, Some(settings))
}

/// The roster cache keeps each agent file's parse under the file's own stamp, so a call after
/// an edit reads only the edited file. Whatever changes (an edit, a new file, a removal, a
/// rename), the chain each call opens is for the roster `--derive` derives from the files
/// alone, before the change has settled and after.
#[test]
fn an_incremental_derivation_is_the_one_from_the_files() {
    let p = incremental_project();
    let dir = p.path().join(".claude/agents");
    // The chain of the session's latest call is for the roster derived from the files now.
    // Each check is a new session: a running one keeps the roster it was pinned to.
    let mut n = 0;
    let mut agrees = |what: &str| {
        n += 1;
        let session = format!("s{n}");
        let call = p
            .read_by("b", "/p/x")
            .id(&format!("t{n}"))
            .session(&session);
        assert_allowed(&call.run());
        let es = p.entries(&session);
        let root = of_event(&es, "root").last().copied().unwrap().clone();
        assert_eq!(
            root["context"]["digest"],
            derive_json(p.dir())["digest"],
            "{what}"
        );
    };
    settle();
    agrees("settled: the roster and the table are cached");
    assert!(p.path().join(".attenu/roster.cache").exists());
    edit_file(
        &dir.join("team/a0.md"),
        "tools: Read, Grep",
        "tools: Bash, Grep",
    );
    agrees("an edit, not settled");
    assert_allowed(&p.bash_by("a0", "ls").id("x1").session("s2").run());
    let read = p.read_by("a0", "/p/x").id("x2").session("s2").run();
    assert_denied_with(&read, "out-of-authority");
    settle();
    agrees("the edit, settled");
    edit_file(
        &dir.join("team/a1.md"),
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
    edit_file(
        &dir.join("team/a8.md"),
        "tools: Read, Grep",
        "tools: {Read: yes}",
    );
    agrees("a broken file");
    let broken = p.read_by("a8", "/p/x").id("x3").session("s8").run();
    assert_denied_with(&broken, "agent-declaration-invalid");
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
    assert_snapshot("derive-human.txt", &derive_human(p.dir(), "100"));
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
    settle();
    assert_allowed(&p.bash_by("helper", "ls").id("t1").run());
    assert!(p.path().join(".attenu/roster.cache").exists());
    write_config(p.path(), "[derive]\nsession_pool = [\"Read\"]\n");
    assert_allowed(&p.bash_by("helper", "ls").id("t2").run());
    // `other` lists Bash, which no longer reaches `helper` in a new session.
    let bash = p.bash_by("helper", "ls").id("t2").session("s2").run();
    assert_denied_with(&bash, "out-of-authority");
    assert_allowed(&p.read_by("helper", "/x").id("t3").session("s2").run());
}

/// Forty inheriting helpers beside three agents that list their tools.
fn large_roster() -> TempDir {
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
    b.build()
}

/// A large roster where most agents inherit: `--derive --human` groups them by what they hold,
/// summarizes delegation, keeps to the width, and shows encoded names as written.
#[test]
fn derive_human_groups_a_large_roster_and_fits_the_width() {
    let p = large_roster();
    let text = derive_human(p.dir(), "80");
    let wide = text.lines().any(|l| l.chars().count() > 80);
    assert!(!wide, "a line is wider than COLUMNS:\n{text}");
    assert!(text.lines().count() < 50, "{text}");
    assert!(!text.contains('\x1b'), "no colour off a terminal");
    assert_snapshot("derive-human-inherit.txt", &text);
    let d = derive_json(p.dir());
    assert_eq!(d["inheritance"]["inheriting"].as_array().unwrap().len(), 41);
    let pool_read = &d["inheritance"]["pool"]["fs.read"]["allow"];
    assert_eq!(pool_read, &json!([".claude/settings.json"]));
    assert_eq!(d["names"]["tool.x---4dulti-45dit"], "MultiEdit");
    let pse = &d["names"]["agent.delegate.x---50ython-20-53ecurity-20-45xpert"];
    assert_eq!(pse, "Python Security Expert");
}

/// `doctor`'s inherit line for a project of two agents, `a` (`a_text` after `name:`) and
/// `b`, with these settings and configuration.
fn inherit_line(
    tag: &str,
    agents: [(&str, &str); 2],
    settings: Option<&str>,
    config: &str,
) -> String {
    let mut b = ProjectBuilder::new(tag);
    if !config.is_empty() {
        b = b.config(config);
    }
    for (name, frontmatter) in agents {
        b = b.agent(name, frontmatter);
    }
    if let Some(allow) = settings {
        b = b.settings(json!({"permissions": {"allow": [allow]}}));
    }
    doctor_line(b.build().dir(), " inherit ")
}

/// `doctor` names the agents that inherit, what the pool holds and why, and warns where that
/// surprises: an empty pool, or an entry only another agent's file lists.
#[test]
fn doctor_explains_inheritance() {
    let l = inherit_line(
        "doc-empty",
        [("a", "description: x"), ("b", "description: y")],
        None,
        "",
    );
    assert!(l.starts_with("warn"), "{l}");
    let says = [
        "2 agent(s) without a `tools` list (a, b)",
        "empty session pool",
        "permissions.allow",
    ];
    assert_contains(&l, &says);
    let agents = [("helper", "description: x"), ("payer", "tools: mcp__pay")];
    let l = inherit_line("doc-borrowed", agents, Some("Read"), "");
    assert!(l.starts_with("warn"), "{l}");
    assert_contains(&l, &["mcp.pay.* (tools of payer)", "[derive] session_pool"]);
    let pool = "[derive]\nsession_pool = [\"Read\", \"Grep\"]\n";
    let l = inherit_line("doc-written", agents, None, pool);
    assert!(l.starts_with("ok"), "{l}");
    assert_contains(&l, &["from [derive] session_pool): fs.grep, fs.read"]);
    // Nothing is said when every agent lists its tools.
    let out = cli(&["doctor", sample("doc-none").path().to_str().unwrap()]);
    assert!(!out.stdout.contains(" inherit "), "{}", out.stdout);
}
