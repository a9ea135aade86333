//! One event, from its bytes to its answer: parse, find the project and its configuration,
//! and hand the event to its handler. Errors become the answer the event allows.

use super::context::{project_root, Ctx};
use super::{faults, last_resort, lifecycle, post_tool_use, pre_tool_use, refused};
use crate::config;
use crate::protocol::payload::{self, Event};
use crate::protocol::Answer;
use crate::reason::{Code, Reason};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Handles one payload given as bytes. `set_deadline` tells the watchdog the configured one.
pub fn handle_bytes(input: &[u8], started: Instant, set_deadline: &dyn Fn(Instant)) -> Answer {
    let p = match payload::parse(input) {
        Ok(p) => p,
        Err(reason) => return Answer::DenyAndBlock(reason),
    };
    let fail = |r: Reason| -> Answer {
        match p.event {
            Event::PreToolUse => Answer::Deny(r),
            // Exit 2 blocks a skill's inline shell; its JSON is not read then.
            Event::PreSkillShellCommand => Answer::DenyAndBlock(r),
            Event::PostToolUse | Event::PostToolUseFailure => {
                last_resort::failure_answer(r.code, &r.message)
            }
            _ => Answer::message(format!("[{}] {}", r.code, r.message)),
        }
    };
    if let Event::Other(_) = p.event {
        return Answer::NoObjection;
    }
    let post = matches!(p.event, Event::PostToolUse | Event::PostToolUseFailure);
    if post {
        last_resort::note_post_event();
    }
    let env_project = std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from);
    let Some(project) = project_root(env_project.as_deref(), p.cwd.as_deref()) else {
        return fail(Reason::new(Code::ProjectNotFound, "neither CLAUDE_PROJECT_DIR nor the payload's cwd names a directory, so no project can be derived"));
    };
    let attenu = project.join(".attenu");
    if post {
        last_resort::note_post_call(last_resort::PostCall {
            attenu: attenu.clone(),
            session_id: p.session_id.clone(),
            tool_use_id: p.tool_use_id.clone(),
            tool: p.tool_name.clone(),
        });
    }
    if let Err(e) = crate::fs::ensure_private_dir(&attenu) {
        return fail(Reason::new(Code::StateDirUnsafe, e.to_string()));
    }
    let config = match config::load(&attenu) {
        Ok(c) => c,
        Err(e) => {
            return fail(Reason::new(
                Code::ConfigInvalid,
                format!("{e}; fix it (a configuration error never turns enforcement off)"),
            ))
        }
    };
    let deadline = started + Duration::from_millis(config.deadline_ms);
    set_deadline(deadline);
    faults::after_config();
    let ctx = Ctx {
        p: &p,
        project: &project,
        attenu: &attenu,
        config: &config,
        deadline,
        mac_key: std::cell::OnceCell::new(),
    };
    let result = match p.event {
        Event::PreToolUse | Event::PreSkillShellCommand => pre_tool_use::handle(&ctx),
        Event::PermissionDenied | Event::Interrupt => refused::handle(&ctx),
        Event::PostToolUse | Event::PostToolUseFailure => post_tool_use::handle(&ctx),
        Event::SessionStart => lifecycle::session_start(&ctx),
        Event::SubagentStart => lifecycle::subagent_start(&ctx),
        Event::SubagentStop | Event::SessionEnd => lifecycle::stop(&ctx),
        Event::Other(_) => Ok(Answer::NoObjection),
    };
    result.unwrap_or_else(fail)
}
