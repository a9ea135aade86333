//! Reading the store: one listing of everything under the prefix, grouped into sessions and
//! chains, then every object fetched, a bounded number at a time, and each session judged on
//! the blocking pool as soon as its objects are in, so neither the whole store's bytes nor
//! the judging ever hold up the requests.

use super::judge::judge_chain;
use super::names;
use super::report::{Report, SessionReport};
use crate::ship::{ObjectInfo, Store, StoreError};
use ed25519_dalek::VerifyingKey;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// The pinned keys, by key id.
pub type Keys = HashMap<String, VerifyingKey>;

/// One object: its key, the store's time for it, and its bytes (`None`: listed, then gone).
#[derive(Debug, Clone)]
pub struct Stored {
    pub key: String,
    pub stored_ms: u64,
    pub bytes: Option<Vec<u8>>,
}

/// The objects of one chain directory `<kid>/<session>/<chain_id>/`.
#[derive(Debug, Clone)]
pub struct ChainObjects {
    pub kid: String,
    pub session: String,
    pub chain_id: String,
    pub objects: Vec<Stored>,
}

/// Sessions judged at once, and requests in flight per session: about 64 requests at most,
/// which a local engine serves without queueing and a remote one without throttling.
const SESSIONS_AT_ONCE: usize = 8;
const GETS_PER_SESSION: usize = 8;

/// A session's listing: its chains and their objects (keys not yet fetched).
type SessionListing = BTreeMap<String, Vec<ObjectInfo>>;

/// The listing grouped by (kid, session), and the keys that belong to no session.
pub fn group(
    listing: Vec<ObjectInfo>,
) -> (BTreeMap<(String, String), SessionListing>, Vec<String>) {
    let mut sessions: BTreeMap<(String, String), SessionListing> = BTreeMap::new();
    let mut stray = Vec::new();
    for info in listing {
        if let Some(k) = names::parse(&info.key) {
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
    (sessions, stray)
}

/// Audits everything under the store's prefix. `Err` only when the store cannot be read.
pub async fn audit(store: &Store, keys: Arc<Keys>, now_ms: u64) -> Result<Report, StoreError> {
    let (sessions, stray) = group(store.list("").await?);
    let reports: Vec<SessionReport> = stream::iter(sessions)
        .map(|((kid, session), chains)| {
            let keys = Arc::clone(&keys);
            async move {
                let chains = fetch_session(store, &kid, &session, chains).await?;
                let (k, s) = (kid.clone(), session.clone());
                let judged = tokio::task::spawn_blocking(move || {
                    let key = keys.get(&kid);
                    let reports = chains.iter().map(|c| judge_chain(c, key, now_ms)).collect();
                    SessionReport::of(kid, session, reports)
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
    Ok(Report::new(reports, stray))
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
                let bytes = store.get(&info.key).await?;
                Ok::<_, StoreError>(Stored {
                    stored_ms: ms(&info),
                    key: info.key,
                    bytes,
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
        });
    }
    Ok(out)
}

fn ms(info: &ObjectInfo) -> u64 {
    info.last_modified
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
