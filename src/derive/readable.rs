//! Scope names as a person reads them. A name outside the scope grammar (`MultiEdit`, `Python
//! Security Expert`) is encoded as `x--…` by [`segment`]; the encoding stays as it is (it is
//! what the ledger records), and wherever a person reads a scope the original name is shown
//! beside it.

use super::scopes::segment;

/// The name an encoded segment stands for; `None` for a plain segment or one [`segment`]
/// would not have written.
pub fn decoded(seg: &str) -> Option<String> {
    let rest = seg.strip_prefix("x--")?;
    let b = rest.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'-' {
            let hex = rest.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let name = String::from_utf8(out).ok()?;
    (segment(&name) == seg).then_some(name)
}

/// The original name of a scope that has an encoded segment, spelled as the project writes
/// it: `tool.x---4dulti-45dit` → `MultiEdit`, `agent.delegate.x--…` → the agent's name,
/// `mcp.x--…` → `mcp__Server__tool`. `None` when every segment is plain (nothing to show).
pub fn original(scope: &str) -> Option<String> {
    let segs: Vec<&str> = scope.split('.').collect();
    if !segs.iter().any(|s| decoded(s).is_some()) {
        return None;
    }
    let name = |s: &str| decoded(s).map_or_else(|| s.to_string(), |n| printable(&n));
    Some(match segs.as_slice() {
        ["tool", t] => name(t),
        ["agent", "delegate", a] => name(a),
        ["mcp", srv, "*"] => format!("mcp__{}", name(srv)),
        ["mcp", srv, t] => format!("mcp__{}__{}", name(srv), name(t)),
        _ => segs.iter().map(|s| name(s)).collect::<Vec<_>>().join("."),
    })
}

/// `name` with its control characters (a terminal escape in a hostile name) written as
/// `\u{1b}`, so showing it beside a scope can never drive the reader's terminal.
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `scope`, followed by its original name in parentheses when it has an encoded segment.
pub fn scope(scope: &str) -> String {
    match original(scope) {
        Some(o) => format!("{scope} ({o})"),
        None => scope.to_string(),
    }
}

/// The agent name a delegation scope names (decoded), if `scope` is one.
pub fn delegated_agent(scope: &str) -> Option<String> {
    let seg = scope.strip_prefix("agent.delegate.")?;
    (seg != "*").then(|| decoded(seg).map_or_else(|| seg.to_string(), |n| printable(&n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derive::scopes::{delegate_scope, scope_for_call};
    use serde_json::json;

    #[test]
    fn encoded_names_read_as_they_were_written() {
        let table = [
            ("MultiEdit", "tool.x---4dulti-45dit", "MultiEdit"),
            ("Not--Plain", "tool.x---4eot-2d-2d-50lain", "Not--Plain"),
            ("mcp__My Srv__Do It", "", "mcp__My Srv__Do It"),
            ("mcp__My Srv", "", "mcp__My Srv"),
            ("mcp__github__Create", "", "mcp__github__Create"),
        ];
        for (tool, want_scope, want) in table {
            let s = scope_for_call(tool, &json!({}));
            if !want_scope.is_empty() {
                assert_eq!(s, want_scope);
            }
            assert_eq!(original(&s).as_deref(), Some(want), "{s}");
            assert_eq!(scope_of(&s), format!("{s} ({want})"));
        }
        let a = delegate_scope("Python Security Expert");
        assert_eq!(original(&a).as_deref(), Some("Python Security Expert"));
        assert_eq!(
            delegated_agent(&a).as_deref(),
            Some("Python Security Expert")
        );
        assert_eq!(
            delegated_agent("agent.delegate.ops").as_deref(),
            Some("ops")
        );
        for plain in ["fs.read", "agent.delegate.ops", "mcp.github.*", "tool.x"] {
            assert_eq!(original(plain), None, "{plain}");
            assert_eq!(scope_of(plain), plain);
        }
        // Not what `segment` writes: shown as it is.
        for odd in ["x--A", "x---4", "x---zz", "x---ff", "x--ab"] {
            assert_eq!(decoded(odd), None, "{odd}");
        }
        assert_eq!(decoded(&segment("é ü")).as_deref(), Some("é ü"));
        let hostile = scope_for_call("Evil\u{1b}[2J", &json!({}));
        assert_eq!(original(&hostile).as_deref(), Some("Evil\\u{1b}[2J"));
    }

    fn scope_of(s: &str) -> String {
        scope(s)
    }
}
