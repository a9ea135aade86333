//! The configuration: what each key means and how it is checked (`layers` reads and merges the
//! administrator's, the team's and the local file; `.attenu/config.json` is the recipe's form).
//!
//! Every value is checked: an unknown key, a misspelt mode or a wrong type is an error that
//! the hook answers with a deny. A typo must never silently turn enforcement off.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod layers;
pub use layers::{load, team_cas, weakenings, ADMIN_FILE, TEAM_FILE};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Deny what is outside the derived authority.
    Enforce,
    /// Evaluate and record what would be denied; deny nothing.
    Shadow,
    /// Record every call; deny nothing.
    Observe,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Shadow => "shadow",
            Mode::Observe => "observe",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub mode: Mode,
    /// Enforce for the main thread too (by default it is recorded, not enforced).
    pub enforce_main_thread: bool,
    /// Export the signed bundle at SubagentStop and SessionEnd.
    pub export_on_stop: bool,
    /// How long a hook process waits for the ledger lock before it denies.
    pub lock_timeout_ms: u64,
    /// The hook answers (with a deny if it must) before this much time has passed.
    pub deadline_ms: u64,
    /// Agent types the project does not declare in `.claude/agents/` (built-ins such as
    /// `Explore`, plugin agents), each with the tool rules it may hold. Undeclared types not
    /// named here hold nothing.
    pub agents: BTreeMap<String, Vec<String>>,
    pub derive: DeriveConfig,
    pub gate: GateConfig,
    pub privacy: PrivacyConfig,
    pub ship: ShipConfig,
    pub trust: TrustConfig,
    /// The files read, from the administrator's to the local one (not a key of any file).
    #[serde(skip)]
    pub sources: Vec<String>,
    /// What the local file weakened of the team's and administrator's values.
    #[serde(skip)]
    pub overrides: Vec<String>,
}

/// `[trust]`: the team's OpenSSH CAs (`crate::trust`), set in the committed
/// `.claude/attenu.toml`: `enroll --cert` checks a certificate against them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TrustConfig {
    /// `ssh-ed25519 AAAA…` CA public key lines.
    pub ca: Vec<String>,
}

/// `[derive]`: how the permission sets are derived (docs/DERIVATION.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct DeriveConfig {
    /// The tool rules an agent without `tools` (or with `tools: *`) holds, written down
    /// instead of derived from `permissions.allow` and the other agents' lists. Read like an
    /// agent's `tools` line; `permissions.deny` and the agent's `disallowedTools` still apply.
    pub session_pool: Option<Vec<String>>,
    /// Grant Claude Code's built-in agents (`Explore`, `Plan`, `general-purpose`, ...) exactly
    /// the tools Claude Code gives them (`crate::derive::builtin`); off: they hold nothing
    /// unless `[agents]` names them.
    pub builtin_agents: bool,
}

/// `[ship]`: where checkpoints and bundles go beyond the machine (`src/ship/`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShipConfig {
    /// `s3://bucket/prefix` or `file:///mounted/share`; shipping is off without it. Endpoint,
    /// region and credentials come only from the store's standard environment (`AWS_*`).
    pub url: Option<String>,
    /// Decisions between two checkpoints, at most (1 to 100000).
    pub checkpoint_every: u32,
}

impl Default for ShipConfig {
    fn default() -> Self {
        ShipConfig {
            url: None,
            checkpoint_every: 64,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct GateConfig {
    /// Scope patterns that need a host-signed authorization, for every caller.
    pub require: Vec<String>,
    /// Subagent type → scope patterns that need one when a subagent of that type calls
    /// (`[gate.agents] ops = ["exec.bash"]`), on top of `require`.
    pub agents: BTreeMap<String, Vec<String>>,
    /// Reviewer name → Ed25519 public key (64 hex characters).
    pub reviewers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PrivacyConfig {
    /// Store tool arguments raw in the ledger context (off: only salted commitments).
    pub raw_capture: bool,
    /// What a decision entry keeps of the arguments besides their commitment.
    pub record: Record,
}

/// `[privacy] record`: what a reviewer can read of a call's arguments on the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Record {
    /// Only the salted commitment: no part of the arguments reaches the disk.
    #[default]
    Commitment,
    /// Also the command or path, secrets redacted and bounded (`crate::ledger::summary`).
    Summary,
}

impl GateConfig {
    /// Does a call needing `scope`, by a subagent of type `agent` (`None`: the main thread),
    /// need an authorization?
    pub fn requires(&self, scope: &str, agent: Option<&str>) -> bool {
        // A gate on Bash is a gate on Monitor and PowerShell too (`gated_alike`).
        let alike = crate::derive::compat::gated_alike(scope);
        let covered = |patterns: &[String]| {
            patterns
                .iter()
                .any(|p| alike.iter().any(|s| crate::derive::scopes::covers(p, s)))
        };
        covered(&self.require)
            || agent
                .and_then(|a| self.agents.get(a))
                .is_some_and(|p| covered(p))
    }

    /// Does any pattern, for any caller, cover `scope`?
    pub fn mentions(&self, scope: &str) -> bool {
        self.requires(scope, None)
            || self.agents.values().flatten().any(|p| {
                crate::derive::compat::gated_alike(scope)
                    .iter()
                    .any(|s| crate::derive::scopes::covers(p, s))
            })
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Enforce,
            enforce_main_thread: false,
            export_on_stop: true,
            lock_timeout_ms: 3000,
            deadline_ms: 8000,
            agents: BTreeMap::new(),
            derive: DeriveConfig::default(),
            gate: GateConfig::default(),
            privacy: PrivacyConfig::default(),
            ship: ShipConfig::default(),
            trust: TrustConfig::default(),
            sources: Vec::new(),
            overrides: Vec::new(),
        }
    }
}

/// Why the configuration cannot be used; each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is not one the hook may read (a symlink, another user's), or reading failed.
    #[error(transparent)]
    Read(#[from] crate::fs::ReadError),
    #[error("{} is not UTF-8 text", .path.display())]
    NotUtf8 { path: PathBuf },
    #[error(".attenu/ has both config.toml and config.json; keep one so there is no doubt which applies")]
    BothFiles,
    #[error(".attenu/config.toml is invalid: {}", one_line(&.0.to_string()))]
    InvalidToml(#[source] toml::de::Error),
    #[error(".attenu/config.json is invalid: {0}")]
    InvalidJson(#[source] serde_json::Error),
    #[error("lock_timeout_ms must be between 1 and 60000")]
    LockTimeout,
    #[error("deadline_ms must be between 100 and 600000")]
    Deadline,
    #[error("{key} has '{pattern}', which is not a scope pattern (for example exec.bash or mcp.payments.*)")]
    NotAScopePattern { key: String, pattern: String },
    /// `hint` says how to write a pattern that matches what was meant.
    #[error("{key} has '{pattern}', which no tool call's scope can match, so it would gate nothing; {hint}")]
    GatesNothing {
        key: String,
        pattern: String,
        hint: String,
    },
    #[error("gate.reviewers.{name} must be a 64-hex Ed25519 public key")]
    ReviewerKey { name: String },
    /// `[ship] url` is not a URL the shipper can use; the text says why.
    #[error(transparent)]
    ShipUrl(#[from] crate::ship::target::TargetError),
    #[error("ship.checkpoint_every must be between 1 and 100000")]
    CheckpointEvery,
    /// A `[derive] session_pool` entry that names no tool; `why` says what to write.
    #[error("[derive] session_pool has '{entry}', which {why}")]
    SessionPool {
        entry: String,
        why: PoolEntryProblem,
    },
    /// One of the configuration's layers (the administrator's, the team's, the local one).
    #[error("{} is invalid: {why}", .path.display())]
    Layer { path: PathBuf, why: LayerProblem },
}

/// Why a `[derive] session_pool` entry names no tools (after "which").
#[derive(Debug, thiserror::Error)]
pub enum PoolEntryProblem {
    #[error("is empty; remove it")]
    Empty,
    #[error("means every tool and cannot be a pool; list the tools, or remove session_pool to derive the pool from the files")]
    EveryTool,
    #[error("is not a tool rule (for example Read, Bash(git *), mcp__github or Agent(reviewer))")]
    NotARule,
}

/// What is wrong with one layer of the configuration (after "FILE is invalid: ").
#[derive(Debug, thiserror::Error)]
pub enum LayerProblem {
    #[error("{}", one_line(&.0.to_string()))]
    Toml(#[source] toml::de::Error),
    #[error("{0}")]
    NotToml(#[source] toml::ser::Error),
    #[error("{0}")]
    Unreadable(#[source] std::io::Error),
    #[error("it must be a regular file of root (or this user), writable by no one else")]
    NotAnAdminFile,
    #[error("[trust] ca has {line:?}: {why}")]
    Ca {
        line: String,
        why: crate::trust::cert::LineProblem,
    },
}

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A configuration larger than this is not one a person wrote.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Read like every other file in the state directory: never through a symlink (which could
/// point the hook at a configuration outside `.attenu/`), never waiting on a FIFO, and only
/// a regular file of this user.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match crate::fs::read_owned(path, MAX_CONFIG_BYTES)? {
        Some((bytes, _)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ConfigError::NotUtf8 {
                path: path.to_path_buf(),
            }),
        None => Ok(None),
    }
}

pub(crate) fn validate(c: &Config) -> Result<(), ConfigError> {
    if c.lock_timeout_ms == 0 || c.lock_timeout_ms > 60_000 {
        return Err(ConfigError::LockTimeout);
    }
    if c.deadline_ms < 100 || c.deadline_ms > 600_000 {
        return Err(ConfigError::Deadline);
    }
    let lists = std::iter::once(("gate.require".to_string(), &c.gate.require)).chain(
        c.gate
            .agents
            .iter()
            .map(|(agent, patterns)| (format!("gate.agents.{agent}"), patterns)),
    );
    for (key, patterns) in lists {
        for pattern in patterns {
            if !crate::derive::scopes::in_grammar(pattern) {
                return Err(ConfigError::NotAScopePattern {
                    key,
                    pattern: pattern.clone(),
                });
            }
            if let Err(e) = crate::derive::scopes::reaches_a_call(pattern) {
                return Err(ConfigError::GatesNothing {
                    key,
                    pattern: pattern.clone(),
                    hint: e.hint,
                });
            }
        }
    }
    for entry in c.derive.session_pool.iter().flatten() {
        session_pool_entry(entry)?;
    }
    if let Some(url) = &c.ship.url {
        crate::ship::Target::parse(url).map_err(ConfigError::ShipUrl)?;
    }
    if !(1..=100_000).contains(&c.ship.checkpoint_every) {
        return Err(ConfigError::CheckpointEvery);
    }
    for (name, key) in &c.gate.reviewers {
        if key.len() != 64 || crate::ledger::chain::unhex(key).is_none() {
            return Err(ConfigError::ReviewerKey { name: name.clone() });
        }
    }
    Ok(())
}

/// One `[derive] session_pool` entry must name tools: an entry read as nothing would leave
/// the pool other than the operator wrote it, so it is an error (every call is then denied).
fn session_pool_entry(entry: &str) -> Result<(), ConfigError> {
    use crate::derive::scopes::{declared_at, Declared, Site};
    let why = match declared_at(entry, Site::AgentTools) {
        Declared::Scopes(s) | Declared::WholeTool(s, _) if !s.is_empty() => return Ok(()),
        Declared::Ruled(..) => return Ok(()),
        Declared::Scopes(_) | Declared::WholeTool(..) => PoolEntryProblem::Empty,
        Declared::All => PoolEntryProblem::EveryTool,
        Declared::Unrepresented(_) => PoolEntryProblem::NotARule,
    };
    Err(ConfigError::SessionPool {
        entry: entry.to_string(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_pool_names_tools_or_is_an_error() {
        let load = |t: &str| {
            let c: Config = toml::from_str(t).map_err(|e| e.to_string())?;
            validate(&c).map(|()| c.derive).map_err(|e| e.to_string())
        };
        assert_eq!(load("").unwrap().session_pool, None);
        let ok =
            load("[derive]\nsession_pool = [\"Read\", \"Bash(git *)\", \"mcp__gh\", \"Agent(a)\"]");
        assert_eq!(ok.unwrap().session_pool.unwrap().len(), 4);
        assert_eq!(
            load("[derive]\nsession_pool = []").unwrap().session_pool,
            Some(vec![])
        );
        for (bad, says) in [
            ("session_pool = [\"*\"]", "every tool"),
            ("session_pool = [\"Read(\"]", "not a tool rule"),
            ("session_pool = [\"Not A Tool\"]", "not a tool rule"),
            ("session_pool = [\" \"]", "is empty"),
            ("session_pool = \"Read\"", "invalid type"),
            ("session_pool = [1]", "invalid type"),
            ("sesion_pool = [\"Read\"]", "unknown field"),
        ] {
            let e = load(&format!("[derive]\n{bad}")).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_gate_pattern_that_matches_no_call_is_an_error_not_a_silent_ungate() {
        let require = |p: &str| {
            let c: Config = toml::from_str(&format!("[gate]\nrequire = [\"{p}\"]")).unwrap();
            validate(&c).map_err(|e| e.to_string())
        };
        for ok in [
            "exec.bash",
            "exec.*",
            "mcp.*",
            "mcp.payments.*",
            "mcp.payments.refund",
            "agent.*",
            "agent.delegate.*",
            "agent.delegate.researcher",
            "agent.message",
            "tool.*",
            "tool.frobnicate",
            "mcp_resource.read",
            "fs.*",
        ] {
            assert_eq!(require(ok), Ok(()), "{ok}");
        }
        // Each of these matched nothing, so the capability it meant was left ungated.
        for (bad, hint) in [
            ("mcp.payments", "write mcp.payments.*"),
            ("exec.bsh", "exec.bash"),
            ("agent.delegate", "agent.delegate.*"),
            ("files.*", "scopes start with"),
            ("fs.read.*", "fs.read"),
            ("mcp.a.b.*", "scopes start with"),
        ] {
            let e = require(bad).unwrap_err();
            assert!(e.contains("gate nothing") && e.contains(hint), "{bad}: {e}");
        }
    }

    #[test]
    fn a_bad_ship_table_is_an_error() {
        let load = |t: &str| {
            let c: Config = toml::from_str(t).map_err(|e| e.to_string())?;
            validate(&c).map(|()| c.ship).map_err(|e| e.to_string())
        };
        assert_eq!(load("").unwrap(), ShipConfig::default());
        let s = load("[ship]\nurl = \"s3://evidence/team\"\ncheckpoint_every = 8").unwrap();
        assert_eq!(
            (s.url.as_deref(), s.checkpoint_every),
            (Some("s3://evidence/team"), 8)
        );
        assert!(load("[ship]\nurl = \"file:///mnt/share\"").is_ok());
        for bad in [
            "[ship]\nurl = \"s3:/evidence\"",
            "[ship]\nurl = \"s3://E/x\"",
            "[ship]\ncheckpoint_every = 0",
            "[ship]\ncheckpoint_every = 100001",
            "[ship]\nendpoint = \"http://x\"",
        ] {
            assert!(load(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_mode_typo_is_an_error_not_a_fallback() {
        assert!(toml::from_str::<Config>("mode = \"enforcee\"").is_err());
        assert!(toml::from_str::<Config>("enforce_main_thred = true").is_err());
        assert!(
            serde_json::from_str::<Config>(r#"{"mode":"shadow","enforce_main_thread":"yes"}"#)
                .is_err()
        );
        assert_eq!(
            toml::from_str::<Config>("mode = \"shadow\"").unwrap().mode,
            Mode::Shadow
        );
        let c: Config = serde_json::from_str(
            r#"{"mode":"observe","enforce_main_thread":true,"export_on_stop":false}"#,
        )
        .unwrap();
        assert_eq!(
            (c.mode, c.enforce_main_thread, c.export_on_stop),
            (Mode::Observe, true, false)
        );
    }
}
