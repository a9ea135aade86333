//! `attenu-hook receipt` (host only): records a verified business receipt for a call.

use super::project::state_project_dir;
use super::{fail, Exit};
use serde_json::Value;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The project, or a directory inside it (its state is the nearest .attenu/ above)
    #[arg(long, value_name = "DIR", default_value = ".")]
    project: PathBuf,
    /// The call's call_id or tool_use_id
    #[arg(long)]
    call: String,
    /// The receipt's id in the host system (an order, a transfer, a ticket)
    #[arg(long)]
    receipt_id: String,
    /// Who verified the effect (the host system or person)
    #[arg(long)]
    observer: String,
    /// The receipt's payload (stored as a digest)
    #[arg(long, value_name = "JSON")]
    payload: Option<String>,
}

pub fn run(a: Args) -> Exit {
    let payload = match a
        .payload
        .as_deref()
        .map(serde_json::from_str::<Value>)
        .transpose()
    {
        Ok(p) => p,
        Err(e) => return fail(format!("--payload is not valid JSON: {e}")),
    };
    match crate::gate::receipt::record(
        &state_project_dir(&a.project),
        &a.call,
        &a.receipt_id,
        &a.observer,
        payload.as_ref(),
    ) {
        Ok(b) => {
            println!(
                "receipt {} recorded for call {} ({} in session {})",
                a.receipt_id, b.call_id, b.tool, b.session_id
            );
            Exit::Success
        }
        Err(e) => fail(e),
    }
}
