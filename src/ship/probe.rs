//! `attenu-hook ship --probe`: tries the store the way the shipper uses it, without touching
//! the outbox. It creates one small object under [`PROBE_DIR`] (a conditional create, as the
//! drain does), reads it back and compares the bytes, then deletes it. A store that refuses
//! the delete is what a write-once bucket should be (docs/SHIPPING.md): that is reported, not
//! an error, and the probe object stays there (the audit lists it as a key of no session).
//! `doctor` runs this in `attenu-hook-ship`, so the hook's binary never links the store client.

use super::store::{Created, Store, StoreError};

/// The directory, below the store's prefix, of probe objects: outside the layout of sessions
/// (`<kid>/<session>/<chain>/…`), so no session is judged by one.
pub const PROBE_DIR: &str = "attenu-doctor";

/// What the probe found once the object was written and read back.
#[derive(Debug)]
pub struct Probe {
    /// The probe object's key, below the store's prefix.
    pub key: String,
    pub deleted: Deleted,
}

#[derive(Debug)]
pub enum Deleted {
    Yes,
    /// The store refused (or failed) the delete; why, as the store said it.
    Refused(DeleteRefused),
}

/// Why the probe object was not deleted.
#[derive(Debug, thiserror::Error)]
pub enum DeleteRefused {
    #[error(transparent)]
    Store(StoreError),
    /// `ATTENU_SHIP_TEST_REFUSE_DELETE=1` in a test build: a store that refuses deletes.
    #[cfg(feature = "test-faults")]
    #[error("AccessDenied (refused by ATTENU_SHIP_TEST_REFUSE_DELETE)")]
    Injected,
}

/// Why the store cannot be used for shipping.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot write the probe object: {0}")]
    Write(#[source] StoreError),
    #[error("the probe object {0} exists already, and a new name was asked for: the store does not create objects as the shipper needs")]
    Exists(String),
    #[error("cannot read the probe object back: {0}")]
    Read(#[source] StoreError),
    #[error("the probe object {0} was not found right after the store took it")]
    Missing(String),
    #[error("the probe object {0} read back with other bytes than were written")]
    Differs(String),
    #[error("no randomness for the probe object's name: {0}")]
    Random(#[source] crate::random::NoRandomness),
}

impl Probe {
    /// One line for `ship --probe` and `doctor`.
    pub fn sentence(&self, url: &str) -> String {
        match &self.deleted {
            Deleted::Yes => format!(
                "{url}: wrote {}, read it back identical, deleted it",
                self.key
            ),
            Deleted::Refused(why) => format!(
                "{url}: wrote {}, read it back identical; the store refused to delete it, as a \
                 write-once bucket does (it stays there; the audit lists it as a key of no session): {why}",
                self.key
            ),
        }
    }
}

/// Writes, reads back and deletes one probe object.
pub async fn probe(store: &Store) -> Result<Probe, ProbeError> {
    let ms = crate::clock::now_ms();
    let nonce = crate::random::random_hex(8).map_err(ProbeError::Random)?;
    let key = format!("{PROBE_DIR}/probe-{ms}-{nonce}.txt");
    let bytes = format!(
        "attenu-hook doctor probe, written {}; safe to delete\n",
        crate::clock::rfc3339_ms(ms)
    )
    .into_bytes();
    match store.create(&key, bytes.clone()).await {
        Ok(Created::New) => {}
        Ok(Created::Exists) => return Err(ProbeError::Exists(key)),
        Err(e) => return Err(ProbeError::Write(e)),
    }
    match store.get(&key).await {
        Ok(Some(b)) if b == bytes => {}
        Ok(Some(_)) => return Err(ProbeError::Differs(key)),
        Ok(None) => return Err(ProbeError::Missing(key)),
        Err(e) => return Err(ProbeError::Read(e)),
    }
    let deleted = match delete(store, &key).await {
        Ok(()) => Deleted::Yes,
        Err(why) => Deleted::Refused(why),
    };
    Ok(Probe { key, deleted })
}

async fn delete(store: &Store, key: &str) -> Result<(), DeleteRefused> {
    // `ATTENU_SHIP_TEST_REFUSE_DELETE=1` (test builds only): a store that refuses deletes, as
    // an S3 bucket with object lock and no `s3:DeleteObject` does; Garage and a directory
    // always allow them.
    #[cfg(feature = "test-faults")]
    if std::env::var_os("ATTENU_SHIP_TEST_REFUSE_DELETE").is_some() {
        return Err(DeleteRefused::Injected);
    }
    store.delete(key).await.map_err(DeleteRefused::Store)
}
