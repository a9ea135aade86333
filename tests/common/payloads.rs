//! Payloads as Claude Code 2.1.332 sends them.
use super::*;

/// A SessionStart payload as Claude Code 2.1.332 sends it.
pub fn session_start(session: &str, project: &Path, source: &str) -> Value {
    json!({"session_id": session, "transcript_path": format!("/home/u/.claude/projects/p/{session}.jsonl"),
           "cwd": project, "hook_event_name": "SessionStart", "source": source})
}

/// A PreToolUse payload as Claude Code sends it.
pub fn pre(
    session: &str,
    project: &Path,
    agent: Option<&str>,
    tool: &str,
    input: Value,
    tool_use_id: &str,
) -> Value {
    let mut p = json!({
        "session_id": session,
        "transcript_path": format!("/home/u/.claude/projects/p/{session}.jsonl"),
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": tool_use_id,
    });
    if let Some(a) = agent {
        p["agent_id"] = json!(format!("a-{a}"));
        p["agent_type"] = json!(a);
    }
    p
}

/// Every payload field the hook reads (`src/protocol/payload.rs`).
pub const PAYLOAD_FIELDS: &[&str] = &[
    "hook_event_name",
    "session_id",
    "cwd",
    "permission_mode",
    "agent_id",
    "agent_type",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "tool_response",
    "error",
    "is_interrupt",
    "duration_ms",
];

pub fn event(session: &str, project: &Path, name: &str) -> Value {
    json!({"session_id": session, "cwd": project, "hook_event_name": name, "reason": "other"})
}
