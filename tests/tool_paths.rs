//! Self-protection for every tool's file names, not only the built-in file tools' `file_path`:
//! an MCP server's `path`, `paths`, `source`/`destination`, a resource's `file://` URI, the
//! LSP tool's `filePath`, nested objects and arrays, relative names joined to the call's
//! `cwd`, links followed. Each case is one real hook process on real files; a newcomer adds a
//! row to a table. (The built-in tools' spellings are in tests/path_reach.rs.)

mod common;
use common::harness;
use common::*;
use serde_json::{json, Value};
use std::os::unix::fs::symlink;

const TOOLS: &str = "Read, mcp__filesystem, ReadMcpResourceTool, LSP, mcp__db__query";

/// A project whose `ops` holds the filesystem server, resources and LSP, with its state made,
/// a link into the state (`docs/state`) and one to the agent file (`docs/me.md`).
fn project(tag: &str) -> TempDir {
    let p = ProjectBuilder::new(tag)
        .agent("ops", &format!("tools: {TOOLS}"))
        .build();
    let root = p.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/readme.md"), "hi").unwrap();
    assert_allowed(&p.read_by("ops", "docs/readme.md").run());
    assert!(root.join(".attenu/anchor.key").is_file());
    symlink(root.join(".attenu"), root.join("docs/state")).unwrap();
    symlink(root.join(".claude/agents/ops.md"), root.join("docs/me.md")).unwrap();
    p
}

fn refused(out: &Out) -> bool {
    out.denied() && out.reason().contains("[self-protection]")
}

/// Calls that reach the hook's files: `{r}` is the project root, `{u}` its `file://` form.
const REFUSED: &[(&str, &str)] = &[
    // The red team's calls: the key read, the agent file, the configuration and the local
    // settings rewritten through an MCP filesystem server.
    (
        "mcp__filesystem__read_text_file",
        r#"{"path": "{r}/.attenu/anchor.key"}"#,
    ),
    (
        "mcp__filesystem__read_text_file",
        r#"{"path": ".attenu/anchor.key"}"#,
    ),
    (
        "mcp__filesystem__read_file",
        r#"{"path": "docs/state/anchor.key"}"#,
    ),
    (
        "mcp__filesystem__write_file",
        r#"{"path": "{r}/.claude/agents/ops.md", "content": "x"}"#,
    ),
    (
        "mcp__filesystem__write_file",
        r#"{"path": "docs/me.md", "content": "x"}"#,
    ),
    (
        "mcp__filesystem__write_file",
        r#"{"path": ".attenu/config.toml", "content": "mode = \"observe\""}"#,
    ),
    (
        "mcp__filesystem__write_file",
        r#"{"path": ".claude/settings.local.json", "content": "{}"}"#,
    ),
    (
        "mcp__filesystem__edit_file",
        r#"{"path": "./.CLAUDE/Settings.json", "edits": []}"#,
    ),
    (
        "mcp__filesystem__move_file",
        r#"{"source": "docs/readme.md", "destination": ".claude/agents/new.md"}"#,
    ),
    (
        "mcp__filesystem__read_multiple_files",
        r#"{"paths": ["docs/readme.md", "docs/state/anchor.key"]}"#,
    ),
    (
        "mcp__filesystem__list_directory",
        r#"{"path": "/proc/self/cwd/.attenu"}"#,
    ),
    (
        "mcp__filesystem__read_text_file",
        r#"{"path": "/proc/self/fd/3"}"#,
    ),
    // Nested: an array of objects, a relative name under the tool's own `cwd`.
    (
        "mcp__db__query",
        r#"{"sql": "select 1", "attach": [{"file": "docs/state/ledger.db"}]}"#,
    ),
    (
        "mcp__db__query",
        r#"{"cwd": "{r}/.attenu", "file": "x.db"}"#,
    ),
    (
        "mcp__db__query",
        r#"{"options": {"output": {"targetPath": ".claude/hooks/x.sh"}}}"#,
    ),
    ("mcp__db__query", r#"{"q": "{r}/.attenu/anchor.key"}"#),
    // Resources and LSP.
    (
        "ReadMcpResourceTool",
        r#"{"server": "fs", "uri": "{u}/.attenu/anchor.key"}"#,
    ),
    (
        "ReadMcpResourceTool",
        r#"{"server": "fs", "uri": "{u}/docs/state/anchor%2Ekey"}"#,
    ),
    (
        "LSP",
        r#"{"operation": "hover", "filePath": "docs/state/config.toml", "line": 1, "character": 1}"#,
    ),
];

/// Calls that name no guarded file, or only read the wiring: allowed.
const ALLOWED: &[(&str, &str)] = &[
    (
        "mcp__filesystem__read_text_file",
        r#"{"path": "docs/readme.md"}"#,
    ),
    (
        "mcp__filesystem__write_file",
        r#"{"path": "{r}/docs/new.md", "content": "x"}"#,
    ),
    (
        "mcp__filesystem__read_multiple_files",
        r#"{"paths": ["docs/readme.md", "{r}/docs/x"]}"#,
    ),
    (
        "mcp__db__query",
        r#"{"sql": "select '.attenu is a word here'"}"#,
    ),
    (
        "ReadMcpResourceTool",
        r#"{"server": "fs", "uri": "{u}/docs/readme.md"}"#,
    ),
    (
        "ReadMcpResourceTool",
        r#"{"server": "web", "uri": "https://example.com/.claude/x"}"#,
    ),
    // Reading the declarations or settings is harmless to a tool that only reads.
    (
        "LSP",
        r#"{"operation": "hover", "filePath": ".claude/agents/ops.md", "line": 1, "character": 1}"#,
    ),
];

fn fill(template: &str, root: &str) -> Value {
    let text = template
        .replace("{r}", root)
        .replace("{u}", &format!("file://{root}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn any_tools_file_names_are_judged_by_the_file_they_reach() {
    let p = project("tool-paths");
    let r = p.path().display().to_string();
    for (tool, input) in REFUSED {
        let input = fill(input, &r);
        let out = p.subagent("ops", tool).input(input.clone()).run();
        assert!(refused(&out), "{tool} {input}: {}", out.stdout);
    }
    for (tool, input) in ALLOWED {
        let input = fill(input, &r);
        let out = p.subagent("ops", tool).input(input.clone()).run();
        assert!(out.is_allow(), "{tool} {input}: {}", out.stdout);
    }
}

/// Relative names are joined to the payload's `cwd`, not only the project's.
fn a_relative_name_is_taken_from_the_calls_cwd() {
    let p = project("tool-paths-cwd");
    let docs = p.path().join("docs").display().to_string();
    let out = p
        .subagent("ops", "mcp__filesystem__read_text_file")
        .input(json!({"path": "state/anchor.key"}))
        .with("cwd", json!(docs))
        .run();
    assert!(refused(&out), "{}", out.stdout);
}

/// More names, or deeper nesting, than are examined: refused, not waved through.
fn arguments_past_the_bounds_are_refused() {
    let p = project("tool-paths-bounds");
    let many: Vec<String> = (0..65).map(|i| format!("docs/f{i}")).collect();
    let mut deep = json!({"path": "docs/readme.md"});
    for _ in 0..40 {
        deep = json!([deep]);
    }
    for input in [json!({ "paths": many }), json!({ "batch": deep })] {
        let out = p
            .subagent("ops", "mcp__filesystem__read_multiple_files")
            .input(input)
            .run();
        assert!(refused(&out), "{}", out.stdout);
        assert!(out.reason().contains("more files"), "{}", out.reason());
    }
}

/// The main thread is not held to self-protection (the operator's own session).
fn the_main_thread_is_not_judged() {
    let p = project("tool-paths-main");
    let out = p
        .main_thread("mcp__filesystem__read_text_file")
        .input(json!({"path": ".attenu/config.toml"}))
        .run();
    assert!(!refused(&out), "{}", out.stdout);
}

fn main() {
    harness::run(tests![
        any_tools_file_names_are_judged_by_the_file_they_reach,
        a_relative_name_is_taken_from_the_calls_cwd,
        arguments_past_the_bounds_are_refused,
        the_main_thread_is_not_judged,
    ]);
}
