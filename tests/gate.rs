//! The decision-bound gate, through the binary: authorize, claim, one use, replay, races,
//! bindings, expiry, the database's privacy, and shadow mode.

mod common;
use common::gated::*;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

#[test]
fn one_use_then_denial() {
    let (p, key) = gated("gate-once");
    let input = json!({"command": "deploy --prod"});
    let before = ops_bash(&p, &input, "t0");
    assert_denied_with(&before, "gate-authorization-required");
    let out = authorize(p.path(), &key, &input, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        authorization_id(&out).len(),
        32,
        "prints the authorization id"
    );
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
    let signed = attenu_hook::json::canonical::to_string(&doc).unwrap();
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
    let id = authorization_id(&authorize(p.path(), &key, &input, &[]));
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
        attenu_hook::json::canonical::to_vec(&input).unwrap(),
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

/// Regression (issue 28): every gate refusal read `gate-authorization-required`, whether the
/// authorization was used up, expired, bound elsewhere or for another input. Each now has its
/// code, naming the authorization; an input that differs names the fields, never a value.
#[test]
fn a_gate_refusal_says_why_the_nearest_authorization_did_not_allow_the_call() {
    let (p, key) = gated("gate-why");
    let input = json!({"command": "deploy --prod", "timeout": 5});
    assert_denied_with(&ops_bash(&p, &input, "t0"), "gate-authorization-required");
    let first = authorization_id(&authorize(p.path(), &key, &input, &[]));
    assert_allowed(&ops_bash(&p, &input, "t1"));
    assert_denied_saying_all(
        &ops_bash(&p, &input, "t2"),
        &[
            "[gate-authorization-used-up]",
            &first,
            "1 earlier call took its use",
        ],
    );

    let id = authorization_id(&authorize(p.path(), &key, &input, &["--uses", "2"]));
    let changed = json!({"command": "deploy --prod --force", "timeout": 5, "description": "x"});
    let out = ops_bash(&p, &changed, "t3");
    assert_denied_saying_all(
        &out,
        &[
            "[gate-input-differs]",
            &id,
            "`command`, `description` differ",
            "values are not shown",
        ],
    );
    assert!(!out.reason().contains("--prod"), "{}", out.reason());

    let other = json!({"command": "migrate"});
    authorize(p.path(), &key, &other, &["--session", "s9"]);
    assert_denied_saying_all(
        &ops_bash(&p, &other, "t4"),
        &[
            "[gate-authorization-bound-elsewhere]",
            "session_id s9",
            "this call is in s1",
        ],
    );
    let rollback = json!({"command": "rollback"});
    authorize(p.path(), &key, &rollback, &["--agent", "builder"]);
    assert_denied_saying_all(
        &ops_bash(&p, &rollback, "t5"),
        &[
            "[gate-authorization-bound-elsewhere]",
            "agent_type 'builder'",
            "by 'ops'",
        ],
    );

    let brief = json!({"command": "ls"});
    authorize(p.path(), &key, &brief, &["--expires-in", "1s"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_denied_saying_all(
        &ops_bash(&p, &brief, "t6"),
        &["[gate-authorization-expired]", "expired at"],
    );
    // Each is on the ledger as a gate refusal, waiting on a grant.
    for e in of_event(&p.entries("s1"), "deny") {
        assert_eq!(e["disposition"], "held_pending_grant", "{e}");
    }
}

/// Regression (issue 28): `authorize` printed a bare id, and nothing listed what was left.
/// It now labels each line, and `authorize --list` shows every authorization's uses left,
/// state, expiry and bindings, never its input.
#[test]
fn authorize_labels_what_it_prints_and_lists_the_uses_left() {
    let (p, key) = gated("gate-list");
    let dir = p.path().to_str().unwrap();
    let empty = cli(&["authorize", "--project", dir, "--list"]);
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    assert_contains(&empty.stdout, &["no authorizations"]);
    let input = json!({"command": "deploy --prod"});
    let out = authorize(p.path(), &key, &input, &["--uses", "2", "--agent", "ops"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_contains(
        &out.stdout,
        &[
            "authorization: ",
            "tool:          Bash",
            "reviewer:      alice",
            "uses:          2",
            "expires:       20",
            "bound to:      agent type ops",
        ],
    );
    let id = authorization_id(&out);
    assert_allowed(&ops_bash(&p, &input, "t1"));
    let list = cli(&["authorize", "--project", dir, "--list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{}", list.stdout));
    assert_contains(row, &["Bash", "alice", "1/2", "usable", "agent type ops"]);
    assert!(
        !list.stdout.contains("deploy"),
        "no input is shown: {}",
        list.stdout
    );
    let json = cli(&["authorize", "--project", dir, "--list", "--json"]);
    let v: Value = serde_json::from_str(json.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            v["id"].as_str(),
            v["uses_left"].as_i64(),
            v["state"].as_str()
        ),
        (Some(id.as_str()), Some(1), Some("usable"))
    );
    assert_allowed(&ops_bash(&p, &input, "t2"));
    let list = cli(&["authorize", "--project", dir, "--list"]);
    assert_contains(&list.stdout, &["0/2", "used up"]);
    assert_snapshot(
        "authorize-list.txt",
        &mask(&list.stdout, &[(p.dir(), "<project>")]),
    );
    // Host only: a subagent cannot run it.
    let out = p
        .bash_by("ops", "attenu-hook authorize --list")
        .id("t3")
        .run();
    assert_denied_with(&out, "self-protection");
}
