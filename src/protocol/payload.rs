//! The hook input: one JSON object per event. Unknown fields are ignored (Claude Code adds
//! them often); a known field of the wrong type is an error, never a guess.

use crate::reason::{Code, Reason};
use serde_json::{Map, Value};

/// Largest stdin accepted; a bigger payload is denied rather than read without bound.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    SessionStart,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    SubagentStart,
    SubagentStop,
    SessionEnd,
    /// Claude Code refused a call by its own rules or mode; PreToolUse may not have fired.
    PermissionDenied,
    /// A skill's or command's inline shell (`tool_name` Bash or PowerShell, `tool_input.command`),
    /// for which PreToolUse never fires: decided as that tool's call.
    PreSkillShellCommand,
    /// Claude Code 2.1.335: the turn was interrupted (`source`, `reason`); output ignored.
    Interrupt,
    /// Any other event: answered with `{}`.
    Other(String),
}

impl Event {
    fn parse(s: &str) -> Event {
        match s {
            "SessionStart" => Event::SessionStart,
            "PreToolUse" => Event::PreToolUse,
            "PostToolUse" => Event::PostToolUse,
            "PostToolUseFailure" => Event::PostToolUseFailure,
            "SubagentStart" => Event::SubagentStart,
            "SubagentStop" => Event::SubagentStop,
            "SessionEnd" => Event::SessionEnd,
            "PermissionDenied" => Event::PermissionDenied,
            "PreSkillShellCommand" => Event::PreSkillShellCommand,
            "Interrupt" => Event::Interrupt,
            other => Event::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::SessionEnd => "SessionEnd",
            Event::PermissionDenied => "PermissionDenied",
            Event::PreSkillShellCommand => "PreSkillShellCommand",
            Event::Interrupt => "Interrupt",
            Event::Other(s) => s,
        }
    }

    fn is_tool_event(&self) -> bool {
        matches!(
            self,
            Event::PreToolUse
                | Event::PostToolUse
                | Event::PostToolUseFailure
                | Event::PermissionDenied
                | Event::PreSkillShellCommand
        )
    }

    /// An event whose answer refuses a call before it runs: the decision's events.
    pub fn decides(&self) -> bool {
        matches!(self, Event::PreToolUse | Event::PreSkillShellCommand)
    }
}

/// The fields the hook reads, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub event: Event,
    pub session_id: String,
    pub cwd: Option<String>,
    pub permission_mode: Option<String>,
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    pub tool_name: String,
    pub tool_input: Value,
    pub tool_use_id: Option<String>,
    pub tool_response: Option<Value>,
    pub error: Option<String>,
    pub is_interrupt: bool,
    pub duration_ms: Option<u64>,
    /// SessionStart's and Interrupt's `source` (`startup`, `resume`, `clear`, `compact`);
    /// `None` elsewhere.
    pub source: Option<String>,
    /// PermissionDenied's and Interrupt's `reason` (Claude Code's words, or `stop`,
    /// `permission_denied`, `rewind`, `other`); `None` elsewhere.
    pub reason: Option<String>,
}

fn invalid(msg: impl Into<String>) -> Reason {
    Reason::new(Code::PayloadInvalid, msg)
}

fn opt_str(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, Reason> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(format!(
            "`{key}` is {}, not a string; this is not a payload Claude Code sends",
            kind(other)
        ))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses stdin. `Err` carries the reason to deny with.
pub fn parse(bytes: &[u8]) -> Result<Payload, Reason> {
    let obj = json_object(bytes)?;
    let event = event_of(&obj)?;
    if let Event::Other(_) = event {
        return Ok(Payload::unanswered(event));
    }
    let mut p = session_fields(&obj, event)?;
    if p.event.is_tool_event() {
        tool_fields(&obj, &mut p)?;
    }
    Ok(p)
}

/// Stdin as one bounded, non-empty JSON object.
fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, Reason> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(Reason::new(
            Code::PayloadTooLarge,
            format!("the hook payload is larger than {MAX_PAYLOAD_BYTES} bytes"),
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(invalid(
            "the hook received an empty payload on stdin; Claude Code always sends one JSON object",
        ));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| invalid(format!("the hook payload is not valid JSON ({e})")))?;
    match value {
        Value::Object(obj) => Ok(obj),
        other => Err(invalid(format!(
            "the hook payload is {}, not a JSON object",
            kind(&other)
        ))),
    }
}

/// `hook_event_name`, which every payload must carry.
fn event_of(obj: &Map<String, Value>) -> Result<Event, Reason> {
    match obj.get("hook_event_name") {
        None | Some(Value::Null) => Err(Reason::new(
            Code::EventMissing,
            "the hook payload has no hook_event_name, so it cannot be answered safely",
        )),
        Some(Value::String(s)) if !s.is_empty() => Ok(Event::parse(s)),
        Some(other) => Err(invalid(format!(
            "hook_event_name is {}, not an event name",
            kind(other)
        ))),
    }
}

impl Payload {
    /// An event the hook does not handle: nothing else of it is read.
    fn unanswered(event: Event) -> Payload {
        Payload {
            event,
            session_id: String::new(),
            cwd: None,
            permission_mode: None,
            agent_id: None,
            agent_type: None,
            tool_name: String::new(),
            tool_input: Value::Null,
            tool_use_id: None,
            tool_response: None,
            error: None,
            is_interrupt: false,
            duration_ms: None,
            source: None,
            reason: None,
        }
    }
}

/// The fields every handled event has, checked in this order; the tool is left empty.
fn session_fields(obj: &Map<String, Value>, event: Event) -> Result<Payload, Reason> {
    let session_id = opt_str(obj, "session_id")?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            invalid("the hook payload has no session_id, so its decision cannot be recorded")
        })?;
    Ok(Payload {
        session_id,
        cwd: opt_str(obj, "cwd")?,
        permission_mode: opt_str(obj, "permission_mode")?,
        // Present at all, even empty, means a subagent: an empty id must not pass as the main thread.
        agent_id: opt_str(obj, "agent_id")?,
        agent_type: opt_str(obj, "agent_type")?.filter(|s| !s.is_empty()),
        tool_name: String::new(),
        tool_input: Value::Null,
        tool_use_id: opt_str(obj, "tool_use_id")?.filter(|s| !s.is_empty()),
        tool_response: None,
        error: opt_str(obj, "error")?,
        is_interrupt: match obj.get("is_interrupt") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(invalid(format!(
                    "is_interrupt is {}, not a boolean",
                    kind(other)
                )))
            }
        },
        duration_ms: match obj.get("duration_ms") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
            Some(other) => {
                return Err(invalid(format!(
                    "duration_ms is {}, not a number",
                    kind(other)
                )))
            }
        },
        // Only SessionStart's is read, and a value of another type is taken as absent: it
        // decides no more than whether the session's roster is read afresh.
        source: matches!(event, Event::SessionStart | Event::Interrupt)
            .then(|| {
                obj.get("source")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten(),
        // Recorded, never decided on: a value of another type is taken as absent.
        reason: matches!(event, Event::PermissionDenied | Event::Interrupt)
            .then(|| {
                obj.get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten(),
        event,
    })
}

/// The tool of a tool event: its name, its input object and any response.
fn tool_fields(obj: &Map<String, Value>, p: &mut Payload) -> Result<(), Reason> {
    p.tool_name = opt_str(obj, "tool_name")?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid(format!("a {} payload has no tool_name", p.event.name())))?;
    p.tool_input = match obj.get("tool_input") {
        Some(v @ Value::Object(_)) => v.clone(),
        // Claude Code types PermissionDenied's input as any value: it is recorded, not decided.
        v if p.event == Event::PermissionDenied => v.cloned().unwrap_or(Value::Null),
        None | Some(Value::Null) => {
            return Err(invalid(format!(
                "a {} payload has no tool_input object",
                p.event.name()
            )))
        }
        Some(other) => {
            return Err(invalid(format!(
                "tool_input is {}, not an object",
                kind(other)
            )))
        }
    };
    p.tool_response = obj.get("tool_response").cloned();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_claude_code_never_sends() {
        for (input, code) in [
            ("", Code::PayloadInvalid),
            ("  \n", Code::PayloadInvalid),
            ("[1]", Code::PayloadInvalid),
            ("{", Code::PayloadInvalid),
            ("{}", Code::EventMissing),
            (r#"{"hook_event_name":7}"#, Code::PayloadInvalid),
            (
                r#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Read","tool_input":"x"}"#,
                Code::PayloadInvalid,
            ),
            (
                r#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Read","tool_input":{},"agent_id":5}"#,
                Code::PayloadInvalid,
            ),
            (
                r#"{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}"#,
                Code::PayloadInvalid,
            ),
        ] {
            assert_eq!(parse(input.as_bytes()).unwrap_err().code, code, "{input}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!(
            "{{\"hook_event_name\":\"PreToolUse\",\"x\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn unknown_events_and_fields_are_accepted() {
        assert_eq!(
            parse(br#"{"hook_event_name":"Notification","x":1}"#)
                .unwrap()
                .event,
            Event::Other("Notification".into())
        );
        let p = parse(br#"{"hook_event_name":"PreToolUse","session_id":"s","tool_name":"Read","tool_input":{},"new_field":[1]}"#).unwrap();
        assert_eq!(p.tool_name, "Read");
    }
}
