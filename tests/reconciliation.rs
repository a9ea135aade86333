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
    outcome_of_t1_not_recorded(&p);
    let out = reconcile_resolve(p.path(), "1", "executed", "ticket OPS-12", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&reconcile_list(p.path(), &[]).stdout, &["no open"]);
    let o = p.entries("s1").pop().unwrap();
    assert_eq!(o["event"], "outcome");
    assert_eq!(o["context"]["reconciliation"]["evidence"], "ticket OPS-12");
    let again = reconcile_resolve(p.path(), "1", "executed", "x", &[]);
    assert_ne!(again.code, 0, "a marker closes once");
}

/// The reviewer's allowed read t1, whose outcome arrives while the ledger cannot be written:
/// Claude is stopped, marker 1 is listed, and the ledger is put back.
fn outcome_of_t1_not_recorded(p: &TempDir) {
    let t1 = allowed_read(p.path());
    let (ledger, aside) = block_ledger(p.path());
    let out = t1.clone().post(json!({})).run();
    assert_halted_saying_all(&out, &["[outcome-not-recorded]", "marker 1"]);
    assert_contains(&reconcile_list(p.path(), &[]).stdout, &["t1", "Read"]);
    std::fs::remove_dir(&ledger).unwrap();
    std::fs::rename(&aside, &ledger).unwrap();
}

/// A receipt binds once, to an allowed call; what `receipt` prints is pinned.
#[test]
fn receipts_bind_to_an_allowed_call() {
    let p = sample("receipt");
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "toolu_r1"));
    let dir = p.path().to_str().unwrap();
    let payload = ["--payload", "{\"amount\": 5}"];
    let out = receipt(dir, "toolu_r1", "rcpt-1", "payments-api", &payload);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let dup = receipt(dir, "toolu_r1", "rcpt-1", "payments-api", &[]);
    assert_ne!(dup.code, 0);
    let none = receipt(dir, "toolu_nope", "rcpt-2", "x", &[]);
    assert_contains(&none.stderr, &["no allowed call"]);
    let mut text = transcript("receipt --call toolu_r1 --receipt-id rcpt-1 ...", &out);
    text += &transcript("receipt --call toolu_r1 --receipt-id rcpt-1 (again)", &dup);
    text += &transcript("receipt --call toolu_nope --receipt-id rcpt-2", &none);
    assert_snapshot("receipt.txt", &mask(&text, &[(dir, "<project>")]));
}

/// A marker whose call can no longer be bound on the ledger (here the ledger was moved aside
/// with its state file, as the refusal of a broken ledger advises) is not stranded: `resolve`
/// says why and what to do, and `--unbound` closes it in the database, marked as such.
#[test]
fn a_marker_that_cannot_be_bound_is_closed_with_unbound_and_says_so() {
    let p = sample("reconcile-unbound");
    marker_of_t1_with_its_ledger_gone(&p);
    // From a subdirectory of the project, as a person would run it.
    let sub = p.path().join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let in_sub = |args: &[&str]| cli(&[args, &["--project", sub.to_str().unwrap()]].concat());
    let list = in_sub(&["reconcile", "list"]);
    assert!(list.stdout.contains("t1"), "{}{}", list.stdout, list.stderr);
    assert!(
        !sub.join(".attenu").exists(),
        "a read-only command creates no state"
    );
    let refused = in_sub(&RESOLVE);
    assert_eq!(refused.code, 2);
    assert_contains(&refused.stderr, &["does not exist", "--unbound"]);
    let closed = in_sub(&[&RESOLVE[..], &["--unbound"]].concat());
    assert_eq!(closed.code, 0, "{}", closed.stderr);
    assert_contains(&closed.stdout, &["not on the ledger"]);
    assert_resolved_unbound(&p);
}

const RESOLVE: [&str; 7] = [
    "reconcile",
    "resolve",
    "1",
    "--outcome",
    "executed",
    "--evidence",
    "checked by hand",
];

/// The reviewer's allowed read t1, its ledger and state file moved aside and a directory in the
/// ledger's place, so its outcome cannot be written (Claude is stopped); then the directory
/// removed: marker 1 with no ledger to bind it to.
fn marker_of_t1_with_its_ledger_gone(p: &TempDir) {
    let t1 = allowed_read(p.path());
    let ledger = p.ledger("s1");
    let outcome = t1.clone().post(json!({})).value();
    std::fs::rename(&ledger, p.path().join("ledger.aside")).unwrap();
    std::fs::rename(sealed_state_of(p.path()), p.path().join("state.aside")).unwrap();
    std::fs::create_dir(&ledger).unwrap();
    assert_eq!(hook(p.path(), &outcome).json()["continue"], false);
    std::fs::remove_dir(&ledger).unwrap();
}

/// `reconcile list --all` shows marker 1 resolved off the ledger (pinned as a snapshot), and
/// nothing is open.
#[track_caller]
fn assert_resolved_unbound(p: &TempDir) {
    let all = cli(&["reconcile", "list", "--all", "--project", p.dir()]);
    assert_contains(&all.stdout, &["[resolved: executed; not on the ledger"]);
    let listed = mask(&all.stdout, &[(p.dir(), "<project>")]);
    assert_snapshot("reconcile-list-all.txt", &listed);
    let open = cli(&["reconcile", "list", "--project", p.dir()]).stdout;
    assert!(open.contains("no open"));
}

/// Regression: `receipt` trusted any `allow` line in any ledger-*.jsonl file; a line written
/// into a file of its own bound a receipt to a call the session's ledger does not hold.
#[test]
fn a_receipt_binds_only_to_a_call_on_a_verified_ledger() {
    let p = sample("receipt-forged");
    let dir = p.path().to_str().unwrap();
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "toolu_r1"));
    std::fs::write(p.path().join(".attenu/ledger-zz.jsonl"), FORGED_ALLOW).unwrap();
    let out = receipt(dir, "forged-call", "r1", "payments-api", &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_contains(&out.stderr, &["no allowed call"]);
    let payload = ["--payload", "{\"amount\": 5}"];
    let out = receipt(dir, "toolu_r1", "r2", "payments-api", &payload);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (digest, salt) = receipt_commitment(p.path(), "r2");
    let commitment = attenu_hook::ledger::commitment::commit(&json!({"amount": 5}), &salt);
    assert_eq!(
        Some(digest),
        commitment,
        "the payload is a salted commitment"
    );
}

const FORGED_ALLOW: &str = "{\"event\":\"allow\",\"call_id\":\"forged-call\",\"tool\":\"mcp__payments__refund\",\"context\":{\"session_id\":\"s1\",\"tool_use_id\":\"toolu_forged\"}}\n";

/// The payload digest and salt the gate database stores for receipt `id`.
fn receipt_commitment(p: &Path, id: &str) -> (String, String) {
    let sql = "SELECT payload_digest, payload_salt FROM receipts WHERE receipt_id = ?1";
    let row = gate_db(p).query_row(sql, [id], |r| Ok((r.get(0)?, r.get(1)?)));
    row.unwrap()
}

/// A resolve whose ledger append succeeded but whose database update failed is closed by
/// running it again with the same outcome and evidence; a different outcome is refused, so the
/// database never says something other than the ledger.
#[test]
fn a_resolve_retried_after_a_failed_database_update_matches_the_ledger() {
    let p = sample("reconcile-retry");
    outcome_of_t1_not_recorded(&p);
    let resolve = |outcome: &str| reconcile_resolve(p.path(), "1", outcome, "OPS-1", &[]);
    assert_eq!(resolve("executed").code, 0);
    // As if the database update after the ledger append had failed.
    let sql = "UPDATE markers SET resolved_ms = NULL, outcome = NULL WHERE id = 1";
    gate_db(p.path()).execute(sql, []).unwrap();
    let other = resolve("not-executed");
    assert_eq!(other.code, 2);
    assert_contains(
        &other.stderr,
        &["already records marker 1 resolved as executed"],
    );
    let same = resolve("executed");
    assert_eq!(same.code, 0, "{}", same.stderr);
    assert_contains(&same.stdout, &["already on the ledger"]);
    let outcomes = of_event(&p.entries("s1"), "outcome").len();
    assert_eq!(outcomes, 1, "the resolution is on the ledger once");
}

/// A gated project where ops's authorized `deploy` (t1 in s1) was allowed, after which the
/// session's ledger and its state file were moved aside, as someone starting the session's
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
    let says = ["[outcome-not-recorded]", "no longer holds that allow"];
    assert_halted_saying_all(&out, &says);
    assert_contains(&reconcile_list(p.path(), &[]).stdout, &["t1"]);
    // An ungated call with no allow on record (from before the hook was wired) still passes.
    let out = p.read_by("ops", "/p/a").id("t9").post(json!({})).run();
    assert_eq!(out.json(), json!({}), "{}", out.stdout);
}

#[test]
fn a_gated_outcome_with_neither_ledger_nor_gate_database_still_stops_claude() {
    let p = allowed_then_ledger_moved_aside("gate-all-gone");
    // The gate database replaced as well: the hook cannot ask it whether it allowed the call,
    // and cannot store a marker in it. It must not take that as "never allowed".
    replace_the_gate_database_with_junk(p.path());
    let out = deploy_outcome(p.path());
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_halted_saying_all(&out, &NEITHER);
}

const NEITHER: [&str; 4] = [
    "[outcome-not-recorded]",
    "cannot say whether it allowed it",
    "no reconciliation marker could be stored either",
    "note tool_use_id t1 by hand",
];

/// The project's gate database (and its -wal and -shm files) replaced by 4 KiB of junk.
fn replace_the_gate_database_with_junk(p: &Path) {
    let attenu = p.join(".attenu");
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(attenu.join(format!("gate.sqlite{side}")));
    }
    std::fs::write(attenu.join("gate.sqlite"), vec![b'x'; 4096]).unwrap();
}
