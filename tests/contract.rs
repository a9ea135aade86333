//! The hook contract: everything attenu-hook reads from Claude Code or writes back to it must be
//! something `contract.json` (the pinned Claude Code 2.1.332 interface) lists.
//!
//! The fields are not restated here. They are read out of the source, so a new
//! `obj.get("...")` in `src/protocol/payload.rs` or a new key in `src/protocol/answer.rs` is checked
//! the moment it is written:
//!
//! * payload fields: `.get("X")` and `opt_str(&obj, "X")` in `src/protocol/payload.rs`;
//! * output fields: JSON keys (`"X":`) and `.pointer("/X/Y")` paths in `src/protocol/answer.rs`,
//!   and the literal values it gives `hookEventName` and `permissionDecision`;
//! * the events the hook parses (`"X" => Event::`), which `settings.snippet.json` must wire;
//! * frontmatter keys (`get("X")` in `src/derive/frontmatter.rs`) and the tool names of
//!   `src/derive/scopes.rs`;
//! * the handler blocks of `settings.snippet.json` and of the sample project's settings;
//! * the recorded payloads the demo replays.
//!
//! A scanner that silently found nothing would make every check pass, so each scan must find
//! the fields it is known to cover, and [`removing_any_used_name_from_the_contract_is_caught`]
//! deletes each name the code uses from a copy of the contract and requires the check to
//! report it.

mod common;

use common::PAYLOAD_FIELDS;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(REPO).join(rel))
        .unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

fn json(rel: &str) -> Value {
    serde_json::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not valid JSON: {e}"))
}

fn contract() -> Value {
    json("contract.json")
}

/// The non-test code of a source file, without `//` comments (so prose never counts as code).
fn code(rel: &str) -> String {
    let text = read(rel);
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The string literal that starts at the first `"` at or after `from`, and where it ends.
fn literal_at(src: &str, from: usize) -> Option<(String, usize)> {
    let start = from + src[from..].find('"')? + 1;
    let len = src[start..].find('"')?;
    Some((src[start..start + len].to_string(), start + len + 1))
}

/// Every string literal that directly follows `prefix` (e.g. `.get(`).
fn literals_after(src: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(i) = src[at..].find(prefix) {
        let after = at + i + prefix.len();
        if src[after..].trim_start().starts_with('"') {
            if let Some((lit, _)) = literal_at(src, after) {
                out.insert(lit);
            }
        }
        at = after;
    }
    out
}

/// The second argument of every `opt_str(obj, "X")` call.
fn opt_str_fields(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(i) = src[at..].find("opt_str(") {
        let open = at + i + "opt_str(".len();
        let close = open + src[open..].find(')').unwrap_or(0);
        let args = &src[open..close];
        if let Some(comma) = args.find(',') {
            let rest = args[comma + 1..].trim();
            if let Some(field) = rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                out.insert(field.to_string());
            }
        }
        at = open;
    }
    out
}

/// Every string literal used as a JSON object key (`"X":`, not `"X"::`), with the literal
/// value that follows it, if any.
fn json_keys(src: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some((lit, end)) = src.get(at..).and_then(|_| literal_at(src, at)) {
        let rest = src[end..].trim_start();
        if rest.starts_with(':') && !rest.starts_with("::") {
            let value = rest[1..].trim_start();
            let value = value
                .starts_with('"')
                .then(|| literal_at(value, 0).map(|(v, _)| v))
                .flatten();
            out.push((lit, value));
        }
        at = end;
    }
    out
}

/// Names in a contract list or object (the keys of an object).
fn names(v: &Value) -> BTreeSet<String> {
    match v {
        Value::Object(m) => m.keys().cloned().collect(),
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// Every input field the contract lists, for any event.
fn contract_input_fields(c: &Value) -> BTreeSet<String> {
    let mut all = names(&c["input"]["common_fields"]);
    all.extend(names(&c["input"]["optional_common_fields"]));
    if let Some(events) = c["input"]["events"].as_object() {
        for spec in events.values() {
            all.extend(names(&spec["fields"]));
            all.extend(names(&spec["optional_fields"]));
        }
    }
    all
}

fn contract_output_fields(c: &Value) -> BTreeSet<String> {
    names(&c["output"]["fields"])
}

fn contract_events(c: &Value) -> BTreeSet<String> {
    names(&c["input"]["events"])
}

fn contract_handler_fields(c: &Value) -> BTreeSet<String> {
    names(&c["settings"]["handler_fields"])
}

fn contract_frontmatter_fields(c: &Value) -> BTreeSet<String> {
    let mut all = names(&c["subagents"]["frontmatter_fields"]);
    all.extend(names(&c["subagents"]["other_frontmatter_fields"]));
    all
}

/// What `used` names that `listed` does not.
fn unlisted(used: &BTreeSet<String>, listed: &BTreeSet<String>) -> Vec<String> {
    used.difference(listed).cloned().collect()
}

/// The payload fields the hook reads.
fn payload_fields_read() -> BTreeSet<String> {
    let src = code("src/protocol/payload.rs");
    let mut fields = literals_after(&src, ".get(");
    fields.extend(opt_str_fields(&src));
    for &known in PAYLOAD_FIELDS {
        assert!(
            fields.contains(known),
            "the scan of src/protocol/payload.rs did not find `{known}` (found {fields:?}); the scanner no longer matches how the code reads fields, fix it before trusting this test"
        );
    }
    fields
}

/// The output keys the hook writes (and reads back through `.pointer`), and the literal
/// values it gives them.
fn output_written() -> (BTreeSet<String>, Vec<(String, String)>) {
    let src = code("src/protocol/answer.rs");
    let mut keys = BTreeSet::new();
    let mut values = Vec::new();
    for (k, v) in json_keys(&src) {
        if let Some(v) = v {
            values.push((k.clone(), v));
        }
        keys.insert(k);
    }
    for path in literals_after(&src, ".pointer(") {
        keys.extend(path.split('/').filter(|s| !s.is_empty()).map(String::from));
    }
    for known in [
        "hookSpecificOutput",
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
        "continue",
        "stopReason",
        "systemMessage",
    ] {
        assert!(
            keys.contains(known),
            "the scan of src/protocol/answer.rs did not find `{known}` (found {keys:?}); the scanner no longer matches the code, fix it before trusting this test"
        );
    }
    (keys, values)
}

/// `2.1.335` as numbers, to compare.
fn version(s: &str) -> Vec<u32> {
    s.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The event names `payload.rs` parses.
fn events_handled() -> BTreeSet<String> {
    let src = code("src/protocol/payload.rs");
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(i) = src[at..].find("=> Event::") {
        let arm = &src[..at + i];
        let line = arm.rsplit('\n').next().unwrap_or("").trim();
        if let Some(name) = line.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
            out.insert(name.to_string());
        }
        at += i + 1;
    }
    assert!(
        out.contains("PreToolUse") && out.contains("SessionEnd"),
        "the scan of Event::parse in src/protocol/payload.rs found {out:?}; fix the scanner"
    );
    out
}

fn frontmatter_fields_read() -> BTreeSet<String> {
    let fields = literals_after(&code("src/derive/frontmatter.rs"), "get(");
    for known in ["name", "tools", "disallowedTools"] {
        assert!(
            fields.contains(known),
            "the scan of src/derive/frontmatter.rs did not find `{known}` (found {fields:?}); fix the scanner"
        );
    }
    fields
}

/// Rows of a two-column table of names, such as `(tool, scope)`.
type Rows = Vec<(String, String)>;

/// `(tool, scope)` rows of the tool table and `(alias, tool)` rows of the alias table.
fn tool_tables() -> (Rows, Rows) {
    let src = code("src/derive/scopes.rs") + &code("src/derive/compat.rs");
    let (mut tools, mut aliases) = (Vec::new(), Vec::new());
    for line in src.lines() {
        let row = line.trim();
        let Some(inner) = row.strip_prefix("(\"").and_then(|r| r.strip_suffix("\"),")) else {
            continue;
        };
        let Some((a, b)) = inner.split_once("\", \"") else {
            continue;
        };
        if b.contains('.') {
            tools.push((a.to_string(), b.to_string()));
        } else {
            aliases.push((a.to_string(), b.to_string()));
        }
    }
    assert!(
        tools.iter().any(|(t, _)| t == "Read") && tools.iter().any(|(t, _)| t == "WebFetch"),
        "the scan of src/derive/scopes.rs found no tool table ({tools:?}); fix the scanner"
    );
    assert!(
        aliases.iter().any(|(a, _)| a == "Task"),
        "the scan of src/derive/compat.rs found no alias table ({aliases:?}); fix the scanner"
    );
    (tools, aliases)
}

/// Every problem with one settings file's `hooks` block, against the contract.
fn settings_problems(c: &Value, rel: &str, settings: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let handler_fields = contract_handler_fields(c);
    let group_fields = names(&c["settings"]["group_fields"]);
    let types = names(&c["settings"]["handler_type_values"]);
    let on_failure = names(&c["settings"]["onFailure_values"]);
    let events = contract_events(c);
    let Some(hooks) = settings["hooks"].as_object() else {
        return vec![format!("{rel} has no `hooks` object")];
    };
    for (event, groups) in hooks {
        if !events.contains(event) {
            problems.push(format!(
                "{rel} wires {event}, an event contract.json does not list"
            ));
        }
        let groups = groups.as_array().cloned().unwrap_or_default();
        if groups.is_empty() {
            problems.push(format!("{rel}: {event} has no handler group"));
        }
        for group in &groups {
            let keys = names(group);
            for k in unlisted(&keys, &group_fields) {
                problems.push(format!(
                    "{rel}: {event} group field `{k}` is not in contract.json settings.group_fields"
                ));
            }
            if keys.contains("matcher") {
                problems.push(format!(
                    "{rel}: {event} has a matcher, so some tool calls would never reach the hook"
                ));
            }
            let handlers = group["hooks"].as_array().cloned().unwrap_or_default();
            if handlers.is_empty() {
                problems.push(format!("{rel}: {event} has a group with no handlers"));
            }
            for h in &handlers {
                for k in unlisted(&names(h), &handler_fields) {
                    problems.push(format!(
                        "{rel}: {event} handler field `{k}` is not in contract.json settings.handler_fields"
                    ));
                }
                if !h["type"].as_str().is_some_and(|t| types.contains(t)) {
                    problems.push(format!(
                        "{rel}: {event} handler type {} is not one contract.json lists",
                        h["type"]
                    ));
                }
                if h["command"].as_str().is_none_or(str::is_empty) {
                    problems.push(format!("{rel}: {event} handler has no command"));
                }
                if !h["timeout"].as_f64().is_some_and(|t| t > 0.0) {
                    problems.push(format!(
                        "{rel}: {event} handler has no positive timeout (got {}); without one a hung hook holds the call for 600 s",
                        h["timeout"]
                    ));
                }
                if h["onFailure"] != "block" {
                    problems.push(format!(
                        "{rel}: {event} handler has onFailure {} (must be \"block\": otherwise a crash or timeout lets the call through)",
                        h["onFailure"]
                    ));
                }
                if !h["onFailure"]
                    .as_str()
                    .is_some_and(|v| on_failure.contains(v))
                {
                    problems.push(format!(
                        "{rel}: {event} handler onFailure {} is not a value contract.json lists",
                        h["onFailure"]
                    ));
                }
            }
        }
    }
    problems
}

/// Every problem with one recorded payload, against the contract for its event.
fn payload_problems(c: &Value, rel: &str, p: &Value) -> Vec<String> {
    let Some(obj) = p.as_object() else {
        return vec![format!("{rel} is not a JSON object")];
    };
    let Some(event) = obj.get("hook_event_name").and_then(Value::as_str) else {
        return vec![format!("{rel} has no hook_event_name")];
    };
    let spec = &c["input"]["events"][event];
    if spec.is_null() {
        return vec![format!(
            "{rel}: contract.json does not list the event {event}"
        )];
    }
    let mut required = names(&c["input"]["common_fields"]);
    required.extend(names(&spec["fields"]));
    let mut allowed = required.clone();
    allowed.extend(names(&c["input"]["optional_common_fields"]));
    allowed.extend(names(&spec["optional_fields"]));
    let present: BTreeSet<String> = obj.keys().cloned().collect();
    let mut problems: Vec<String> = unlisted(&present, &allowed)
        .into_iter()
        .map(|f| format!("{rel}: `{f}` is not a field contract.json lists for {event}"))
        .collect();
    problems.extend(
        unlisted(&required, &present)
            .into_iter()
            .map(|f| format!("{rel}: contract.json requires `{f}` on {event}, and it is missing")),
    );
    problems
}

fn recorded_payloads() -> Vec<(String, Value)> {
    let dir = Path::new(REPO).join("examples/payloads");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let rel = format!(
                "examples/payloads/{}",
                p.file_name().unwrap().to_string_lossy()
            );
            let v = json(&rel);
            (rel, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 5,
        "expected the recorded payloads in examples/payloads"
    );
    out
}

/// Everything the code uses that the given contract does not list. Empty when all is well.
fn contract_gaps(c: &Value) -> Vec<String> {
    let mut gaps = Vec::new();
    for f in unlisted(&payload_fields_read(), &contract_input_fields(c)) {
        gaps.push(format!(
            "src/protocol/payload.rs reads the payload field `{f}`, which contract.json does not list"
        ));
    }
    let (keys, values) = output_written();
    for k in unlisted(&keys, &contract_output_fields(c)) {
        gaps.push(format!(
            "src/protocol/answer.rs writes the output field `{k}`, which contract.json does not list"
        ));
    }
    let decisions = names(&c["output"]["permission_decision_values"]);
    let events = contract_events(c);
    for (k, v) in &values {
        match k.as_str() {
            "permissionDecision" if !decisions.contains(v) => gaps.push(format!(
                "src/protocol/answer.rs sends permissionDecision \"{v}\", which contract.json does not list"
            )),
            "hookEventName" if !events.contains(v) => gaps.push(format!(
                "src/protocol/answer.rs sends hookEventName \"{v}\", which contract.json does not list as an event"
            )),
            _ => {}
        }
    }
    for e in unlisted(&events_handled(), &events) {
        gaps.push(format!(
            "src/protocol/payload.rs handles the event {e}, which contract.json does not list"
        ));
    }
    for f in unlisted(&frontmatter_fields_read(), &contract_frontmatter_fields(c)) {
        gaps.push(format!(
            "src/derive/frontmatter.rs reads the frontmatter field `{f}`, which contract.json does not list"
        ));
    }
    let builtin = names(&c["tools"]["builtin"]);
    let legacy = &c["tools"]["legacy_aliases"];
    let removed = names(&c["tools"]["removed"]);
    let (tools, aliases) = tool_tables();
    for (tool, _) in &tools {
        if !builtin.contains(tool) {
            gaps.push(format!(
                "src/derive/scopes.rs maps the tool {tool}, which contract.json does not list as built in"
            ));
        }
    }
    for (alias, target) in &aliases {
        let known = legacy[alias] == target.as_str() || removed.contains(alias);
        if !known || !builtin.contains(target) {
            gaps.push(format!(
                "src/derive/compat.rs resolves {alias} to {target}; contract.json lists neither that alias nor {alias} as removed, or {target} is not built in"
            ));
        }
    }
    for rel in [
        "settings.snippet.json",
        "sample_project/.claude/settings.json",
    ] {
        gaps.extend(settings_problems(c, rel, &json(rel)));
    }
    for (rel, p) in recorded_payloads() {
        gaps.extend(payload_problems(c, &rel, &p));
    }
    gaps
}

#[test]
fn every_field_the_hook_reads_or_writes_is_in_the_contract() {
    let gaps = contract_gaps(&contract());
    assert!(
        gaps.is_empty(),
        "the code and contract.json disagree:\n  {}",
        gaps.join("\n  ")
    );
}

#[test]
fn the_hook_never_answers_allow() {
    // An explicit allow would skip Claude Code's own permission flow and widen the session.
    let (_, values) = output_written();
    let decisions: Vec<&str> = values
        .iter()
        .filter(|(k, _)| k == "permissionDecision")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        decisions,
        ["deny"],
        "src/protocol/answer.rs must send no permissionDecision but \"deny\""
    );
    assert!(contract()["output"]["permission_decision_values"]["allow"]
        .as_str()
        .is_some_and(|s| s.contains("never")));
}

#[test]
fn the_settings_snippet_wires_every_event_the_hook_handles() {
    let wired = names(&json("settings.snippet.json")["hooks"]);
    // An event newer than the pinned release (`since`) is not wired by the snippet: the
    // pinned Claude Code would drop the entry; `install` wires it for a version that has it.
    let c = contract();
    let pinned = version(c["claude_code"]["version"].as_str().unwrap());
    let since = |e: &String| {
        c["input"]["events"][e.as_str()]["since"]
            .as_str()
            .map(version)
    };
    let newer = |e: &String| since(e).is_some_and(|s| s > pinned);
    let handled: BTreeSet<String> = events_handled().into_iter().filter(|e| !newer(e)).collect();
    let why = "settings.snippet.json must wire exactly the events src/protocol/payload.rs handles";
    assert_eq!(wired, handled, "{why}");
}

/// Every handler of the snippet: no matcher, a timeout, onFailure block (also checked against
/// the contract in the test above; stated here on its own so a failure is plain).
#[test]
fn every_handler_of_the_settings_snippet_blocks() {
    let snippet = json("settings.snippet.json");
    for (event, groups) in snippet["hooks"].as_object().unwrap() {
        for group in groups.as_array().unwrap() {
            assert!(group.get("matcher").is_none(), "{event} has a matcher");
            for h in group["hooks"].as_array().unwrap() {
                let timeout = h["timeout"].as_f64().is_some_and(|t| t > 0.0);
                assert!(timeout, "{event}: no timeout");
                assert_eq!(h["onFailure"], "block", "{event}: onFailure is not block");
            }
        }
    }
}

#[test]
fn the_contract_pins_one_release() {
    let c = contract();
    let version = c["claude_code"]["version"].as_str().unwrap_or("");
    let parts = version.split('.');
    let release = parts.clone().count() == 3 && parts.into_iter().all(|p| p.parse::<u32>().is_ok());
    assert!(
        release,
        "contract.json claude_code.version must be a release number, got {version:?}"
    );
    let checked = c["claude_code"]["checked_on"].as_str().unwrap_or("");
    let b = checked.as_bytes();
    let date = checked.len() == 10 && b[4] == b'-' && b[7] == b'-';
    assert!(
        date,
        "contract.json claude_code.checked_on must be a date, got {checked:?}"
    );
}

#[test]
fn the_contract_states_exit_codes_frontmatter_and_tool_resolution() {
    let c = contract();
    for key in ["0", "2", "other"] {
        assert!(
            c["exit_codes"][key].is_string(),
            "contract.json exit_codes.{key}"
        );
    }
    let fields = names(&c["subagents"]["frontmatter_fields"]);
    for field in ["name", "description", "tools", "disallowedTools"] {
        assert!(fields.contains(field), "subagent frontmatter field {field}");
    }
    assert!(c["tool_resolution"]["order"]
        .as_array()
        .is_some_and(|o| o.len() >= 2));
}

/// Removes `name` everywhere in `v`: as an object key and as a string in a list.
fn remove_name(v: &mut Value, name: &str) {
    match v {
        Value::Object(m) => {
            m.remove(name);
            m.values_mut().for_each(|x| remove_name(x, name));
        }
        Value::Array(a) => {
            a.retain(|x| x.as_str() != Some(name));
            a.iter_mut().for_each(|x| remove_name(x, name));
        }
        _ => {}
    }
}

/// Every name of the contract the code uses: the payload fields it reads, the output keys it
/// writes, the events it handles, the frontmatter fields it reads, the handler fields install
/// writes, and `deny`, `Read`, `Task`.
fn names_the_code_uses(c: &Value) -> BTreeSet<String> {
    let (keys, _) = output_written();
    let mut used: BTreeSet<String> = payload_fields_read();
    used.extend(keys);
    used.extend(events_handled());
    used.extend(frontmatter_fields_read());
    let written = ["type", "command", "timeout", "onFailure"];
    let handler = names(&c["settings"]["handler_fields"]).into_iter();
    used.extend(handler.filter(|f| written.contains(&f.as_str())));
    used.extend(["deny", "Read", "Task"].map(String::from));
    used
}

#[test]
fn removing_any_used_name_from_the_contract_is_caught() {
    let c = contract();
    assert!(contract_gaps(&c).is_empty(), "see the test above");
    for name in &names_the_code_uses(&c) {
        let mut cut = c.clone();
        remove_name(&mut cut, name);
        let caught = contract_gaps(&cut)
            .iter()
            .any(|g| g.contains(name.as_str()));
        assert!(
            caught,
            "removing `{name}` from contract.json went unnoticed"
        );
    }
}

/// contract.json's `subagents.builtin_agents`, the built-ins Claude Code defines.
fn pinned_builtins() -> serde_json::Map<String, Value> {
    let c = contract();
    let pinned = c["subagents"]["builtin_agents"].as_object();
    pinned
        .expect("contract.json subagents.builtin_agents")
        .clone()
}

/// The strings of the array `v`, or `None` when it is none.
fn strings(v: &Value) -> Option<Vec<String>> {
    let items = v.as_array()?.iter();
    Some(
        items
            .map(|s| s.as_str().unwrap_or_default().to_string())
            .collect(),
    )
}

/// The built-in agent preset (src/derive/builtin.rs) names every built-in contract.json
/// pins, and each is listed among `builtin_agent_types`.
#[test]
fn the_builtin_agent_preset_names_the_pinned_agents() {
    use attenu_hook::derive::builtin::BUILTINS;
    let pinned = pinned_builtins();
    let listed: BTreeSet<&str> = pinned
        .keys()
        .map(String::as_str)
        .filter(|k| !k.starts_with('_'))
        .collect();
    let ours: BTreeSet<&str> = BUILTINS.iter().map(|b| b.name).collect();
    assert_eq!(ours, listed, "the preset's agents and contract.json's");
    let types: BTreeSet<String> = names(&contract()["subagents"]["builtin_agent_types"]);
    for b in BUILTINS {
        assert!(types.contains(b.name), "{} in builtin_agent_types", b.name);
    }
}

/// The preset grants exactly what contract.json pins for each built-in.
#[test]
fn the_builtin_agent_preset_grants_the_pinned_tools() {
    use attenu_hook::derive::builtin::BUILTINS;
    let pinned = pinned_builtins();
    for b in BUILTINS {
        let want = &pinned[b.name];
        let tools = b.tools.map(|t| t.iter().map(|s| s.to_string()).collect());
        assert_eq!(tools, strings(&want["tools"]), "{} tools", b.name);
        let disallowed: Vec<String> = b.disallowed.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            Some(disallowed),
            strings(&want["disallowedTools"]),
            "{} disallowedTools",
            b.name
        );
    }
}
