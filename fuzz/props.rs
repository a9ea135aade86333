//! The properties every fuzz target asserts, shared with `tests/fuzz_regressions.rs` so that a
//! crash input found by `fuzz/run.sh` replays under plain `cargo test` through the very same
//! checks. Each function takes the raw fuzzer input and panics when a property fails; a parser
//! refusing hostile input is fine, a panic, a wrong answer or a scope outside the grammar is not.
//!
//! Included with `#[path]` from `fuzz/fuzz_targets/*.rs` and from `tests/fuzz_regressions.rs`.
#![allow(dead_code)]

use attenu_hook::config::Config;
use attenu_hook::derive::{self, frontmatter, scopes, Declarations, Roster};
use attenu_hook::evidence::verify::{self, AnchorKey, FailureName};
use attenu_hook::json::canonical;
use attenu_hook::ledger::{chain, read, store};
use attenu_hook::policy::{decide, Actor, Call};
use attenu_hook::protocol::payload::{self, Event};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::OnceLock;

/// A property check: panics when the input breaks a property.
pub type Check = fn(&[u8]);

/// Every target by the name of its file under `fuzz/fuzz_targets/` and its directory under
/// `tests/fuzz_regressions/` and `fuzz/seeds/`.
pub const TARGETS: &[(&str, Check)] = &[
    ("payload", payload),
    ("frontmatter", frontmatter),
    ("settings", settings),
    ("ledger_line", ledger_line),
    ("bundle", bundle),
    ("canonical", canonical_json),
];

/// The seed of the anchor key the seed bundles under `fuzz/seeds/bundle/` are signed with, so
/// that mutations of a valid bundle reach the verifier's "everything holds" paths too.
pub const SEED_ANCHOR_KEY: [u8; 32] = [7u8; 32];

// ------------------------------------------------------------------------------------------
// payload: hook::payload::parse, then decide() on a fixed roster
// ------------------------------------------------------------------------------------------

const AGENTS: &[(&str, &str)] = &[
    (
        "reviewer",
        "---\nname: reviewer\ndescription: reviews\ntools: Read, Grep, Glob\n---\nbody\n",
    ),
    (
        "researcher",
        "---\nname: researcher\ndescription: researches\ntools: Read, WebFetch\ndisallowedTools: Write, Edit\n---\nbody\n",
    ),
    (
        "builder",
        "---\nname: builder\ntools: [Bash, Write, Edit, \"Agent(reviewer)\", mcp__github__create_issue]\n---\n",
    ),
    ("inheritor", "---\nname: inheritor\ndisallowedTools: Bash\n---\n"),
];

const SETTINGS: &str = r#"{"permissions": {"allow": ["Read", "Grep", "Glob", "Bash(npm run lint)", "mcp__github"], "deny": ["Read(./.env)", "NotebookEdit"]}}"#;

/// The roster every payload is decided against: the sample project plus an agent that
/// delegates and one that inherits.
pub fn fixed_roster() -> &'static Roster {
    static R: OnceLock<Roster> = OnceLock::new();
    R.get_or_init(|| {
        let mut d = Declarations::default();
        for (name, text) in AGENTS {
            let parsed = frontmatter::parse_agent(text);
            assert!(parsed.is_ok(), "fixed agent {name} parses");
            d.agents
                .insert(name.to_string(), (format!("{name}.md"), parsed));
        }
        derive::parse_settings(SETTINGS, "settings.json", &mut d).expect("fixed settings parse");
        let r = derive::resolve(d);
        check_roster(&r, &[]);
        r
    })
}

pub fn payload(data: &[u8]) {
    let parsed = payload::parse(data);
    if data.len() > payload::MAX_PAYLOAD_BYTES {
        assert!(parsed.is_err(), "an oversized payload was accepted");
    }
    let p = match parsed {
        Ok(p) => p,
        Err(reason) => {
            assert!(!reason.message.is_empty(), "a refusal without a sentence");
            return;
        }
    };
    // What parse accepted is well formed.
    let value: Value = serde_json::from_slice(data).expect("parse accepted invalid JSON");
    assert!(value.is_object(), "parse accepted a non-object");
    if let Event::Other(name) = &p.event {
        assert!(!name.is_empty());
        return;
    }
    assert!(!p.session_id.is_empty(), "accepted without a session_id");
    // An empty agent_id is kept as it is: present at all, it marks a subagent.
    assert!(p.agent_type.as_deref() != Some(""));
    assert_eq!(
        value.get("session_id").and_then(Value::as_str),
        Some(p.session_id.as_str())
    );
    let name = store::session_file_name(&p.session_id);
    assert!(
        !name.is_empty() && !name.contains('/') && !name.contains('\\') && name != "..",
        "session id {:?} maps to file name {name:?}",
        p.session_id
    );
    let tool_event = matches!(
        p.event,
        Event::PreToolUse | Event::PostToolUse | Event::PostToolUseFailure
    );
    if !tool_event {
        return;
    }
    assert!(!p.tool_name.is_empty(), "a tool event without tool_name");
    assert!(p.tool_input.is_object(), "tool_input is not an object");
    canonical_value(&p.tool_input);
    if let Some(r) = &p.tool_response {
        canonical_value(r);
    }
    let roster = fixed_roster();
    let strict = Config {
        enforce_main_thread: true,
        ..Config::default()
    };
    for config in [Config::default(), strict] {
        let call = Call {
            tool_name: &p.tool_name,
            tool_input: &p.tool_input,
            agent_id: p.agent_id.as_deref(),
            agent_type: p.agent_type.as_deref(),
            reach: &Default::default(),
        };
        check_decision(roster, &config, &call);
    }
}

/// What must hold of any decision on any call.
pub fn check_decision(roster: &Roster, config: &Config, call: &Call<'_>) {
    let d = decide(roster, config, call, Path::new("/p"));
    assert!(
        scopes::in_grammar(&d.scope),
        "scope {:?} of tool {:?} is outside the grammar",
        d.scope,
        call.tool_name
    );
    assert_eq!(d.held, d.reason.is_none(), "reason set iff not held");
    let plain = scopes::scope_for_call(call.tool_name, call.tool_input);
    if d.scope != plain {
        // Only an Agent call naming a declared agent in another spelling, as Claude Code
        // resolves it, is checked against that agent's delegation.
        assert!(
            plain.starts_with("agent.delegate.")
                && roster
                    .agents
                    .keys()
                    .any(|n| scopes::delegate_scope(n) == d.scope),
            "scope {:?} for a call whose own scope is {plain:?}",
            d.scope
        );
    }
    match &d.actor {
        Actor::Unidentified => {
            assert!(call.agent_id.is_some() && call.agent_type.is_none_or(str::is_empty));
            assert!(
                !d.held && d.node_agent.is_none(),
                "an unidentified call holds nothing"
            );
        }
        Actor::Subagent(ty) | Actor::MainAgent(ty) => {
            // A subagent, or a `--agent` main thread held to its agent's declaration.
            assert_eq!(
                call.agent_id.is_some(),
                matches!(d.actor, Actor::Subagent(_))
            );
            assert!(d.enforced, "an agent's refusal is enforced in enforce mode");
            match roster.agents.get(ty) {
                None => {
                    assert!(
                        !d.held,
                        "undeclared agent type {ty:?} holds {} for {:?}",
                        d.scope, call.tool_name
                    );
                    assert!(d.denies());
                    assert_eq!(d.node_agent, None);
                }
                Some(agent) => {
                    assert_eq!(d.node_agent.as_deref(), Some(ty.as_str()));
                    if d.held {
                        assert!(
                            scopes::holds(&agent.scopes, &d.scope),
                            "{ty} held {} which it was not derived",
                            d.scope
                        );
                        assert!(agent.invalid.is_none());
                    }
                }
            }
        }
        Actor::MainThread => {
            assert!(call.agent_id.is_none() && call.agent_type.is_none_or(str::is_empty));
            assert_eq!(d.node_agent, None);
            if d.held {
                assert!(roster.declared_anywhere(&d.scope));
            }
            if !config.enforce_main_thread {
                assert!(!d.denies(), "the main thread is recorded, not enforced");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// frontmatter: derive::frontmatter::parse_agent, then resolve
// ------------------------------------------------------------------------------------------

pub fn frontmatter(data: &[u8]) {
    // read_declarations refuses a file that is not UTF-8 before parsing it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let block = frontmatter::frontmatter_block(text);
    let mut decl = Declarations::default();
    match frontmatter::parse_agent(text) {
        Ok(a) => {
            assert!(block.is_ok(), "parsed an agent without a frontmatter block");
            assert!(
                !a.name.is_empty() && a.name.trim() == a.name,
                "{:?}",
                a.name
            );
            for rule in a.tools.iter().flatten().chain(&a.disallowed) {
                assert!(!rule.is_empty() && rule.trim() == rule, "rule {rule:?}");
            }
            decl.agents
                .insert(a.name.clone(), ("fuzz.md".into(), Ok(a)));
        }
        Err(e) => {
            assert!(!e.message.is_empty());
            if block.is_err() {
                assert!(
                    e.name.is_none(),
                    "a name guessed without a frontmatter block"
                );
            }
            match e.name.clone() {
                Some(n) => {
                    assert!(!n.is_empty());
                    decl.agents.insert(n, ("fuzz.md".into(), Err(e)));
                }
                None => return,
            }
        }
    }
    // The agent on its own, and beside the fixed project.
    check_roster(&derive::resolve(clone_decl(&decl)), &[]);
    for (name, text) in AGENTS {
        if !decl.agents.contains_key(*name) {
            decl.agents.insert(
                name.to_string(),
                (format!("{name}.md"), frontmatter::parse_agent(text)),
            );
        }
    }
    let deny = vec!["NotebookEdit".to_string()];
    decl.deny = deny.clone();
    let r = derive::resolve(decl);
    check_roster(&r, &deny);
    for rule in frontmatter::split_rules(text) {
        assert!(!rule.is_empty() && rule.trim() == rule, "rule {rule:?}");
        check_declared(&rule);
    }
}

fn clone_decl(d: &Declarations) -> Declarations {
    Declarations {
        agents: d.agents.clone(),
        allow: d.allow.clone(),
        deny: d.deny.clone(),
        allow_from: d.allow_from.clone(),
        deny_from: d.deny_from.clone(),
        ask: d.ask.clone(),
        ask_from: d.ask_from.clone(),
        session_pool: d.session_pool.clone(),
        problems: d.problems.clone(),
        broken_files: d.broken_files.clone(),
    }
}

/// Every scope a declared rule can produce is in the grammar.
fn check_declared(rule: &str) {
    for site in [
        scopes::Site::Settings,
        scopes::Site::AgentTools,
        scopes::Site::AgentDisallowed,
    ] {
        match scopes::declared_at(rule, site) {
            scopes::Declared::Scopes(s) | scopes::Declared::WholeTool(s, _) => {
                for scope in s {
                    assert!(
                        scopes::in_grammar(&scope),
                        "rule {rule:?} declares {scope:?} ({site:?}), outside the grammar"
                    );
                }
            }
            scopes::Declared::Ruled(scope, _) => assert!(
                scopes::in_grammar(&scope),
                "rule {rule:?} declares {scope:?} ({site:?}), outside the grammar"
            ),
            scopes::Declared::All | scopes::Declared::Unrepresented(_) => {}
        }
    }
}

/// What must hold of any derived roster: every scope in the grammar, each agent within the
/// session root, a broken agent holding nothing, no bare `deny` rule left holding anything.
pub fn check_roster(r: &Roster, deny: &[String]) {
    for s in &r.root {
        assert!(
            scopes::in_grammar(s),
            "root scope {s:?} outside the grammar"
        );
    }
    for (name, a) in &r.agents {
        for s in &a.scopes {
            assert!(
                scopes::in_grammar(s),
                "agent {name:?} scope {s:?} outside the grammar"
            );
            assert!(
                scopes::holds(&r.root, s),
                "agent {name:?} holds {s:?} outside the session root"
            );
        }
        if a.invalid.is_some() {
            assert!(a.scopes.is_empty(), "invalid agent {name:?} holds scopes");
        }
        // Rules limit only what is held, and no agent is wider than the session's rules.
        for s in a.rules.keys() {
            assert!(
                a.scopes.contains(s),
                "agent {name:?} has rules for {s:?}, not held"
            );
        }
        for s in r.root_rules.keys().filter(|s| a.scopes.contains(*s)) {
            assert!(
                a.rules.contains_key(s),
                "agent {name:?} holds {s:?} outright, the session only under rules"
            );
        }
        assert!(scopes::in_grammar(&scopes::delegate_scope(name)));
    }
    let mut deny_all = false;
    for rule in deny {
        match scopes::declared(rule) {
            scopes::Declared::All => deny_all = true,
            scopes::Declared::Scopes(denied) | scopes::Declared::WholeTool(denied, _) => {
                for d in &denied {
                    for s in r
                        .root
                        .iter()
                        .chain(r.agents.values().flat_map(|a| &a.scopes))
                    {
                        assert!(
                            !scopes::covers(d, s),
                            "deny rule {rule:?} ({d}) left {s:?} held"
                        );
                    }
                }
            }
            scopes::Declared::Unrepresented(_) | scopes::Declared::Ruled(..) => {}
        }
    }
    if deny_all {
        assert!(
            r.root.is_empty(),
            "permissions.deny * left the root holding"
        );
        assert!(r.agents.values().all(|a| a.scopes.is_empty()));
    }
    assert_eq!(r.digest.len(), 64);
    assert!(r
        .digest
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    canonical_value(&r.to_json());
}

// ------------------------------------------------------------------------------------------
// settings: derive::parse_settings (+ agent files after NUL bytes), then resolve
// ------------------------------------------------------------------------------------------

/// Input: the settings.json text, then optionally a NUL byte and settings.local.json, then
/// NUL-separated agent files.
pub fn settings(data: &[u8]) {
    let mut parts = data.split(|&b| b == 0);
    let Some(Ok(settings)) = parts.next().map(std::str::from_utf8) else {
        return;
    };
    let mut decl = Declarations::default();
    if derive::parse_settings(settings, "settings.json", &mut decl).is_err() {
        return;
    }
    if let Some(local) = parts.next() {
        let Ok(local) = std::str::from_utf8(local) else {
            return;
        };
        if derive::parse_settings(local, "settings.local.json", &mut decl).is_err() {
            return;
        }
    }
    for (i, agent) in parts.enumerate() {
        let Ok(text) = std::str::from_utf8(agent) else {
            continue;
        };
        let (name, parsed) = match frontmatter::parse_agent(text) {
            Ok(a) => (a.name.clone(), Ok(a)),
            Err(e) => (
                e.name.clone().unwrap_or_else(|| format!("agent{i}")),
                Err(e),
            ),
        };
        decl.agents.insert(name, (format!("{i}.md"), parsed));
    }
    for rule in decl.allow.iter().chain(&decl.deny) {
        check_declared(rule);
    }
    let deny = decl.deny.clone();
    let r = derive::resolve(decl);
    check_roster(&r, &deny);
    // Every call against the derived roster obeys the decision properties too.
    for (tool, input) in [
        ("Read", json!({"file_path": "/p/a"})),
        ("Bash", json!({"command": "ls"})),
        ("Agent", json!({"subagent_type": "reviewer"})),
        ("mcp__github__create_issue", json!({})),
    ] {
        for agent in r.agents.keys().map(String::as_str).chain(["Explore", ""]) {
            let call = Call {
                tool_name: tool,
                tool_input: &input,
                agent_id: Some("a1"),
                agent_type: Some(agent),
                reach: &Default::default(),
            };
            check_decision(&r, &Config::default(), &call);
        }
    }
}

// ------------------------------------------------------------------------------------------
// ledger_line: ledger::store::scan on raw bytes, and on the same lines re-sealed into chains
// ------------------------------------------------------------------------------------------

pub fn ledger_line(data: &[u8]) {
    check_scan(data);
    // Random bytes almost never carry a valid SHA-256 chain, so the checks past the hash
    // (chain ids, links between chains, pending calls) are reached by sealing the lines.
    // The flags come from the input's length, so one run seals once and mutations vary them.
    if let Some(sealed) = seal_lines(data, data.len() as u8) {
        check_scan(&sealed);
    }
}

/// Seals every JSON-object line of `data` into chains: each `root` line starts one, every line
/// gets its `seq`, `prev_hash` and `hash`. Flag bit 0 links each chain to the one before it,
/// bit 1 gives every entry its chain's `chain_id`.
pub fn seal_lines(data: &[u8], flags: u8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut prev = chain::GENESIS.to_string();
    let mut seq = 0u64;
    let mut chain_id: Option<Value> = None;
    let mut previous: Option<Value> = None;
    for line in data.split(|&b| b == b'\n') {
        let Ok(Value::Object(mut e)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if e.get("event").and_then(Value::as_str) == Some("root") {
            if let (Some(id), Some(last)) = (&chain_id, seq.checked_sub(1)) {
                previous = Some(json!({"chain_id": id, "head": prev, "seq": last}));
            }
            prev = chain::GENESIS.to_string();
            seq = 0;
            chain_id = Some(e.get("chain_id").cloned().unwrap_or(Value::Null));
            if flags & 1 != 0 {
                if let Some(link) = &previous {
                    let ctx = e
                        .entry("context")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(ctx) = ctx {
                        ctx.insert("previous_chain".into(), link.clone());
                    }
                }
            }
        }
        if flags & 2 != 0 {
            if let Some(id) = &chain_id {
                e.insert("chain_id".into(), id.clone());
            }
        }
        e.insert("seq".into(), json!(seq));
        let Ok(hash) = chain::seal(&mut e, &prev) else {
            continue;
        };
        let Ok(bytes) = canonical::to_vec(&Value::Object(e)) else {
            continue;
        };
        out.extend_from_slice(&bytes);
        out.push(b'\n');
        prev = hash;
        seq += 1;
    }
    (!out.is_empty()).then_some(out)
}

fn check_scan(bytes: &[u8]) {
    let scanned = store::scan(bytes);
    let chains = read::chains_of(bytes);
    let state = match scanned {
        Ok(state) => state,
        Err(why) => {
            assert!(!why.to_string().is_empty());
            return;
        }
    };
    let chains = chains.expect("chains_of refused a ledger scan accepted");
    assert_eq!(chains.len(), state.chains.len(), "chain count");
    let mut last_start = None;
    for (i, (entries, info)) in chains.iter().zip(&state.chains).enumerate() {
        assert_eq!(info.index as usize, i + 1);
        assert_eq!(entries.len() as u64, info.entries);
        assert!(info.entries >= 1);
        assert_eq!(
            chain::verify_entries(entries).expect("scan accepted a broken chain"),
            info.head
        );
        assert_eq!(
            entries[0].get("event").and_then(Value::as_str),
            Some("root")
        );
        assert!(last_start.is_none_or(|s| s < info.start));
        assert!((info.start as usize) < bytes.len());
        last_start = Some(info.start);
    }
    if bytes.is_empty() {
        assert!(state.chains.is_empty());
    } else {
        assert!((state.last_line as usize) < bytes.len());
    }
    if let Some(last) = state.chains.last() {
        for p in state.pending.values() {
            assert_eq!(
                p.chain_id, last.chain_id,
                "a pending call of an older chain"
            );
        }
    } else {
        assert!(state.pending.is_empty());
    }
}

// ------------------------------------------------------------------------------------------
// bundle: evidence::verify::verify_bundle_bytes, with no key and with the seed key
// ------------------------------------------------------------------------------------------

pub fn bundle(data: &[u8]) {
    let none = verify::verify_bundle_bytes(data, &AnchorKey::None);
    let seed = ed25519_dalek::SigningKey::from_bytes(&SEED_ANCHOR_KEY).verifying_key();
    let pinned = verify::verify_bundle_bytes(data, &AnchorKey::Pinned(seed));
    match (none, pinned) {
        (Err(a), Err(b)) => assert_eq!(a, b),
        (Ok(none), Ok(pinned)) => {
            check_report(&none);
            check_report(&pinned);
            assert!(!none.valid, "a bundle was valid with no key");
            assert_eq!(none.key, verify::KeyTrust::None);
            assert_eq!(pinned.key, verify::KeyTrust::Pinned);
            assert_eq!(none.entries, pinned.entries);
            if pinned.valid {
                assert!(pinned.checks.integrity && pinned.checks.root && pinned.checks.version);
                assert_eq!(pinned.checks.anchor, verify::AnchorStatus::Verified);
            }
        }
        _ => panic!("the key changed whether the bundle could be read at all"),
    }
}

fn check_report(r: &verify::Report) {
    assert_eq!(r.valid, r.failures.is_empty(), "valid iff no failure");
    for f in &r.failures {
        let name = f.name.as_str();
        assert!(!name.is_empty());
        assert_eq!(FailureName::from_name(name), Some(f.name));
        assert!(!f.detail.is_empty());
        assert!(
            !f.detail.contains('\n') && !f.detail.contains('\r'),
            "a failure detail spans lines: {:?}",
            f.detail
        );
    }
    let text = verify::render_text(r, None);
    assert!(!text.is_empty());
    let json = serde_json::to_value(r).expect("the report serialises");
    canonical_value(&json);
}

// ------------------------------------------------------------------------------------------
// canonical: json::canonical::to_vec on any JSON value
// ------------------------------------------------------------------------------------------

pub fn canonical_json(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        canonical_value(&v);
    }
}

/// RFC 8785 output re-parses to an equal value, canonicalises to the same bytes again, and is
/// refused exactly for numbers outside the safe range.
pub fn canonical_value(v: &Value) {
    let bytes = match canonical::to_vec(v) {
        Ok(b) => b,
        Err(e) => {
            assert!(
                has_unsafe_number(v),
                "canonical refused a value with only safe numbers: {e}"
            );
            return;
        }
    };
    assert!(!has_unsafe_number(v), "canonical accepted an unsafe number");
    let text = std::str::from_utf8(&bytes).expect("canonical JSON is UTF-8");
    let back: Value = serde_json::from_str(text).expect("canonical JSON re-parses");
    assert!(
        same_json(v, &back),
        "canonical JSON re-parses to another value: {text}"
    );
    assert_eq!(
        canonical::to_vec(&back).expect("re-parsed canonical JSON canonicalises"),
        bytes,
        "canonicalisation is not idempotent"
    );
    assert_eq!(
        canonical::to_string(v).expect("to_string agrees with to_vec"),
        text
    );
}

fn has_unsafe_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.unsigned_abs() > canonical::MAX_SAFE_INTEGER
            } else if n.as_u64().is_some() {
                true
            } else {
                let f = n.as_f64().expect("a JSON number");
                !f.is_finite() || (f.fract() == 0.0 && f.abs() > canonical::MAX_SAFE_INTEGER as f64)
            }
        }
        Value::Array(a) => a.iter().any(has_unsafe_number),
        Value::Object(m) => m.values().any(has_unsafe_number),
        _ => false,
    }
}

/// Equality up to the number representation JCS chooses (`1.0` is written `1`, `-0` as `0`).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| same_json(p, q)))
        }
        _ => a == b,
    }
}
