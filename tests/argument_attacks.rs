//! The red-team corpus of attacks on permission rules with arguments
//! (`tests/argument_attacks.txt`), each line one hook process through the real binary, against a
//! project with real files and links: an agent held to `Bash(git tag:*)` and friends, one held to
//! `./docs/**`, and one that holds the whole tools but meets the settings' `deny` and `ask`.
//!
//! To add a case, add a line to the corpus (its header says how); no code changes.

mod common;
use common::*;
use serde_json::{json, Value};

const CORPUS: &str = include_str!("argument_attacks.txt");

/// The project the corpus names: agents `rt`, `rd` and `sh`, the settings, and links from
/// `docs/` into `secrets/` (`link`, `keylink`, `deep` to `secrets/inner`) and `src/` (`srclink`).
fn project() -> TempDir {
    let p = ProjectBuilder::new("argattacks")
        .agent(
            "rt",
            "tools: Read, Bash(git tag:*), Bash(npm run lint), WebFetch(domain:docs.rs), Read(./docs/**)",
        )
        .agent("rd", "tools: Read(./docs/**), Grep(./docs/**), Glob(./docs/**)")
        .agent("sh", "tools: Bash, Read, Grep, Glob, Edit, WebFetch")
        .settings(json!({"permissions": {
            "deny": ["Bash(rm *)", "Read(./secrets/**)", "WebFetch(domain:evil.example)"],
            "ask": ["Bash(git push:*)"],
        }}))
        .build();
    let root = p.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("docs/a.md"), "a").unwrap();
    std::fs::write(root.join("secrets/key"), "k").unwrap();
    std::os::unix::fs::symlink("../secrets", root.join("docs/link")).unwrap();
    std::os::unix::fs::symlink("../secrets/key", root.join("docs/keylink")).unwrap();
    std::fs::create_dir_all(root.join("secrets/inner")).unwrap();
    std::os::unix::fs::symlink("../secrets/inner", root.join("docs/deep")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
    std::os::unix::fs::symlink("../src", root.join("docs/srclink")).unwrap();
    p
}

/// One line of the corpus: (answer, agent, tool, input).
fn case(line: &str, root: &str) -> (String, String, String, Value) {
    let mut fields = line.split_whitespace();
    let mut next = || fields.next().unwrap_or_default().to_string();
    let (want, agent, tool) = (next(), next(), next());
    let json_at = line
        .find(['"', '{'])
        .unwrap_or_else(|| panic!("no JSON input: {line}"));
    let text = line[json_at..].replace("$P", root);
    let input: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON ({e}): {line}"));
    let input = match input {
        Value::String(command) => json!({ "command": command }),
        other => other,
    };
    (want, agent, tool, input)
}

/// The refusal's code, or `allow`.
fn answer(out: &Out) -> String {
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or(Value::Null);
    match v["hookSpecificOutput"]["permissionDecisionReason"].as_str() {
        None => "allow".to_string(),
        Some(reason) => reason
            .split_once('[')
            .and_then(|(_, r)| r.split(']').next())
            .unwrap_or(reason)
            .to_string(),
    }
}

#[test]
fn every_attack_in_the_corpus_is_answered_as_written() {
    let p = project();
    let root = p.path().to_str().unwrap().to_string();
    let mut wrong = Vec::new();
    let mut n = 0;
    for line in CORPUS.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        n += 1;
        let (want, agent, tool, input) = case(line, &root);
        let out = p
            .subagent(&agent, &tool)
            .input(input)
            .id(&format!("c{n}"))
            .run();
        let got = answer(&out);
        if got != want {
            wrong.push(format!(
                "want {want}, got {got}: {line}\n    {}",
                out.stdout
            ));
        }
    }
    assert!(n > 400, "the corpus has {n} cases");
    assert!(
        wrong.is_empty(),
        "{} of {n} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
