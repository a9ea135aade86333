//! `attenu-hook authorize` (host only): issues a signed authorization for one exact tool call,
//! or (`--list`) shows the project's authorizations and the uses each has left.

use super::project::{resolve_session, state_project_dir};
use super::{fail, Exit};
use crate::config::Config;
use crate::gate::authz;
use serde_json::Value;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The project, or a directory inside it (its state is the nearest .attenu/ above)
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// List the project's authorizations: tool, reviewer, uses left, expiry, bindings
    #[arg(long, conflicts_with_all = ["tool", "input", "reviewer", "key"])]
    list: bool,
    /// One JSON object per line (with --list)
    #[arg(long, requires = "list")]
    json: bool,
    /// The exact tool name, as Claude Code sends it (e.g. Bash, mcp__payments__refund)
    #[arg(long, required_unless_present = "list")]
    tool: Option<String>,
    /// The complete tool_input as JSON; bound by the SHA-256 of its RFC 8785 form
    #[arg(long, value_name = "JSON", required_unless_present = "list")]
    input: Option<String>,
    /// A reviewer named in [gate] reviewers
    #[arg(long, required_unless_present = "list")]
    reviewer: Option<String>,
    /// The reviewer's key file (from `attenu-hook keygen`)
    #[arg(long, value_name = "FILE", required_unless_present = "list")]
    key: Option<PathBuf>,
    /// How many calls it allows (each use is one matching call)
    #[arg(long, default_value_t = 1)]
    uses: u32,
    /// Seconds, or 90s, 10m, 2h, 1d
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    expires_in: String,
    /// Only for this session id (a recorded session's short id, as `log` shows it, is
    /// completed; an id not recorded yet is taken as given)
    #[arg(long)]
    session: Option<String>,
    /// Only for this subagent type
    #[arg(long)]
    agent: Option<String>,
}

pub fn run(a: Args) -> Exit {
    let root = state_project_dir(&a.project);
    if a.list {
        return list(&root, a.json);
    }
    // clap requires these without --list.
    let (Some(tool), Some(input), Some(reviewer), Some(key)) =
        (&a.tool, &a.input, &a.reviewer, &a.key)
    else {
        return fail("--tool, --input, --reviewer and --key are required (or --list)");
    };
    let input: Value = match serde_json::from_str(input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return fail("--input must be the tool_input JSON object"),
        Err(e) => return fail(format!("--input is not valid JSON: {e}")),
    };
    let session = match a
        .session
        .as_deref()
        .map(|s| resolve_session(&root.join(".attenu"), s))
    {
        Some(Err(e)) => return fail(e),
        Some(Ok(s)) => Some(s),
        None => None,
    };
    let expires_in_ms = match authz::parse_duration(&a.expires_in) {
        Ok(ms) => ms,
        Err(e) => return fail(e),
    };
    let config = match crate::config::load(&root.join(".attenu")) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let req = authz::Request {
        tool,
        input: &input,
        reviewer,
        key_path: key,
        uses: a.uses,
        expires_in_ms,
        session: session.as_deref(),
        agent: a.agent.as_deref(),
    };
    match authz::authorize(&root, &config, &req) {
        Ok((id, expires_ms)) => {
            warn_if_never_asked(&config, tool, &input, a.agent.as_deref());
            let expires = crate::clock::rfc3339_ms(expires_ms);
            println!("authorization: {id}");
            println!("tool:          {tool} (this exact input)");
            println!("reviewer:      {reviewer}");
            println!("uses:          {}", a.uses);
            println!("expires:       {expires}");
            println!(
                "bound to:      {}",
                bindings(session.as_deref(), a.agent.as_deref())
            );
            Exit::Success
        }
        Err(e) => fail(e),
    }
}

/// What an authorization is bound to besides its tool and input.
fn bindings(session: Option<&str>, agent: Option<&str>) -> String {
    match (session, agent) {
        (None, None) => "any session, any caller".into(),
        (Some(s), None) => format!("session {s}, any caller"),
        (None, Some(a)) => format!("agent type {a}, any session"),
        (Some(s), Some(a)) => format!("session {s}, agent type {a}"),
    }
}

/// `authorize --list`: each authorization, newest first, with what is left of it.
fn list(root: &std::path::Path, json: bool) -> Exit {
    let all = match authz::list(root) {
        Ok(all) => all,
        Err(e) => return fail(e),
    };
    let now = crate::clock::now_ms() as i64;
    if json {
        for s in &all {
            let mut v = serde_json::to_value(s).expect("JSON");
            v["state"] = s.state(now).into();
            println!("{v}");
        }
        return Exit::Success;
    }
    if all.is_empty() {
        println!("no authorizations in {}", root.join(".attenu").display());
        return Exit::Success;
    }
    let wt = all.iter().map(|s| s.tool.len()).max().unwrap_or(0).max(4);
    let wr = all
        .iter()
        .map(|s| s.reviewer.len())
        .max()
        .unwrap_or(0)
        .max(8);
    println!(
        "{:<32}  {:<wt$}  {:<wr$}  {:>9}  {:<8}  {:<24}  bound to",
        "authorization", "tool", "reviewer", "uses left", "state", "expires"
    );
    for s in &all {
        println!(
            "{:<32}  {:<wt$}  {:<wr$}  {:>9}  {:<8}  {:<24}  {}",
            s.id,
            s.tool,
            s.reviewer,
            format!("{}/{}", s.uses_left.max(0), s.uses),
            s.state(now),
            crate::clock::rfc3339_ms(s.expires_ms.max(0) as u64),
            bindings(s.session_id.as_deref(), s.agent_type.as_deref())
        );
    }
    Exit::Success
}

/// An authorization for a scope the gate never asks about is stored all the same (the host
/// may be about to gate it), but most often the tool name is mistyped: say so.
fn warn_if_never_asked(config: &Config, tool: &str, input: &Value, agent: Option<&str>) {
    let scope = crate::derive::scopes::scope_for_call(tool, input);
    // Bound to an agent: gated for that agent; otherwise for anyone at all.
    let asked = match agent {
        Some(a) => config.gate.requires(&scope, Some(a)),
        None => config.gate.mentions(&scope),
    };
    if !asked {
        eprintln!("attenu-hook: warning: {tool} needs {scope}, which neither [gate] require nor [gate.agents]{} in .attenu/config.toml lists, so the gate never asks for this authorization. Check the tool name (exactly as Claude Code sends it, e.g. Bash, mcp__server__tool) or add the scope to [gate] require", agent.map(|a| format!(" for {a}")).unwrap_or_default());
    }
}
