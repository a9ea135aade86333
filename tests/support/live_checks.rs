//! What `live_claude.rs` checks: the calls it expects, the ledger against them, the exported
//! bundles under both verifiers.
use super::*;

// =============================================================================================
// the ledger
// =============================================================================================

pub struct Expected {
    pub id: String,
    pub tool: &'static str,
    pub scope: String,
    /// `None`: the main thread.
    pub agent_type: Option<&'static str>,
    /// `None`: recorded, not enforced (main thread); any event value is accepted.
    pub event: Option<&'static str>,
}

pub fn expected_calls(worker_may_write: bool) -> Vec<Expected> {
    let e = |id: &str, tool, scope: &str, agent_type, event| Expected {
        id: id.to_string(),
        tool,
        scope: scope.to_string(),
        agent_type,
        event,
    };
    let mut v = vec![e("toolu_main_0_0", "Bash", "exec.bash", None, None)];
    for (i, (_, stype)) in SPAWNED.iter().enumerate() {
        v.push(e(
            &format!("toolu_main_1_{i}"),
            "Agent",
            &format!("agent.delegate.{stype}"),
            None,
            None,
        ));
    }
    v.push(e("toolu_main_2_0", "Bash", "exec.bash", None, None));
    v.push(e(
        "toolu_gp_0_0",
        "Bash",
        "exec.bash",
        Some("general-purpose"),
        Some("deny"),
    ));
    v.push(e(
        "toolu_explore_0_0",
        "Bash",
        "exec.bash",
        Some("Explore"),
        Some("deny"),
    ));
    v.push(e(
        "toolu_worker_0_0",
        "Bash",
        "exec.bash",
        Some("worker"),
        Some("allow"),
    ));
    v.push(e(
        "toolu_worker_1_0",
        "Write",
        "fs.write",
        Some("worker"),
        Some(if worker_may_write { "allow" } else { "deny" }),
    ));
    v.push(e(
        "toolu_builder_0_0",
        "Bash",
        "exec.bash",
        Some("builder"),
        Some("allow"),
    ));
    v.push(e(
        "toolu_builder_1_0",
        "Read",
        "fs.read",
        Some("builder"),
        Some("allow"),
    ));
    v.push(e(
        "toolu_reviewer_0_0",
        "Read",
        "fs.read",
        Some("reviewer"),
        Some("allow"),
    ));
    v
}

pub fn check_ledger(s: &Session, ledger: &[Value], worker_may_write: bool) {
    let where_ = format!("ledger {}", s.ledger_path().display());
    if s.wired_events.contains("SessionStart") {
        // Claude Code ran SessionStart before any tool call, so it opened the ledger and the
        // session's first PreToolUse only appended its decision.
        let first = ledger.first().expect("an empty ledger");
        assert_eq!(
            (first.get("event"), first.pointer("/context/hook_event")),
            (Some(&json!("root")), Some(&json!("SessionStart"))),
            "{where_}: the ledger was not opened by the SessionStart hook: {first}"
        );
    }
    // decisions by tool_use_id
    let mut by_id: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for entry in ledger {
        let event = entry.get("event").and_then(Value::as_str).unwrap_or("");
        if event != "allow" && event != "deny" {
            continue;
        }
        let ctx = entry
            .get("context")
            .unwrap_or_else(|| panic!("{where_}: decision without `context`: {entry}"));
        let id = ctx
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{where_}: decision without context.tool_use_id: {entry}"));
        by_id.entry(id.to_string()).or_default().push(entry);
    }

    let mut agent_ids: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut delegation_scopes: BTreeSet<String> = BTreeSet::new();
    for exp in expected_calls(worker_may_write) {
        let found = by_id.get(&exp.id).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(
            found.len(),
            1,
            "{where_}: expected exactly one decision for {} ({} by {}), found {}: {found:?}",
            exp.id,
            exp.tool,
            exp.agent_type.unwrap_or("the main thread"),
            found.len()
        );
        let entry = found[0];
        let ctx = &entry["context"];
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        assert_eq!(
            field(entry, "tool").as_deref(),
            Some(exp.tool),
            "{where_}: `tool` of {}: {entry}",
            exp.id
        );
        let scope = field(entry, "scope").unwrap_or_default();
        match exp.scope.strip_prefix("agent.delegate.") {
            // A subagent type outside the scope grammar (`Explore`) is written in an escaped
            // form; all this test relies on is that it stays a distinct delegation scope.
            Some(name) if !plain_segment(name) => {
                assert!(
                    scope.starts_with("agent.delegate.") && !delegation_scopes.contains(&scope),
                    "{where_}: `scope` of {} should be a delegation scope of its own for {name}: {entry}",
                    exp.id
                );
                delegation_scopes.insert(scope);
            }
            _ => {
                assert_eq!(scope, exp.scope, "{where_}: `scope` of {}: {entry}", exp.id);
                if exp.scope.starts_with("agent.delegate.") {
                    delegation_scopes.insert(scope);
                }
            }
        }
        assert_eq!(
            field(ctx, "session_id").as_deref(),
            Some(s.session_id.as_str()),
            "{where_}: context.session_id of {}: {entry}",
            exp.id
        );
        if let Some(event) = exp.event {
            assert_eq!(
                field(entry, "event").as_deref(),
                Some(event),
                "{where_}: decision for {} ({} by {:?}): {entry}",
                exp.id,
                exp.tool,
                exp.agent_type
            );
        }
        match exp.agent_type {
            None => {
                // main thread: no agent id on the record, and not attributed to a subagent type
                assert!(
                    ctx.get("agent_id").is_none_or(Value::is_null),
                    "{where_}: main-thread call {} recorded with a context.agent_id: {entry}",
                    exp.id
                );
                let t = field(ctx, "agent_type");
                assert!(
                    !SPAWNED.iter().any(|(_, st)| t.as_deref() == Some(*st)),
                    "{where_}: main-thread call {} attributed to subagent type {t:?}: {entry}",
                    exp.id
                );
            }
            Some(agent_type) => {
                assert_eq!(
                    field(ctx, "agent_type").as_deref(),
                    Some(agent_type),
                    "{where_}: context.agent_type of {}: {entry}",
                    exp.id
                );
                let agent_id = field(ctx, "agent_id")
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| {
                        panic!(
                            "{where_}: subagent call {} without context.agent_id: {entry}",
                            exp.id
                        )
                    });
                agent_ids.entry(agent_type).or_default().insert(agent_id);
            }
        }
    }

    // one agent id per spawned subagent, all different, and the ones Claude Code reported
    let mut seen = BTreeSet::new();
    for (i, (_, stype)) in SPAWNED.iter().enumerate() {
        let Some(ids) = agent_ids.get(stype) else {
            continue;
        };
        assert_eq!(
            ids.len(),
            1,
            "{where_}: calls of the one {stype} subagent carry different agent ids: {ids:?}"
        );
        let id = ids.iter().next().unwrap().clone();
        assert!(
            seen.insert(id.clone()),
            "{where_}: two subagents share agent id {id}"
        );
        // The Agent tool's result names the agent it launched ("agentId: <id>").
        let (_, text) = s.result(&format!("toolu_main_1_{i}"));
        match text.split("agentId: ").nth(1).map(|t| t.chars().take_while(char::is_ascii_alphanumeric).collect::<String>()) {
            Some(reported) if !reported.is_empty() => assert_eq!(id, reported, "{where_}: {stype}'s calls are recorded under agent id {id}, Claude Code launched it as {reported}"),
            _ => eprintln!("live_claude: note: the Agent result for {stype} did not name an agentId; agent id not cross-checked"),
        }
    }

    // the reviewer's Bash never reached the hook: Claude Code refused it first
    assert!(!by_id.contains_key("toolu_reviewer_1_0"), "{where_}: the reviewer's Bash reached the hook, but Claude Code should have refused it: {:?}", by_id.get("toolu_reviewer_1_0"));

    // the ledger names every agent type that ran, and the main thread
    let types: BTreeSet<&str> = ledger
        .iter()
        .filter_map(|e| e.get("context")?.get("agent_type")?.as_str())
        .collect();
    for (_, stype) in SPAWNED {
        assert!(
            types.contains(stype),
            "{where_}: no entry names agent type {stype}; named: {types:?}"
        );
    }
}

/// A scope segment written as is: lower-case letters, digits, `_` and `-`.
pub fn plain_segment(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

// =============================================================================================
// evidence
// =============================================================================================

pub fn check_evidence(s: &Session, scratch: &Path) {
    let attenu = s.project.join(".attenu");

    // The SessionEnd hook exports by itself when the snippet wires SessionEnd (checked before
    // `export` runs, which may write the same file).
    if s.wired_events.contains("SessionEnd") {
        let auto = attenu.join(format!("bundle-{}.json", s.session_id));
        assert!(
            auto.is_file(),
            "SessionEnd is wired but {} was not written",
            auto.display()
        );
        let v = run_command(
            Command::new(HOOK_BIN).arg("verify").arg(&auto),
            COMMAND_DEADLINE,
            scratch,
            "verify-auto",
        );
        // Without --pub the key beside the bundle is used: valid, but not pinned (exit 3).
        assert!(
            v.valid_key_not_pinned(),
            "attenu-hook verify {} (written at SessionEnd) did not exit 3: {}",
            auto.display(),
            v.describe()
        );
    }

    let out = run_command(
        Command::new(HOOK_BIN)
            .arg("export")
            .arg("--project")
            .arg(&s.project)
            .arg("--session")
            .arg(&s.session_id)
            .current_dir(&s.project),
        COMMAND_DEADLINE,
        scratch,
        "export",
    );
    assert!(out.ok(), "attenu-hook export failed: {}", out.describe());
    let bundles: Vec<PathBuf> = out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect();
    assert!(
        !bundles.is_empty(),
        "attenu-hook export printed no bundle path: {}",
        out.describe()
    );

    let anchor_pub = attenu.join("anchor.pub");
    assert!(
        anchor_pub.is_file(),
        "{} missing after export",
        anchor_pub.display()
    );
    for bundle in &bundles {
        let bundle = if bundle.is_absolute() {
            bundle.clone()
        } else {
            s.project.join(bundle)
        };
        assert!(
            bundle.is_file(),
            "export printed {}, which is not a file",
            bundle.display()
        );
        let v = run_command(
            Command::new(HOOK_BIN).arg("verify").arg(&bundle),
            COMMAND_DEADLINE,
            scratch,
            "verify",
        );
        assert!(
            v.valid_key_not_pinned(),
            "attenu-hook verify {} did not exit 3 (valid, key not pinned): {}",
            bundle.display(),
            v.describe()
        );
        let v = run_command(
            Command::new(HOOK_BIN)
                .arg("verify")
                .arg(&bundle)
                .arg("--pub")
                .arg(&anchor_pub),
            COMMAND_DEADLINE,
            scratch,
            "verify-pub",
        );
        assert!(
            v.ok(),
            "attenu-hook verify {} --pub {} failed: {}",
            bundle.display(),
            anchor_pub.display(),
            v.describe()
        );
    }

    // Optional: the reference verifier (attenu-guard 0.21.0) agrees, with only anchor.pub.
    if let Some(py) = std::env::var_os("ATTENU_REF_PYTHON").filter(|v| !v.is_empty()) {
        for bundle in &bundles {
            let bundle = if bundle.is_absolute() {
                bundle.clone()
            } else {
                s.project.join(bundle)
            };
            let v = run_command(
                Command::new(&py)
                    .arg("-c")
                    .arg(REF_VERIFY_PY)
                    .arg(&bundle)
                    .arg(&anchor_pub),
                COMMAND_DEADLINE,
                scratch,
                "ref-verify",
            );
            assert!(
                v.ok(),
                "attenu_guard.evidence.verify_bundle rejects {}: {}",
                bundle.display(),
                v.describe()
            );
        }
    } else {
        eprintln!(
            "live_claude: note: ATTENU_REF_PYTHON unset; reference verifier cross-check skipped"
        );
    }

    // A bundle in which the general-purpose deny is turned into an allow must not verify.
    let first = if bundles[0].is_absolute() {
        bundles[0].clone()
    } else {
        s.project.join(&bundles[0])
    };
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(&first).unwrap())
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", first.display()));
    let entries = doc
        .get_mut("entries")
        .and_then(Value::as_array_mut)
        .unwrap_or_else(|| panic!("{}: no `entries` array", first.display()));
    let target = entries
        .iter_mut()
        .find(|e| {
            e.get("event").and_then(Value::as_str) == Some("deny")
                && e.pointer("/context/tool_use_id").and_then(Value::as_str) == Some("toolu_gp_0_0")
        })
        .unwrap_or_else(|| {
            panic!(
                "{}: the general-purpose deny (toolu_gp_0_0) is not in the bundle",
                first.display()
            )
        });
    target["event"] = json!("allow");
    let tampered = scratch.join("tampered-bundle.json");
    fs::write(&tampered, serde_json::to_vec(&doc).unwrap()).unwrap();
    let v = run_command(
        Command::new(HOOK_BIN).arg("verify").arg(&tampered),
        COMMAND_DEADLINE,
        scratch,
        "verify-tampered",
    );
    assert!(
        v.status.and_then(|s| s.code()) == Some(1),
        "attenu-hook verify did not call a bundle whose deny was rewritten to allow invalid (exit 1): {}",
        v.describe()
    );
}
