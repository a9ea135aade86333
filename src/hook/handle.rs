//! One hook invocation, start to finish: read, decide, record, answer, within a deadline.

use super::answer::Answer;
use super::payload::{self, Event, Payload};
use super::record;
use crate::config::{self, Config};
use crate::decide::{decide, Call};
use crate::derive::{cache, DeriveError, Roster};
use crate::evidence::{bundle, keys};
use crate::fsutil;
use crate::gate::authz::{self, ClaimCall, Verdict};
use crate::ledger::store::{Ledger, SessionPaths, StoreError};
use crate::reason::{Code, Reason};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Until the configuration is read, the hook answers within this much time.
const DEFAULT_DEADLINE: Duration = Duration::from_millis(8000);

/// Set by whichever of the main thread and the deadline watchdog answers first; the other
/// never prints. Claude Code must see exactly one answer.
static ANSWERED: AtomicBool = AtomicBool::new(false);

fn claim_answer() -> bool {
    !ANSWERED.swap(true, Ordering::SeqCst)
}

/// Set once the payload is known to be a PostToolUse or PostToolUseFailure: the tool has run,
/// so a failure of the hook itself (a panic, the deadline) must stop Claude and leave a
/// reconciliation marker, not answer with a PreToolUse deny that Claude Code ignores there.
static POST_EVENT: AtomicBool = AtomicBool::new(false);

/// Where such a marker goes, once the project is known.
static POST_CALL: OnceLock<PostCall> = OnceLock::new();

struct PostCall {
    attenu: PathBuf,
    session_id: String,
    tool_use_id: Option<String>,
    tool: String,
}

/// How long the last-resort answers wait for the gate database's lock to store a marker.
const LAST_RESORT_BUSY: Duration = Duration::from_millis(250);

/// How long they wait for the marker at all: the disk that made the hook miss its deadline
/// may be the one the marker goes to, and the stop must still reach Claude Code in time.
const LAST_RESORT_WAIT: Duration = Duration::from_millis(400);

/// The answer when the hook itself failed (`code`, `what`): for a tool event not yet run, a
/// deny that also blocks by its exit code; for one that has run, a stop with a marker.
///
/// The marker is stored before the answer is claimed, so when the main thread stores one and
/// the deadline passes meanwhile, the watchdog may store a second for the same call; and a
/// watchdog firing just after an outcome was written leaves a marker for a recorded call.
/// Both err on the side of a person looking; claiming first would lose the watchdog as the
/// fallback for a main thread stuck in the marker itself.
fn failure_answer(code: Code, what: &str) -> Answer {
    if !POST_EVENT.load(Ordering::SeqCst) {
        return Answer::deny_hard(&Reason::new(code, what));
    }
    let where_ = match POST_CALL.get() {
        Some(c) => {
            let (tx, rx) = mpsc::channel();
            let cause = what.to_string();
            // On its own thread, so a stuck disk cannot keep the answer from Claude Code; a
            // panic there only ends that thread.
            let spawned = std::thread::Builder::new()
                .name("attenu-marker".into())
                .spawn(move || {
                    test_stall("ATTENU_HOOK_TEST_MARKER_STALL_MS");
                    let _ = tx.send(store_marker(
                        &c.attenu,
                        &c.session_id,
                        c.tool_use_id.as_deref(),
                        &c.tool,
                        None,
                        &cause,
                        LAST_RESORT_BUSY,
                    ));
                });
            match spawned {
                Ok(_) => rx.recv_timeout(LAST_RESORT_WAIT).unwrap_or_else(|e| match e {
                    mpsc::RecvTimeoutError::Timeout => "no reconciliation marker could be stored in time either (the state directory does not answer); note the call's tool_use_id by hand".into(),
                    mpsc::RecvTimeoutError::Disconnected => "storing a reconciliation marker failed too (a panic); note the call's tool_use_id by hand".into(),
                }),
                Err(e) => format!("no reconciliation marker could be stored ({e}); note the call's tool_use_id by hand"),
            }
        }
        None => "no reconciliation marker could be stored (the project was not found); note the call's tool_use_id by hand".into(),
    };
    Answer::halt(&Reason::new(
        code,
        format!("{what}. The tool has already run and its outcome may not be on the ledger, so Claude stops; {where_}. Do not retry it automatically"),
    ))
}

/// Stores a reconciliation marker; says where it is, or why there is none, for the answer.
fn store_marker(
    attenu: &Path,
    session_id: &str,
    tool_use_id: Option<&str>,
    tool: &str,
    call_id: Option<&str>,
    cause: &str,
    busy: Duration,
) -> String {
    match crate::gate::reconcile::add_marker(
        attenu,
        session_id,
        tool_use_id,
        tool,
        call_id,
        cause,
        busy,
    ) {
        Ok(id) => {
            format!("reconciliation marker {id} was stored; see `attenu-hook reconcile list`")
        }
        Err(m) => format!(
            "no reconciliation marker could be stored either ({m}); note tool_use_id {} by hand",
            tool_use_id.unwrap_or("?")
        ),
    }
}

/// Runs hook mode on this process's stdin and stdout. Returns the exit code to use.
///
/// The work runs on the main thread (its 8 MiB stack, the main malloc arena); a small watchdog
/// thread only waits for the deadline and, if it passes first, answers (a deny; after the tool
/// ran, a stop with a marker) and exits the process, so a stuck read, lock or disk never
/// outlives Claude Code's own timeout.
///
/// Why a thread and not a timer signal (which would save about 0.1 ms of every call here): a
/// signal handler runs on a thread of this process, and a main thread in a killable kernel wait
/// (a file on a hung NFS, sshfs or FUSE mount) never leaves it for a signal that is not fatal.
/// The watchdog's exit kills that thread (exit_group sends it SIGKILL), so the process still
/// ends with its answer.
pub fn run() -> i32 {
    let started = Instant::now();
    let (tx, rx) = mpsc::channel::<Instant>();
    let watchdog = std::thread::Builder::new()
        .name("attenu-deadline".into())
        .stack_size(64 * 1024)
        .spawn(move || watch(&rx, started + DEFAULT_DEADLINE));
    if let Err(e) = watchdog {
        claim_answer();
        return emit(&Answer::deny_hard(&Reason::new(
            Code::InternalError,
            format!("cannot start the hook's deadline watchdog: {e}"),
        )));
    }
    let work = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut input = Vec::new();
        let read = std::io::stdin()
            .lock()
            .take(payload::MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut input);
        match read {
            Err(e) => Answer::deny_hard(&Reason::new(
                Code::PayloadInvalid,
                format!("cannot read stdin: {e}"),
            )),
            Ok(_) => handle_bytes(&input, started, &|d| {
                // Waking the watchdog for an unchanged deadline would cost a cross-CPU wakeup.
                if d != started + DEFAULT_DEADLINE {
                    let _ = tx.send(d);
                }
            }),
        }
    }));
    let answer = work.unwrap_or_else(|_| {
        failure_answer(
            Code::InternalError,
            "the hook failed internally (a panic; see stderr). Please report it with the payload that caused it",
        )
    });
    if !claim_answer() {
        // The watchdog has answered and is ending the process.
        loop {
            std::thread::park();
        }
    }
    let code = emit(&answer);
    // Dropping the sender would wake the watchdog only to have the exit kill it.
    std::mem::forget(tx);
    code
}

/// The watchdog: waits for the deadline (moved by the configuration once it is read) and, if
/// the main thread has not answered by then, answers as [`failure_answer`] does and exits.
fn watch(rx: &mpsc::Receiver<Instant>, mut deadline: Instant) {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(d) => deadline = d,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if claim_answer() {
                    let code = emit(&failure_answer(
                        Code::DeadlineExceeded,
                        "the hook did not finish within its deadline (deadline_ms in .attenu/config.toml); it answers now rather than let Claude Code's own timeout pass the call through. Run `attenu-hook doctor` to find the slow part",
                    ));
                    std::process::exit(code);
                }
                return;
            }
        }
    }
}

/// Prints the answer; the process exits with the returned code.
pub fn emit(answer: &Answer) -> i32 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let ok = writeln!(out, "{}", answer.json)
        .and_then(|_| out.flush())
        .is_ok();
    if answer.exit == 2 {
        if let Some(r) = answer
            .json
            .pointer("/hookSpecificOutput/permissionDecisionReason")
            .and_then(Value::as_str)
        {
            // Not eprintln!, which panics when stderr is gone: exit 2 must still happen.
            let _ = writeln!(std::io::stderr(), "{r}");
        }
    }
    // If stdout is gone, the only blocking signal left is exit 2.
    if ok {
        answer.exit
    } else {
        2
    }
}

/// Handles one payload given as bytes. `set_deadline` tells the watchdog the configured one.
pub fn handle_bytes(input: &[u8], started: Instant, set_deadline: &dyn Fn(Instant)) -> Answer {
    let p = match payload::parse(input) {
        Ok(p) => p,
        Err(reason) => return Answer::deny_hard(&reason),
    };
    let fail = |r: Reason| -> Answer {
        match p.event {
            Event::PreToolUse => Answer::deny(&r),
            Event::PostToolUse | Event::PostToolUseFailure => failure_answer(r.code, &r.message),
            _ => Answer::message(format!("[{}] {}", r.code, r.message)),
        }
    };
    if let Event::Other(_) = p.event {
        return Answer::none();
    }
    let post = matches!(p.event, Event::PostToolUse | Event::PostToolUseFailure);
    if post {
        POST_EVENT.store(true, Ordering::SeqCst);
    }
    let env_project = std::env::var_os("CLAUDE_PROJECT_DIR").map(PathBuf::from);
    let Some(project) = project_root(env_project.as_deref(), p.cwd.as_deref()) else {
        return fail(Reason::new(Code::ProjectNotFound, "neither CLAUDE_PROJECT_DIR nor the payload's cwd names a directory, so no project can be derived"));
    };
    let attenu = project.join(".attenu");
    if post {
        let _ = POST_CALL.set(PostCall {
            attenu: attenu.clone(),
            session_id: p.session_id.clone(),
            tool_use_id: p.tool_use_id.clone(),
            tool: p.tool_name.clone(),
        });
    }
    if let Err(e) = fsutil::ensure_private_dir(&attenu) {
        return fail(Reason::new(Code::StateDirUnsafe, e.to_string()));
    }
    let config = match config::load(&attenu) {
        Ok(c) => c,
        Err(e) => {
            return fail(Reason::new(
                Code::ConfigInvalid,
                format!("{e}; fix it (a configuration error never turns enforcement off)"),
            ))
        }
    };
    let deadline = started + Duration::from_millis(config.deadline_ms);
    set_deadline(deadline);
    test_faults();
    let ctx = Ctx {
        p: &p,
        project: &project,
        attenu: &attenu,
        config: &config,
        deadline,
        mac_key: std::cell::OnceCell::new(),
    };
    let result = match p.event {
        Event::PreToolUse => pre_tool_use(&ctx),
        Event::PostToolUse | Event::PostToolUseFailure => post_tool_use(&ctx),
        Event::SessionStart => session_start(&ctx),
        Event::SubagentStart => subagent_start(&ctx),
        Event::SubagentStop | Event::SessionEnd => stop(&ctx),
        Event::Other(_) => Ok(Answer::none()),
    };
    result.unwrap_or_else(fail)
}

/// Fault injection for the crash and deadline tests. Each can only make the hook fail, and
/// every failure path denies (or, after the tool ran, stops Claude), so these can never widen
/// what is allowed.
fn test_faults() {
    if std::env::var_os("ATTENU_HOOK_TEST_PANIC").is_some() {
        panic!("ATTENU_HOOK_TEST_PANIC is set");
    }
    test_stall("ATTENU_HOOK_TEST_STALL_MS");
}

/// For the race tests: with the named variable set to a directory, says `derived` there and
/// waits (at most 10 s) until the test says `go`.
fn test_pause(var: &str) {
    let Some(dir) = std::env::var_os(var).map(PathBuf::from) else {
        return;
    };
    let _ = std::fs::write(dir.join("derived"), b"");
    let until = Instant::now() + Duration::from_secs(10);
    while !dir.join("go").exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sleeps for the milliseconds the named variable gives, if any (the deadline tests, and a
/// stuck disk under the last-resort marker).
fn test_stall(var: &str) {
    if let Some(ms) =
        std::env::var_os(var).and_then(|v| v.to_str().and_then(|v| v.parse::<u64>().ok()))
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

struct Ctx<'a> {
    p: &'a Payload,
    project: &'a Path,
    attenu: &'a Path,
    config: &'a Config,
    deadline: Instant,
    /// Read once per call: it seals the roster cache and the ledger checkpoint.
    mac_key: std::cell::OnceCell<[u8; 32]>,
}

impl Ctx<'_> {
    fn mac_key(&self) -> Result<[u8; 32], Reason> {
        if let Some(k) = self.mac_key.get() {
            return Ok(*k);
        }
        let k = keys::checkpoint_mac_key(self.attenu)
            .map_err(|e| Reason::new(Code::KeyUnavailable, e.to_string()))?;
        Ok(*self.mac_key.get_or_init(|| k))
    }

    /// How long a gate database step may wait for another process's lock: what is left
    /// before the deadline, less time to record the refusal and answer, at most the CLI's
    /// wait. The reserve covers a durable append on a busy disk (an `fdatasync` can take
    /// hundreds of milliseconds under load), a quarter of the deadline when that is shorter.
    fn busy(&self) -> Duration {
        let reserve =
            Duration::from_millis(500).min(Duration::from_millis(self.config.deadline_ms / 4));
        self.deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(reserve)
            .min(crate::gate::db::BUSY_TIMEOUT)
    }

    fn roster(&self) -> Result<Roster, Reason> {
        cache::derive_cached(
            self.project,
            &self.config.agents,
            self.attenu,
            &self.mac_key()?,
        )
        .map_err(|e| match e {
            DeriveError::SettingsInvalid(m) => Reason::new(Code::SettingsInvalid, m),
            DeriveError::DeclarationsUnreadable(m) => Reason::new(Code::DeclarationsUnreadable, m),
        })
    }

    fn open_ledger(&self) -> Result<Ledger, Reason> {
        let mac_key = self.mac_key()?;
        let lock_deadline = (Instant::now() + Duration::from_millis(self.config.lock_timeout_ms))
            .min(
                self.deadline
                    .checked_sub(Duration::from_millis(250))
                    .unwrap_or(self.deadline),
            );
        Ledger::open(
            SessionPaths::new(self.attenu, &self.p.session_id),
            mac_key,
            lock_deadline,
        )
        .map_err(store_reason)
    }
}

fn store_reason(e: StoreError) -> Reason {
    match e {
        StoreError::Unsafe(m) => Reason::new(Code::StateDirUnsafe, m),
        StoreError::LockTimeout(m) => Reason::new(Code::LedgerLockTimeout, m),
        StoreError::Unverifiable(m) => Reason::new(Code::LedgerUnverifiable, m),
        StoreError::Io(m) => Reason::new(
            Code::LedgerWriteFailed,
            format!("{m}; the decision could not be recorded, so the call is refused"),
        ),
    }
}

/// The project root: `CLAUDE_PROJECT_DIR`, else the nearest ancestor of `cwd` with `.claude/`,
/// else `cwd` itself.
pub fn project_root(env_dir: Option<&Path>, cwd: Option<&str>) -> Option<PathBuf> {
    if let Some(d) = env_dir.filter(|d| d.is_absolute() && d.is_dir()) {
        return Some(d.to_path_buf());
    }
    let cwd = PathBuf::from(cwd?);
    if !cwd.is_absolute() || !cwd.is_dir() {
        return None;
    }
    Some(
        cwd.ancestors()
            .find(|a| a.join(".claude").is_dir())
            .unwrap_or(&cwd)
            .to_path_buf(),
    )
}

/// The chain a new entry goes to.
struct ChainTarget {
    /// Root and spawn entries to append first when the chain is new.
    opening: Vec<serde_json::Map<String, Value>>,
    chain_id: String,
    salt: String,
    /// Agent name → node id; the session root under "".
    nodes: std::collections::BTreeMap<String, String>,
}

/// The roster to decide and record with, once the ledger lock is held. It was derived before
/// the lock; if the current chain was opened for another derivation, another process may
/// have seen a newer edit meanwhile, so it is derived again under the lock (otherwise a
/// process that derived just before an edit would reopen the old derivation's chain after
/// the new one, and chains would flip back and forth).
fn roster_under_lock(ctx: &Ctx<'_>, ledger: &Ledger, roster: Roster) -> Result<Roster, Reason> {
    match ledger.current() {
        Some(c) if c.digest != roster.digest => ctx.roster(),
        _ => Ok(roster),
    }
}

/// Opens a new chain when none exists, the derivation changed, or the current chain's opening
/// is incomplete (a crash cut it short: a declared agent would have no node, and its calls
/// must never be recorded on the session root's).
fn chain_for(ledger: &Ledger, roster: &Roster, p: &Payload) -> Result<ChainTarget, Reason> {
    match ledger.current() {
        Some(c) if c.digest == roster.digest && c.nodes.len() == roster.agents.len() + 1 => {
            Ok(ChainTarget {
                opening: vec![],
                chain_id: c.chain_id.clone(),
                salt: c.params_salt.clone(),
                nodes: c.nodes.clone(),
            })
        }
        previous => {
            let (chain_id, opening) = record::open_chain(roster, &ledger.paths.name, p, previous)
                .map_err(|e| Reason::new(Code::InternalError, e))?;
            let salt = opening[0]
                .get("params_salt")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let nodes = record::nodes_of(&opening);
            Ok(ChainTarget {
                opening,
                chain_id,
                salt,
                nodes,
            })
        }
    }
}

fn pre_tool_use(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let p = ctx.p;
    if p.tool_name == "Grep" && p.agent_id.is_some() {
        // Before a subagent's search can reach the anchor key; see `fsutil::STATE_IGNORE_FILE`.
        fsutil::ensure_search_ignore(ctx.attenu)
            .map_err(|e| Reason::new(Code::StateDirUnsafe, e.to_string()))?;
    }
    let roster = ctx.roster()?;
    test_pause("ATTENU_HOOK_TEST_PAUSE_BEFORE_LOCK");
    let mut ledger = ctx.open_ledger()?;
    let roster = roster_under_lock(ctx, &ledger, roster)?;
    let call = Call {
        tool_name: &p.tool_name,
        tool_input: &p.tool_input,
        agent_id: p.agent_id.as_deref(),
        agent_type: p.agent_type.as_deref(),
    };
    let mut decision = decide(&roster, ctx.config, &call, ctx.project);
    let ChainTarget {
        opening: mut entries,
        chain_id,
        salt,
        nodes,
    } = chain_for(&ledger, &roster, p)?;
    let node = decision
        .node_agent
        .as_deref()
        .and_then(|a| nodes.get(a))
        .or_else(|| nodes.get(""))
        .cloned()
        .unwrap_or_default();
    // A torn tail cut when the ledger was opened is recorded by `Ledger::append`.
    let mut extra: Vec<(&str, Value)> = Vec::new();
    // The gate runs under the ledger lock, unless the derived authority already denied the
    // call, so the order of consumed uses is the order of the record. It applies to whoever
    // calls, the main thread included. Shadow mode asks what it would decide and consumes
    // nothing; observe mode does not ask.
    // Asked where enforce mode would ask it: not when the derived authority refuses a call
    // that enforce mode would deny anyway (shadow mode records that reason, not the gate's).
    let refused_by_authority = !decision.held && decision.actor.is_enforced(ctx.config);
    if decision.gated && !refused_by_authority {
        let how = match ctx.config.mode {
            crate::config::Mode::Enforce => Some(authz::Use::Consume),
            crate::config::Mode::Shadow => Some(authz::Use::DryRun),
            crate::config::Mode::Observe => None,
        };
        if let Some(how) = how {
            let claim = ClaimCall {
                tool: &p.tool_name,
                input: &p.tool_input,
                tool_use_id: p.tool_use_id.as_deref(),
                session_id: &p.session_id,
                agent_type: p.agent_id.as_ref().and(p.agent_type.as_deref()),
            };
            let dry = how == authz::Use::DryRun;
            match authz::claim(ctx.attenu, ctx.config, &claim, how, ctx.busy()) {
                Verdict::Allowed {
                    authorization_id,
                    reviewer,
                    uses_left,
                } => {
                    extra.push(("gate", if dry {
                        serde_json::json!({"would_use": authorization_id, "reviewer": reviewer, "uses_left": uses_left, "consumed": false})
                    } else {
                        serde_json::json!({"authorization_id": authorization_id, "reviewer": reviewer, "uses_left": uses_left})
                    }));
                }
                Verdict::Denied(reason) => {
                    extra.push(("gate", serde_json::json!({"refused": reason.code.as_str()})));
                    decision.held = false;
                    // A gated call is refused whoever calls; in shadow mode it is recorded
                    // as what would have been denied.
                    decision.enforced = !dry;
                    decision.reason = Some(reason);
                }
            }
        } else {
            extra.push(("gate", serde_json::json!({"checked": false, "why": "observe mode records calls without asking the gate"})));
        }
    }
    let entry = record::decision_entry(p, &decision, ctx.config, &chain_id, &node, &salt, extra)
        .map_err(|e| Reason::new(Code::InternalError, e))?;
    entries.push(entry);
    ledger.append(entries).map_err(store_reason)?;
    drop(ledger);
    Ok(match (&decision.reason, decision.denies()) {
        (Some(r), true) => Answer::deny(r),
        _ => Answer::none(),
    })
}

fn post_tool_use(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let p = ctx.p;
    let failed = p.event == Event::PostToolUseFailure;
    let mut ledger = match ctx.open_ledger() {
        Ok(l) => l,
        Err(r) => return Ok(unrecorded_outcome(ctx, None, &r.message)),
    };
    let pending = p
        .tool_use_id
        .as_deref()
        .and_then(|t| ledger.state.pending.get(t))
        .cloned();
    let current = ledger.current().cloned();
    // Only a call of the current chain: an outcome on another chain than its allow's would
    // be an outcome without an allow there.
    let (Some(pending), Some(chain)) = (
        pending.filter(|p| current.as_ref().is_some_and(|c| c.chain_id == p.chain_id)),
        current,
    ) else {
        if let Some(ended) = p
            .tool_use_id
            .as_deref()
            .and_then(|t| ledger.state.ended.get(t))
        {
            // Allowed on a chain that an agent edit ended before the call finished: no chain
            // can carry its outcome, so it is not recorded, and a person is told.
            let cause = format!(
                "it was allowed on chain {}, which ended (the agent declarations changed) before the call finished, so no chain can carry its outcome",
                ended.chain_id
            );
            let call_id = ended.call_id.clone();
            drop(ledger);
            return Ok(unrecorded_outcome(ctx, Some(&call_id), &cause));
        }
        // The ledger holds no allow for it, but the gate allowed it: the ledger was moved,
        // replaced or deleted since. The gated action ran and nothing can carry its outcome.
        // Only asked when the ledger holds no chain at all (a second PostToolUse of the same
        // call, from the hook wired twice, finds its outcome already recorded) and only for a
        // gated tool.
        let gated = || {
            let scope = crate::derive::scopes::scope_for_call(&p.tool_name, &p.tool_input);
            let agent = p.agent_id.as_ref().and(p.agent_type.as_deref());
            ctx.config.gate.requires(&scope, agent)
        };
        if let Some(t) = p
            .tool_use_id
            .as_deref()
            .filter(|_| ledger.current().is_none() && gated())
        {
            match authz::allowed_claim(ctx.attenu, &p.session_id, t, ctx.busy()) {
                Ok(false) => {}
                Ok(true) => {
                    drop(ledger);
                    return Ok(unrecorded_outcome(ctx, None, "the gate allowed it, but the session's ledger no longer holds that allow (it was moved, replaced or deleted since)"));
                }
                Err(e) => {
                    drop(ledger);
                    return Ok(unrecorded_outcome(ctx, None, &format!("the ledger holds no allow for it and the gate database cannot say whether it allowed it ({e})")));
                }
            }
        }
        // No allowed call to bind to (a call from before the hook was wired). Nothing can be
        // recorded as its outcome.
        return Ok(if failed {
            Answer::halt(&Reason::new(Code::ToolFailed, "a tool call failed; its side effects are uncertain, so Claude stops here for a person to check"))
        } else {
            Answer::none()
        });
    };
    let body_state = match (failed, p.is_interrupt) {
        (false, _) => "returned",
        (true, false) => "raised",
        (true, true) => "abandoned",
    };
    let entry = record::outcome_entry(
        p,
        &chain.chain_id,
        &pending.node,
        &pending.call_id,
        &chain.params_salt,
        body_state,
        ctx.config.privacy.raw_capture,
    );
    let invoked = entry
        .get("invoked_params_hash")
        .and_then(Value::as_str)
        .map(str::to_string);
    let changed =
        pending.authorized_params_hash.is_some() && invoked != pending.authorized_params_hash;
    if let Err(e) = ledger.append(vec![entry]) {
        return Ok(unrecorded_outcome(
            ctx,
            Some(&pending.call_id),
            &store_reason(e).message,
        ));
    }
    Ok(if changed {
        Answer::halt(&Reason::new(
            Code::InputChangedAfterAuthorization,
            format!("{}'s arguments after the call differ from those authorized before it; recorded as a parameter mismatch. Check what ran", p.tool_name),
        ))
    } else if failed {
        Answer::halt(&Reason::new(
            Code::ToolFailed,
            format!(
                "{} failed{}; its side effects are uncertain, so Claude stops here for a person to check. The failure is on the ledger",
                p.tool_name,
                if p.is_interrupt { " (interrupted)" } else { "" }
            ),
        ))
    } else {
        Answer::none()
    })
}

/// The tool already ran but its outcome cannot be recorded: stop Claude, and leave a
/// reconciliation marker for a person. Never retried automatically.
fn unrecorded_outcome(ctx: &Ctx<'_>, call_id: Option<&str>, cause: &str) -> Answer {
    let p = ctx.p;
    let where_ = store_marker(
        ctx.attenu,
        &p.session_id,
        p.tool_use_id.as_deref(),
        &p.tool_name,
        call_id,
        cause,
        ctx.busy(),
    );
    Answer::halt(&Reason::new(
        Code::OutcomeNotRecorded,
        format!(
            "the outcome of {} could not be recorded ({cause}); the action may already have happened, so Claude stops; {where_}. Do not retry it automatically",
            p.tool_name
        ),
    ))
}

/// Verifies the session's ledger and opens its chain (root and spawns) unless the current one
/// already matches the derivation. Returns the roster it derived.
fn open_session_chain(ctx: &Ctx<'_>) -> Result<Roster, Reason> {
    let roster = ctx.roster()?;
    let mut ledger = ctx.open_ledger()?;
    let roster = roster_under_lock(ctx, &ledger, roster)?;
    let entries = chain_for(&ledger, &roster, ctx.p)?.opening;
    ledger.append(entries).map_err(store_reason)?;
    Ok(roster)
}

/// SessionStart runs before the session's first tool call and blocks nothing. Creating the
/// ledger here (a new file, its name made durable, the chain's root and spawns) takes that
/// cost off the first PreToolUse, which then only appends its decision. Every tool event still
/// opens the chain itself when SessionStart is not wired or failed; its failure is reported
/// to the user, and the first tool call then fails closed on the same cause.
fn session_start(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    open_session_chain(ctx).map_err(|r| {
        Reason::new(
            r.code,
            format!(
                "{}; while this lasts, every tool call of this session is denied",
                r.message
            ),
        )
    })?;
    Ok(Answer::none())
}

fn subagent_start(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    let roster = open_session_chain(ctx)?;
    let ty = ctx.p.agent_type.as_deref().unwrap_or("");
    Ok(if roster.agents.contains_key(ty) {
        Answer::none()
    } else {
        Answer::message(format!("subagent type '{ty}' is not declared in .claude/agents/; every tool call it makes will be denied"))
    })
}

fn stop(ctx: &Ctx<'_>) -> Result<Answer, Reason> {
    if !ctx.config.export_on_stop {
        return Ok(Answer::none());
    }
    let paths = SessionPaths::new(ctx.attenu, &ctx.p.session_id);
    if !paths.ledger.exists() {
        return Ok(Answer::none());
    }
    let mut ledger = ctx.open_ledger()?;
    if ctx.p.event == Event::SessionEnd {
        // Finalize every node of the current chain that has no open call, so a session whose
        // calls all finished reports execution binding clean; a node with an open call stays
        // in progress, which is the truth.
        if let Some(chain) = ledger.current().cloned() {
            let busy: std::collections::BTreeSet<&str> = ledger
                .state
                .pending
                .values()
                .map(|p| p.node.as_str())
                .collect();
            let now = super::time::now_ms();
            let done: Vec<_> = chain
                .nodes
                .iter()
                .filter(|(_, n)| !busy.contains(n.as_str()) && !chain.finalized.contains(n))
                .map(|(agent, node)| {
                    let agent = if agent.is_empty() { "session" } else { agent.as_str() };
                    let serde_json::Value::Object(m) = serde_json::json!({
                        "event": "done", "ts": now, "chain_id": chain.chain_id, "node": node, "agent": agent,
                        "context": {"session_id": ctx.p.session_id, "hook_event": "SessionEnd", "at": super::time::rfc3339_ms(now)},
                    }) else { unreachable!() };
                    m
                })
                .collect();
            ledger.append(done).map_err(store_reason)?;
        }
    }
    let key = keys::load_or_create(ctx.attenu)
        .map_err(|e| Reason::new(Code::KeyUnavailable, e.to_string()))?;
    let written = bundle::export_locked(&ledger, &key, None)
        .map_err(|e| Reason::new(Code::LedgerWriteFailed, e.to_string()))?;
    if written.is_empty() {
        // An empty ledger (opened, nothing recorded yet) has no chain to sign.
        return Ok(Answer::none());
    }
    let names: Vec<String> = written
        .iter()
        .map(|w| {
            w.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let entries: usize = written.iter().map(|w| w.entries).sum();
    Ok(Answer::message(format!(
        "evidence bundle written to .attenu/{} ({entries} entries)",
        names.join(", .attenu/")
    )))
}
