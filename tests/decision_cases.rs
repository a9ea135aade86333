//! Decision cases as data: every directory under `tests/cases/` is one case, run through the
//! real binary one hook process per event, as Claude Code runs it. A case holds
//!
//! - `project/`: the project, copied to a temporary directory (`.claude/agents/*.md`,
//!   `.claude/settings.json`, `.attenu/config.toml`, `.attenu/revoke`, ...);
//! - `events.jsonl`: the hook payloads to send, in order, one a line (`#` lines are comments);
//!   the driver fills what a line leaves out (see [`complete`]) and writes the project's
//!   directory where a string says `$PROJECT`; a line may instead be a step between events
//!   (write or remove a project file, make a link, run an `attenu-hook` command: see
//!   `tests/common/case_steps.rs`), and `"whole_answer": true` on an event (not sent) shows
//!   the whole reason of its answer, the remedy too;
//! - `admin.toml` (optional): the administrator's machine-wide configuration layer; without
//!   it the hook reads none (not `/etc/attenu-hook/config.toml` of the machine running it);
//! - `expected.txt`: what the hook answered to each event (and what each step did), then each
//!   session's ledger, one line an entry (see `tests/common/case_view.rs` for what a line shows).
//!
//! A mismatch prints a diff. `UPDATE_CASES=1 cargo test --test decision_cases` writes every
//! case's `expected.txt` from what the binary answered instead (review the diff);
//! `ATTENU_CASE=NAME` runs only the cases whose name contains NAME. tests/README.md says how
//! to add a case.

mod common;
use common::case_steps::{run_step, step, Step};
use common::case_view::{answer_line, ledger_view, whole_answer_line};
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

/// What a case directory may hold: a misspelt name is an error, not a file ignored.
const CASE_FILES: &[&str] = &["project", "events.jsonl", "admin.toml", "expected.txt"];

/// The case directories under `dir`, sorted; an error when there are none, or when one lacks
/// `project/` or `events.jsonl`: a missing case never passes silently.
fn case_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cases: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    if cases.is_empty() {
        return Err(format!("{} holds no case", dir.display()));
    }
    for case in &cases {
        for part in ["project", "events.jsonl"] {
            if !case.join(part).exists() {
                return Err(format!("{} has no {part}", case.display()));
            }
        }
        for entry in std::fs::read_dir(case).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !CASE_FILES.contains(&name.as_str()) {
                return Err(format!(
                    "{}: a case holds only {CASE_FILES:?}, not {name:?}",
                    case.display()
                ));
            }
        }
    }
    Ok(cases)
}

/// Copies the directory `from` into `to`, files and folders only.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            assert!(kind.is_file(), "{}: only files", entry.path().display());
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `value` with every `$PROJECT` in its strings replaced by `project`.
fn placed(value: Value, project: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("$PROJECT", project)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| placed(v, project)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, placed(v, project)))
                .collect(),
        ),
        other => other,
    }
}

/// The payload of event `n` (1-based) with what its line leaves out: `hook_event_name`
/// PreToolUse, `session_id` s1, its `transcript_path`, `cwd` the project; and for a line
/// naming a `tool_name`, `tool_use_id` `t<n>`, `tool_input` `{}` and `permission_mode`
/// default. `agent_id` and `agent_type` are never filled in: a line without them is the
/// main thread.
fn complete(mut payload: Value, n: usize, project: &str) -> Value {
    let session = payload["session_id"].as_str().unwrap_or("s1").to_string();
    let transcript = format!("/home/u/.claude/projects/p/{session}.jsonl");
    let mut defaults = vec![
        ("hook_event_name", json!("PreToolUse")),
        ("session_id", json!(session)),
        ("transcript_path", json!(transcript)),
        ("cwd", json!(project)),
    ];
    if payload.get("tool_name").is_some() {
        defaults.push(("tool_use_id", json!(format!("t{n}"))));
        defaults.push(("tool_input", json!({})));
        defaults.push(("permission_mode", json!("default")));
    }
    let object = payload.as_object_mut().unwrap();
    for (key, value) in defaults {
        object.entry(key).or_insert(value);
    }
    payload
}

/// A line of `events.jsonl`: a hook event, or a step between events
/// (`tests/common/case_steps.rs`).
enum Line {
    /// The payload, and whether its answer is shown whole (`"whole_answer": true` on the
    /// line, not sent): the reason's remedy too, not only its first clause.
    Event(Value, bool),
    Step(Step),
}

/// The lines of `events.jsonl`, events completed for the project at `project`.
fn events(file: &Path, project: &str) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("{}:{}: {e}", file.display(), i + 1);
        let value: Value = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let mut value = placed(value, project);
        out.push(match step(&value).map_err(at)? {
            Some(step) => Line::Step(step),
            None => {
                let whole = value.as_object_mut().unwrap().remove("whole_answer");
                let payload = complete(value, out.len() + 1, project);
                Line::Event(payload, whole == Some(Value::Bool(true)))
            }
        });
    }
    if !out.iter().any(|l| matches!(l, Line::Event(..))) {
        return Err(format!("{} holds no event", file.display()));
    }
    Ok(out)
}

/// Runs the case in `case` through the binary: the text its `expected.txt` should hold.
fn run_case(case: &Path) -> Result<String, String> {
    let name = case.file_name().unwrap().to_string_lossy().to_string();
    let project = TempDir::new(&format!("case-{name}"));
    copy_tree(&case.join("project"), project.path());
    let dir = project.dir().to_string();
    // The administrator's layer is the case's `admin.toml`, or none (not this machine's).
    let admin = case.join("admin.toml");
    let admin = match admin.exists() {
        true => admin,
        false => project.path().join("no-admin-config.toml"),
    };
    let env = [("ATTENU_ADMIN_CONFIG", admin.as_os_str())];
    let masks = [
        (dir.as_str(), "$PROJECT"),
        (admin.to_str().unwrap(), "$ADMIN"),
    ];
    let mut text = String::from("== answers\n");
    for (i, line) in events(&case.join("events.jsonl"), &dir)?.iter().enumerate() {
        text += &match line {
            Line::Event(payload, false) => answer_line(
                i + 1,
                payload,
                &hook_env(project.path(), payload, &env),
                &masks,
            ),
            Line::Event(payload, true) => {
                let out = hook_env(project.path(), payload, &env);
                whole_answer_line(i + 1, payload, &out, &masks)
            }
            Line::Step(step) => run_step(i + 1, step, project.path(), &admin, &masks),
        };
        text.push('\n');
    }
    text += &ledger_view(&project.path().join(".attenu"), &masks);
    Ok(text)
}

/// Compares a case with its `expected.txt` (or, with `update`, writes it): the mismatch, with
/// a diff, as the error.
fn check_case(case: &Path, update: bool) -> Result<(), String> {
    let actual = run_case(case)?;
    let file = case.join("expected.txt");
    if update {
        std::fs::write(&file, &actual).map_err(|e| format!("{}: {e}", file.display()))?;
        return Ok(());
    }
    let shown = file
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(&file);
    let Ok(expected) = std::fs::read_to_string(&file) else {
        return Err(format!(
            "{} is missing: run with UPDATE_CASES=1 to write it, then read it\n",
            shown.display()
        ));
    };
    if expected == actual {
        return Ok(());
    }
    Err(format!(
        "{} differs from what the binary answered (- expected, + actual):\n{}",
        shown.display(),
        line_diff(&expected, &actual)
    ))
}

/// A line diff of `old` and `new`: `-` lines only in `old`, `+` lines only in `new`, two
/// unchanged lines of context around each change.
fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = match a[i] == b[j] {
                true => lcs[i + 1][j + 1] + 1,
                false => lcs[i + 1][j].max(lcs[i][j + 1]),
            };
        }
    }
    let (mut i, mut j, mut lines) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    let near = |k: usize| {
        lines[k.saturating_sub(2)..(k + 3).min(lines.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    for (k, (c, line)) in lines.iter().enumerate() {
        if near(k) {
            out += &format!("{c} {line}\n");
        } else if k > 0 && near(k - 1) {
            out += "  ...\n";
        }
    }
    out
}

#[test]
fn every_case_gives_its_expected_answers_and_ledger() {
    let update = std::env::var_os("UPDATE_CASES").is_some();
    let only = std::env::var("ATTENU_CASE").unwrap_or_default();
    let cases: Vec<PathBuf> = case_dirs(&cases_dir())
        .unwrap()
        .into_iter()
        .filter(|c| c.file_name().unwrap().to_string_lossy().contains(&only))
        .collect();
    assert!(!cases.is_empty(), "no case's name contains {only:?}");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            // A panic (the hook exiting other than 0 or 2, a file that cannot be copied) fails
            // the case it happened in, named, and the other cases still run.
            std::panic::catch_unwind(|| check_case(case, update))
                .unwrap_or_else(|_| Err(format!("{}: panicked (above)\n", case.display())))
                .err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}\n\
         If the change is deliberate, rewrite the expected files with \
         `UPDATE_CASES=1 cargo test --features test-faults --test decision_cases` \
         and review the diff.",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The driver fails a case whose `expected.txt` is wrong, or missing.
#[test]
fn a_wrong_or_missing_expected_file_fails() {
    let case = case_dirs(&cases_dir()).unwrap()[0].clone();
    let copy = TempDir::new("case-wrong");
    copy_tree(&case, copy.path());
    // Its own expected file, so that a run rewriting the cases' files races with nothing.
    check_case(copy.path(), true).unwrap();
    let file = copy.path().join("expected.txt");
    let right = std::fs::read_to_string(&file).unwrap();
    assert_eq!(check_case(copy.path(), false), Ok(()));
    let wrong = right.replacen("=> 0 ", "=> 2 ", 1);
    assert_ne!(wrong, right, "the first case answers no event with exit 0");
    std::fs::write(&file, &wrong).unwrap();
    let err = check_case(copy.path(), false).unwrap_err();
    assert_contains(&err, &["differs", "- 1 ", "+ 1 ", "=> 2 ", "=> 0 "]);
    std::fs::write(&file, right.replace("== ledger", "== ledger-s9")).unwrap();
    assert!(check_case(copy.path(), false).is_err());
    std::fs::remove_file(&file).unwrap();
    let err = check_case(copy.path(), false).unwrap_err();
    assert_contains(&err, &["expected.txt is missing", "UPDATE_CASES=1"]);
}

/// No cases, a case without its events, or events that are not JSON objects: an error, never a
/// pass.
#[test]
fn an_empty_or_broken_cases_directory_fails() {
    let dir = TempDir::new("cases-empty");
    assert!(case_dirs(&dir.path().join("absent")).is_err());
    assert!(case_dirs(dir.path()).unwrap_err().contains("holds no case"));
    let case = dir.path().join("c");
    std::fs::create_dir_all(case.join("project")).unwrap();
    assert!(case_dirs(dir.path())
        .unwrap_err()
        .contains("no events.jsonl"));
    std::fs::write(case.join("event.jsonl"), "{}\n").unwrap();
    std::fs::write(case.join("events.jsonl"), "{}\n").unwrap();
    let err = case_dirs(dir.path()).unwrap_err();
    assert!(err.contains("not \"event.jsonl\""), "{err}");
    std::fs::remove_file(case.join("event.jsonl")).unwrap();
    assert_eq!(case_dirs(dir.path()), Ok(vec![case.clone()]));
    std::fs::write(case.join("events.jsonl"), "# nothing\n").unwrap();
    assert!(run_case(&case).unwrap_err().contains("holds no event"));
    std::fs::write(case.join("events.jsonl"), "[1]\n").unwrap();
    assert!(run_case(&case).unwrap_err().contains("not a JSON object"));
}

/// A step that is not one, or reaches outside the project, is an error naming its line.
#[test]
fn a_broken_step_fails() {
    let dir = TempDir::new("cases-steps");
    let case = dir.path().join("c");
    std::fs::create_dir_all(case.join("project")).unwrap();
    for (step, says) in [
        (r#"{"write": "../x", "text": ""}"#, "not a path inside"),
        (r#"{"write": "x"}"#, "one of \"text\""),
        (r#"{"remove": "/etc/x"}"#, "not a path inside"),
        (r#"{"write": "x", "remove": "x"}"#, "a step is one of"),
        (r#"{"link": "x", "target": "y"}"#, "not \"target\""),
        (r#"{"run": "doctor"}"#, "run: a non-empty array"),
        (r#"{"run": []}"#, "run: a non-empty array"),
        (
            r#"{"run": ["doctor"], "quiet": 1}"#,
            "\"quiet\" is true or false",
        ),
    ] {
        let events = format!("{{\"tool_name\": \"Read\"}}\n{step}\n");
        std::fs::write(case.join("events.jsonl"), events).unwrap();
        let err = run_case(&case).unwrap_err();
        assert_contains(&err, &["events.jsonl:2: ", says]);
    }
    std::fs::write(case.join("events.jsonl"), "{\"remove\": \"x\"}\n").unwrap();
    assert!(run_case(&case).unwrap_err().contains("holds no event"));
}

#[test]
fn the_diff_shows_what_changed() {
    let diff = line_diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nX\ne\nf\ng\n");
    assert_eq!(diff, "  b\n  c\n- d\n+ X\n  e\n  f\n  ...\n");
}
