//! Helpers of the gate tests (gate, reconciliation).
use super::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A project whose Bash is gated, with reviewer alice; returns (project, alice's key file).
pub fn gated(tag: &str) -> (TempDir, std::path::PathBuf) {
    gated_project(tag, "Read, Bash")
}

pub fn bash(p: &Path, session: &str, agent: Option<&str>, input: &Value, id: &str) -> Out {
    hook(p, &pre(session, p, agent, "Bash", input.clone(), id))
}

/// `receipt --project DIR --call CALL --receipt-id ID --observer OBSERVER` (and `extra`).
pub fn receipt(dir: &str, call: &str, id: &str, observer: &str, extra: &[&str]) -> Out {
    let mut args = vec!["receipt", "--project", dir, "--call", call];
    args.extend(["--receipt-id", id, "--observer", observer]);
    args.extend(extra);
    cli(&args)
}

/// The ops subagent's Bash with `input` in session s1.
/// Moves session s1's ledger aside and puts a directory in its place, so that no outcome can
/// be written: the ledger's path, and where it went.
pub fn block_ledger(p: &Path) -> (PathBuf, PathBuf) {
    let ledger = p.ledger("s1");
    let aside = p.join("ledger.aside");
    std::fs::rename(&ledger, &aside).unwrap();
    std::fs::create_dir(&ledger).unwrap();
    (ledger, aside)
}

pub fn ops_bash(p: &TempDir, input: &Value, id: &str) -> Out {
    p.subagent("ops", "Bash").input(input.clone()).id(id).run()
}

/// [`authorize`], which must succeed: the authorization's id.
#[track_caller]
pub fn authorize_ok(p: &Path, key: &Path, input: &Value, extra: &[&str]) -> String {
    let out = authorize(p, key, input, extra);
    assert_eq!(out.code, 0, "{}", out.stderr);
    authorization_id(&out)
}

/// `authorize --project P --list` (and `extra`).
pub fn authorize_list(p: &Path, extra: &[&str]) -> Out {
    let mut args = vec!["authorize", "--project", p.to_str().unwrap(), "--list"];
    args.extend(extra);
    cli(&args)
}

/// The project's gate database, opened as the hook opens it.
pub fn gate_db(p: &Path) -> rusqlite::Connection {
    attenu_hook::gate::db::open(&p.join(".attenu")).unwrap()
}

/// Sets the use counter of authorization `id` in the database, past its signature.
pub fn set_uses_left(db: &rusqlite::Connection, id: &str, uses: u32) {
    let sql = "UPDATE authorizations SET uses_left = ?1 WHERE id = ?2";
    db.execute(sql, rusqlite::params![uses, id]).unwrap();
}

/// Every authorization row's stored input digest and signed document.
pub fn stored_authorizations(db: &rusqlite::Connection) -> Vec<(String, String)> {
    db.prepare("SELECT input_digest, signed FROM authorizations")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Inserts straight into the database a one-use authorization of Bash with `input` for
/// reviewer alice, signed by the key in `signer` (not necessarily alice's).
pub fn forge_authorization(p: &Path, signer: &Path, input: &Value) {
    let salt = "5a".repeat(16);
    let digest = attenu_hook::gate::authz::input_digest(input, Some(&salt)).unwrap();
    let doc = json!({"v": 2, "type": "attenu-hook.authorization", "id": "f".repeat(32), "tool": "Bash", "input_salt": salt, "input_digest": digest,
        "uses": 1, "expires_ms": 99_999_999_999_999u64, "session_id": null, "agent_type": null, "reviewer": "alice", "created_ms": 1});
    let signed = attenu_hook::json::canonical::to_string(&doc).unwrap();
    let k = attenu_hook::evidence::keys::load(signer).unwrap();
    let sig = attenu_hook::ledger::chain::hex(&k.sign(signed.as_bytes()));
    gate_db(p).execute(
        "INSERT INTO authorizations (id, reviewer, tool, input_digest, uses_left, expires_ms, session_id, agent_type, created_ms, signed, sig) VALUES (?1, 'alice', 'Bash', ?2, 1, 99999999999999, NULL, NULL, 1, ?3, ?4)",
        rusqlite::params!["f".repeat(32), digest, signed, sig],
    )
    .unwrap();
}

/// The permission bits of `path`.
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The last entry of session s1's ledger.
pub fn last_entry(p: &Path) -> Value {
    p.entries("s1").pop().unwrap()
}

/// The project's config with `mode = "shadow"` put first; returns the config as it was.
pub fn shadow_mode(p: &Path) -> String {
    let cfg = std::fs::read_to_string(p.join(".attenu/config.toml")).unwrap();
    write_config(p, format!("mode = \"shadow\"\n{cfg}"));
    cfg
}
