//! The text a decision case (`tests/decision_cases.rs`) is compared on: one line per answer,
//! one line per ledger entry, holding what is stable between runs (no hashes, times or ids
//! the hook makes up) and written with the project's directory as `$PROJECT` (the
//! administrator's file as `$ADMIN`).
//!
//! An answer: `N TOOL_USE_ID EVENT CALLER TOOL => EXIT ANSWER` (`N EVENT => ..` for an event
//! without a tool), where CALLER is the subagent type, `main`, `main(--agent=TYPE)` (an
//! `agent_type` without `agent_id`) or `unidentified` (an `agent_id` without `agent_type`), and
//! ANSWER is `{}`, `deny [code] WHAT`, `halt [code] WHAT` (`continue: false`), `[code] WHAT`
//! from stderr on exit 2, or the JSON printed. WHAT is the reason's first clause (up to its
//! first `: ` or `; ` outside parentheses and backticks): what was refused, not the remedy
//! after it.
//!
//! A ledger entry: `root SCOPES` (with `config=` the configuration's layers and `overrides=`
//! what the local one weakens), `spawn AGENT SCOPES` (with `excluded=` and `rules=` when it has
//! them), then per call `TOOL_USE_ID EVENT CALLER TOOL SCOPE` with, for a deny, `[reason-code]`
//! and its disposition (`refused-by=` for Claude Code's own refusals), for an allow not
//! enforced `not-enforced would-deny=[code]`, and `mode=` when not enforce; `TOOL_USE_ID
//! outcome CALLER body_state=..`; any other entry as its event and agent (`done session`);
//! `== no ledger` when there is none.
use super::*;

/// The paths written as names (`(project dir, "$PROJECT")`), as [`mask`] takes them.
pub type Masks<'a> = &'a [(&'a str, &'a str)];

/// Who made a call, from its `agent_id` and `agent_type`.
fn caller(v: &Value) -> String {
    let (id, ty) = (v["agent_id"].as_str(), v["agent_type"].as_str());
    match (id, ty) {
        (Some(_), Some(t)) => t.to_string(),
        (None, None) => "main".into(),
        (None, Some(t)) => format!("main(--agent={t})"),
        (Some(_), None) => "unidentified".into(),
    }
}

/// `[code] what` of a hook's reason text (`attenu-hook: [code] what: remedy`); with `whole`,
/// the remedy too.
fn code_and_clause(reason: &str, masks: Masks, whole: bool) -> String {
    let reason = mask(reason, masks);
    let reason = reason.strip_prefix("attenu-hook: ").unwrap_or(&reason);
    let Some(close) = reason.find("] ") else {
        return reason.to_string();
    };
    let rest = &reason[close + 2..];
    match whole {
        true => format!("{} {}", &reason[..close + 1], rest.replace('\n', "\\n")),
        false => format!("{} {}", &reason[..close + 1], &rest[..clause_end(rest)]),
    }
}

/// Where the first clause of `text` ends: its first `: ` or `; ` outside parentheses and
/// backticks.
fn clause_end(text: &str) -> usize {
    let (mut depth, mut ticked) = (0i32, false);
    for (at, c) in text.char_indices() {
        match c {
            '`' => ticked = !ticked,
            '(' if !ticked => depth += 1,
            ')' if !ticked => depth -= 1,
            ':' | ';' if !ticked && depth <= 0 && text[at + 1..].starts_with(' ') => {
                return at;
            }
            _ => {}
        }
    }
    text.len()
}

/// What one hook process answered to event `n`, `payload`.
pub fn answer_line(n: usize, payload: &Value, out: &Out, masks: Masks) -> String {
    answer(n, payload, out, masks, false)
}

/// [`answer_line`] with the whole reason, the remedy after its first clause too.
pub fn whole_answer_line(n: usize, payload: &Value, out: &Out, masks: Masks) -> String {
    answer(n, payload, out, masks, true)
}

fn answer(n: usize, payload: &Value, out: &Out, masks: Masks, whole: bool) -> String {
    let event = payload["hook_event_name"].as_str().unwrap_or("?");
    let head = match payload["tool_name"].as_str() {
        Some(tool) => {
            let tool_use = payload["tool_use_id"].as_str().unwrap_or("-");
            format!("{n} {tool_use} {event} {} {tool}", caller(payload))
        }
        None => format!("{n} {event}"),
    };
    let answer = if out.code == 2 {
        code_and_clause(out.stderr.lines().next().unwrap_or(""), masks, whole)
    } else {
        json_answer(out, masks, whole)
    };
    format!("{head} => {} {answer}", out.code)
}

fn json_answer(out: &Out, masks: Masks, whole: bool) -> String {
    let Ok(v) = serde_json::from_str::<Value>(out.stdout.trim()) else {
        return format!("not JSON: {:?}", out.stdout);
    };
    let decision = &v["hookSpecificOutput"];
    if decision["permissionDecision"] == "deny" {
        let reason = decision["permissionDecisionReason"].as_str().unwrap_or("");
        return format!("deny {}", code_and_clause(reason, masks, whole));
    }
    if v["continue"] == false {
        let reason = v["stopReason"].as_str().unwrap_or("");
        return format!("halt {}", code_and_clause(reason, masks, whole));
    }
    mask(&v.to_string(), masks)
}

/// The strings in `v`, comma-separated, or `(none)`.
fn joined(v: &Value) -> String {
    let all = strings(v);
    match all.is_empty() {
        true => "(none)".into(),
        false => all.join(","),
    }
}

fn strings(v: &Value) -> Vec<String> {
    let mut all: Vec<String> = match v {
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        Value::String(s) => vec![s.clone()],
        _ => vec![],
    };
    all.sort();
    all.dedup();
    all
}

/// ` key=a,b` when `v` holds strings, else nothing.
fn listed(key: &str, v: &Value) -> String {
    let all = strings(v);
    match all.is_empty() {
        true => String::new(),
        false => format!(" {key}={}", all.join(",")),
    }
}

/// ` key=a,b` for the array of strings `v`, in its order (the configuration's layers, the
/// excluded scopes), else nothing.
fn in_order(key: &str, v: &Value) -> String {
    let all: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match all.is_empty() {
        true => String::new(),
        false => format!(" {key}={}", all.join(",")),
    }
}

/// One ledger entry as one line.
fn entry_line(e: &Value) -> String {
    let c = &e["context"];
    let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
    match e["event"].as_str().unwrap_or("?") {
        "root" => format!(
            "root {}{}{}{}",
            joined(&e["authority"]["scopes"]),
            in_order("excluded", &c["excluded"]),
            in_order("config", &c["identity"]["config"]["sources"]),
            in_order("overrides", &c["identity"]["config"]["overrides"])
        ),
        "spawn" => format!(
            "spawn {} {}{}{}",
            text(&e["agent"]),
            joined(&e["granted"]["scopes"]),
            in_order("excluded", &c["excluded"]),
            listed("rules", &c["rules"])
        ),
        "allow" | "deny" => format!(
            "{} {} {} {} {}{}",
            text(&c["tool_use_id"]),
            text(&e["event"]),
            caller(c),
            text(&e["tool"]),
            text(&e["scope"]),
            call_details(e)
        ),
        "outcome" => format!(
            "{} outcome {}{}",
            text(&c["tool_use_id"]),
            caller(c),
            call_details(e)
        ),
        event => {
            let known = [&e["agent"], &c["tool_use_id"], &e["tool"], &e["scope"]];
            let parts: Vec<&str> = known.iter().filter_map(|v| v.as_str()).collect();
            format!("{event} {}{}", parts.join(" "), call_details(e))
                .trim_end()
                .to_string()
        }
    }
}

/// What a call's entry says beyond who called what.
fn call_details(e: &Value) -> String {
    let c = &e["context"];
    let mut parts = Vec::new();
    if let Some(code) = c["reason_code"].as_str() {
        parts.push(format!("[{code}]"));
    }
    if let Some(by) = c["refused_by"].as_str() {
        parts.push(format!("refused-by={by}"));
    }
    if let Some(d) = e["disposition"].as_str() {
        parts.push(format!("disposition={d}"));
    }
    if let Some(p) = e["policy"].as_str() {
        parts.push(format!("policy={p}"));
    }
    if c["enforced"] == false {
        parts.push("not-enforced".into());
    }
    if let Some(code) = c["would_deny"]["code"].as_str() {
        parts.push(format!("would-deny=[{code}]"));
    }
    if let Some(mode) = e["mode"].as_str().filter(|m| *m != "enforce") {
        parts.push(format!("mode={mode}"));
    }
    for key in ["body_state", "error_code"] {
        if let Some(v) = e[key].as_str() {
            parts.push(format!("{key}={v}"));
        }
    }
    parts.iter().map(|p| format!(" {p}")).collect()
}

/// Each session's ledger under `attenu` (`ledger-<session>.jsonl`), sorted by session: a
/// `== ledger <session>` line, then a line per entry.
pub fn ledger_view(attenu: &Path, masks: Masks) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(attenu)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|f| {
        let name = f.file_name().unwrap().to_string_lossy();
        name.starts_with("ledger-") && name.ends_with(".jsonl")
    });
    files.sort();
    if files.is_empty() {
        return "== no ledger\n".into();
    }
    let mut out = String::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let session = &name["ledger-".len()..name.len() - ".jsonl".len()];
        out += &format!("== ledger {session}\n");
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let entry: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: {e}: {line}", file.display()));
            out += &mask(&entry_line(&entry), masks);
            out.push('\n');
        }
    }
    out
}
