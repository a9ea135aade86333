//! After a gated call: reconciliation markers for an outcome that cannot be recorded, `reconcile
//! resolve` (on the ledger, or `--unbound`), and receipts bound to an allowed call.

mod common;
use common::gated::*;
use common::*;
use serde_json::json;
use std::path::Path;

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
    assert_snapshot(
        "reconcile-list-all.txt",
        &mask(&all.stdout, &[(p.dir(), "<project>")]),
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
