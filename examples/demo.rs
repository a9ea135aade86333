//! The offline demo: Claude Code's hook traffic replayed through attenu-hook, no Claude Code
//! binary and no API key needed.
//!
//! ```text
//! cargo run --release --example demo
//! ```
//!
//! Claude Code runs a hook as a fresh process per event, with one JSON object on stdin. This
//! demo plays Claude Code's part: it copies `sample_project/` to a scratch directory, feeds the
//! recorded payloads in `examples/payloads/` to the hook one process at a time, and runs a
//! stand-in tool body only when the hook did not deny the call.
//!
//! * `[1]` the permission sets derived from the project (`attenu-hook --derive`)
//! * `[2]` SessionStart, five subagent tool calls through the hook, then the PostToolUse of
//!   each allowed call and the SessionEnd that exports the signed bundle
//! * `[3]` the control: the same five calls with no hook, so every body runs
//! * `[4]` the evidence: the ledger chain re-verified here with the library, the two kinds of
//!   denial as the ledger records them, and the signed bundle checked offline with
//!   `attenu-hook verify BUNDLE --pub anchor.pub --json` (plus a tampered copy, rejected)
//!
//! Cargo does not build the `attenu-hook` binary for an example, so the demo runs *itself* as
//! the hook: with `ATTENU_DEMO_AS_HOOK=1` in its environment, `main` does nothing but call
//! `attenu_hook::cli::main()`, the same function the real binary's `main` calls. Every hook
//! process, `--derive` and `verify` below is this executable started that way.
//!
//! Exit codes:
//!
//! * `0` every expectation held (`RESULT: OK`);
//! * `1` an expectation failed; each failed one is named;
//! * `3` the pinned hook contract changed: `contract.json` pins a different Claude Code
//!   release than the one the payloads were recorded with ([`RECORDED_WITH`]), a recorded
//!   payload has a field `contract.json` does not list for its event (or lacks one it
//!   requires), or the hook answered with an output field the contract does not list. Then
//!   the behaviour is not what is in doubt, the premise is: re-record the payloads against
//!   the release `contract.json` names and re-check the contract before reading anything
//!   else the demo says. Exit 3 wins over exit 1.
//!
//! The payloads were captured from Claude Code 2.1.332 driven by a scripted local model
//! server (the way `tests/live_claude.rs` drives it), then made portable: the project path is
//! `${PROJECT_DIR}`, the transcript folder `${HOME}/.claude/projects/${PROJECT_SLUG}`, and the
//! scripted model's tool-use ids were replaced by ids of the API's shape. Two things could not
//! be captured as such, and are assembled from what was: in the sample project Claude Code
//! itself withholds Write, Bash and WebFetch from the reviewer, so those three were captured
//! from a reviewer with no `tools` line (the payload is the same either way: the hook is the
//! second, independent check); and the researcher's WebFetch failed offline, so its
//! PostToolUse is the captured call with a `tool_response` in 2.1.332's WebFetch output shape.
//!
//! `ATTENU_DEMO_KEEP=1` keeps the scratch directory and prints where it is.

use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use attenu_hook::ledger::{chain, read, store};

/// Set to `1`: this process is the hook (or the CLI), not the demo.
const AS_HOOK: &str = "ATTENU_DEMO_AS_HOOK";
/// Set to `1`: keep the scratch directory.
const KEEP: &str = "ATTENU_DEMO_KEEP";
/// The Claude Code release `examples/payloads/` was recorded with.
const RECORDED_WITH: &str = "2.1.332";
const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// A hook process that has not answered by then is killed and counted as a failure.
const PROCESS_DEADLINE: Duration = Duration::from_secs(30);

const EXIT_FAILED: u8 = 1;
const EXIT_CONTRACT_CHANGED: u8 = 3;

/// What the hook must answer to one recorded PreToolUse.
#[derive(Clone, Copy)]
enum Expect {
    Allow,
    /// Denied with this reason code, recorded with this disposition.
    Deny {
        code: &'static str,
        disposition: &'static str,
    },
}

/// One tool call of the script: its PreToolUse payload and, for an allowed call, the
/// PostToolUse Claude Code sends once the body has run.
struct Step {
    pre: &'static str,
    post: Option<&'static str>,
    expect: Expect,
}

const SCRIPT: [Step; 5] = [
    Step {
        pre: "pre-1-reviewer-read",
        post: Some("post-1-reviewer-read"),
        expect: Expect::Allow,
    },
    Step {
        pre: "pre-2-reviewer-write",
        post: None,
        // Nothing in the project declares fs.write at all.
        expect: Expect::Deny {
            code: "unresolved",
            disposition: "unresolved",
        },
    },
    Step {
        pre: "pre-3-reviewer-bash",
        post: None,
        // `Bash(npm run lint)` is argument-scoped, so it declares no bare exec.bash.
        expect: Expect::Deny {
            code: "unresolved",
            disposition: "unresolved",
        },
    },
    Step {
        pre: "pre-4-reviewer-webfetch",
        post: None,
        // The project declares net.fetch (for the researcher), just not for the reviewer.
        expect: Expect::Deny {
            code: "out-of-authority",
            disposition: "out_of_authority",
        },
    },
    Step {
        pre: "pre-5-researcher-webfetch",
        post: Some("post-5-researcher-webfetch"),
        expect: Expect::Allow,
    },
];
const SESSION_START: &str = "session-start";
const SESSION_END: &str = "session-end";

fn main() -> ExitCode {
    if std::env::var_os(AS_HOOK).is_some_and(|v| v == "1") {
        return ExitCode::from(attenu_hook::cli::main());
    }
    let mut demo = Demo::default();
    let outcome = demo.run();
    demo.finish(outcome)
}

/// Why the demo stopped before its end.
enum Stop {
    /// The pinned contract no longer matches the recorded payloads or the hook's answers.
    ContractChanged(String),
    /// Something the demo needs could not be done (a file, a process).
    Broken(String),
}

impl From<String> for Stop {
    fn from(s: String) -> Self {
        Stop::Broken(s)
    }
}

#[derive(Default)]
struct Demo {
    /// Expectations that did not hold, in the order they were checked.
    failed: Vec<String>,
    /// Hook-mode processes started (not counting `--derive` and `verify`).
    hook_processes: usize,
    scratch: Option<Scratch>,
}

impl Demo {
    fn expect(&mut self, ok: bool, what: impl Into<String>) -> bool {
        if !ok {
            self.failed.push(what.into());
        }
        ok
    }

    fn finish(mut self, outcome: Result<(), Stop>) -> ExitCode {
        let code = match outcome {
            Err(Stop::ContractChanged(why)) => {
                println!("CONTRACT CHANGED: {why}");
                println!("RESULT: CONTRACT CHANGED (exit 3): contract.json, the recorded payloads and the hook no longer agree; bring them back into agreement (re-record examples/payloads against the release contract.json pins) before trusting anything else this demo says");
                EXIT_CONTRACT_CHANGED
            }
            Err(Stop::Broken(why)) => {
                println!("RESULT: FAIL: the demo could not run: {why}");
                EXIT_FAILED
            }
            Ok(()) if self.failed.is_empty() => {
                println!("RESULT: OK");
                0
            }
            Ok(()) => {
                println!(
                    "RESULT: FAIL ({} expectation(s) did not hold)",
                    self.failed.len()
                );
                for f in &self.failed {
                    println!("  - {f}");
                }
                EXIT_FAILED
            }
        };
        if let Some(s) = self.scratch.take() {
            if std::env::var_os(KEEP).is_some_and(|v| v == "1") {
                println!("(scratch directory kept: {})", s.root.display());
                std::mem::forget(s);
            }
        }
        ExitCode::from(code)
    }

    fn run(&mut self) -> Result<(), Stop> {
        let repo = Path::new(REPO);
        let contract = read_json(&repo.join("contract.json"))?;
        let mut payloads = Vec::new();
        for name in std::iter::once(SESSION_START)
            .chain(
                SCRIPT
                    .iter()
                    .flat_map(|s| std::iter::once(s.pre).chain(s.post)),
            )
            .chain([SESSION_END])
        {
            let path = repo.join("examples/payloads").join(format!("{name}.json"));
            payloads.push((name, read_json(&path)?));
        }

        // [0] The premise: the contract pins the release the payloads came from, and lists
        // every field they carry.
        let version = contract
            .pointer("/claude_code/version")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        let checked = contract
            .pointer("/claude_code/checked_on")
            .and_then(Value::as_str)
            .unwrap_or("(never)");
        if version != RECORDED_WITH {
            return Err(Stop::ContractChanged(format!(
                "contract.json pins Claude Code {version}, but the payloads in examples/payloads were recorded with {RECORDED_WITH}"
            )));
        }
        for (name, p) in &payloads {
            payload_matches_contract(&contract, p).map_err(|why| {
                Stop::ContractChanged(format!("examples/payloads/{name}.json: {why}"))
            })?;
        }
        for key in [
            "hookSpecificOutput",
            "hookEventName",
            "permissionDecision",
            "permissionDecisionReason",
            "systemMessage",
        ] {
            if contract.pointer(&format!("/output/fields/{key}")).is_none() {
                return Err(Stop::ContractChanged(format!(
                    "the demo reads the hook's `{key}`, which contract.json no longer lists as an output field"
                )));
            }
        }
        if contract
            .pointer("/output/permission_decision_values/deny")
            .is_none()
        {
            return Err(Stop::ContractChanged(
                "contract.json no longer lists `deny` as a PreToolUse permissionDecision".into(),
            ));
        }
        println!("[0] the pinned hook contract: Claude Code {version}, checked {checked} (contract.json)");
        println!(
            "    {} recorded payloads in examples/payloads/ carry only fields the contract lists",
            payloads.len()
        );

        let scratch = Scratch::new()?;
        let guarded = scratch.root.join("guarded");
        let control = scratch.root.join("control");
        let home = scratch.root.join("home");
        let marker_dir = scratch.root.join("effects");
        self.scratch = Some(scratch);
        copy_tree(&repo.join("sample_project"), &guarded)?;
        copy_tree(&repo.join("sample_project"), &control)?;
        for d in [
            &home,
            &marker_dir.join("guarded"),
            &marker_dir.join("control"),
        ] {
            fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let app_py = fs::read(guarded.join("src/app.py"))
            .map_err(|e| format!("cannot read the sample project's src/app.py: {e}"))?;

        self.derivation(&guarded)?;
        let session_id = self.guarded_run(&contract, &payloads, &guarded, &home, &marker_dir)?;
        self.control_run(&payloads, &control, &home, &marker_dir, &app_py)?;
        self.evidence(&payloads, &guarded, &session_id, &app_py, &marker_dir)
    }

    /// [1] `attenu-hook --derive` on the copy.
    fn derivation(&mut self, project: &Path) -> Result<(), Stop> {
        println!("[1] derived from the project's own declarations (.claude/agents/*.md, .claude/settings.json)");
        let out = run_self(
            &[OsString::from("--derive"), project.into(), "--json".into()],
            b"",
            None,
        )?;
        if !self.expect(
            out.exit == 0,
            format!("`--derive` exited {}: {}", out.exit, out.stderr.trim()),
        ) {
            return Ok(());
        }
        let doc: Value = serde_json::from_str(&out.stdout)
            .map_err(|e| format!("`--derive --json` printed no JSON ({e})"))?;
        let root = string_set(&doc["root"]);
        println!("    session root: {}", list(&root));
        let mut agents = Vec::new();
        if let Some(map) = doc["agents"].as_object() {
            for (name, scopes) in map {
                let scopes = string_set(scopes);
                println!("      {name:<11} {}", list(&scopes));
                agents.push((name.clone(), scopes));
            }
        }
        if let Some(u) = doc["unrepresented"].as_array().filter(|u| !u.is_empty()) {
            let u: Vec<&str> = u.iter().filter_map(Value::as_str).collect();
            println!(
                "    left to Claude Code's own matcher (argument-scoped): {}",
                u.join("; ")
            );
        }
        let want = |name: &str, scopes: &[&str]| {
            agents
                .iter()
                .any(|(n, s)| n == name && s.iter().map(String::as_str).eq(scopes.iter().copied()))
        };
        self.expect(
            want("reviewer", &["fs.glob", "fs.grep", "fs.read"]),
            "the reviewer's derived set is fs.glob, fs.grep, fs.read",
        );
        self.expect(
            want("researcher", &["fs.read", "net.fetch"]),
            "the researcher's derived set is fs.read, net.fetch",
        );
        let within = agents.iter().all(|(_, s)| s.is_subset(&root));
        println!("    every subagent's set is within the session's: {within}");
        self.expect(
            within,
            "every subagent's derived set is within the session root",
        );
        self.expect(
            doc["problems"].as_array().is_some_and(Vec::is_empty),
            "the sample project derives without problems",
        );
        Ok(())
    }

    /// Runs one recorded payload through the hook as Claude Code would.
    fn hook(
        &mut self,
        contract: &Value,
        payload: &Value,
        project: &Path,
    ) -> Result<(Value, i32), Stop> {
        let body = serde_json::to_vec(payload).map_err(|e| e.to_string())?;
        self.hook_processes += 1;
        let out = run_self(&[], &body, Some(project))?;
        let answer: Value = match serde_json::from_str(out.stdout.trim()) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                self.failed.push(format!(
                    "the hook answered {} with {:?} (exit {}), not a JSON object",
                    payload["hook_event_name"],
                    out.stdout.trim(),
                    out.exit
                ));
                return Ok((Value::Null, out.exit));
            }
        };
        for key in answer_keys(&answer) {
            if contract.pointer(&format!("/output/fields/{key}")).is_none() {
                return Err(Stop::ContractChanged(format!(
                    "the hook answered with `{key}`, which contract.json does not list as an output field"
                )));
            }
        }
        Ok((answer, out.exit))
    }

    /// [2] SessionStart, the five calls through the hook, their PostToolUse, and the SessionEnd.
    fn guarded_run(
        &mut self,
        contract: &Value,
        payloads: &[(&str, Value)],
        project: &Path,
        home: &Path,
        markers: &Path,
    ) -> Result<String, Stop> {
        println!("[2] five tool calls through the hook (one process each, the recorded payload on stdin)");
        let start = instantiate(payload(payloads, SESSION_START), project, home);
        let (answer, exit) = self.hook(contract, &start, project)?;
        println!("    SessionStart: the session's ledger is opened before its first tool call (answer {answer})");
        self.expect(
            exit == 0 && answer == Value::Object(Default::default()),
            format!("SessionStart is answered `{{}}` (got {answer}, exit {exit})"),
        );
        let mut ran = Vec::new();
        let mut session_id = String::new();
        for step in &SCRIPT {
            let pre = instantiate(payload(payloads, step.pre), project, home);
            session_id = pre["session_id"].as_str().unwrap_or_default().to_string();
            let (agent, tool) = who(&pre);
            let (answer, exit) = self.hook(contract, &pre, project)?;
            let denied = answer.pointer("/hookSpecificOutput/permissionDecision")
                == Some(&Value::from("deny"));
            let reason = answer
                .pointer("/hookSpecificOutput/permissionDecisionReason")
                .and_then(Value::as_str)
                .unwrap_or("");
            if denied {
                println!(
                    "    {agent:<11} {tool:<9} DENIED   {}",
                    reason.strip_prefix("attenu-hook: ").unwrap_or(reason)
                );
            } else {
                println!("    {agent:<11} {tool:<9} allowed  (answer {answer}: no objection, Claude Code's own permission flow applies)");
            }
            self.expect(
                exit == 0,
                format!("the hook exited {exit} for {agent} → {tool}"),
            );
            match step.expect {
                Expect::Allow => {
                    self.expect(
                        answer == Value::Object(Default::default()),
                        format!("{agent} → {tool} is allowed with `{{}}` (got {answer})"),
                    );
                }
                Expect::Deny { code, .. } => {
                    if self.expect(denied, format!("{agent} → {tool} is denied")) {
                        self.expect(
                            answer.pointer("/hookSpecificOutput/hookEventName")
                                == Some(&Value::from("PreToolUse")),
                            format!("{agent} → {tool}: the deny names hookEventName PreToolUse"),
                        );
                        self.expect(
                            reason.starts_with(&format!("attenu-hook: [{code}] ")),
                            format!("{agent} → {tool} is denied as [{code}] (got {reason:?})"),
                        );
                    }
                }
            }
            if denied {
                continue;
            }
            tool_body(
                &pre,
                &scratch_root(project),
                &markers.join("guarded"),
                &mut ran,
            )?;
            if let Some(post) = step.post {
                let post = instantiate(payload(payloads, post), project, home);
                let (answer, exit) = self.hook(contract, &post, project)?;
                self.expect(
                    exit == 0 && answer == Value::Object(Default::default()),
                    format!("the PostToolUse of {agent} → {tool} is answered `{{}}` (got {answer}, exit {exit})"),
                );
            }
        }
        println!("    tool bodies that actually ran: {}", ran.join(", "));
        self.expect(
            ran == ["Read", "WebFetch"],
            format!("only Read and WebFetch ran in the guarded run (ran: {ran:?})"),
        );
        println!(
            "    PostToolUse sent for each allowed call ({} hook processes so far)",
            self.hook_processes
        );

        let end = instantiate(payload(payloads, SESSION_END), project, home);
        let (answer, exit) = self.hook(contract, &end, project)?;
        let message = answer["systemMessage"].as_str().unwrap_or("");
        println!(
            "    SessionEnd: {}",
            message.strip_prefix("attenu-hook: ").unwrap_or(message)
        );
        self.expect(
            exit == 0 && message.contains("bundle"),
            format!("SessionEnd exports the evidence bundle (answer {answer}, exit {exit})"),
        );
        Ok(session_id)
    }

    /// [3] The same five calls with no hook at all.
    fn control_run(
        &mut self,
        payloads: &[(&str, Value)],
        project: &Path,
        home: &Path,
        markers: &Path,
        app_py: &[u8],
    ) -> Result<(), Stop> {
        println!("[3] the unguarded control: the same five calls with no hook");
        let mut ran = Vec::new();
        for step in &SCRIPT {
            let pre = instantiate(payload(payloads, step.pre), project, home);
            tool_body(
                &pre,
                &scratch_root(project),
                &markers.join("control"),
                &mut ran,
            )?;
        }
        println!("    tool bodies that ran: {}", ran.join(", "));
        let rewritten = fs::read(project.join("src/app.py")).unwrap_or_default() != app_py;
        let bash = markers.join("control/bash-ran").exists();
        println!("    src/app.py rewritten: {rewritten} · the Bash body left its marker: {bash}");
        self.expect(
            ran.len() == SCRIPT.len(),
            "every body runs in the unguarded control",
        );
        self.expect(
            rewritten && bash,
            "the control's Write and Bash leave their traces",
        );
        Ok(())
    }

    /// [4] The ledger, re-verified here; the denials as recorded; the bundle, verified offline.
    fn evidence(
        &mut self,
        payloads: &[(&str, Value)],
        project: &Path,
        session_id: &str,
        app_py: &[u8],
        markers: &Path,
    ) -> Result<(), Stop> {
        println!("[4] evidence");
        let untouched = fs::read(project.join("src/app.py")).unwrap_or_default() == app_py;
        let no_bash = !markers.join("guarded/bash-ran").exists();
        println!("    guarded run: src/app.py untouched: {untouched} · no Bash marker: {no_bash}");
        self.expect(
            untouched && no_bash,
            "the denied Write and Bash left no trace",
        );

        let attenu = project.join(".attenu");
        let paths = store::SessionPaths::new(&attenu, session_id);
        let bytes = fs::read(&paths.ledger)
            .map_err(|e| format!("cannot read {}: {e}", paths.ledger.display()))?;
        let chains = read::chains_of(&bytes).map_err(|e| e.to_string())?;
        let entries: Vec<&Value> = chains.iter().flatten().collect();
        let broken: Vec<String> = chains
            .iter()
            .filter_map(|c| chain::verify_entries(c).err().map(|e| e.to_string()))
            .collect();
        let verifies = !chains.is_empty() && broken.is_empty();
        println!(
            "    ledger verifies: {verifies} ({} entries in {} chain{}, written by {} hook processes){}",
            entries.len(),
            chains.len(),
            if chains.len() == 1 { "" } else { "s" },
            self.hook_processes,
            if broken.is_empty() { String::new() } else { format!(": {}", broken.join("; ")) }
        );
        let mut kinds: Vec<(String, usize)> = Vec::new();
        for e in &entries {
            let kind = e["event"].as_str().unwrap_or("?").to_string();
            match kinds.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((kind, 1)),
            }
        }
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("      by event: {}", kinds.join(" · "));
        self.expect(verifies, "the ledger's hash chain verifies");
        self.expect(chains.len() == 1, "one chain for one unchanged derivation");

        println!("    each call on the ledger, found by its tool_use_id:");
        for step in &SCRIPT {
            let pre = payload(payloads, step.pre);
            let (agent, tool) = who(pre);
            let id = pre["tool_use_id"].as_str().unwrap_or_default();
            let decision = entries.iter().find(|e| {
                e["context"]["tool_use_id"] == id
                    && matches!(e["event"].as_str(), Some("allow" | "deny"))
            });
            let Some(d) = decision else {
                self.failed
                    .push(format!("no ledger entry for {agent} → {tool} ({id})"));
                continue;
            };
            match step.expect {
                Expect::Allow => {
                    let outcome = entries
                        .iter()
                        .find(|e| e["event"] == "outcome" && e["call_id"] == d["call_id"]);
                    println!(
                        "      {agent:<11} {tool:<9} allow  scope={:<10} outcome bound by call_id: {}",
                        d["scope"].as_str().unwrap_or("?"),
                        outcome.and_then(|o| o["body_state"].as_str()).unwrap_or("none")
                    );
                    self.expect(
                        d["event"] == "allow",
                        format!("{agent} → {tool} is an allow on the ledger"),
                    );
                    self.expect(
                        outcome.is_some(),
                        format!("{agent} → {tool}'s PostToolUse is bound to it on the ledger"),
                    );
                }
                Expect::Deny { code, disposition } => {
                    println!(
                        "      {agent:<11} {tool:<9} deny   scope={:<10} disposition={:<17} context.reason_code={}",
                        d["scope"].as_str().unwrap_or("?"),
                        d["disposition"].as_str().unwrap_or("?"),
                        d["context"]["reason_code"].as_str().unwrap_or("?")
                    );
                    self.expect(
                        d["event"] == "deny"
                            && d["disposition"] == disposition
                            && d["context"]["reason_code"] == code,
                        format!("{agent} → {tool} is recorded as a deny, disposition {disposition}, reason_code {code}"),
                    );
                }
            }
        }
        println!("    reviewer → WebFetch is out_of_authority: the project declares net.fetch, for the researcher only.");
        println!("    reviewer → Write is unresolved: nothing in the project declares fs.write, so it is denied by default.");

        let bundle = attenu.join(format!("bundle-{}.json", paths.name));
        let anchor = attenu.join("anchor.pub");
        let shown = |p: &Path| {
            p.strip_prefix(project)
                .map(|r| r.display().to_string())
                .unwrap_or_else(|_| p.display().to_string())
        };
        let out = run_self(
            &[
                "verify".into(),
                bundle.clone().into(),
                "--pub".into(),
                anchor.clone().into(),
                "--json".into(),
            ],
            b"",
            None,
        )?;
        let report: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        let checks = &report["checks"];
        let flag = |k: &str| checks[k].as_bool().unwrap_or(false);
        println!(
            "    signed bundle {} verified offline with {} only (exit {}):",
            shown(&bundle),
            shown(&anchor),
            out.exit
        );
        if report.is_object() {
            println!(
                "      integrity={} monotonicity={} containment={} execution_binding={} anchor={} key={} valid={}",
                flag("integrity"),
                flag("monotonicity"),
                flag("containment"),
                checks["execution_binding"].as_str().unwrap_or("?"),
                checks["anchor"].as_str().unwrap_or("?"),
                report["key"].as_str().unwrap_or("?"),
                report["valid"]
            );
        } else {
            println!("      no report: {}", out.stderr.trim());
        }
        self.expect(
            out.exit == 0
                && report["valid"] == true
                && flag("integrity")
                && flag("monotonicity")
                && flag("containment")
                && checks["anchor"] == "verified"
                && report["key"] == "pinned",
            format!(
                "`attenu-hook verify {} --pub anchor.pub` reports a valid bundle under the pinned key (exit {}{})",
                shown(&bundle),
                out.exit,
                if out.stderr.trim().is_empty() { String::new() } else { format!(": {}", out.stderr.trim()) }
            ),
        );

        // A tampered copy: the decision on the reviewer's Write turned into its opposite.
        if let Ok(mut doc) = read_json(&bundle) {
            let write_id = payload(payloads, "pre-2-reviewer-write")["tool_use_id"].clone();
            let target = doc["entries"].as_array_mut().and_then(|es| {
                es.iter_mut()
                    .find(|e| e["context"]["tool_use_id"] == write_id)
            });
            if let Some(e) = target {
                let (was, now) = match e["event"].as_str() {
                    Some("deny") => ("deny", "allow"),
                    _ => ("allow", "deny"),
                };
                e["event"] = Value::from(now);
                let forged = attenu.join("bundle-tampered.json");
                fs::write(
                    &forged,
                    serde_json::to_vec(&doc).map_err(|e| e.to_string())?,
                )
                .map_err(|e| format!("cannot write {}: {e}", forged.display()))?;
                let out = run_self(
                    &[
                        "verify".into(),
                        forged.into(),
                        "--pub".into(),
                        anchor.into(),
                        "--json".into(),
                    ],
                    b"",
                    None,
                )?;
                let r: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
                println!(
                    "    a copy with reviewer → Write changed from {was} to {now}: exit {}, integrity={}",
                    out.exit, r["checks"]["integrity"]
                );
                self.expect(out.exit == 1, "a tampered bundle is rejected (exit 1)");
            } else {
                self.failed
                    .push("the bundle carries no entry for the reviewer's Write".into());
            }
        } else {
            self.failed.push(format!(
                "the bundle {} is not readable JSON",
                shown(&bundle)
            ));
        }
        Ok(())
    }
}

/// A recorded payload by file name (all are loaded before anything runs).
fn payload<'a>(payloads: &'a [(&str, Value)], name: &str) -> &'a Value {
    &payloads
        .iter()
        .find(|(n, _)| *n == name)
        .expect("every payload the script names is loaded up front")
        .1
}

fn who(p: &Value) -> (String, String) {
    (
        p["agent_type"].as_str().unwrap_or("main").to_string(),
        p["tool_name"].as_str().unwrap_or("?").to_string(),
    )
}

/// Is every field of a recorded payload one the contract lists for its event, and is every
/// field the contract requires there?
fn payload_matches_contract(contract: &Value, p: &Value) -> Result<(), String> {
    let obj = p.as_object().ok_or("not a JSON object")?;
    let event = obj
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or("no hook_event_name")?;
    let spec = contract
        .pointer(&format!("/input/events/{event}"))
        .ok_or_else(|| format!("contract.json does not list the event {event}"))?;
    let names = |v: &Value| -> BTreeSet<String> {
        match v {
            Value::Object(m) => m.keys().cloned().collect(),
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => BTreeSet::new(),
        }
    };
    let required: BTreeSet<String> = names(&contract["input"]["common_fields"])
        .into_iter()
        .chain(names(&spec["fields"]))
        .collect();
    let allowed: BTreeSet<String> = required
        .iter()
        .cloned()
        .chain(names(&contract["input"]["optional_common_fields"]))
        .chain(names(&spec["optional_fields"]))
        .collect();
    if let Some(extra) = obj.keys().find(|k| !allowed.contains(*k)) {
        return Err(format!(
            "`{extra}` is not a field contract.json lists for {event}"
        ));
    }
    if let Some(missing) = required.iter().find(|k| !obj.contains_key(*k)) {
        return Err(format!(
            "contract.json requires `{missing}` on {event}, and the recording has none"
        ));
    }
    let placeholders = names(&contract["recorded_payloads"]["placeholders"]);
    let mut unknown = None;
    walk_strings(p, &mut |s| {
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            let end = rest[i..].find('}').map_or(rest.len(), |j| i + j + 1);
            if !placeholders.contains(&rest[i..end]) {
                unknown.get_or_insert_with(|| rest[i..end].to_string());
            }
            rest = &rest[end..];
        }
    });
    match unknown {
        Some(u) => Err(format!(
            "the placeholder {u} is not one contract.json lists"
        )),
        None => Ok(()),
    }
}

fn walk_strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| walk_strings(x, f)),
        Value::Object(m) => m.values().for_each(|x| walk_strings(x, f)),
        _ => {}
    }
}

/// The payload as Claude Code would send it for this copy of the project.
fn instantiate(p: &Value, project: &Path, home: &Path) -> Value {
    let project_s = project.display().to_string();
    let slug: String = project_s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let home_s = home.display().to_string();
    fn sub(v: &Value, r: &[(&str, &str)]) -> Value {
        match v {
            Value::String(s) => Value::String(
                r.iter()
                    .fold(s.clone(), |acc, (from, to)| acc.replace(from, to)),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| sub(x, r)).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, x)| (k.clone(), sub(x, r))).collect())
            }
            other => other.clone(),
        }
    }
    sub(
        p,
        &[
            ("${PROJECT_DIR}", &project_s),
            ("${PROJECT_SLUG}", &slug),
            ("${HOME}", &home_s),
        ],
    )
}

/// The stand-in for a tool body. It runs only when nothing refused the call, and leaves a
/// trace a later check can look for: Read reads its file, Write really rewrites its file (in
/// the scratch copy), Bash leaves a marker file instead of running its command, WebFetch
/// (offline) only records that it ran.
fn tool_body(
    pre: &Value,
    scratch: &Path,
    markers: &Path,
    ran: &mut Vec<String>,
) -> Result<(), Stop> {
    let tool = pre["tool_name"].as_str().unwrap_or("?");
    let input = &pre["tool_input"];
    // A body never touches anything outside the scratch directory, whatever a payload says.
    let file = || -> Result<PathBuf, Stop> {
        let f = PathBuf::from(input["file_path"].as_str().unwrap_or_default());
        if !f.starts_with(scratch) {
            return Err(Stop::Broken(format!(
                "{tool}'s file_path {} is outside the scratch directory",
                f.display()
            )));
        }
        Ok(f)
    };
    match tool {
        "Read" => {
            let f = file()?;
            fs::read(&f).map_err(|e| format!("Read body: {}: {e}", f.display()))?;
        }
        "Write" => {
            let f = file()?;
            fs::write(&f, input["content"].as_str().unwrap_or_default())
                .map_err(|e| format!("Write body: {}: {e}", f.display()))?;
        }
        "Bash" => {
            let m = markers.join("bash-ran");
            fs::write(&m, input["command"].as_str().unwrap_or_default())
                .map_err(|e| format!("Bash body: {}: {e}", m.display()))?;
        }
        _ => {}
    }
    ran.push(tool.to_string());
    Ok(())
}

/// The scratch directory a project copy lives in.
fn scratch_root(project: &Path) -> PathBuf {
    project.parent().unwrap_or(project).to_path_buf()
}

/// The output keys of an answer: its own, and those inside `hookSpecificOutput`.
fn answer_keys(answer: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    if let Some(m) = answer.as_object() {
        for (k, v) in m {
            keys.push(k.clone());
            if k == "hookSpecificOutput" {
                keys.extend(v.as_object().into_iter().flat_map(|m| m.keys().cloned()));
            }
        }
    }
    keys
}

struct Output {
    exit: i32,
    stdout: String,
    stderr: String,
}

/// Starts this executable as `attenu-hook` with `args` and `stdin`, the way Claude Code
/// starts a hook (`CLAUDE_PROJECT_DIR` set when `project` is given), and waits for it.
fn run_self(args: &[OsString], stdin: &[u8], project: Option<&Path>) -> Result<Output, Stop> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env(AS_HOOK, "1")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(p) = project {
        cmd.env("CLAUDE_PROJECT_DIR", p);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the hook process: {e}"))?;
    let mut input = child.stdin.take().expect("piped");
    let body = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&body);
    });
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let deadline = Instant::now() + PROCESS_DEADLINE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Stop::Broken(format!(
                    "a hook process did not finish within {}s and was killed",
                    PROCESS_DEADLINE.as_secs()
                )));
            }
            Err(e) => {
                return Err(Stop::Broken(format!(
                    "cannot wait for the hook process: {e}"
                )))
            }
        }
    };
    let _ = writer.join();
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    Ok(Output {
        // A process killed by a signal has no code; -1 is never a code the hook uses.
        exit: status.code().unwrap_or(-1),
        stdout,
        stderr,
    })
}

fn read_json(path: &Path) -> Result<Value, Stop> {
    let text = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_slice(&text)
        .map_err(|e| Stop::Broken(format!("{} is not valid JSON: {e}", path.display())))
}

fn string_set(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

fn list(s: &BTreeSet<String>) -> String {
    format!("[{}]", s.iter().cloned().collect::<Vec<_>>().join(", "))
}

/// A fresh directory under the system temp dir, removed when dropped.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch, String> {
        let base = std::env::temp_dir();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        for attempt in 0..100u32 {
            let root = base.join(format!(
                "attenu-demo-{}-{nanos:08x}-{attempt}",
                std::process::id()
            ));
            match fs::create_dir(&root) {
                Ok(()) => {
                    // Canonical, so paths compare equal to what the hook derives.
                    let root = fs::canonicalize(&root).unwrap_or(root);
                    return Ok(Scratch { root });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "cannot create a directory in {}: {e}",
                        base.display()
                    ))
                }
            }
        }
        Err(format!(
            "no free scratch directory name in {}",
            base.display()
        ))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Copies a directory tree (files and directories; symbolic links are not followed), leaving
/// out `.attenu/`, the state a run in the repository itself may have left.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("cannot list {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", from.display()))?;
        if entry.file_name() == ".attenu" {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot stat {}: {e}", entry.path().display()))?;
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &dest)
                .map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}
