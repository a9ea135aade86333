//! The decision-bound gate, through the binary: authorize, claim, replay, races, expiry,
//! reconciliation and receipts.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A project whose Bash is gated, with reviewer alice; returns (project, alice's key file).
fn gated(tag: &str) -> (TempDir, std::path::PathBuf) {
    let p = project(
        tag,
        &[("ops.md", "---\nname: ops\ntools: Read, Bash\n---\n")],
        None,
    );
    let key = p.path().join("alice.key");
    let out = cli(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let public = out.stdout.lines().last().unwrap().trim().to_string();
    assert_eq!(public.len(), 64);
    std::fs::create_dir_all(p.path().join(".attenu")).unwrap();
    std::fs::write(
        p.path().join(".attenu/config.toml"),
        format!("[gate]\nrequire = [\"exec.bash\"]\nreviewers = {{ alice = \"{public}\" }}\n"),
    )
    .unwrap();
    (p, key)
}

fn authorize(p: &Path, key: &Path, input: &Value, extra: &[&str]) -> Out {
    let mut args = vec![
        "authorize",
        "--project",
        p.to_str().unwrap(),
        "--tool",
        "Bash",
        "--reviewer",
        "alice",
        "--key",
        key.to_str().unwrap(),
    ];
    let input = input.to_string();
    args.extend(["--input", input.as_str()]);
    args.extend(extra);
    cli(&args)
}

fn bash(p: &Path, session: &str, agent: Option<&str>, input: &Value, id: &str) -> Out {
    hook(p, &pre(session, p, agent, "Bash", input.clone(), id))
}

#[test]
fn one_use_then_denial() {
    let (p, key) = gated("gate-once");
    let input = json!({"command": "deploy --prod"});
    let before = bash(p.path(), "s1", Some("ops"), &input, "t0");
    assert!(
        before.denied() && before.reason().contains("[gate-authorization-required]"),
        "{}",
        before.reason()
    );
    let out = authorize(p.path(), &key, &input, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim().len(), 32, "prints the authorization id");
    assert!(bash(p.path(), "s1", Some("ops"), &input, "t1").is_allow());
    assert!(
        bash(p.path(), "s1", Some("ops"), &input, "t2").denied(),
        "the single use is gone"
    );
    let es = entries(p.path(), "s1");
    let allow = es.iter().find(|e| e["event"] == "allow").unwrap();
    assert_eq!(allow["context"]["gate"]["reviewer"], "alice");
    let denies: Vec<&Value> = es.iter().filter(|e| e["event"] == "deny").collect();
    assert_eq!(denies.len(), 2, "every gate denial is on the ledger");
    assert_eq!(denies[1]["disposition"], "held_pending_grant");
}

#[test]
fn the_gate_applies_to_the_main_thread_too() {
    let (p, key) = gated("gate-main");
    let input = json!({"command": "ls"});
    // Bash is declared (ops holds it), so the main thread holds it in the root; the gate still applies.
    assert!(bash(p.path(), "s1", None, &input, "m0").denied());
    authorize(p.path(), &key, &input, &[]);
    assert!(bash(p.path(), "s1", None, &input, "m1").is_allow());
}

#[test]
fn a_replayed_tool_use_id_is_denied() {
    let (p, key) = gated("gate-replay");
    let input = json!({"command": "ls"});
    authorize(p.path(), &key, &input, &["--uses", "5"]);
    assert!(bash(p.path(), "s1", Some("ops"), &input, "same").is_allow());
    let again = bash(p.path(), "s1", Some("ops"), &input, "same");
    assert!(
        again.denied() && again.reason().contains("[gate-replay]"),
        "{}",
        again.reason()
    );
}

#[test]
fn different_arguments_or_another_tool_are_denied() {
    let (p, key) = gated("gate-args");
    authorize(p.path(), &key, &json!({"command": "ls"}), &["--uses", "3"]);
    assert!(bash(
        p.path(),
        "s1",
        Some("ops"),
        &json!({"command": "ls "}),
        "t1"
    )
    .denied());
    assert!(bash(
        p.path(),
        "s1",
        Some("ops"),
        &json!({"command": "ls", "timeout": 5}),
        "t2"
    )
    .denied());
    assert!(bash(p.path(), "s1", Some("ops"), &json!({"command": "ls"}), "t3").is_allow());
}

#[test]
fn bindings_to_session_and_agent_hold() {
    let (p, key) = gated("gate-bind");
    let input = json!({"command": "ls"});
    authorize(
        p.path(),
        &key,
        &input,
        &["--session", "s2", "--agent", "ops", "--uses", "4"],
    );
    assert!(
        bash(p.path(), "s1", Some("ops"), &input, "t1").denied(),
        "other session"
    );
    assert!(
        bash(p.path(), "s2", None, &input, "t2").denied(),
        "main thread is not agent ops"
    );
    assert!(bash(p.path(), "s2", Some("ops"), &input, "t3").is_allow());
}

#[test]
fn eight_processes_racing_on_one_use_give_exactly_one_allow() {
    let (p, key) = gated("gate-race");
    let input = json!({"command": "transfer 100"});
    authorize(p.path(), &key, &input, &[]);
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let dir = p.path().to_path_buf();
            let input = input.clone();
            // Different sessions, so the processes do not serialise on one ledger lock first.
            std::thread::spawn(move || {
                bash(
                    &dir,
                    &format!("race{i}"),
                    Some("ops"),
                    &input,
                    &format!("r{i}"),
                )
                .is_allow()
            })
        })
        .collect();
    let allows = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|a| *a)
        .count();
    assert_eq!(allows, 1);
}

#[test]
fn a_key_that_is_not_a_configured_reviewer_is_refused() {
    let (p, _alice) = gated("gate-wrongkey");
    let mallory = p.path().join("mallory.key");
    assert_eq!(cli(&["keygen", "--out", mallory.to_str().unwrap()]).code, 0);
    let out = authorize(p.path(), &mallory, &json!({"command": "ls"}), &[]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("not reviewer 'alice'"),
        "{}",
        out.stderr
    );
    let out = cli(&[
        "authorize",
        "--project",
        p.path().to_str().unwrap(),
        "--tool",
        "Bash",
        "--input",
        "{}",
        "--reviewer",
        "bob",
        "--key",
        mallory.to_str().unwrap(),
    ]);
    assert!(
        out.stderr.contains("'bob' is not a reviewer"),
        "{}",
        out.stderr
    );
    // A row forged straight into the database, signed by mallory, is refused at claim time.
    let conn = attenu_hook::gate::db::open(&p.path().join(".attenu")).unwrap();
    let input = json!({"command": "ls"});
    let digest = attenu_hook::gate::authz::input_digest(&input).unwrap();
    let doc = json!({"v": 1, "type": "attenu-hook.authorization", "id": "f".repeat(32), "tool": "Bash", "input_digest": digest,
        "uses": 1, "expires_ms": 99_999_999_999_999u64, "session_id": null, "agent_type": null, "reviewer": "alice", "created_ms": 1});
    let signed = attenu_hook::ledger::canonical::to_string(&doc).unwrap();
    let k = attenu_hook::evidence::keys::load(&mallory).unwrap();
    let sig = attenu_hook::ledger::chain::hex(&k.sign(signed.as_bytes()));
    conn.execute(
        "INSERT INTO authorizations (id, reviewer, tool, input_digest, uses_left, expires_ms, session_id, agent_type, created_ms, signed, sig) VALUES (?1, 'alice', 'Bash', ?2, 1, 99999999999999, NULL, NULL, 1, ?3, ?4)",
        rusqlite::params!["f".repeat(32), digest, signed, sig],
    )
    .unwrap();
    let out = bash(p.path(), "s1", Some("ops"), &input, "t1");
    assert!(
        out.denied() && out.reason().contains("signature does not verify"),
        "{}",
        out.reason()
    );
}

#[test]
fn an_expired_authorization_is_refused() {
    let (p, key) = gated("gate-expired");
    let input = json!({"command": "ls"});
    authorize(p.path(), &key, &input, &["--expires-in", "1s"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(bash(p.path(), "s1", Some("ops"), &input, "t1").denied());
    assert_eq!(
        authorize(p.path(), &key, &input, &["--expires-in", "0s"]).code,
        2,
        "a zero lifetime is refused"
    );
    assert_eq!(
        authorize(p.path(), &key, &input, &["--expires-in", "5 parsecs"]).code,
        2
    );
}

#[test]
fn an_unrecordable_outcome_halts_and_leaves_a_marker_that_resolve_closes() {
    let p = sample("reconcile");
    let input = json!({"file_path": "/p/a"});
    assert!(hook(
        p.path(),
        &pre(
            "s1",
            p.path(),
            Some("reviewer"),
            "Read",
            input.clone(),
            "t1"
        )
    )
    .is_allow());
    let ledger = ledger_path(p.path(), "s1");
    let aside = p.path().join("ledger.aside");
    std::fs::rename(&ledger, &aside).unwrap();
    std::fs::create_dir(&ledger).unwrap();
    let out = hook(
        p.path(),
        &post(
            "s1",
            p.path(),
            Some("reviewer"),
            "Read",
            input.clone(),
            "t1",
            json!({}),
        ),
    );
    assert_eq!(out.json()["continue"], false);
    let reason = out.json()["stopReason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("[outcome-not-recorded]") && reason.contains("marker 1"),
        "{reason}"
    );
    let list = cli(&["reconcile", "list", "--project", p.path().to_str().unwrap()]);
    assert!(
        list.stdout.contains("t1") && list.stdout.contains("Read"),
        "{}",
        list.stdout
    );
    std::fs::remove_dir(&ledger).unwrap();
    std::fs::rename(&aside, &ledger).unwrap();
    let out = cli(&[
        "reconcile",
        "resolve",
        "1",
        "--project",
        p.path().to_str().unwrap(),
        "--outcome",
        "executed",
        "--evidence",
        "ticket OPS-12",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list = cli(&["reconcile", "list", "--project", p.path().to_str().unwrap()]);
    assert!(list.stdout.contains("no open"), "{}", list.stdout);
    let o = entries(p.path(), "s1").pop().unwrap();
    assert_eq!(o["event"], "outcome");
    assert_eq!(o["context"]["reconciliation"]["evidence"], "ticket OPS-12");
    let again = cli(&[
        "reconcile",
        "resolve",
        "1",
        "--project",
        p.path().to_str().unwrap(),
        "--outcome",
        "executed",
        "--evidence",
        "x",
    ]);
    assert_ne!(again.code, 0, "a marker closes once");
}

#[test]
fn receipts_bind_to_an_allowed_call() {
    let p = sample("receipt");
    assert!(reviewer_read(p.path(), "s1", "/a", "toolu_r1").is_allow());
    let dir = p.path().to_str().unwrap();
    let out = cli(&[
        "receipt",
        "--project",
        dir,
        "--call",
        "toolu_r1",
        "--receipt-id",
        "rcpt-1",
        "--observer",
        "payments-api",
        "--payload",
        "{\"amount\": 5}",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let dup = cli(&[
        "receipt",
        "--project",
        dir,
        "--call",
        "toolu_r1",
        "--receipt-id",
        "rcpt-1",
        "--observer",
        "payments-api",
    ]);
    assert_ne!(dup.code, 0);
    let none = cli(&[
        "receipt",
        "--project",
        dir,
        "--call",
        "toolu_nope",
        "--receipt-id",
        "rcpt-2",
        "--observer",
        "x",
    ]);
    assert!(none.stderr.contains("no allowed call"), "{}", none.stderr);
}

#[test]
fn gate_database_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (p, key) = gated("gate-perms");
    authorize(p.path(), &key, &json!({"command": "ls"}), &[]);
    let mode = std::fs::metadata(p.path().join(".attenu/gate.sqlite"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let kmode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(kmode, 0o600);
}
