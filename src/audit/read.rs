//! Reading the store: one listing of everything under the prefix, grouped into sessions and
//! chains, then every object fetched, a bounded number at a time, and each session judged on
//! the blocking pool as soon as its objects are in, so neither the whole store's bytes nor
//! the judging ever hold up the requests.

use super::judge::judge_chain;
use super::names;
use super::report::{Report, SessionReport};
use super::trust::{self, Pinning};
use crate::ledger::read::{EntryView, Event};
use crate::ship::{ObjectInfo, Store, StoreError};
use crate::trust::Cert;
use ed25519_dalek::VerifyingKey;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// The pinned keys, by key id.
pub type Keys = HashMap<String, VerifyingKey>;

/// One object: its key, the store's time for it, and its bytes (`None`: listed, then gone,
/// or not read: `skipped` says why).
#[derive(Debug, Clone)]
pub struct Stored {
    pub key: String,
    pub stored_ms: u64,
    pub bytes: Option<Vec<u8>>,
    pub skipped: Option<String>,
}

/// An object larger than this is not read: no object the hook ships comes near it (a
/// 1M-entry bundle is about 750 MB), and one such object must not cost the whole audit.
pub const MAX_OBJECT_BYTES: u64 = 1 << 30;
/// A certificate object is one line.
const MAX_CERT_BYTES: u64 = 64 * 1024;

/// The objects of one chain directory `<kid>/<session>/<chain_id>/`.
#[derive(Debug, Clone)]
pub struct ChainObjects {
    pub kid: String,
    pub session: String,
    pub chain_id: String,
    pub objects: Vec<Stored>,
    /// Whether the objects' times were set by the store's server, so they can order events.
    pub times_trusted: bool,
}

/// Sessions judged at once, and requests in flight per session: about 64 requests at most,
/// which a local engine serves without queueing and a remote one without throttling.
const SESSIONS_AT_ONCE: usize = 8;
const GETS_PER_SESSION: usize = 8;

/// A session's listing: its chains and their objects (keys not yet fetched).
type SessionListing = BTreeMap<String, Vec<ObjectInfo>>;

/// The listing grouped by (kid, session), the certificate objects by kid, and the keys that
/// belong to no session.
pub struct Grouped {
    pub sessions: BTreeMap<(String, String), SessionListing>,
    pub certificates: BTreeMap<String, Vec<ObjectInfo>>,
    pub stray: Vec<String>,
}

pub fn group(listing: Vec<ObjectInfo>) -> Grouped {
    let mut sessions: BTreeMap<(String, String), SessionListing> = BTreeMap::new();
    let mut certificates: BTreeMap<String, Vec<ObjectInfo>> = BTreeMap::new();
    let mut stray = Vec::new();
    for info in listing {
        if let Some(kid) = names::certificate_of(&info.key) {
            certificates.entry(kid.to_string()).or_default().push(info);
        } else if let Some(k) = names::parse(&info.key) {
            sessions
                .entry((k.kid, k.session))
                .or_default()
                .entry(k.chain_id)
                .or_default()
                .push(info);
        } else if let Some(ks) = names::session_of(&info.key) {
            // Below a session but not below a chain of the layout: judged with the session,
            // as a chain of its own that cannot verify.
            let chain = info
                .key
                .splitn(3, '/')
                .nth(2)
                .unwrap_or_default()
                .to_string();
            sessions
                .entry(ks)
                .or_default()
                .entry(chain)
                .or_default()
                .push(info);
        } else {
            stray.push(info.key);
        }
    }
    Grouped {
        sessions,
        certificates,
        stray,
    }
}

/// Audits everything under the store's prefix. `Err` only when the store cannot be read.
pub async fn audit(
    store: &Store,
    pinning: Arc<Pinning>,
    now_ms: u64,
) -> Result<Report, StoreError> {
    let listing = store.list_lossy("").await?;
    let Grouped {
        sessions,
        certificates,
        stray,
    } = group(listing.objects);
    let (certs, mut findings) = fetch_certificates(store, &pinning, certificates).await?;
    let certs = Arc::new(certs);
    let reports: Vec<SessionReport> = stream::iter(sessions)
        .map(|((kid, session), chains)| {
            let (pinning, certs) = (Arc::clone(&pinning), Arc::clone(&certs));
            async move {
                let newest = chains.values().flatten().map(ms).max().unwrap_or(0);
                let chains = fetch_session(store, &kid, &session, chains).await?;
                let (k, s) = (kid.clone(), session.clone());
                let judged = tokio::task::spawn_blocking(move || {
                    let trusted = trust::key_for(&pinning, &certs, &kid, newest);
                    let why = trusted.as_ref().err().map(ToString::to_string);
                    let key = trusted
                        .as_ref()
                        .map(|(k, _)| k)
                        .map_err(|_| why.as_deref().unwrap_or_default());
                    let reports = chains.iter().map(|c| judge_chain(c, key, now_ms)).collect();
                    let mut report = SessionReport::of(kid, session, reports);
                    report.identity = chains.iter().find_map(identity_of);
                    report.trusted = key.is_ok();
                    report.certificate = trusted.ok().and_then(|(_, c)| c);
                    report
                });
                // A bug in judging one session must not hide the verdicts on the others.
                Ok::<_, StoreError>(judged.await.unwrap_or_else(|e| {
                    SessionReport::failed(
                        k,
                        s,
                        &format!(
                            "judging this session failed ({e}); this is a bug, please report it"
                        ),
                    )
                }))
            }
        })
        .buffer_unordered(SESSIONS_AT_ONCE)
        .try_collect()
        .await?;
    let trusted: Vec<(String, Option<crate::trust::CertView>)> = reports
        .iter()
        .filter(|r| r.trusted)
        .map(|r| (r.project.clone(), r.certificate.clone()))
        .collect();
    findings.extend(trust::fleet_findings(&pinning, &trusted));
    findings.extend(listing.problems);
    let mut report = Report::new(reports, stray);
    report.findings = findings;
    report.store_times = store.times_from_server();
    Ok(report)
}

/// The certificates the store holds, by kid (only with a CA pinned), and findings about those
/// that cannot be read.
async fn fetch_certificates(
    store: &Store,
    pinning: &Pinning,
    listing: BTreeMap<String, Vec<ObjectInfo>>,
) -> Result<(BTreeMap<String, Vec<Cert>>, Vec<String>), StoreError> {
    let mut certs: BTreeMap<String, Vec<Cert>> = BTreeMap::new();
    let mut findings = Vec::new();
    if !matches!(pinning, Pinning::Ca(_)) {
        return Ok((certs, findings));
    }
    for (kid, infos) in listing {
        for info in infos {
            if info.size > MAX_CERT_BYTES {
                findings.push(format!(
                    "{} is too large to be a certificate; not read",
                    info.key
                ));
                continue;
            }
            let Some(bytes) = store.get(&info.key).await? else {
                continue;
            };
            match Cert::parse(&String::from_utf8_lossy(&bytes)) {
                Ok(c) => certs.entry(kid.clone()).or_default().push(c),
                Err(e) => findings.push(format!("{} cannot be used: {e}", info.key)),
            }
        }
    }
    Ok((certs, findings))
}

/// The `context.identity` of a chain's root entry, from the entries object that starts at 0.
fn identity_of(chain: &ChainObjects) -> Option<serde_json::Value> {
    let first = chain.objects.iter().find(|o| {
        matches!(
            names::parse(&o.key).and_then(|k| k.kind),
            Some(names::Kind::Entries { from: 0, .. })
        )
    })?;
    let bytes = first.bytes.as_deref()?;
    let line = bytes.split(|&b| b == b'\n').next()?;
    let root = crate::ledger::read::entry(line)?;
    let root = EntryView::of(&root);
    root.is(Event::Root).then(|| root.identity().cloned())?
}

/// Fetches every object of one session.
async fn fetch_session(
    store: &Store,
    kid: &str,
    session: &str,
    chains: SessionListing,
) -> Result<Vec<ChainObjects>, StoreError> {
    let mut out = Vec::with_capacity(chains.len());
    for (chain_id, infos) in chains {
        let mut objects: Vec<Stored> = stream::iter(infos)
            .map(|info| async move {
                if info.size > MAX_OBJECT_BYTES {
                    return Ok(Stored {
                        stored_ms: ms(&info),
                        skipped: Some(format!(
                            "is {} bytes, larger than any object attenu-hook ships ({MAX_OBJECT_BYTES}), so it was not read",
                            info.size
                        )),
                        key: info.key,
                        bytes: None,
                    });
                }
                let bytes = store.get(&info.key).await?;
                Ok::<_, StoreError>(Stored {
                    stored_ms: ms(&info),
                    key: info.key,
                    bytes,
                    skipped: None,
                })
            })
            .buffer_unordered(GETS_PER_SESSION)
            .try_collect()
            .await?;
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        out.push(ChainObjects {
            kid: kid.to_string(),
            session: session.to_string(),
            chain_id,
            objects,
            times_trusted: store.times_from_server(),
        });
    }
    Ok(out)
}

fn ms(info: &ObjectInfo) -> u64 {
    info.last_modified
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
