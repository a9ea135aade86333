//! What the audit found: a status per chain and per session, a sentence saying why, and the
//! checkpoints and bundle each chain has in the store with the store's own times. The JSON
//! form is `{"sessions":[{"project","session","status","why","chains":[…]}]}`, which
//! `attenu-hook report` reads back.

use serde::{Deserialize, Serialize};

/// A chain's or a session's status, ordered from best to worst (see the module docs of
/// [`crate::audit`] for why this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// A bundle verified under a pinned key extends every checkpoint shipped.
    Complete,
    /// No closing bundle yet, and everything shipped is consistent.
    Open,
    /// Everything shipped is consistent, but an entry records that the hook found its sealed
    /// state lost (`context.checkpoint_lost`): entries before it may have been cut off
    /// before they were shipped. Never `complete`, and not a pass.
    Notice,
    /// An object that does not verify: a bad signature, an unknown key, a malformed object.
    Unverifiable,
    /// The closing bundle is shorter than a checkpoint shipped before it.
    Truncated,
    /// A later state is not an extension of an earlier one.
    Rewritten,
    /// Two checkpoints of the same size with different roots.
    Forked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Open => "open",
            Status::Notice => "notice",
            Status::Unverifiable => "unverifiable",
            Status::Truncated => "truncated",
            Status::Rewritten => "rewritten",
            Status::Forked => "forked",
        }
    }

    /// Whether the session passes the audit (exit 0).
    pub fn passes(self) -> bool {
        self <= Status::Open
    }
}

/// One problem (or the lack of one) found in a chain, with the sentence a reviewer reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub status: Status,
    pub why: String,
    /// The keys of the objects it is about.
    pub objects: Vec<String>,
}

/// A checkpoint as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointView {
    pub size: u64,
    /// Lowercase hex.
    pub root: String,
    /// RFC 3339, the store's time.
    pub stored: String,
    /// Whether it opened under the pinned key and matched its name.
    pub verified: bool,
}

/// One chain's verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainReport {
    pub chain_id: String,
    pub status: Status,
    pub why: String,
    pub checkpoints: Vec<CheckpointView>,
    /// The closing bundle (the largest that verified, else the largest), or null.
    pub bundle: Option<CheckpointView>,
    /// Every finding, worst first; `why` is the first one's.
    pub findings: Vec<Finding>,
    /// The store time of the chain's newest object (ms since the epoch), for the table.
    #[serde(skip)]
    pub last_stored_ms: u64,
}

/// One session's verdict: the worst of its chains.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionReport {
    /// The project's key id (`attenu-hook-<16 hex>`).
    pub project: String,
    pub session: String,
    pub status: Status,
    pub why: String,
    pub chains: Vec<ChainReport>,
    /// The certificate its key was trusted through (`audit --ca`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<crate::trust::CertView>,
    /// Who and where, as the chain's root recorded it (`crate::trust::identity`): signed by
    /// the session's key, so only as good as that key's trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<serde_json::Value>,
    /// Whether its key was trusted (pinned, or certified by the pinned CA).
    #[serde(skip)]
    pub trusted: bool,
}

impl SessionReport {
    /// The session of `chains` (not empty), with the worst chain's status and why.
    pub fn of(project: String, session: String, mut chains: Vec<ChainReport>) -> SessionReport {
        chains.sort_by(|a, b| a.chain_id.cmp(&b.chain_id));
        let worst = chains.iter().max_by_key(|c| c.status);
        let (status, why) = match worst {
            Some(c) if chains.len() > 1 => (c.status, format!("chain {}: {}", c.chain_id, c.why)),
            Some(c) => (c.status, c.why.clone()),
            None => (
                Status::Unverifiable,
                "the store holds no chain of this session".into(),
            ),
        };
        SessionReport {
            project,
            session,
            status,
            why,
            chains,
            certificate: None,
            identity: None,
            trusted: false,
        }
    }

    /// A session that could not be judged: unverifiable, saying why.
    pub fn failed(project: String, session: String, why: &str) -> SessionReport {
        SessionReport {
            project,
            session,
            status: Status::Unverifiable,
            why: why.to_string(),
            chains: Vec::new(),
            certificate: None,
            identity: None,
            trusted: false,
        }
    }

    /// Who signed, as a reviewer names them: the certificate's key id when the pinned CA
    /// certified the key, else the key id.
    pub fn signer_name(&self) -> String {
        match &self.certificate {
            Some(c) => c.key_id.clone(),
            None => self.project.clone(),
        }
    }

    /// `remote@commit` (12 hex, the remote's last path component) from the root's recorded
    /// identity; `-` when none was recorded.
    pub fn repository(&self) -> String {
        self.identity.as_ref().map_or_else(
            || "-".to_string(),
            |i| crate::trust::identity::Recorded::of(i).repository,
        )
    }

    pub fn last_stored_ms(&self) -> u64 {
        self.chains
            .iter()
            .map(|c| c.last_stored_ms)
            .max()
            .unwrap_or(0)
    }
}

/// The whole audit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Worst first, then by project and session.
    pub sessions: Vec<SessionReport>,
    /// Keys under the prefix that belong to no session of the layout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stray: Vec<String>,
    /// Findings about the fleet as a whole (a pinned key or CA with no session, a key that
    /// changed mid-history, objects the listing could not name); any fails the audit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// Whether the store's object times were set by its server (`false` for a `file://`
    /// store, whose times the shipping machine sets).
    #[serde(default = "server_times")]
    pub store_times: bool,
}

fn server_times() -> bool {
    true
}

impl Report {
    pub fn new(mut sessions: Vec<SessionReport>, stray: Vec<String>) -> Report {
        sessions.sort_by(|a, b| {
            b.status
                .cmp(&a.status)
                .then_with(|| a.project.cmp(&b.project))
                .then_with(|| a.session.cmp(&b.session))
        });
        Report {
            sessions,
            stray,
            findings: Vec::new(),
            store_times: true,
        }
    }

    /// Every session complete or open, and no finding about the fleet. Stray keys are
    /// reported but judge no session.
    pub fn passes(&self) -> bool {
        self.findings.is_empty() && self.sessions.iter().all(|s| s.status.passes())
    }

    /// How many sessions have each status, worst first, those with none left out.
    pub fn counts(&self) -> Vec<(Status, usize)> {
        let mut counts: std::collections::BTreeMap<Status, usize> = Default::default();
        for s in &self.sessions {
            *counts.entry(s.status).or_default() += 1;
        }
        counts.into_iter().rev().collect()
    }
}
