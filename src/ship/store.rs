//! The object store the outbox ships to, through `object_store`: S3 and every S3-compatible
//! engine (`s3://`), or a directory (`file://`). Keys are relative to the URL's prefix. Every
//! method is async and runs on the current-thread runtime of [`super::block_on`]: only the
//! `ship` process (and the audit) ever creates one, never the hook.

use super::Target;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Why the store could not do what was asked. The text names the store and the key.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A `file://` store whose directory is missing. Never created here: a share that is not
    /// mounted would otherwise take the evidence onto this machine's own disk.
    #[error("the store's directory {} does not exist: mount the share there, or create it (`mkdir -p {}`) if a local directory is what you meant", .root.display(), .root.display())]
    NoDirectory { root: std::path::PathBuf },
    #[error("cannot open the store {url}: {source}")]
    Open {
        url: String,
        #[source]
        source: Box<object_store::Error>,
    },
    #[error("cannot open the store {url}: {source}")]
    Profile {
        url: String,
        #[source]
        source: super::credentials::ProfileError,
    },
    #[error("{op} {key} on {url} failed: {source}")]
    Request {
        op: &'static str,
        key: String,
        url: String,
        #[source]
        source: Box<object_store::Error>,
    },
}

/// Every regular file below `dir` as an object keyed by its path below `root`; a name that is
/// not UTF-8, or a directory that cannot be read, is a problem. Links are not followed, and the
/// store's own files being written (`name#n`) are not objects yet.
fn walk_directory(root: &Path, dir: &Path, listing: &mut Listing) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir == root => return,
        Err(e) => {
            listing.problems.push(format!(
                "{} cannot be listed ({e}); it is not audited",
                dir.display()
            ));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            listing.problems.push(format!(
                "the store holds an object whose name is not UTF-8 ({}); it is not audited",
                path.display()
            ));
            continue;
        };
        if kind.is_dir() {
            walk_directory(root, &path, listing);
        } else if kind.is_file() && !name.contains('#') {
            let Ok(meta) = entry.metadata() else { continue };
            let key = path
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or(name);
            listing.objects.push(ObjectInfo {
                key,
                size: meta.len(),
                last_modified: meta.modified().unwrap_or(std::time::UNIX_EPOCH),
            });
        }
    }
}

/// A listing, and what it could not name.
#[derive(Debug, Default)]
pub struct Listing {
    pub objects: Vec<ObjectInfo>,
    pub problems: Vec<String>,
}

/// One object the store holds: its key (relative to the prefix), size, and the time the
/// store's server gave it (not the shipping machine's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    pub last_modified: SystemTime,
}

/// What a conditional create found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The store took the object.
    New,
    /// The store refused: an object under that key exists already.
    Exists,
}

/// An opened store: where it is, and the prefix every key is under.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    prefix: Vec<String>,
    url: String,
    /// The directory of a `file://` store, whose objects [`Store::create`] syncs itself.
    root: Option<PathBuf>,
}

/// A shipper retries its whole drain on the next event, so a request that fails fails fast:
/// object_store's default (10 retries over up to 3 minutes) would hold the outbox lock for
/// minutes while the store is down.
fn retry() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 2,
        retry_timeout: Duration::from_secs(20),
    }
}

impl Store {
    /// Opens `target` with the store's standard environment of this process (`AWS_*`).
    pub fn from_env(url: &str, target: &Target) -> Result<Store, StoreError> {
        Store::with_env(url, target, std::env::vars())
    }

    /// Opens `target` with the given environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_REGION`/`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`,
    /// `AWS_ALLOW_HTTP`, web identity, and the other `AWS_*` keys object_store reads), and what
    /// the shared config and credentials files' profile adds ([`super::credentials`]). Nothing is ever
    /// read from or written to the project: credentials stay where the operator keeps them.
    pub fn with_env(
        url: &str,
        target: &Target,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open {
            url: url.to_string(),
            source: Box::new(source),
        };
        let (inner, prefix): (Arc<dyn ObjectStore>, Vec<String>) = match target {
            Target::S3 { bucket, prefix } => {
                // TLS through ring (object_store's `aws` feature would bring aws-lc-rs, a C
                // build of about 90 s); reqwest uses the process's default provider. An
                // error means one is installed already, which serves as well.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let env = super::credentials::with_profile(env.into_iter().collect()).map_err(
                    |source| StoreError::Profile {
                        url: url.to_string(),
                        source,
                    },
                )?;
                let mut b = AmazonS3Builder::new();
                for (k, v) in env {
                    if !k.starts_with("AWS_") {
                        continue;
                    }
                    if let Ok(key) = k.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                        b = b.with_config(key, v);
                    }
                }
                let s3 = b
                    .with_bucket_name(bucket)
                    .with_retry(retry())
                    .build()
                    .map_err(open_err)?;
                (Arc::new(s3), prefix.clone())
            }
            Target::File { root } => {
                if !root.is_dir() {
                    return Err(StoreError::NoDirectory { root: root.clone() });
                }
                let fs = LocalFileSystem::new_with_prefix(root).map_err(open_err)?;
                (Arc::new(fs), Vec::new())
            }
        };
        Ok(Store {
            inner,
            prefix,
            url: url.to_string(),
            root: match target {
                Target::File { root } => Some(root.clone()),
                Target::S3 { .. } => None,
            },
        })
    }

    /// The URL it was opened with, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn path(&self, key: &str) -> ObjectPath {
        let parts = self.prefix.iter().map(String::as_str).chain(key.split('/'));
        ObjectPath::from_iter(parts)
    }

    fn err(&self, op: &'static str, key: &str, source: object_store::Error) -> StoreError {
        StoreError::Request {
            op,
            key: key.to_string(),
            url: self.url.clone(),
            source: Box::new(source),
        }
    }

    /// The bytes of `key`, or `None` when the store has no such object.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let got = match self.inner.get(&self.path(key)).await {
            Ok(g) => g,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.err("GET", key, e)),
        };
        let bytes = got.bytes().await.map_err(|e| self.err("GET", key, e))?;
        Ok(Some(bytes.to_vec()))
    }

    /// Creates `key` with `bytes` only if no object has that key: a conditional create
    /// (`If-None-Match: *` on S3). Not every store honours the condition (Garage 2.5.0
    /// accepts it and overwrites), which is why [`super::drain`] reads the key first.
    pub async fn create(&self, key: &str, bytes: Vec<u8>) -> Result<Created, StoreError> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .inner
            .put_opts(&self.path(key), PutPayload::from(bytes), opts)
            .await
        {
            Ok(_) => {
                self.sync_file_object(key).map_err(|e| {
                    self.err(
                        "PUT",
                        key,
                        object_store::Error::Generic {
                            store: "LocalFileSystem",
                            source: Box::new(e),
                        },
                    )
                })?;
                Ok(Created::New)
            }
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(Created::Exists),
            Err(e) => Err(self.err("PUT", key, e)),
        }
    }

    /// Deletes `key`. A write-once bucket refuses (the error says how the store put it).
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner
            .delete(&self.path(key))
            .await
            .map_err(|e| self.err("DELETE", key, e))
    }

    /// object_store's directory store renames its objects into place without an fsync; the
    /// outbox file is removed once this returns, so the object and its name must be on disk
    /// first. (An S3 store has made the object durable when it answers.)
    fn sync_file_object(&self, key: &str) -> std::io::Result<()> {
        let Some(root) = &self.root else {
            return Ok(());
        };
        let path = root.join(key);
        std::fs::File::open(&path)?.sync_all()?;
        let mut dir = path.parent();
        // Each directory the store may have created for the key, up to the root.
        while let Some(d) = dir {
            crate::fs::sync_dir(d)?;
            if d == root.as_path() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    /// Every object under `under` (a key prefix of whole components; "" for all), with the
    /// server's times, in key order.
    /// Whether object times are the store's server's (S3), not ones the writers set (a
    /// directory, whose file times the shipping user can change).
    pub fn times_from_server(&self) -> bool {
        self.root.is_none()
    }

    /// Everything under `under`, as [`Store::list`], except that an object the listing cannot
    /// name (a file name that is not UTF-8 in a `file://` store) is a problem in the result
    /// rather than an error for the whole listing. `Err` only when nothing could be listed.
    pub async fn list_lossy(&self, under: &str) -> Result<Listing, StoreError> {
        use futures_util::StreamExt;
        if let Some(root) = &self.root {
            // object_store ends a directory's listing at the first name that is not UTF-8, so a
            // directory store is walked here, name by name.
            let mut listing = Listing::default();
            walk_directory(root, &root.join(under), &mut listing);
            listing.objects.sort_by(|a, b| a.key.cmp(&b.key));
            return Ok(listing);
        }
        let base = self.base(under);
        let items: Vec<_> = self.inner.list(Some(&base)).collect().await;
        let mut listing = Listing::default();
        let mut first_error = None;
        for item in items {
            match item {
                Ok(m) => listing.objects.push(self.info(m)),
                Err(e) => {
                    listing.problems.push(format!(
                        "the store lists an object that cannot be read by name ({e}); it is not audited"
                    ));
                    first_error.get_or_insert(e);
                }
            }
        }
        if listing.objects.is_empty() {
            if let Some(e) = first_error {
                return Err(self.err("LIST", under, e));
            }
        }
        listing.objects.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(listing)
    }

    fn base(&self, under: &str) -> ObjectPath {
        if under.is_empty() {
            ObjectPath::from_iter(self.prefix.iter().map(String::as_str))
        } else {
            self.path(under)
        }
    }

    fn info(&self, m: object_store::ObjectMeta) -> ObjectInfo {
        ObjectInfo {
            key: m
                .location
                .parts()
                .skip(self.prefix.len())
                .map(|p| p.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/"),
            size: m.size,
            last_modified: m.last_modified.into(),
        }
    }

    pub async fn list(&self, under: &str) -> Result<Vec<ObjectInfo>, StoreError> {
        use futures_util::TryStreamExt;
        let metas: Vec<_> = self
            .inner
            .list(Some(&self.base(under)))
            .try_collect()
            .await
            .map_err(|e| self.err("LIST", under, e))?;
        let mut out: Vec<ObjectInfo> = metas.into_iter().map(|m| self.info(m)).collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}
