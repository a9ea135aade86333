//! The command line. `attenu-hook` with no arguments is hook mode; everything else is run by a
//! person or the host. Exit codes: 0 success; 1 a check failed (an invalid bundle, a failed
//! doctor check, a ledger `log` shows but cannot verify); 2 unusable input or usage. Hook mode
//! has its own policy (see [`crate::hook`]).

use crate::derive::{derive_project, Roster};
use crate::evidence::{bundle, keys, verify};
use crate::gate::reconcile;
use crate::hook::time;
use clap::{Parser, Subcommand};
use serde_json::Value;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Parser, Debug)]
#[command(
    name = "attenu-hook",
    version,
    about = "Claude Code hook: derive each subagent's authority, deny what it does not hold, keep a signed hash-chained ledger",
    long_about = "With no arguments, attenu-hook runs in hook mode: it reads one Claude Code hook event on stdin and answers on stdout. Wire it with the block in settings.snippet.json (or `attenu-hook install`)."
)]
pub struct Cli {
    /// Print the permission sets derived from the project at DIR (default: .)
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    pub derive: Option<PathBuf>,
    /// With --derive: a readable table
    #[arg(long, requires = "derive")]
    pub human: bool,
    /// With --derive: JSON even on a terminal
    #[arg(long, requires = "derive", conflicts_with = "human")]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Write the signed evidence bundle(s) of a session
    Export {
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// Session id (default: the most recently written session)
        #[arg(long)]
        session: Option<String>,
        /// Where to write the bundle (further chains get .chain<k> before the extension)
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Verify a bundle offline: integrity, monotonicity, containment, execution binding.
    /// Exit 0 valid, 1 invalid, 2 unusable input, 3 valid only under the anchor.pub found
    /// beside the bundle (pass --pub to pin the key you trust)
    Verify {
        bundle: PathBuf,
        /// The anchor public key to pin (anchor.pub, or 64 hex characters in a file)
        #[arg(long = "pub", value_name = "FILE")]
        pub_key: Option<PathBuf>,
        /// The full report as JSON
        #[arg(long)]
        json: bool,
    },
    /// Write a new Ed25519 reviewer key (0600); prints its public key on the last line
    Keygen {
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Host only: issue a signed authorization for one exact tool call (gated scopes)
    Authorize {
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// The exact tool name, as Claude Code sends it (e.g. Bash, mcp__payments__refund)
        #[arg(long)]
        tool: String,
        /// The complete tool_input as JSON; bound by the SHA-256 of its RFC 8785 form
        #[arg(long, value_name = "JSON")]
        input: String,
        /// A reviewer named in [gate] reviewers
        #[arg(long)]
        reviewer: String,
        /// The reviewer's key file (from `attenu-hook keygen`)
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        #[arg(long, default_value_t = 1)]
        uses: u32,
        /// Seconds, or 90s, 10m, 2h, 1d
        #[arg(long, value_name = "DURATION", default_value = "1h")]
        expires_in: String,
        /// Only for this session id
        #[arg(long)]
        session: Option<String>,
        /// Only for this subagent type
        #[arg(long)]
        agent: Option<String>,
    },
    /// Host only: record a verified business receipt for a call
    Receipt {
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// The call's call_id or tool_use_id
        #[arg(long)]
        call: String,
        #[arg(long)]
        receipt_id: String,
        /// Who verified the effect (the host system or person)
        #[arg(long)]
        observer: String,
        /// The receipt's payload (stored as a digest)
        #[arg(long, value_name = "JSON")]
        payload: Option<String>,
    },
    /// Wire the hook into DIR/.claude/settings.json (idempotent; keeps every other setting)
    Install {
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Write .claude/settings.local.json instead
        #[arg(long)]
        local: bool,
        /// The command to wire (default: attenu-hook on PATH, else this executable)
        #[arg(long)]
        command: Option<String>,
    },
    /// Check the wiring, the command, permissions, configuration and ledgers
    Doctor {
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Also count handlers running this command as attenu-hook's (a wrapper that
        /// `install --command` wired)
        #[arg(long)]
        command: Option<String>,
    },
    /// Print shell completions
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff)
    Man,
    /// Reconciliation markers left by outcomes that could not be recorded
    Reconcile {
        #[command(subcommand)]
        action: ReconcileAction,
    },
    /// The decisions as a readable table
    Log {
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        #[arg(long)]
        session: Option<String>,
        /// Only this agent type ("main" for the main thread)
        #[arg(long)]
        agent: Option<String>,
        /// Only denials (enforced or not)
        #[arg(long)]
        denied: bool,
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ReconcileAction {
    /// Show open markers
    List {
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        /// Include resolved markers
        #[arg(long)]
        all: bool,
    },
    /// Close one marker with what was found
    Resolve {
        id: i64,
        #[arg(long, value_name = "DIR", default_value = ".")]
        project: PathBuf,
        #[arg(long, value_parser = ["executed", "not-executed", "unknown"])]
        outcome: String,
        #[arg(long)]
        evidence: String,
        /// When the call is no longer open on the ledger: close the marker in the gate
        /// database only, marked as not on the ledger
        #[arg(long)]
        unbound: bool,
    },
}

/// Entry point of the binary: hook mode without arguments, the CLI with them. Returns the
/// process's exit code.
pub fn main() -> u8 {
    if std::env::args_os().len() <= 1 {
        return crate::hook::run() as u8;
    }
    let cli = Cli::parse();
    exit_2_when_output_fails();
    run(cli) as u8
}

/// `println!` panics when stdout cannot be written (`attenu-hook doctor | head -1` closes the
/// pipe; `> /dev/full` has no room), which would end the command with a panic message and exit
/// 101. Such a command exits 2 instead, saying why unless the reader simply went away.
fn exit_2_when_output_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") {
            if !msg.contains("Broken pipe") {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "attenu-hook: cannot write the output ({msg})"
                );
            }
            std::process::exit(2);
        }
        default(info);
    }));
}

/// After `install`: what would still keep Claude Code from running the handler it wrote (hooks
/// turned off, managed hooks only, a second command wired), which the file itself cannot fix.
/// The wiring is written either way; this only makes sure the user hears it now.
fn warn_if_not_run(root: &Path, command: Option<&str>) {
    let command = command
        .map(str::to_string)
        .unwrap_or_else(crate::ops::default_command);
    let checks = crate::ops::doctor_for(root, &command);
    let failed = |c: &&crate::ops::Check| c.failed();
    // With hooks turned off every event reads as unwired; the cause is the one thing to say.
    let off: Vec<_> = checks
        .iter()
        .filter(failed)
        .filter(|c| c.id == crate::ops::CheckId::HooksEnabled)
        .collect();
    let wiring: Vec<_> = checks
        .iter()
        .filter(failed)
        .filter(|c| c.id == crate::ops::CheckId::Wired)
        .collect();
    let shown = if off.is_empty() { wiring } else { off };
    if let Some(first) = shown.first() {
        let more = match shown.len() - 1 {
            0 => String::new(),
            n => format!(" ({n} more like it; `attenu-hook doctor` lists them)"),
        };
        eprintln!(
            "attenu-hook: warning: the hook is wired, but {}{more}",
            first.detail
        );
    }
}

fn fail(msg: impl std::fmt::Display) -> i32 {
    eprintln!("attenu-hook: {msg}");
    2
}

pub fn run(cli: Cli) -> i32 {
    if let Some(dir) = &cli.derive {
        return derive_cmd(
            dir,
            cli.human || (!cli.json && std::io::stdout().is_terminal()),
        );
    }
    match cli.command {
        None => fail("nothing to do; run without arguments only as a hook (see --help)"),
        Some(Command::Export {
            project,
            session,
            out,
        }) => {
            match bundle::export_session(
                &state_project_dir(&project),
                session.as_deref(),
                out.as_deref(),
            ) {
                Ok(written) if written.is_empty() => {
                    eprintln!(
                        "attenu-hook: the session's ledger has no entries yet; nothing to export"
                    );
                    0
                }
                Ok(written) => {
                    for w in written {
                        println!("{}", w.path.display());
                    }
                    0
                }
                Err(e) => fail(e),
            }
        }
        Some(Command::Verify {
            bundle,
            pub_key,
            json,
        }) => verify::run(&bundle, pub_key.as_deref(), json),
        Some(Command::Keygen { out }) => match keys::generate_to(&out) {
            Ok(key) => {
                eprintln!(
                    "wrote {} (keep it where no agent can read it)",
                    out.display()
                );
                println!("{}", crate::ledger::chain::hex(key.verifying().as_bytes()));
                0
            }
            Err(e) => fail(e),
        },
        Some(Command::Reconcile { action }) => reconcile_cmd(action),
        Some(Command::Install { dir, .. }) if !dir.is_dir() => fail(format!(
            "{} is not a directory; pass the project's root directory",
            dir.display()
        )),
        Some(Command::Install {
            dir,
            local,
            command,
        }) => match crate::ops::install(&project_dir(&dir), local, command.as_deref()) {
            Ok((path, changes)) if changes.is_empty() => {
                println!(
                    "{} already wires attenu-hook for every event; nothing changed",
                    path.display()
                );
                warn_if_not_run(&project_dir(&dir), command.as_deref());
                0
            }
            Ok((path, changes)) => {
                println!("updated {}:", path.display());
                for c in changes {
                    println!("  {c}");
                }
                println!(
                    "next: `attenu-hook doctor {}{}`",
                    path.parent()
                        .and_then(Path::parent)
                        .unwrap_or(&dir)
                        .display(),
                    // A wrapper is not recognisable as attenu-hook by its name.
                    command
                        .as_deref()
                        .filter(|c| *c != crate::ops::default_command())
                        .map(|c| format!(" --command '{}'", c.replace('\'', "'\\''")))
                        .unwrap_or_default()
                );
                warn_if_not_run(&project_dir(&dir), command.as_deref());
                0
            }
            Err(e) => fail(e),
        },
        Some(Command::Doctor { dir, command }) => {
            if !dir.is_dir() {
                return fail(format!(
                    "{} is not a directory; pass the project's root directory",
                    dir.display()
                ));
            }
            let root = project_dir(&dir);
            println!("project {}", root.display());
            let checks = match &command {
                Some(c) => crate::ops::doctor_for(&root, c),
                None => crate::ops::doctor(&root),
            };
            let mut failed = false;
            for c in &checks {
                failed |= c.failed();
                println!("{}  {:<28} {}", c.severity.tag(), c.label(), c.detail);
            }
            println!(
                "{}",
                if failed {
                    "doctor: some required checks failed"
                } else {
                    "doctor: all required checks passed"
                }
            );
            i32::from(failed)
        }
        Some(Command::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "attenu-hook", &mut std::io::stdout());
            0
        }
        Some(Command::Man) => {
            let cmd = <Cli as clap::CommandFactory>::command();
            match clap_mangen::Man::new(cmd).render(&mut std::io::stdout()) {
                Ok(()) => 0,
                Err(e) => fail(e),
            }
        }
        Some(Command::Authorize {
            project,
            tool,
            input,
            reviewer,
            key,
            uses,
            expires_in,
            session,
            agent,
        }) => {
            let input: Value = match serde_json::from_str(&input) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => return fail("--input must be the tool_input JSON object"),
                Err(e) => return fail(format!("--input is not valid JSON: {e}")),
            };
            let expires_in_ms = match crate::gate::authz::parse_duration(&expires_in) {
                Ok(ms) => ms,
                Err(e) => return fail(e),
            };
            let root = state_project_dir(&project);
            let config = match crate::config::load(&root.join(".attenu")) {
                Ok(c) => c,
                Err(e) => return fail(e),
            };
            let req = crate::gate::authz::Request {
                tool: &tool,
                input: &input,
                reviewer: &reviewer,
                key_path: &key,
                uses,
                expires_in_ms,
                session: session.as_deref(),
                agent: agent.as_deref(),
            };
            match crate::gate::authz::authorize(&root, &config, &req) {
                Ok(id) => {
                    let scope = crate::derive::scopes::scope_for_call(&tool, &input);
                    // Bound to an agent: gated for that agent; otherwise for anyone at all.
                    let asked = match agent.as_deref() {
                        Some(a) => config.gate.requires(&scope, Some(a)),
                        None => config.gate.mentions(&scope),
                    };
                    if !asked {
                        // Stored all the same: the host may be about to gate it.
                        eprintln!("attenu-hook: warning: {tool} needs {scope}, which neither [gate] require nor [gate.agents]{} in .attenu/config.toml lists, so the gate never asks for this authorization. Check the tool name (exactly as Claude Code sends it, e.g. Bash, mcp__server__tool) or add the scope to [gate] require", agent.as_deref().map(|a| format!(" for {a}")).unwrap_or_default());
                    }
                    println!("{id}");
                    0
                }
                Err(e) => fail(e),
            }
        }
        Some(Command::Receipt {
            project,
            call,
            receipt_id,
            observer,
            payload,
        }) => {
            let payload = match payload
                .as_deref()
                .map(serde_json::from_str::<Value>)
                .transpose()
            {
                Ok(p) => p,
                Err(e) => return fail(format!("--payload is not valid JSON: {e}")),
            };
            match crate::gate::receipt::record(
                &state_project_dir(&project),
                &call,
                &receipt_id,
                &observer,
                payload.as_ref(),
            ) {
                Ok(b) => {
                    println!(
                        "receipt {receipt_id} recorded for call {} ({} in session {})",
                        b.call_id, b.tool, b.session_id
                    );
                    0
                }
                Err(e) => fail(e),
            }
        }
        Some(Command::Log {
            project,
            session,
            agent,
            denied,
            json,
        }) => log_cmd(&project, session.as_deref(), agent.as_deref(), denied, json),
    }
}

/// The project at or above `dir` whose `.attenu/` exists: a command that reads the hook's
/// state never creates it.
fn state_root(dir: &Path) -> Result<PathBuf, String> {
    let root = state_project_dir(dir);
    if root.join(".attenu").is_dir() {
        Ok(root)
    } else {
        Err(format!(
            "{} has no .attenu/ directory: no hook call has been recorded in this project. Pass --project with the project's root",
            root.display()
        ))
    }
}

/// The project `dir` is in, for commands about its declarations and wiring (`install`,
/// `doctor`, `--derive`): the nearest directory at or above it with a `.claude/` that is not
/// the user's own configuration directory (`~/.claude`, or `CLAUDE_CONFIG_DIR`), else `dir`.
/// `~/.claude` exists for every Claude Code user and must not capture a project below home.
fn project_dir(dir: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let user_config = crate::ops::user_config_dir().and_then(|d| std::fs::canonicalize(d).ok());
    let is_project_claude = |a: &Path| {
        let c = a.join(".claude");
        c.is_dir() && std::fs::canonicalize(&c).ok() != user_config
    };
    abs.ancestors()
        .find(|a| is_project_claude(a))
        .map(Path::to_path_buf)
        .unwrap_or(abs)
}

/// The project `dir` is in, for commands about the hook's state (export, log, reconcile,
/// authorize, receipt): the nearest directory at or above it holding `.attenu/`, else as
/// [`project_dir`]. State first: the hook keeps it in `CLAUDE_PROJECT_DIR`, which need not
/// have a `.claude/` of its own. Declarations are looked up without it: a `.attenu/` left in a
/// parent directory by a session started there says nothing about this project's settings.
fn state_project_dir(dir: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    abs.ancestors()
        .find(|a| a.join(".attenu").is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| project_dir(dir))
}

fn derive_cmd(dir: &Path, human: bool) -> i32 {
    if !dir.is_dir() {
        return fail(format!("{} is not a directory", dir.display()));
    }
    let root = project_dir(dir);
    let config = match crate::config::load(&root.join(".attenu")) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    match derive_project(&root, &config.agents) {
        Ok(r) if human => {
            print!("{}", human_roster(&root, &r));
            0
        }
        Ok(r) => {
            let mut doc = r.to_json();
            doc["project"] = Value::from(root.display().to_string());
            println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            0
        }
        Err(e) => fail(e),
    }
}

/// The `--derive --human` table.
pub fn human_roster(root: &Path, r: &Roster) -> String {
    let mut s = format!(
        "project  {}\ndigest   {}\n\nsession root\n",
        root.display(),
        r.digest
    );
    for scope in &r.root {
        s.push_str(&format!("  {scope}\n"));
    }
    if !r.root_excluded.is_empty() {
        s.push_str(&format!(
            "  except {}\n",
            r.root_excluded
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let width = r
        .agents
        .keys()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    s.push_str("\nagent");
    s.push_str(&" ".repeat(width - 5 + 2));
    s.push_str("scopes\n");
    for (name, a) in &r.agents {
        let scopes = match &a.invalid {
            Some(why) => format!("(holds nothing: {why})"),
            None if a.scopes.is_empty() => "(none)".into(),
            None => a.scopes.iter().cloned().collect::<Vec<_>>().join(", "),
        };
        let scopes = if a.excluded.is_empty() {
            scopes
        } else {
            format!(
                "{scopes} (except {})",
                a.excluded.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        };
        s.push_str(&format!("{name:<width$}  {scopes}\n"));
    }
    if !r.unrepresented.is_empty() {
        s.push_str("\nunrepresented (argument-scoped rules, left to Claude Code)\n");
        for u in &r.unrepresented {
            s.push_str(&format!("  {u}\n"));
        }
    }
    if !r.problems.is_empty() {
        s.push_str("\nproblems\n");
        for p in &r.problems {
            s.push_str(&format!("  {p}\n"));
        }
    }
    s
}

fn reconcile_cmd(action: ReconcileAction) -> i32 {
    match action {
        ReconcileAction::List { project, all } => {
            let attenu = match state_root(&project) {
                Ok(root) => root.join(".attenu"),
                Err(e) => return fail(e),
            };
            match reconcile::list(&attenu, all) {
                Ok(markers) if markers.is_empty() => {
                    println!(
                        "no {}reconciliation markers",
                        if all { "" } else { "open " }
                    );
                    0
                }
                Ok(markers) => {
                    println!(
                        "{:<4} {:<24} {:<38} {:<28} {:<12} cause",
                        "id", "time", "session", "tool_use_id", "tool"
                    );
                    for m in markers {
                        println!(
                            "{:<4} {:<24} {:<38} {:<28} {:<12} {}{}",
                            m.id,
                            time::rfc3339_ms(m.created_ms.max(0) as u64),
                            m.session_id,
                            m.tool_use_id.as_deref().unwrap_or("-"),
                            m.tool,
                            m.cause,
                            match (m.outcome, m.binding.as_deref()) {
                                (None, _) => String::new(),
                                (Some(o), Some(b)) if b.starts_with("unbound") =>
                                    format!(" [resolved: {o}; not on the ledger, {b}]"),
                                (Some(o), _) => format!(" [resolved: {o}]"),
                            }
                        );
                    }
                    0
                }
                Err(e) => fail(e),
            }
        }
        ReconcileAction::Resolve {
            id,
            project,
            outcome,
            evidence,
            unbound,
        } => {
            use crate::gate::Resolution;
            let root = match state_root(&project) {
                Ok(root) => root,
                Err(e) => return fail(e),
            };
            match crate::gate::resolve_marker(&root, id, &outcome, &evidence, unbound) {
                Ok(Resolution::OnLedger) => {
                    println!("marker {id} resolved as {outcome}; the resolution is on the ledger");
                    0
                }
                Ok(Resolution::AlreadyOnLedger) => {
                    println!("marker {id} resolved as {outcome}; its resolution was already on the ledger from an earlier attempt");
                    0
                }
                Ok(Resolution::Unbound(why)) => {
                    println!("marker {id} resolved as {outcome} in .attenu/gate.sqlite only; it is not on the ledger ({why})");
                    0
                }
                Err(e) => fail(e),
            }
        }
    }
}

fn log_cmd(
    project: &Path,
    session: Option<&str>,
    agent: Option<&str>,
    denied: bool,
    json: bool,
) -> i32 {
    match crate::evidence::log::rows(&state_project_dir(project), session) {
        Ok(read) => {
            let color = !json && std::io::stdout().is_terminal();
            for w in &read.unverified {
                eprintln!("attenu-hook: WARNING: {w}");
            }
            let rows: Vec<_> = read
                .rows
                .into_iter()
                .filter(|r| agent.is_none_or(|a| r.agent == a))
                .filter(|r| !denied || r.decision == "DENY" || r.decision == "would-deny")
                .collect();
            print!("{}", crate::evidence::log::render(&rows, json, color));
            i32::from(!read.unverified.is_empty())
        }
        Err(e) => fail(e),
    }
}
