//! What an event's handler reads from disk, once per call: the project, its configuration,
//! the derived roster (through its cache) and the session's ledger.

use crate::config::Config;
use crate::derive::cache::{self, pin};
use crate::derive::{DeriveError, Roster};
use crate::evidence::keys;
use crate::ledger::entry::{self, Opening};
use crate::ledger::store::{session_file_name, Ledger, SessionPaths, StoreError};
use crate::protocol::Payload;
use crate::reason::{Code, Reason};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(super) struct Ctx<'a> {
    pub p: &'a Payload,
    pub project: &'a Path,
    pub attenu: &'a Path,
    pub config: &'a Config,
    pub deadline: Instant,
    /// Read once per call: it seals the roster cache and the ledger's sealed state.
    pub mac_key: std::cell::OnceCell<[u8; 32]>,
}

impl Ctx<'_> {
    fn mac_key(&self) -> Result<[u8; 32], Reason> {
        if let Some(k) = self.mac_key.get() {
            return Ok(*k);
        }
        let k = keys::state_mac_key(self.attenu)
            .map_err(|e| Reason::new(Code::KeyUnavailable, e.to_string()))?;
        Ok(*self.mac_key.get_or_init(|| k))
    }

    /// How long a gate database step may wait for another process's lock: what is left
    /// before the deadline, less time to record the refusal and answer, at most the CLI's
    /// wait. The reserve covers a durable append on a busy disk (an `fdatasync` can take
    /// hundreds of milliseconds under load), a quarter of the deadline when that is shorter.
    pub fn busy(&self) -> Duration {
        let reserve =
            Duration::from_millis(500).min(Duration::from_millis(self.config.deadline_ms / 4));
        self.deadline
            .saturating_duration_since(Instant::now())
            .saturating_sub(reserve)
            .min(crate::gate::db::BUSY_TIMEOUT)
    }

    /// The roster the files give now, through the roster cache: its binary form, to pin, and
    /// read for this event's agent ([`Ctx::agent`]).
    pub fn roster(&self) -> Result<(Roster, cache::Part), Reason> {
        let part = cache::derive_cached_part(
            self.project,
            self.configured(),
            self.attenu,
            &self.mac_key()?,
        )
        .map_err(|e: DeriveError| {
            let code = if e.is_settings() {
                Code::SettingsInvalid
            } else {
                Code::DeclarationsUnreadable
            };
            Reason::new(code, e.to_string())
        })?;
        let roster = cache::decode_part_for(&part, self.agent()).ok_or_else(|| {
            Reason::new(
                Code::InternalError,
                "the roster just derived does not read back; delete .attenu/roster.cache",
            )
        })?;
        Ok((roster, part))
    }

    /// The declared agent whose authority this event needs: a subagent's call, a `--agent`
    /// main thread's (`agent_type` alone), or the type a SubagentStart announces. A roster is
    /// read for it alone (`codec::decode_for`). An empty `agent_type` names none, as for
    /// `policy::Actor::of`.
    fn agent(&self) -> Option<&str> {
        self.p.agent_type.as_deref().filter(|t| !t.is_empty())
    }

    /// What the configuration adds to the project's files for derivation.
    fn configured(&self) -> cache::Configured<'_> {
        (
            &self.config.agents,
            self.config.derive.session_pool.as_deref(),
        )
    }

    pub fn open_ledger(&self) -> Result<Ledger, Reason> {
        let mac_key = self.mac_key()?;
        let lock_deadline = (Instant::now() + Duration::from_millis(self.config.lock_timeout_ms))
            .min(
                self.deadline
                    .checked_sub(Duration::from_millis(250))
                    .unwrap_or(self.deadline),
            );
        // A re-verify from GENESIS stops in time to keep its progress and answer.
        let work_deadline = self
            .deadline
            .checked_sub(Duration::from_millis(REVERIFY_MARGIN_MS))
            .unwrap_or(self.deadline);
        Ledger::open_within(
            SessionPaths::new(self.attenu, &self.p.session_id),
            mac_key,
            lock_deadline,
            Some(work_deadline),
        )
        .map_err(store_reason)
    }
}

/// How long before the hook's deadline a re-verify stops: enough to seal its progress, write
/// a reconciliation marker if need be, and answer.
const REVERIFY_MARGIN_MS: u64 = 1000;

pub(super) fn store_reason(e: StoreError) -> Reason {
    let code = match e {
        StoreError::Unsafe(_) => Code::StateDirUnsafe,
        StoreError::LockTimeout(_) => Code::LedgerLockTimeout,
        StoreError::Incomplete(_) => Code::LedgerReverifying,
        StoreError::Unverifiable(_) => Code::LedgerUnverifiable,
        StoreError::Io(e) => {
            return Reason::new(
                Code::LedgerWriteFailed,
                format!("{e}; the decision could not be recorded, so the call is refused"),
            )
        }
    };
    Reason::new(code, e.to_string())
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
pub(super) struct ChainTarget {
    /// Entries to append before this call's own: the root when the chain is new, and the
    /// spawn of each agent first seen on it ([`ChainTarget::node_of`]).
    pub opening: Vec<Map<String, Value>>,
    pub chain_id: String,
    pub salt: String,
    /// Agent name → node id of the nodes defined so far; the session root under "".
    pub nodes: BTreeMap<String, String>,
}

impl ChainTarget {
    /// The node an entry of declared agent `agent` goes on (the session root's for `None`
    /// or a name the roster does not declare). An agent seen for the first time on this chain
    /// gets its spawn added to the opening, so its node is defined before anything it does.
    pub fn node_of(&mut self, roster: &Roster, agent: Option<&str>, now_ms: u64) -> String {
        let root = || self.nodes.get("").cloned().unwrap_or_default();
        let Some(agent) = agent.filter(|a| roster.agents.contains_key(*a)) else {
            return root();
        };
        if let Some(node) = self.nodes.get(agent) {
            return node.clone();
        }
        let (Some(spawn), Some(node)) = (
            entry::spawn_entry(roster, &self.chain_id, agent, now_ms),
            entry::agent_node(roster, &self.chain_id, agent),
        ) else {
            return root();
        };
        self.opening.push(spawn.into_object());
        self.nodes.insert(agent.to_string(), node.clone());
        node
    }
}

/// The roster a call decides with, as found before the ledger lock.
pub(super) enum Found {
    /// The roster pinned for the session when it started.
    Pinned(Roster),
    /// Derived from the files now: the session has no pin yet (its first event), or its pin
    /// is lost. [`pinned_under_lock`] settles which roster it is. With its binary form, to pin.
    Derived(Roster, cache::Part),
}

impl Ctx<'_> {
    /// What a tool call needs of the session's pin, with only the seals of the pin's head and
    /// of the calling agent's slice checked (`pin::read_slice`): a few hundred bytes decoded,
    /// whatever the roster's size. `None` when that does not read; then [`Ctx::session_roster`].
    /// What it holds is enough to allow a call ([`slice_suffices`]); anything else is decided
    /// again on the whole pin.
    pub fn slice_roster(&self) -> Option<Roster> {
        let name = session_file_name(&self.p.session_id);
        pin::read_slice(self.attenu, &name, &self.mac_key().ok()?, self.agent())
    }

    /// The session's pinned roster: one sealed file, whatever the roster's size, and no agent
    /// file listed or stamped. Only the root's and the calling subagent's sets are built (the
    /// call reads no other agent's); without a pin that reads, derived from the files.
    pub fn session_roster(&self) -> Result<Found, Reason> {
        let name = session_file_name(&self.p.session_id);
        match pin::read_for(self.attenu, &name, &self.mac_key()?, self.agent()) {
            Some(r) => Ok(Found::Pinned(r)),
            None => {
                let (roster, part) = self.roster()?;
                Ok(Found::Derived(roster, part))
            }
        }
    }
}

/// The roster to decide and record with, once the ledger lock is held: the session's pin.
/// A roster derived before the lock (no pin was read) becomes the pin when the session has
/// none yet, unless another process of the session pinned one meanwhile, which is then used:
/// the session keeps the roster its first event under the lock saw. A session whose chain is
/// already open (so its pin was written, then lost or broken) gets the derived roster only if
/// it is the one its chain was opened with; a pin is never replaced by a wider one mid-session.
/// `repin` (a `SessionStart` of a new Claude Code process, which loads the agents afresh)
/// pins the derived roster whatever was pinned before.
pub(super) fn pinned_under_lock(
    ctx: &Ctx<'_>,
    ledger: &Ledger,
    found: Found,
    repin: bool,
) -> Result<Roster, Reason> {
    let (derived, part) = match found {
        Found::Pinned(r) if of_chain(ledger, &r) => return Ok(r),
        // A sealed pin of this session that is not its chain's roster (an earlier pin put
        // back, or one read before a repin this call raced) is treated as a lost one.
        Found::Pinned(_) => ctx.roster()?,
        Found::Derived(r, part) => (r, part),
    };
    let name = &ledger.paths.name;
    let key = ctx.mac_key()?;
    if !repin {
        if let Some(r) = pin::read_for(ctx.attenu, name, &key, ctx.agent()) {
            if of_chain(ledger, &r) {
                return Ok(r);
            }
        }
        if let Some(c) = ledger.current().filter(|c| c.digest != derived.digest) {
            return Err(Reason::new(
                Code::RosterPinLost,
                format!(
                    "the roster this session was pinned to when it started (.attenu/{}) is missing, its seal fails or it is not the roster the session's chain is on, and the agent files and settings now derive another one (digest {}, the session's chain was opened with {}); a running session is never given a roster other than its own, so every call is refused: start a new session, which reads the agent files afresh",
                    pin::path(Path::new(""), name).display(),
                    short(&derived.digest),
                    short(&c.digest),
                ),
            ));
        }
    }
    // A pin that cannot be written is derived again on the next call, and checked as above.
    pin::write(ctx.attenu, name, &key, &part);
    Ok(derived)
}

/// Whether a pinned `roster` may decide for the session: it is the roster of the session's
/// current chain, or the session has no chain yet. A repin (`SessionStart`) opens its chain
/// under the same lock as it writes the pin, so a pin of another roster is never the
/// session's own.
fn of_chain(ledger: &Ledger, roster: &Roster) -> bool {
    ledger.current().is_none_or(|c| c.digest == roster.digest)
}

/// Whether `decision`, made with a roster read by [`Ctx::slice_roster`], stands as the whole
/// pin's would: an allow of a scope the slice decides exactly, on a chain already open with
/// this roster where the caller's node is defined (so nothing of the roster is recorded).
/// A refusal is decided again on the whole pin, which its hint and record read.
pub(super) fn slice_suffices(
    ledger: &Ledger,
    roster: &Roster,
    decision: &crate::policy::Decision,
) -> bool {
    decision.held
        && decision.reason.is_none()
        && crate::derive::cache::slice::decides_exactly(&decision.scope)
        && ledger.current().is_some_and(|c| {
            c.digest == roster.digest
                && c.nodes.contains_key("")
                && decision
                    .node_agent
                    .as_ref()
                    .is_none_or(|a| c.nodes.contains_key(a))
        })
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// Opens a new chain when none exists or the derivation changed. An agent without a node on
/// the current chain (not seen on it yet, or its spawn lost to a crash) gets one from
/// [`ChainTarget::node_of`]; its calls are never recorded on the session root's.
pub(super) fn chain_for(
    ledger: &Ledger,
    roster: &Roster,
    p: &Payload,
    config: &crate::config::Config,
) -> Result<ChainTarget, Reason> {
    if let Some(c) = ledger.current() {
        if c.digest == roster.digest && c.nodes.contains_key("") {
            return Ok(ChainTarget {
                opening: vec![],
                chain_id: c.chain_id.clone(),
                salt: c.params_salt.clone(),
                nodes: c.nodes.clone(),
            });
        }
    }
    let salt = crate::random::random_hex(16)
        .map_err(|e| Reason::new(Code::InternalError, e.to_string()))?;
    let opened = entry::open_chain(
        roster,
        &ledger.paths.name,
        p,
        Opening {
            now_ms: crate::clock::now_ms(),
            salt: salt.clone(),
            previous: ledger.current(),
            identity: Some(crate::trust::identity::of_session(
                &ledger.paths.dir,
                config,
            )),
        },
    );
    let nodes = opened.nodes();
    Ok(ChainTarget {
        opening: opened
            .entries
            .into_iter()
            .map(|e| e.into_object())
            .collect(),
        chain_id: opened.chain_id,
        salt,
        nodes,
    })
}
