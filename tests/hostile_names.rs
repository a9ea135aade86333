//! Hostile names through the real binary: control, bidi and path characters in names,
//! look-alikes of a declared agent type, session ids with path tricks (never a file outside
//! `.attenu/`, never a shared ledger), a YAML alias bomb in one agent file. None of it grants
//! anything. Injection in tool input, tool names and frontmatter is the case
//! `tests/cases/injection-grants-nothing/`.

mod common;
#[path = "support/hostile.rs"]
mod hostile;

use common::*;
use hostile::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Control, bidi, path and other odd characters a name may carry.
const NASTY: &[&str] = &[
    "\u{202e}",
    "\u{0}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{200b}",
    "\u{1b}[2J",
    "\r\n",
    "../",
    "/",
    "\\",
    "..\\..\\",
    "\u{7f}",
    "%00",
    "😀",
];

/// The reviewer's Read with `c` put before, inside or after its tool name or agent type.
fn names_with(c: &str) -> [(&'static str, String); 6] {
    [
        ("tool_name", format!("Read{c}")),
        ("tool_name", format!("{c}Read")),
        ("tool_name", format!("mcp__{c}__Read")),
        ("agent_type", format!("reviewer{c}")),
        ("agent_type", format!("{c}reviewer")),
        ("agent_type", format!("re{c}viewer")),
    ]
}

#[test]
fn control_bidi_and_path_characters_in_names_never_grant() {
    let p = sample("hostile-chars");
    let named = NASTY.iter().flat_map(|c| names_with(c));
    for (n, (field, value)) in named.enumerate() {
        let mut payload = reviewer_read_payload(p.path(), "chars", "/p/a", &format!("t{n}"));
        payload[field] = json!(value);
        let what = format!("{field} = {value:?}");
        let run = run_payload(p.path(), &payload, &what);
        assert!(run.denied(), "{what}: {}", run.stdout);
    }
}

/// The answer is one JSON line however the name was written: no raw control character (NUL,
/// a newline, a terminal escape sequence) reaches the terminal or breaks the line.
#[test]
fn control_characters_in_names_never_reach_the_answer() {
    let p = sample("hostile-chars-answer");
    let agent = Some("Explore\u{2028}\u{1b}[2J\u{202e}");
    let mut payload = pre("chars", p.path(), agent, "Read", json!({}), "tz");
    payload["tool_name"] = json!("Re\u{0}ad\n");
    let run = run_payload(p.path(), &payload, "control characters");
    assert!(run.denied());
    let raw = run.stdout.trim_end().contains(['\u{0}', '\u{1b}', '\n']);
    assert!(
        !raw,
        "raw control characters in the answer: {:?}",
        run.stdout
    );
}

/// `agent` reading `/p/a` with `tool` as `id`, in session `look`, run under the watchdog.
fn look(p: &TempDir, agent: &str, tool: &str, id: &str) -> Run {
    let payload = pre(
        "look",
        p.path(),
        Some(agent),
        tool,
        json!({"file_path": "/p/a"}),
        id,
    );
    run_payload(p.path(), &payload, &format!("agent_type {agent:?}"))
}

#[test]
fn lookalikes_of_a_declared_agent_type_hold_nothing() {
    let p = sample("hostile-lookalike");
    let mut n = 0;
    for (name, tools) in DECLARED {
        // The control: the declared name itself holds its tools.
        assert!(look(&p, name, tools[0], "t").is_allow());
        for variant in lookalikes(name) {
            let run = look(&p, &variant, tools[0], &format!("t{n}"));
            assert!(run.denied(), "{variant:?} was not denied: {}", run.stdout);
            assert!(
                run.reason().contains("[undeclared-agent]"),
                "{variant:?}: {}",
                run.reason()
            );
            n += 1;
        }
    }
    assert!(n >= 40);
}

/// A subagent without a type, or with a null or empty one, holds nothing either.
#[test]
fn a_subagent_without_a_type_holds_nothing() {
    let p = sample("hostile-no-type");
    for ty in [Value::Null, json!("")] {
        let mut payload = pre("look", p.path(), Some("reviewer"), "Read", json!({}), "tn");
        payload["agent_type"] = ty.clone();
        let run = run_payload(p.path(), &payload, "no agent_type");
        assert!(run.denied(), "agent_type {ty}: {}", run.stdout);
        payload.as_object_mut().unwrap().remove("agent_type");
        assert!(run_payload(p.path(), &payload, "absent").denied());
    }
}

/// Every regular file and directory under `dir`, relative to it.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    walk(dir, |_| false)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// Session ids with path tricks: up, absolute (`abs`), home, NUL, bidi, encoded, very long,
/// names of the hook's own files, reserved names, an option.
fn tricky_session_ids(abs: &Path) -> Vec<String> {
    let mut ids: Vec<String> = [
        "../escaped",
        "../../escaped",
        "../../../escaped",
        "..\\..\\escaped",
        "a/../../escaped",
        "/",
        ".",
        "..",
        "./.",
        "~",
        "$HOME",
        "escaped\u{0}.jsonl",
        "../escaped\u{202e}lnosj.",
        "escaped\u{2028}",
        "%2e%2e%2fescaped",
        "..%2fescaped",
        "ledger-x.jsonl",
        "anchor",
        "h.0000",
        "CON",
        "-rf",
    ]
    .map(String::from)
    .to_vec();
    ids.extend([abs.display().to_string(), format!("{}/", abs.display())]);
    ids.extend(["x/".repeat(2000), "../".repeat(5000), "e".repeat(300)]);
    ids
}

/// Each event of session `sid`, the reviewer's Read as `id` (PostToolUse with a tool name
/// that has path tricks too: it names no file either), run in the project at `dir`; the
/// PreToolUse must be allowed.
fn every_event_of(dir: &Path, sid: &str, id: &str) {
    for event in ["PreToolUse", "PostToolUse", "SubagentStop", "SessionEnd"] {
        let mut payload = pre(
            sid,
            dir,
            Some("reviewer"),
            "Read",
            json!({"file_path": "/p/a"}),
            id,
        );
        payload["hook_event_name"] = json!(event);
        payload["tool_response"] = json!({"ok": true});
        if event == "PostToolUse" {
            payload["tool_name"] = json!("../../Read");
        }
        let what = format!("session id {sid:?} ({event})");
        let run = run_payload(dir, &payload, &what);
        assert!(
            event != "PreToolUse" || run.is_allow(),
            "{what}: {}",
            run.stdout
        );
    }
}

#[test]
fn session_ids_with_path_tricks_never_leave_the_state_directory() {
    // The project sits two levels inside a directory of its own, so an escape upwards shows.
    let outer = TempDir::new("hostile-escape");
    let project_dir = outer.path().join("a/project");
    std::fs::create_dir_all(&project_dir).unwrap();
    copy_tree(sample("hostile-escape-src").path(), &project_dir);
    let abs = std::env::temp_dir().join(format!("attenu-escaped-{}", std::process::id()));
    let ids = tricky_session_ids(&abs);
    let before = tree(outer.path());
    for (i, sid) in ids.iter().enumerate() {
        every_event_of(&project_dir, sid, &format!("t{i}"));
    }
    assert!(!abs.exists(), "{} was created", abs.display());
    let prefix = Path::new("a/project/.attenu");
    for p in tree(outer.path()).difference(&before) {
        assert!(
            p.starts_with(prefix),
            "a file outside .attenu/ appeared: {}",
            p.display()
        );
    }
    assert_flat_with_ledgers(&project_dir.join(".attenu"), ids.len());
}

/// Every entry of `attenu` is a plain file (no id made a subdirectory), and `n` of them are
/// ledgers (one per distinct session id).
#[track_caller]
fn assert_flat_with_ledgers(attenu: &Path, n: usize) {
    let entries: Vec<_> = std::fs::read_dir(attenu).unwrap().flatten().collect();
    for e in &entries {
        assert!(
            e.file_type().unwrap().is_file(),
            "{} is not a plain file",
            e.path().display()
        );
    }
    let ledgers = entries
        .iter()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"));
    assert_eq!(ledgers.count(), n, "one ledger per distinct session id");
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A 600-byte YAML "billion laughs" (nine levels of anchors, each alias repeated nine times):
/// `yaml-rust2` clones an anchored node at every alias, so it would expand to about 3.9e9
/// scalars.
fn alias_bomb(levels: usize) -> String {
    let mut s =
        String::from("---\nname: bomb\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..levels {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    s.push_str("tools: Read\n---\nbody\n");
    s
}

/// The README: "One bad agent file affects only that agent, which then holds nothing." An
/// agent file is project content a subagent with Write may create, so one hostile file must not
/// stall or blow up every other agent's calls.
#[test]
fn a_yaml_alias_bomb_in_one_agent_file_stalls_no_other_agent() {
    let p = sample("hostile-bomb");
    std::fs::write(p.path().join(".claude/agents/bomb.md"), alias_bomb(9)).unwrap();
    let read = |agent: &str, id: &str, what: &str| {
        let call = p.subagent(agent, "Read").session("bomb").id(id);
        run_payload(
            p.path(),
            call.input(json!({"file_path": "/p/a"})).payload(),
            what,
        )
    };
    let run = read("reviewer", "t", "reviewer beside a bomb");
    assert!(
        run.is_allow(),
        "reviewer beside an alias bomb: {}",
        run.stdout
    );
    assert!(
        run.elapsed < Duration::from_secs(3),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.peak_rss_kb < 256 * 1024,
        "peak RSS {} kB",
        run.peak_rss_kb
    );
    let run = read("bomb", "t2", "the bomb agent itself");
    assert!(run.denied(), "the bomb agent: {}", run.stdout);
}

#[test]
fn session_ids_never_leave_the_state_directory_or_share_a_ledger() {
    let p = sample("escape");
    let ids = [
        "../../escaped",
        "/etc/passwd",
        "a/b",
        "a_b",
        "..",
        "ABC",
        "abc",
    ];
    for (i, sid) in ids.iter().enumerate() {
        let out = reviewer_read(p.path(), sid, "/x", &format!("t{i}"));
        assert!(out.is_allow(), "{sid}: {}", out.stdout);
    }
    let outside = [
        p.path().join("escaped"),
        p.path().parent().unwrap().join("escaped"),
    ];
    assert!(!outside.iter().any(|f| f.exists()));
    let attenu = std::fs::read_dir(p.path().join(".attenu"))
        .unwrap()
        .flatten();
    let ledgers = attenu.filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"));
    assert_eq!(ledgers.count(), 7, "seven different ids, seven ledgers");
}
