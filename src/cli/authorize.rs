//! `attenu-hook authorize` (host only): issues a signed authorization for one exact tool call.

use super::project::state_project_dir;
use super::{fail, Exit};
use crate::config::Config;
use crate::gate::authz;
use serde_json::Value;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// The exact tool name, as Claude Code sends it (e.g. Bash, mcp__payments__refund)
    #[arg(long)]
    tool: String,
    /// The complete tool_input as JSON; bound by the SHA-256 of its RFC 8785 form
    #[arg(long, value_name = "JSON")]
    input: String,
    /// A reviewer named in [gate] reviewers
    #[arg(long)]
    reviewer: String,
    /// The reviewer's key file (from `attenu-hook keygen`)
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    #[arg(long, default_value_t = 1)]
    uses: u32,
    /// Seconds, or 90s, 10m, 2h, 1d
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    expires_in: String,
    /// Only for this session id
    #[arg(long)]
    session: Option<String>,
    /// Only for this subagent type
    #[arg(long)]
    agent: Option<String>,
}

pub fn run(a: Args) -> Exit {
    let input: Value = match serde_json::from_str(&a.input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return fail("--input must be the tool_input JSON object"),
        Err(e) => return fail(format!("--input is not valid JSON: {e}")),
    };
    let expires_in_ms = match authz::parse_duration(&a.expires_in) {
        Ok(ms) => ms,
        Err(e) => return fail(e),
    };
    let root = state_project_dir(&a.project);
    let config = match crate::config::load(&root.join(".attenu")) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let req = authz::Request {
        tool: &a.tool,
        input: &input,
        reviewer: &a.reviewer,
        key_path: &a.key,
        uses: a.uses,
        expires_in_ms,
        session: a.session.as_deref(),
        agent: a.agent.as_deref(),
    };
    match authz::authorize(&root, &config, &req) {
        Ok(id) => {
            warn_if_never_asked(&config, &a.tool, &input, a.agent.as_deref());
            println!("{id}");
            Exit::Success
        }
        Err(e) => fail(e),
    }
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
