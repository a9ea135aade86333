//! The decision-bound gate, through the binary: authorize, claim, one use, replay, races,
//! bindings, expiry, the database's privacy, and shadow mode.

mod common;
use common::gated::*;
use common::*;
use serde_json::{json, Value};

#[test]
fn one_use_then_denial() {
    let (p, key) = gated("gate-once");
    let input = json!({"command": "deploy --prod"});
    let before = ops_bash(&p, &input, "t0");
    assert_denied_with(&before, "gate-authorization-required");
    let id = authorize_ok(p.path(), &key, &input, &[]);
    assert_eq!(id.len(), 32, "prints the authorization id");
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let t2 = ops_bash(&p, &input, "t2");
    assert!(t2.denied(), "the single use is gone");
    let es = p.entries("s1");
    let gate = &of_event(&es, "allow")[0]["context"]["gate"];
    assert_eq!(gate["reviewer"], "alice");
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
    let more = json!({"command": "ls", "timeout": 5});
    assert!(bash(p.path(), "s1", Some("ops"), &more, "t2").denied());
    let same = json!({"command": "ls"});
    assert_allowed(&bash(p.path(), "s1", Some("ops"), &same, "t3"));
}

#[test]
fn bindings_to_session_and_agent_hold() {
    let (p, key) = gated("gate-bind");
    let input = json!({"command": "ls"});
    let bound = ["--session", "s2", "--agent", "ops", "--uses", "4"];
    authorize(p.path(), &key, &input, &bound);
    assert!(ops_bash(&p, &input, "t1").denied(), "other session");
    let main = bash(p.path(), "s2", None, &input, "t2");
    assert!(main.denied(), "main thread is not agent ops");
    assert_allowed(&bash(p.path(), "s2", Some("ops"), &input, "t3"));
}

#[test]
fn eight_processes_racing_on_one_use_give_exactly_one_allow() {
    let (p, key) = gated("gate-race");
    let input = json!({"command": "transfer 100"});
    authorize(p.path(), &key, &input, &[]);
    // Different sessions, so the processes do not serialise on one ledger lock first.
    let allowed = |i: usize| {
        let (session, id) = (format!("race{i}"), format!("r{i}"));
        bash(p.path(), &session, Some("ops"), &input, &id).is_allow()
    };
    let allows = std::thread::scope(|s| {
        let racers: Vec<_> = (0..8).map(|i| s.spawn(move || allowed(i))).collect();
        racers
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|a| *a)
            .count()
    });
    assert_eq!(allows, 1);
}

/// A gated project and mallory's key (not a configured reviewer), made in it.
fn with_mallory(tag: &str) -> (TempDir, std::path::PathBuf) {
    let (p, _alice) = gated(tag);
    let mallory = p.path().join("mallory.key");
    assert_eq!(cli(&["keygen", "--out", mallory.to_str().unwrap()]).code, 0);
    (p, mallory)
}

#[test]
fn a_key_that_is_not_a_configured_reviewer_is_refused() {
    let (p, mallory) = with_mallory("gate-wrongkey");
    let out = authorize(p.path(), &mallory, &json!({"command": "ls"}), &[]);
    assert_ne!(out.code, 0);
    assert_contains(&out.stderr, &["not reviewer 'alice'"]);
    let mut args = vec!["authorize", "--project", p.dir(), "--tool", "Bash"];
    args.extend(["--input", "{}", "--reviewer", "bob"]);
    args.extend(["--key", mallory.to_str().unwrap()]);
    assert_contains(&cli(&args).stderr, &["'bob' is not a reviewer"]);
}

/// A row forged straight into the database, signed by mallory, is refused at claim time.
#[test]
fn an_authorization_forged_into_the_database_is_refused_at_claim_time() {
    let (p, mallory) = with_mallory("gate-forged");
    let input = json!({"command": "ls"});
    forge_authorization(p.path(), &mallory, &input);
    assert_denied_saying(&ops_bash(&p, &input, "t1"), "signature does not verify");
}

#[test]
fn an_expired_authorization_is_refused() {
    let (p, key) = gated("gate-expired");
    let input = json!({"command": "ls"});
    authorize(p.path(), &key, &input, &["--expires-in", "1s"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(ops_bash(&p, &input, "t1").denied());
    let zero = authorize(p.path(), &key, &input, &["--expires-in", "0s"]);
    assert_eq!(zero.code, 2, "a zero lifetime is refused");
    let parsecs = authorize(p.path(), &key, &input, &["--expires-in", "5 parsecs"]);
    assert_eq!(parsecs.code, 2);
}

#[test]
fn gate_database_is_private() {
    let (p, key) = gated("gate-perms");
    authorize(p.path(), &key, &json!({"command": "ls"}), &[]);
    assert_eq!(mode_of(&p.path().join(".attenu/gate.sqlite")), 0o600);
    assert_eq!(mode_of(&key), 0o600);
}

/// Regression: the claim checked every field of the signed document against its row except
/// the use count, so a counter raised in the database made a one-use authorization reusable.
#[test]
fn a_use_counter_raised_in_the_database_gives_no_more_uses() {
    let (p, key) = gated("gate-counter");
    let input = json!({"command": "deploy"});
    let id = authorization_id(&authorize(p.path(), &key, &input, &[]));
    let db = gate_db(p.path());
    set_uses_left(&db, &id, 5);
    // A counter above the signed count is refused.
    assert_denied_saying(&ops_bash(&p, &input, "d1"), "signed use count is 1");
    // Put back, one use is given; raised again after it, the claim on record still counts.
    set_uses_left(&db, &id, 1);
    assert_allowed(&ops_bash(&p, &input, "d2"));
    set_uses_left(&db, &id, 1);
    assert_denied_saying(&ops_bash(&p, &input, "d3"), "1 already used");
}

/// The database holds no bare digest of an authorized input: one per-authorization salt,
/// signed with the rest, is what the input is committed under.
#[test]
fn authorized_inputs_are_stored_as_salted_commitments() {
    let (p, key) = gated("gate-salted");
    let input = json!({"command": "deploy"});
    for _ in 0..2 {
        assert_eq!(authorize(p.path(), &key, &input, &[]).code, 0);
    }
    let rows = stored_authorizations(&gate_db(p.path()));
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0].0, rows[1].0, "each authorization has its own salt");
    for (digest, signed) in &rows {
        assert_salted_commitment_of(&input, digest, signed);
    }
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let other = json!({"command": "deploy2"});
    assert!(bash(p.path(), "s1", Some("ops"), &other, "t2").denied());
}

/// `digest` (an authorization's stored input digest, `signed` its signed document) is not a
/// bare digest of `input`: it is the one signed, under a salt of 16 bytes signed with it.
#[track_caller]
fn assert_salted_commitment_of(input: &Value, digest: &str, signed: &str) {
    use sha2::{Digest, Sha256};
    let canonical = attenu_hook::json::canonical::to_vec(input).unwrap();
    let bare = attenu_hook::ledger::chain::hex(&Sha256::digest(canonical));
    assert_ne!(digest, bare, "a bare digest of the input is stored");
    let doc: Value = serde_json::from_str(signed).unwrap();
    assert_eq!(doc["input_digest"], json!(digest));
    assert_eq!(doc["input_salt"].as_str().unwrap().len(), 32);
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
    assert_eq!(mode_of(&db), 0o600);
}

/// An authorization the gate would never ask for (a misspelt tool, a scope not gated) is
/// stored, but the host is told at once rather than finding out from a denial.
#[test]
fn authorizing_a_tool_that_is_not_gated_warns() {
    let (p, key) = gated("gate-warn");
    let mut args = vec!["authorize", "--project", p.dir(), "--tool", "bash"];
    args.extend(["--input", "{}", "--reviewer", "alice"]);
    args.extend(["--key", key.to_str().unwrap()]);
    let out = cli(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stderr, &["warning", "[gate] require"]);
    let quiet = authorize(p.path(), &key, &json!({"command": "ls"}), &[]);
    assert!(!quiet.stderr.contains("warning"), "{}", quiet.stderr);
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
    let cfg = shadow_mode(p.path());
    let input = json!({"command": "deploy"});
    assert_allowed(&ops_bash(&p, &input, "t0")); // shadow mode denies nothing
    let e = last_entry(p.path());
    assert_eq!(e["event"], "allow");
    let required = "gate-authorization-required";
    assert_eq!(e["context"]["would_deny"]["code"], required, "{e}");
    assert_eq!(e["context"]["gate"]["refused"], required, "{e}");
    authorize(p.path(), &key, &input, &[]);
    for id in ["t1", "t2"] {
        assert_shadow_allowed_without_consuming(&p, &input, id);
    }
    // Back in enforce mode the one use is still there, once.
    write_config(p.path(), cfg);
    assert_allowed(&ops_bash(&p, &input, "t3"));
    assert!(ops_bash(&p, &input, "t4").denied());
}

/// In shadow mode, ops's Bash with `input` is allowed with the gate's use not consumed.
fn assert_shadow_allowed_without_consuming(p: &TempDir, input: &Value, id: &str) {
    assert_allowed(&bash(p.path(), "s1", Some("ops"), input, id));
    let e = last_entry(p.path());
    assert!(e["context"].get("would_deny").is_none(), "{e}");
    assert_eq!(e["context"]["gate"]["consumed"], false, "{e}");
    let uses_left = &e["context"]["gate"]["uses_left"];
    assert_eq!(uses_left, 1, "shadow consumes nothing: {e}");
}

/// A call the derived authority refuses keeps that reason in shadow mode: the gate is not
/// asked, as in enforce mode, where a grant would not help either.
#[test]
fn shadow_mode_keeps_the_derived_refusal_and_does_not_ask_the_gate() {
    let (p, key) = gated("gate-shadow-derived");
    let cfg = shadow_mode(p.path());
    let input = json!({"command": "deploy"});
    authorize(p.path(), &key, &input, &[]);
    assert_allowed(&bash(p.path(), "s1", Some("stranger"), &input, "t9"));
    let e = last_entry(p.path());
    let code = e["context"]["would_deny"]["code"].as_str().unwrap_or("");
    assert!(
        !code.is_empty() && code != "gate-authorization-required",
        "{e}"
    );
    assert!(e["context"].get("gate").is_none(), "{e}");
    write_config(p.path(), cfg);
    let out = bash(p.path(), "s1", Some("stranger"), &input, "t10");
    assert_denied_with(&out, code);
}

#[test]
fn a_scope_gated_for_one_agent_type_is_gated_for_that_agent_only() {
    let (p, key) = gated_for_ops_only("gate-per-agent");
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
}

/// `[gate.agents]` patterns are checked like `require`'s: a typo is an error, not a silent
/// ungate.
#[test]
fn a_typo_in_a_per_agent_gate_is_a_config_error() {
    let (p, _key) = gated_for_ops_only("gate-per-agent-typo");
    write_config(p.path(), "[gate.agents]\nops = [\"exec.bsh\"]\n");
    let out = ops_bash(&p, &json!({"command": "make deploy"}), "t6");
    let why = out.reason();
    assert!(
        why.contains("[config-invalid]") && why.contains("gate.agents.ops"),
        "{why}"
    );
}

/// Agents ops (Read, Bash) and builder (Bash), Bash gated for ops only, reviewer alice:
/// (project, alice's key file).
fn gated_for_ops_only(tag: &str) -> (TempDir, std::path::PathBuf) {
    let p = ProjectBuilder::new(tag)
        .agent("ops", "tools: Read, Bash")
        .agent("builder", "tools: Bash")
        .build();
    let (key, public) = alice_key(p.path());
    let reviewers = format!("[gate]\nreviewers = {{ alice = \"{public}\" }}\n");
    write_config(
        p.path(),
        reviewers + "[gate.agents]\nops = [\"exec.bash\"]\n",
    );
    (p, key)
}

/// Regression (issue 28): every gate refusal read `gate-authorization-required`, whether the
/// authorization was used up, expired, bound elsewhere or for another input. Each now has its
/// code, naming the authorization, and is on the ledger as a gate refusal waiting on a grant.
#[test]
fn a_gate_refusal_says_the_nearest_authorization_was_used_up() {
    let (p, key) = gated("gate-why");
    let input = json!({"command": "deploy --prod", "timeout": 5});
    assert_denied_with(&ops_bash(&p, &input, "t0"), "gate-authorization-required");
    let first = authorize_ok(p.path(), &key, &input, &[]);
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let out = ops_bash(&p, &input, "t2");
    assert_denied_saying_all(&out, &["[gate-authorization-used-up]", &first]);
    assert_denied_saying(&out, "1 earlier call took its use");
    assert_held_pending_grant(&p);
}

/// An input that differs names the fields, never a value.
#[test]
fn a_gate_refusal_for_another_input_names_the_fields_not_the_values() {
    let (p, key) = gated("gate-why-input");
    let input = json!({"command": "deploy --prod", "timeout": 5});
    let id = authorize_ok(p.path(), &key, &input, &["--uses", "2"]);
    let changed = json!({"command": "deploy --prod --force", "timeout": 5, "description": "x"});
    let out = ops_bash(&p, &changed, "t3");
    assert_denied_saying_all(&out, &["[gate-input-differs]", &id]);
    assert_denied_saying_all(&out, &[DIFFER, "values are not shown"]);
    assert!(!out.reason().contains("--prod"), "{}", out.reason());
    assert_held_pending_grant(&p);
}

const DIFFER: &str = "`command`, `description` differ";

#[test]
fn a_gate_refusal_says_the_authorization_is_bound_elsewhere() {
    let (p, key) = gated("gate-why-bound");
    let other = json!({"command": "migrate"});
    authorize(p.path(), &key, &other, &["--session", "s9"]);
    let out = ops_bash(&p, &other, "t4");
    assert_denied_saying_all(&out, &[ELSEWHERE, "session_id s9", "this call is in s1"]);
    let rollback = json!({"command": "rollback"});
    authorize(p.path(), &key, &rollback, &["--agent", "builder"]);
    let out = ops_bash(&p, &rollback, "t5");
    assert_denied_saying_all(&out, &[ELSEWHERE, "agent_type 'builder'", "by 'ops'"]);
    assert_held_pending_grant(&p);
}

const ELSEWHERE: &str = "[gate-authorization-bound-elsewhere]";

#[test]
fn a_gate_refusal_says_the_authorization_expired() {
    let (p, key) = gated("gate-why-expired");
    let brief = json!({"command": "ls"});
    authorize(p.path(), &key, &brief, &["--expires-in", "1s"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = ops_bash(&p, &brief, "t6");
    assert_denied_saying_all(&out, &["[gate-authorization-expired]", "expired at"]);
    assert_held_pending_grant(&p);
}

/// Every deny of session s1 is on the ledger as a gate refusal, waiting on a grant.
fn assert_held_pending_grant(p: &TempDir) {
    for e in of_event(&p.entries("s1"), "deny") {
        assert_eq!(e["disposition"], "held_pending_grant", "{e}");
    }
}

/// What `authorize` prints, each line labelled.
const PRINTED: [&str; 6] = [
    "authorization: ",
    "tool:          Bash",
    "reviewer:      alice",
    "uses:          2",
    "expires:       20",
    "bound to:      agent type ops",
];

/// A gated project with a two-use authorization for ops's `deploy --prod`: (project, its id).
fn two_uses_for_ops(tag: &str) -> (TempDir, String) {
    let (p, key) = gated(tag);
    let extra = ["--uses", "2", "--agent", "ops"];
    let id = authorize_ok(p.path(), &key, &json!({"command": "deploy --prod"}), &extra);
    (p, id)
}

/// Regression (issue 28): `authorize` printed a bare id. It now labels each line.
#[test]
fn authorize_labels_what_it_prints() {
    let (p, key) = gated("gate-labels");
    let empty = authorize_list(p.path(), &[]);
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    assert_contains(&empty.stdout, &["no authorizations"]);
    let extra = ["--uses", "2", "--agent", "ops"];
    let out = authorize(p.path(), &key, &json!({"command": "deploy --prod"}), &extra);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(&out.stdout, &PRINTED);
    let shown = transcript("authorize --tool Bash --uses 2 --agent ops ...", &out);
    assert_snapshot("authorize.txt", &mask(&shown, &[(p.dir(), "<project>")]));
}

/// What `keygen` prints, pinned: the public key on stdout and where the key went on stderr;
/// then its refusals of a file that exists and of a directory that does not.
#[test]
fn keygen_text_is_pinned() {
    let t = TempDir::new("gate-keygen");
    let key = t.path().join("alice.key");
    let args = ["keygen", "--out", key.to_str().unwrap()];
    let made = cli(&args);
    assert_eq!(made.code, 0, "{}", made.stderr);
    let mut text = transcript("keygen --out KEY", &made);
    text += &transcript("keygen --out KEY (again)", &cli(&args));
    let nowhere = t.path().join("missing/alice.key");
    let out = cli(&["keygen", "--out", nowhere.to_str().unwrap()]);
    text += &transcript("keygen --out MISSING/KEY", &out);
    assert_snapshot("keygen.txt", &mask(&text, &[(t.dir(), "<dir>")]));
}

/// Regression (issue 28): nothing listed what was left. `authorize --list` shows every
/// authorization's uses left, state, expiry and bindings, never its input.
#[test]
fn authorize_lists_the_uses_left_and_never_the_input() {
    let (p, id) = two_uses_for_ops("gate-list");
    assert_allowed(&ops_bash(&p, &json!({"command": "deploy --prod"}), "t1"));
    let list = authorize_list(p.path(), &[]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let row = line_with(&list.stdout, &id);
    assert!(row.starts_with(&id), "{row}");
    assert_contains(row, &["Bash", "alice", "1/2", "usable", "agent type ops"]);
    assert_lacks(&list.stdout, &["deploy"], "no input is shown");
    let json = authorize_list(p.path(), &["--json"]);
    let v: Value = serde_json::from_str(json.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["uses_left"], 1);
    assert_eq!(v["state"], "usable");
}

#[test]
fn authorize_lists_a_used_up_authorization() {
    let (p, _) = two_uses_for_ops("gate-list-used");
    let input = json!({"command": "deploy --prod"});
    assert_allowed(&ops_bash(&p, &input, "t1"));
    assert_allowed(&ops_bash(&p, &input, "t2"));
    let list = authorize_list(p.path(), &[]);
    assert_contains(&list.stdout, &["0/2", "used up"]);
    let listed = mask(&list.stdout, &[(p.dir(), "<project>")]);
    assert_snapshot("authorize-list.txt", &listed);
}

/// `authorize --list` is for the host only: a subagent cannot run it.
#[test]
fn a_subagent_cannot_list_the_authorizations() {
    let (p, _) = gated("gate-list-sub");
    let out = p
        .bash_by("ops", "attenu-hook authorize --list")
        .id("t3")
        .run();
    assert_denied_with(&out, "self-protection");
}
