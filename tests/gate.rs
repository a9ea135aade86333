//! The decision-bound gate, through the binary: authorize, claim, replay, races, expiry,
//! reconciliation and receipts.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A project whose Bash is gated, with reviewer alice; returns (project, alice's key file).
fn gated(tag: &str) -> (TempDir, std::path::PathBuf) {
    gated_project(tag, "Read, Bash")
}

fn bash(p: &Path, session: &str, agent: Option<&str>, input: &Value, id: &str) -> Out {
    hook(p, &pre(session, p, agent, "Bash", input.clone(), id))
}

/// `receipt --project DIR --call CALL --receipt-id ID --observer OBSERVER` (and `extra`).
fn receipt(dir: &str, call: &str, id: &str, observer: &str, extra: &[&str]) -> Out {
    let mut args = vec!["receipt", "--project", dir, "--call", call];
    args.extend(["--receipt-id", id, "--observer", observer]);
    args.extend(extra);
    cli(&args)
}

/// The ops subagent's Bash with `input` in session s1.
/// Moves session s1's ledger aside and puts a directory in its place, so that no outcome can
/// be written: the ledger's path, and where it went.
fn block_ledger(p: &Path) -> (PathBuf, PathBuf) {
    let ledger = p.ledger("s1");
    let aside = p.join("ledger.aside");
    std::fs::rename(&ledger, &aside).unwrap();
    std::fs::create_dir(&ledger).unwrap();
    (ledger, aside)
}

fn ops_bash(p: &TempDir, input: &Value, id: &str) -> Out {
    p.subagent("ops", "Bash").input(input.clone()).id(id).run()
}

#[test]
fn one_use_then_denial() {
    let (p, key) = gated("gate-once");
    let input = json!({"command": "deploy --prod"});
    let before = ops_bash(&p, &input, "t0");
    assert_denied_with(&before, "gate-authorization-required");
    let out = authorize(p.path(), &key, &input, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim().len(), 32, "prints the authorization id");
    assert_allowed(&ops_bash(&p, &input, "t1"));
    assert!(
        ops_bash(&p, &input, "t2").denied(),
        "the single use is gone"
    );
    let es = p.entries("s1");
    let allow = es.iter().find(|e| e["event"] == "allow").unwrap();
    assert_eq!(allow["context"]["gate"]["reviewer"], "alice");
    let denies = of_event(&es, "deny");
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
    assert_allowed(&bash(p.path(), "s1", None, &input, "m1"));
}

#[test]
fn a_replayed_tool_use_id_is_denied() {
    let (p, key) = gated("gate-replay");
    let input = json!({"command": "ls"});
    authorize(p.path(), &key, &input, &["--uses", "5"]);
    assert_allowed(&ops_bash(&p, &input, "same"));
    let again = ops_bash(&p, &input, "same");
    assert_denied_with(&again, "gate-replay");
}

#[test]
fn different_arguments_or_another_tool_are_denied() {
    let (p, key) = gated("gate-args");
    authorize(p.path(), &key, &json!({"command": "ls"}), &["--uses", "3"]);
    let other = json!({"command": "ls "});
    assert!(bash(p.path(), "s1", Some("ops"), &other, "t1").denied());
    assert!(bash(
        p.path(),
        "s1",
        Some("ops"),
        &json!({"command": "ls", "timeout": 5}),
        "t2"
    )
    .denied());
    assert_allowed(&bash(
        p.path(),
        "s1",
        Some("ops"),
        &json!({"command": "ls"}),
        "t3",
    ));
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
    assert!(ops_bash(&p, &input, "t1").denied(), "other session");
    assert!(
        bash(p.path(), "s2", None, &input, "t2").denied(),
        "main thread is not agent ops"
    );
    assert_allowed(&bash(p.path(), "s2", Some("ops"), &input, "t3"));
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
    assert_contains(&out.stderr, &["not reviewer 'alice'"]);
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
    assert_contains(&out.stderr, &["'bob' is not a reviewer"]);
    // A row forged straight into the database, signed by mallory, is refused at claim time.
    let conn = attenu_hook::gate::db::open(&p.path().join(".attenu")).unwrap();
    let input = json!({"command": "ls"});
    let salt = "5a".repeat(16);
    let digest = attenu_hook::gate::authz::input_digest(&input, Some(&salt)).unwrap();
    let doc = json!({"v": 2, "type": "attenu-hook.authorization", "id": "f".repeat(32), "tool": "Bash", "input_salt": salt, "input_digest": digest,
        "uses": 1, "expires_ms": 99_999_999_999_999u64, "session_id": null, "agent_type": null, "reviewer": "alice", "created_ms": 1});
    let signed = attenu_hook::ledger::canonical::to_string(&doc).unwrap();
    let k = attenu_hook::evidence::keys::load(&mallory).unwrap();
    let sig = attenu_hook::ledger::chain::hex(&k.sign(signed.as_bytes()));
    conn.execute(
        "INSERT INTO authorizations (id, reviewer, tool, input_digest, uses_left, expires_ms, session_id, agent_type, created_ms, signed, sig) VALUES (?1, 'alice', 'Bash', ?2, 1, 99999999999999, NULL, NULL, 1, ?3, ?4)",
        rusqlite::params!["f".repeat(32), digest, signed, sig],
    )
    .unwrap();
    assert_denied_saying(&ops_bash(&p, &input, "t1"), "signature does not verify");
}

#[test]
fn an_expired_authorization_is_refused() {
    let (p, key) = gated("gate-expired");
    let input = json!({"command": "ls"});
    authorize(p.path(), &key, &input, &["--expires-in", "1s"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(ops_bash(&p, &input, "t1").denied());
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
    let t1 = allowed_read(p.path());
    let (ledger, aside) = block_ledger(p.path());
    let out = t1.clone().post(json!({})).run();
    assert_eq!(out.json()["continue"], false);
    let reason = out.json()["stopReason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("[outcome-not-recorded]") && reason.contains("marker 1"),
        "{reason}"
    );
    let list = reconcile_list(p.path(), &[]);
    assert_contains(&list.stdout, &["t1", "Read"]);
    std::fs::remove_dir(&ledger).unwrap();
    std::fs::rename(&aside, &ledger).unwrap();
    let out = reconcile_resolve(p.path(), "1", "executed", "ticket OPS-12", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list = reconcile_list(p.path(), &[]);
    assert_contains(&list.stdout, &["no open"]);
    let o = p.entries("s1").pop().unwrap();
    assert_eq!(o["event"], "outcome");
    assert_eq!(o["context"]["reconciliation"]["evidence"], "ticket OPS-12");
    let again = reconcile_resolve(p.path(), "1", "executed", "x", &[]);
    assert_ne!(again.code, 0, "a marker closes once");
}

#[test]
fn receipts_bind_to_an_allowed_call() {
    let p = sample("receipt");
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "toolu_r1"));
    let dir = p.path().to_str().unwrap();
    let out = receipt(
        dir,
        "toolu_r1",
        "rcpt-1",
        "payments-api",
        &["--payload", "{\"amount\": 5}"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let dup = receipt(dir, "toolu_r1", "rcpt-1", "payments-api", &[]);
    assert_ne!(dup.code, 0);
    let none = receipt(dir, "toolu_nope", "rcpt-2", "x", &[]);
    assert_contains(&none.stderr, &["no allowed call"]);
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

/// Regression: the claim checked every field of the signed document against its row except
/// the use count, so a counter raised in the database made a one-use authorization reusable.
#[test]
fn a_use_counter_raised_in_the_database_gives_no_more_uses() {
    let (p, key) = gated("gate-counter");
    let input = json!({"command": "deploy"});
    let id = authorize(p.path(), &key, &input, &[])
        .stdout
        .trim()
        .to_string();
    let conn = attenu_hook::gate::db::open(&p.path().join(".attenu")).unwrap();
    conn.execute(
        "UPDATE authorizations SET uses_left = 5 WHERE id = ?1",
        rusqlite::params![id],
    )
    .unwrap();
    let out = ops_bash(&p, &input, "d1");
    assert!(
        out.denied() && out.reason().contains("signed use count is 1"),
        "a counter above the signed count is refused: {}",
        out.reason()
    );
    // Put back, one use is given; raised again after it, the claim on record still counts.
    conn.execute(
        "UPDATE authorizations SET uses_left = 1 WHERE id = ?1",
        rusqlite::params![id],
    )
    .unwrap();
    assert_allowed(&ops_bash(&p, &input, "d2"));
    conn.execute(
        "UPDATE authorizations SET uses_left = 1 WHERE id = ?1",
        rusqlite::params![id],
    )
    .unwrap();
    assert_denied_saying(&ops_bash(&p, &input, "d3"), "1 already used");
}

/// The database holds no bare digest of an authorized input: one per-authorization salt,
/// signed with the rest, is what the input is committed under.
#[test]
fn authorized_inputs_are_stored_as_salted_commitments() {
    use sha2::{Digest, Sha256};
    let (p, key) = gated("gate-salted");
    let input = json!({"command": "deploy"});
    for _ in 0..2 {
        assert_eq!(authorize(p.path(), &key, &input, &[]).code, 0);
    }
    let conn = attenu_hook::gate::db::open(&p.path().join(".attenu")).unwrap();
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT input_digest, signed FROM authorizations")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let bare = attenu_hook::ledger::chain::hex(&Sha256::digest(
        attenu_hook::ledger::canonical::to_vec(&input).unwrap(),
    ));
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0].0, rows[1].0, "each authorization has its own salt");
    for (digest, signed) in &rows {
        assert_ne!(*digest, bare, "a bare digest of the input is stored");
        let doc: Value = serde_json::from_str(signed).unwrap();
        assert_eq!(doc["input_digest"], json!(digest));
        assert_eq!(doc["input_salt"].as_str().unwrap().len(), 32);
    }
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let other = json!({"command": "deploy2"});
    assert!(bash(p.path(), "s1", Some("ops"), &other, "t2").denied());
}

/// A marker whose call can no longer be bound on the ledger (here the ledger was moved aside
/// with its checkpoint, as the refusal of a broken ledger advises) is not stranded: `resolve`
/// says why and what to do, and `--unbound` closes it in the database, marked as such.
#[test]
fn a_marker_that_cannot_be_bound_is_closed_with_unbound_and_says_so() {
    let p = sample("reconcile-unbound");
    let dir = p.path().to_str().unwrap();
    let t1 = allowed_read(p.path());
    let ledger = p.ledger("s1");
    let state = p.path().join(".attenu/ledger-s1.state.json");
    let outcome = t1.clone().post(json!({})).value();
    // The outcome cannot be written: the ledger's place is taken by a directory.
    std::fs::rename(&ledger, p.path().join("ledger.aside")).unwrap();
    std::fs::rename(&state, p.path().join("state.aside")).unwrap();
    std::fs::create_dir(&ledger).unwrap();
    assert_eq!(hook(p.path(), &outcome).json()["continue"], false);
    std::fs::remove_dir(&ledger).unwrap();
    // From a subdirectory of the project, as a person would run it.
    let sub = p.path().join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let in_sub = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--project", sub.to_str().unwrap()]);
        cli(&all)
    };
    let list = in_sub(&["reconcile", "list"]);
    assert!(list.stdout.contains("t1"), "{}{}", list.stdout, list.stderr);
    assert!(
        !sub.join(".attenu").exists(),
        "a read-only command creates no state"
    );
    let resolve = [
        "reconcile",
        "resolve",
        "1",
        "--outcome",
        "executed",
        "--evidence",
        "checked by hand",
    ];
    let refused = in_sub(&resolve);
    assert_eq!(refused.code, 2);
    assert_contains(&refused.stderr, &["does not exist", "--unbound"]);
    let closed = in_sub(&[&resolve[..], &["--unbound"]].concat());
    assert_eq!(closed.code, 0, "{}", closed.stderr);
    assert_contains(&closed.stdout, &["not on the ledger"]);
    let all = cli(&["reconcile", "list", "--all", "--project", dir]);
    assert!(
        all.stdout
            .contains("[resolved: executed; not on the ledger"),
        "{}",
        all.stdout
    );
    assert!(cli(&["reconcile", "list", "--project", dir])
        .stdout
        .contains("no open"));
}

/// Regression: `receipt` trusted any `allow` line in any ledger-*.jsonl file; a line written
/// into a file of its own bound a receipt to a call the session's ledger does not hold.
#[test]
fn a_receipt_binds_only_to_a_call_on_a_verified_ledger() {
    let p = sample("receipt-forged");
    let dir = p.path().to_str().unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "toolu_r1"));
    std::fs::write(
        p.path().join(".attenu/ledger-zz.jsonl"),
        "{\"event\":\"allow\",\"call_id\":\"forged-call\",\"tool\":\"mcp__payments__refund\",\"context\":{\"session_id\":\"s1\",\"tool_use_id\":\"toolu_forged\"}}\n",
    )
    .unwrap();
    let out = receipt(dir, "forged-call", "r1", "payments-api", &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["no allowed call"]);
    let out = receipt(
        dir,
        "toolu_r1",
        "r2",
        "payments-api",
        &["--payload", "{\"amount\": 5}"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let conn = attenu_hook::gate::db::open(&p.path().join(".attenu")).unwrap();
    let (digest, salt): (String, String) = conn
        .query_row(
            "SELECT payload_digest, payload_salt FROM receipts WHERE receipt_id = 'r2'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        Some(digest),
        attenu_hook::ledger::commitment::commit(&json!({"amount": 5}), &salt),
        "the payload is a salted commitment"
    );
}

#[test]
fn a_gate_database_readable_by_others_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let (p, key) = gated("gate-loose");
    let input = json!({"command": "ls"});
    authorize(p.path(), &key, &input, &[]);
    let db = p.path().join(".attenu/gate.sqlite");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// An authorization the gate would never ask for (a misspelt tool, a scope not gated) is
/// stored, but the host is told at once rather than finding out from a denial.
#[test]
fn authorizing_a_tool_that_is_not_gated_warns() {
    let (p, key) = gated("gate-warn");
    let mut args = vec!["authorize", "--project", p.path().to_str().unwrap()];
    let key = key.to_str().unwrap().to_string();
    args.extend([
        "--tool",
        "bash",
        "--input",
        "{}",
        "--reviewer",
        "alice",
        "--key",
        &key,
    ]);
    let out = cli(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stderr, &["warning", "[gate] require"]);
    let quiet = authorize(p.path(), Path::new(&key), &json!({"command": "ls"}), &[]);
    assert!(!quiet.stderr.contains("warning"), "{}", quiet.stderr);
}

/// A resolve whose ledger append succeeded but whose database update failed is closed by
/// running it again with the same outcome and evidence; a different outcome is refused, so the
/// database never says something other than the ledger.
#[test]
fn a_resolve_retried_after_a_failed_database_update_matches_the_ledger() {
    let p = sample("reconcile-retry");
    let dir = p.path().to_str().unwrap();
    let t1 = allowed_read(p.path());
    let (ledger, aside) = block_ledger(p.path());
    let outcome = t1.clone().post(json!({})).value();
    assert_eq!(hook(p.path(), &outcome).json()["continue"], false);
    std::fs::remove_dir(&ledger).unwrap();
    std::fs::rename(&aside, &ledger).unwrap();
    let resolve = |outcome: &str, evidence: &str| {
        reconcile_resolve(Path::new(dir), "1", outcome, evidence, &[])
    };
    assert_eq!(resolve("executed", "OPS-1").code, 0);
    // As if the database update after the ledger append had failed.
    let conn = attenu_hook::gate::db::open(&p.path().join(".attenu")).unwrap();
    conn.execute(
        "UPDATE markers SET resolved_ms = NULL, outcome = NULL WHERE id = 1",
        [],
    )
    .unwrap();
    let other = resolve("not-executed", "OPS-1");
    assert_eq!(other.code, 2);
    assert!(
        other
            .stderr
            .contains("already records marker 1 resolved as executed"),
        "{}",
        other.stderr
    );
    let same = resolve("executed", "OPS-1");
    assert_eq!(same.code, 0, "{}", same.stderr);
    assert_contains(&same.stdout, &["already on the ledger"]);
    let outcomes = of_event(&p.entries("s1"), "outcome").len();
    assert_eq!(outcomes, 1, "the resolution is on the ledger once");
}

#[test]
fn an_expiry_past_366_days_is_refused_and_never_wraps_around() {
    let (p, key) = gated("gate-expiry-cap");
    let input = json!({"command": "ls"});
    // 18446744073709551 s is u64::MAX ms rounded down: it used to wrap to an expiry in the past
    // and still print an id.
    for too_long in ["367d", "18446744073709551s", "100000000d"] {
        let out = authorize(p.path(), &key, &input, &["--expires-in", too_long]);
        assert_ne!(out.code, 0, "{too_long} was accepted: {}", out.stdout);
        assert!(out.stderr.contains("366d"), "{too_long}: {}", out.stderr);
    }
    let out = authorize(p.path(), &key, &input, &["--expires-in", "366d"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_allowed(&ops_bash(&p, &input, "t1"));
}

#[test]
fn shadow_mode_records_what_the_gate_would_refuse_and_consumes_nothing() {
    let (p, key) = gated("gate-shadow");
    let cfg = std::fs::read_to_string(p.path().join(".attenu/config.toml")).unwrap();
    write_config(p.path(), format!("mode = \"shadow\"\n{cfg}"));
    let input = json!({"command": "deploy"});
    let out = ops_bash(&p, &input, "t0");
    assert!(out.is_allow(), "shadow mode denies nothing: {}", out.stdout);
    let e = p.entries("s1").pop().unwrap();
    assert_eq!(e["event"], "allow");
    assert_eq!(
        e["context"]["would_deny"]["code"], "gate-authorization-required",
        "{e}"
    );
    assert_eq!(
        e["context"]["gate"]["refused"], "gate-authorization-required",
        "{e}"
    );

    authorize(p.path(), &key, &input, &[]);
    for id in ["t1", "t2"] {
        assert_allowed(&bash(p.path(), "s1", Some("ops"), &input, id));
        let e = p.entries("s1").pop().unwrap();
        assert!(e["context"].get("would_deny").is_none(), "{e}");
        assert_eq!(e["context"]["gate"]["consumed"], false, "{e}");
        assert_eq!(
            e["context"]["gate"]["uses_left"], 1,
            "shadow consumes nothing: {e}"
        );
    }
    // A call the derived authority refuses keeps that reason: the gate is not asked, as in
    // enforce mode, where a grant would not help either.
    assert_allowed(&bash(p.path(), "s1", Some("stranger"), &input, "t9"));
    let e = p.entries("s1").pop().unwrap();
    let code = e["context"]["would_deny"]["code"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        !code.is_empty() && code != "gate-authorization-required",
        "{e}"
    );
    assert!(e["context"].get("gate").is_none(), "{e}");
    // Back in enforce mode the one use is still there, once.
    write_config(p.path(), cfg);
    let out = bash(p.path(), "s1", Some("stranger"), &input, "t10");
    assert!(
        out.denied() && out.reason().contains(&format!("[{code}]")),
        "{}",
        out.reason()
    );
    assert_allowed(&ops_bash(&p, &input, "t3"));
    assert!(ops_bash(&p, &input, "t4").denied());
}

/// A gated project where ops's authorized `deploy` (t1 in s1) was allowed, after which the
/// session's ledger and its checkpoint were moved aside, as someone starting the session's
/// ledger afresh would move them (the ledger alone is caught as a ledger cut short).
fn allowed_then_ledger_moved_aside(tag: &str) -> TempDir {
    let (p, key) = gated(tag);
    let input = json!({"command": "deploy"});
    authorize(p.path(), &key, &input, &[]);
    assert_allowed(&ops_bash(&p, &input, "t1"));
    for name in ["ledger-s1.jsonl", "ledger-s1.state.json"] {
        std::fs::rename(p.path().join(".attenu").join(name), p.path().join(name)).unwrap();
    }
    p
}

/// The PostToolUse of that `deploy`.
fn deploy_outcome(project: &Path) -> Out {
    project
        .bash_by("ops", "deploy")
        .id("t1")
        .post(json!({}))
        .run()
}

#[test]
fn a_gated_call_whose_ledger_vanished_before_its_outcome_stops_with_a_marker() {
    let p = allowed_then_ledger_moved_aside("gate-ledger-gone");
    let out = deploy_outcome(p.path());
    assert_eq!(out.json()["continue"], false, "{}", out.stdout);
    let reason = out.json()["stopReason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("[outcome-not-recorded]") && reason.contains("no longer holds that allow"),
        "{reason}"
    );
    let list = reconcile_list(p.path(), &[]);
    assert_contains(&list.stdout, &["t1"]);
    // An ungated call with no allow on record (from before the hook was wired) still passes.
    let out = p.read_by("ops", "/p/a").id("t9").post(json!({})).run();
    assert_eq!(out.json(), json!({}), "{}", out.stdout);
}

#[test]
fn a_gated_outcome_with_neither_ledger_nor_gate_database_still_stops_claude() {
    let p = allowed_then_ledger_moved_aside("gate-all-gone");
    let attenu = p.path().join(".attenu");
    // The gate database replaced as well: the hook cannot ask it whether it allowed the call,
    // and cannot store a marker in it. It must not take that as "never allowed".
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(attenu.join(format!("gate.sqlite{side}")));
    }
    std::fs::write(attenu.join("gate.sqlite"), vec![b'x'; 4096]).unwrap();
    let out = deploy_outcome(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json()["continue"], false, "{}", out.stdout);
    let reason = out.json()["stopReason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("[outcome-not-recorded]")
            && reason.contains("cannot say whether it allowed it")
            && reason.contains("no reconciliation marker could be stored either")
            && reason.contains("note tool_use_id t1 by hand"),
        "{reason}"
    );
}

#[test]
fn a_scope_gated_for_one_agent_type_is_gated_for_that_agent_only() {
    let p = project(
        "gate-per-agent",
        &[
            ("ops.md", "---\nname: ops\ntools: Read, Bash\n---\n"),
            ("builder.md", "---\nname: builder\ntools: Bash\n---\n"),
        ],
        None,
    );
    let (key, public) = alice_key(p.path());
    write_config(
        p.path(),
        format!("[gate]\nreviewers = {{ alice = \"{public}\" }}\n[gate.agents]\nops = [\"exec.bash\"]\n"),
    );
    let input = json!({"command": "make deploy"});
    let out = ops_bash(&p, &input, "t1");
    assert!(
        out.reason().contains("[gate-authorization-required]"),
        "{}",
        out.stdout
    );
    assert_allowed(&bash(p.path(), "s1", Some("builder"), &input, "t2"));
    assert_allowed(&bash(p.path(), "s1", None, &input, "t3"));

    // An authorization bound to an agent the scope is not gated for is never asked for.
    let out = authorize(p.path(), &key, &input, &["--agent", "builder"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stderr, &["[gate.agents] for builder"]);
    let out = authorize(p.path(), &key, &input, &["--agent", "ops"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    assert_allowed(&ops_bash(&p, &input, "t4"));
    assert!(ops_bash(&p, &input, "t5").denied());

    // Its patterns are checked like `require`'s: a typo is an error, not a silent ungate.
    write_config(p.path(), "[gate.agents]\nops = [\"exec.bsh\"]\n");
    let out = ops_bash(&p, &input, "t6");
    assert!(
        out.reason().contains("[config-invalid]") && out.reason().contains("gate.agents.ops"),
        "{}",
        out.reason()
    );
}
