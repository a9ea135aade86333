//! `attenu-hook log`: the ledger as a readable table.

use crate::clock as time;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Row {
    pub time: String,
    pub session: String,
    pub agent: String,
    pub tool: String,
    pub scope: String,
    pub decision: String,
    pub reason: String,
}

/// What `log` read: the rows, and one warning for every ledger that does not verify (its rows
/// are shown as written, so a person can see what is there, but not as a record to trust).
#[derive(Debug, Default)]
pub struct Read {
    pub rows: Vec<Row>,
    pub unverified: Vec<String>,
}

/// Why `log` has nothing to show.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot list {}: {source}; is this the project root?", .dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no ledger for session '{session}' in {}", .dir.display())]
    NoSession { session: String, dir: PathBuf },
    /// A ledger file is not one the hook may read, or reading it failed.
    #[error(transparent)]
    Read(#[from] crate::fs::ReadError),
}

/// Decision and outcome rows of one session (or all sessions), in ledger order.
pub fn rows(project: &Path, session: Option<&str>) -> Result<Read, LogError> {
    let attenu = project.join(".attenu");
    let mut files: Vec<_> = std::fs::read_dir(&attenu)
        .map_err(|source| LogError::List {
            dir: attenu.clone(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ledger-") && n.ends_with(".jsonl"))
        })
        .collect();
    if let Some(s) = session {
        let want = attenu.join(format!(
            "ledger-{}.jsonl",
            crate::ledger::store::session_file_name(s)
        ));
        files.retain(|p| *p == want);
        if files.is_empty() {
            return Err(LogError::NoSession {
                session: s.to_string(),
                dir: attenu,
            });
        }
    }
    files.sort();
    let mut out = Read::default();
    for f in files {
        // Never through a symlink; u64::MAX: a ledger has no bound.
        let Some((bytes, _)) = crate::fs::read_owned(&f, u64::MAX)? else {
            continue;
        };
        // A torn final line is not yet verified or moved aside: the next hook call does that.
        let whole = crate::ledger::store::whole_lines_len(&bytes);
        if let Err(e) = crate::ledger::store::scan(&bytes[..whole]) {
            out.unverified.push(format!(
                "{} does not verify ({e}); its rows below are as written, not a verified record",
                f.display()
            ));
        }
        let text = String::from_utf8_lossy(&bytes[..whole]);
        // An outcome names only its call: show the tool and scope of the call it finishes.
        let mut calls: std::collections::HashMap<String, (String, String)> =
            std::collections::HashMap::new();
        for line in text.lines() {
            let Ok(e) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(mut r) = row(&e) else { continue };
            let call = s(e.get("call_id"));
            if e["event"] == "outcome" {
                if let Some((tool, scope)) = calls.get(&call) {
                    (r.tool, r.scope) = (tool.clone(), scope.clone());
                }
            } else {
                calls.insert(call, (r.tool.clone(), r.scope.clone()));
            }
            out.rows.push(r);
        }
    }
    Ok(out)
}

fn s(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_string()
}

fn row(e: &Value) -> Option<Row> {
    let ctx = e.get("context");
    let c = |k: &str| s(ctx.and_then(|c| c.get(k)));
    let event = e.get("event")?.as_str()?;
    let (decision, reason) = match event {
        "allow" if e.get("policy").is_some() => (
            "would-deny".to_string(),
            format!(
                "[{}] {}",
                s(ctx.and_then(|c| c.pointer("/would_deny/code"))),
                s(ctx.and_then(|c| c.pointer("/would_deny/message")))
            ),
        ),
        "allow" => ("allow".to_string(), String::new()),
        "deny" => (
            "DENY".to_string(),
            format!(
                "[{}] {}",
                c("reason_code"),
                s(e.pointer("/reasons/0/message"))
            ),
        ),
        "outcome" => (format!("outcome:{}", s(e.get("body_state"))), String::new()),
        _ => return None,
    };
    let agent = match (ctx.and_then(|c| c.get("agent_id")), c("agent_type")) {
        (Some(_), t) if !t.is_empty() => t,
        (Some(_), _) => "(unknown)".into(),
        (None, _) => "main".into(),
    };
    let time = match c("at") {
        t if !t.is_empty() => t,
        _ => e
            .get("ts")
            .and_then(Value::as_u64)
            .map(time::rfc3339_ms)
            .unwrap_or_default(),
    };
    Some(Row {
        time,
        session: c("session_id"),
        agent,
        tool: s(e.get("tool")),
        // An encoded name (`tool.x---4dulti-45dit`) with the name as written beside it.
        scope: crate::derive::readable::scope(&s(e.get("scope"))),
        decision,
        reason,
    })
}

/// The table (or JSON lines). Colours only when `color`.
pub fn render(rows: &[Row], json: bool, color: bool) -> String {
    if json {
        return rows
            .iter()
            .map(|r| serde_json::to_string(r).expect("JSON") + "\n")
            .collect();
    }
    let w = |f: &dyn Fn(&Row) -> usize, min: usize| rows.iter().map(f).max().unwrap_or(0).max(min);
    let (wa, wt, ws, wd) = (
        w(&|r| r.agent.len(), 5),
        w(&|r| r.tool.len(), 4),
        w(&|r| r.scope.len(), 5),
        w(&|r| r.decision.len(), 8),
    );
    let mut out = format!(
        "{:<24}  {:<36}  {:<wa$}  {:<wt$}  {:<ws$}  {:<wd$}  reason\n",
        "time", "session", "agent", "tool", "scope", "decision"
    );
    for r in rows {
        let d = format!("{:<wd$}", r.decision);
        let d = match (color, r.decision.as_str()) {
            (true, "DENY") => format!("\x1b[31m{d}\x1b[0m"),
            (true, "would-deny") => format!("\x1b[33m{d}\x1b[0m"),
            (true, "allow") => format!("\x1b[32m{d}\x1b[0m"),
            _ => d,
        };
        let line = format!(
            "{:<24}  {:<36}  {:<wa$}  {:<wt$}  {:<ws$}  {d}  {}",
            r.time, r.session, r.agent, r.tool, r.scope, r.reason
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
