//! Decisions (PreToolUse) and outcomes (PostToolUse, PostToolUseFailure), through the real
//! binary, one process per call: what is allowed, what is denied and with which reason code,
//! what the main thread and undeclared agent types get, and what each decision and outcome
//! leaves on the ledger. Cases that are a sequence of events (`claude --agent X`, shadow and
//! observe, ...) are data under `tests/cases/`, run by tests/decision_cases.rs.

mod common;
use common::*;
use serde_json::json;

#[test]
fn allow_is_silence_and_deny_has_the_documented_shape() {
    let p = sample("shape");
    let a = reviewer_read(p.path(), "s1", "/x", "t1");
    assert_eq!((a.code, a.stdout.trim()), (0, "{}"));
    let d = p.bash_by("reviewer", "ls").id("t2").run();
    assert_eq!(d.code, 0);
    let j = d.json();
    assert_eq!(j["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(j["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        d.reason()
            .starts_with("attenu-hook: [unresolved] Bash needs exec.bash"),
        "{}",
        d.reason()
    );
    assert!(!d.stdout.contains("\"allow\""), "never an explicit allow");
}

#[test]
fn the_seed_decisions_and_their_two_kinds_of_refusal() {
    let p = sample("seed");
    let cases = [
        ("reviewer", "Read", true, ""),
        ("reviewer", "Write", false, "unresolved"),
        ("reviewer", "Bash", false, "unresolved"),
        ("reviewer", "WebFetch", false, "out-of-authority"),
        ("researcher", "WebFetch", true, ""),
    ];
    for (i, (agent, tool, allowed, code)) in cases.iter().enumerate() {
        let out = p
            .subagent(agent, tool)
            .input(json!({"file_path": "/p/f", "url": "https://x"}))
            .id(&format!("t{i}"))
            .run();
        assert_eq!(out.is_allow(), *allowed, "{agent} {tool}: {}", out.stdout);
        if !allowed {
            assert!(
                out.reason().contains(&format!("[{code}]")),
                "{}",
                out.reason()
            );
        }
    }
    let es = p.entries("s1");
    let denies = of_event(&es, "deny");
    assert_eq!(denies.len(), 3);
    assert_eq!(denies[0]["disposition"], "unresolved");
    assert_eq!(denies[2]["disposition"], "out_of_authority");
    // The structural entries come once: root + one spawn per agent, then five decisions.
    assert_eq!(of_event(&es, "root").len(), 1);
    assert_eq!(of_event(&es, "spawn").len(), 2);
    assert_eq!(es.len(), 3 + 5);
}

#[test]
fn the_record_carries_claude_code_identifiers_mode_and_time() {
    let p = sample("ids");
    p.bash_by("reviewer", "ls").id("toolu_9").run();
    let es = p.entries("s1");
    let d = es.last().unwrap();
    assert_eq!(d["context"]["session_id"], "s1");
    assert_eq!(d["context"]["agent_id"], "a-reviewer");
    assert_eq!(d["context"]["agent_type"], "reviewer");
    assert_eq!(d["context"]["tool_use_id"], "toolu_9");
    assert_eq!(d["context"]["enforced"], true);
    assert_eq!(d["mode"], "enforce");
    assert!(d["context"]["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(d["v"], 2);
    assert_eq!(d["call_id"].as_str().unwrap().len(), 32);
}

#[test]
fn undeclared_subagent_types_hold_nothing_unless_configured() {
    let p = sample("undeclared");
    for (i, ty) in ["Explore", "general-purpose", "plugin:thing", ""]
        .iter()
        .enumerate()
    {
        let mut payload = p.read_by(ty, "/x").id(&format!("t{i}")).value();
        if ty.is_empty() {
            payload.as_object_mut().unwrap().remove("agent_type");
        }
        let out = hook(p.path(), &payload);
        // No type at all cannot be matched to anything (tests/identity.rs has every shape).
        let code = if ty.is_empty() {
            "agent-unidentified"
        } else {
            "undeclared-agent"
        };
        assert_denied_with(&out, code);
    }
    // Configured agents are part of the roster a session is pinned to: a new session has it.
    write_config(p.path(), "[agents]\nExplore = [\"Read\", \"Grep\"]\n");
    let out = p.read_by("Explore", "/x").id("t9").session("s2").run();
    assert_allowed(&out);
    let out = p.bash_by("Explore", "ls").id("t10").session("s2").run();
    assert!(out.denied());
}

#[test]
fn retries_stay_denied_and_each_attempt_is_recorded() {
    let p = sample("retry");
    for i in 0..3 {
        assert!(p
            .subagent("reviewer", "Write")
            .input(json!({"file_path": "/x", "content": "y"}))
            .id(&format!("t{i}"))
            .run()
            .denied());
    }
    assert_eq!(of_event(&p.entries("s1"), "deny").len(), 3);
}

#[test]
fn main_thread_is_recorded_not_enforced_unless_configured() {
    let p = sample("main");
    let out = p
        .main_thread("Bash")
        .input(json!({"command": "rm -rf /"}))
        .id("t1")
        .run();
    assert_allowed(&out);
    let e = p.entries("s1").pop().unwrap();
    assert_eq!(e["event"], "allow");
    assert_eq!(
        e["policy"], "unlisted",
        "an unauthorized main-thread call is recorded as ungated"
    );
    assert_eq!(e["context"]["enforced"], false);
    assert_eq!(e["context"]["would_deny"]["code"], "unresolved");
    write_config(p.path(), "enforce_main_thread = true\n");
    assert!(p
        .main_thread("Bash")
        .input(json!({"command": "ls"}))
        .id("t2")
        .run()
        .denied());
    assert_allowed(
        &p.main_thread("Read")
            .input(json!({"file_path": "/x"}))
            .id("t3")
            .run(),
    );
}

#[test]
fn a_mode_typo_denies_instead_of_disabling_enforcement() {
    let p = sample("typo");
    std::fs::create_dir_all(p.path().join(".attenu")).unwrap();
    for bad in [
        "mode = \"enforcing\"\n",
        "mode = \"shadow\"\nenforce_main_threads = true\n",
        "mode = 3\n",
        "[[[\n",
    ] {
        write_config(p.path(), bad);
        let out = reviewer_read(p.path(), "s1", "/x", "t1");
        assert!(out.denied(), "{bad}");
        assert!(
            out.reason().contains("[config-invalid]"),
            "{}",
            out.reason()
        );
    }
    std::fs::remove_file(p.path().join(".attenu/config.toml")).unwrap();
    std::fs::write(
        p.path().join(".attenu/config.json"),
        r#"{"mode": "shadow", "enforce_main_thread": false, "export_on_stop": true}"#,
    )
    .unwrap();
    assert!(
        p.subagent("reviewer", "Bash").id("t2").run().is_allow(),
        "the recipe's config.json is honoured"
    );
}

#[test]
fn unreadable_settings_deny_with_a_reason() {
    let p = sample("badsettings");
    std::fs::write(p.path().join(".claude/settings.json"), "{ not json").unwrap();
    let out = reviewer_read(p.path(), "s1", "/x", "t1");
    assert_denied_with(&out, "settings-invalid");
}

#[test]
fn outcomes_bind_to_their_call_and_raw_data_never_reaches_the_disk() {
    let p = sample("privacy");
    let marker = "MARKER-7f3a9c";
    let input = json!({"file_path": format!("/p/{marker}"), "note": marker});
    assert_allowed(
        &p.subagent("reviewer", "Read")
            .input(input.clone())
            .id("t1")
            .run(),
    );
    let out = p
        .subagent("reviewer", "Read")
        .input(input.clone())
        .id("t1")
        .post(json!({"content": marker}))
        .run();
    assert_allowed(&out);
    let mut failure = p
        .subagent("reviewer", "Read")
        .input(input.clone())
        .id("t2")
        .value();
    hook(p.path(), &failure);
    failure["hook_event_name"] = json!("PostToolUseFailure");
    failure["error"] = json!(format!("boom {marker}"));
    let halted = hook(p.path(), &failure);
    assert_eq!(halted.json()["continue"], false, "{}", halted.stdout);
    assert!(halted.json()["stopReason"]
        .as_str()
        .unwrap()
        .contains("[tool-failed]"));
    hook(p.path(), &event("s1", p.path(), "SessionEnd"));
    let es = p.entries("s1");
    let allows = of_event(&es, "allow");
    let outcomes = of_event(&es, "outcome");
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0]["call_id"], allows[0]["call_id"]);
    assert_eq!(outcomes[0]["body_state"], "returned");
    assert_eq!(
        outcomes[0]["invoked_params_hash"],
        allows[0]["authorized_params_hash"]
    );
    assert_eq!(outcomes[1]["call_id"], allows[1]["call_id"]);
    assert_eq!(outcomes[1]["body_state"], "raised");
    assert_eq!(outcomes[1]["context"]["side_effects"], "uncertain");
    for f in std::fs::read_dir(p.path().join(".attenu"))
        .unwrap()
        .flatten()
    {
        let bytes = std::fs::read(f.path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(marker),
            "{} holds raw data",
            f.path().display()
        );
    }
}

#[test]
fn input_changed_after_authorization_is_recorded_and_halts() {
    let p = sample("changed");
    assert_allowed(&reviewer_read(p.path(), "s1", "/a", "t1"));
    let out = p
        .read_by("reviewer", "/etc/shadow")
        .id("t1")
        .post(json!({}))
        .run();
    assert_eq!(out.json()["continue"], false);
    assert!(out.json()["stopReason"]
        .as_str()
        .unwrap()
        .contains("[input-changed-after-authorization]"));
    let es = p.entries("s1");
    let o = es.iter().find(|e| e["event"] == "outcome").unwrap();
    let a = es.iter().find(|e| e["event"] == "allow").unwrap();
    assert_ne!(o["invoked_params_hash"], a["authorized_params_hash"]);
}

#[test]
fn an_interrupted_call_is_recorded_as_abandoned_never_as_a_success() {
    let p = sample("interrupt");
    let t1 = allowed_read(p.path());
    let mut failure = t1.clone().value();
    failure["hook_event_name"] = json!("PostToolUseFailure");
    failure["error"] = json!("interrupted by user");
    failure["is_interrupt"] = json!(true);
    let out = hook(p.path(), &failure);
    assert_eq!(out.json()["continue"], false);
    assert!(out.json()["stopReason"]
        .as_str()
        .unwrap()
        .contains("(interrupted)"));
    let o = p.entries("s1").pop().unwrap();
    assert_eq!(
        (o["event"].as_str(), o["body_state"].as_str()),
        (Some("outcome"), Some("abandoned"))
    );
    assert!(
        o.get("error_code").is_none(),
        "error_code only goes with raised"
    );
}
