//! The project's anchor key: an Ed25519 key created on first use under `.attenu/`
//! (`anchor.key`, 0600, the 32-byte seed) with its public half in `anchor.pub`, in the
//! recipe's JSON form `{"alg":"EdDSA","kid":...,"public_key":"<64 hex>"}`. Creation is atomic
//! (several hook processes starting at once agree on one key) and an existing key is never
//! replaced: a damaged or mismatched key file is an error that says what to do.

use crate::fs;
use crate::ledger::chain::{hex, unhex};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

mod certified;
mod pinned;
pub use pinned::{
    load_pinned, parse_pinned, KeyChoice, KeyFileError, KeyFileProblem, PinnedKey, PublicKeyError,
};

pub struct AnchorKey {
    pub signing: SigningKey,
    pub kid: String,
}

impl AnchorKey {
    pub fn verifying(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.signing.sign(msg).to_bytes()
    }

    /// The key that seals the hook's local state (each ledger's sealed state, its re-verify
    /// progress, the roster cache), derived so it is never the signing key itself. The label
    /// it is derived under still says "checkpoint": changing it would unseal every file.
    pub fn state_mac_key(&self) -> [u8; 32] {
        mac_key_from_seed(&self.signing.to_bytes())
    }

    /// The `anchor.pub` document.
    pub fn public_document(&self) -> Value {
        json!({"alg": "EdDSA", "kid": self.kid, "public_key": hex(self.verifying().as_bytes())})
    }
}

fn mac_key_from_seed(seed: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"attenu-hook checkpoint mac v1\0");
    h.update(seed);
    h.finalize().into()
}

/// Why a key could not be read, created or checked; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// What is at the key's path is not a file the hook may use.
    #[error(transparent)]
    Unsafe(#[from] fs::FsError),
    /// The key file could not be read (refused, or the system failed).
    #[error(transparent)]
    Read(fs::ReadError),
    #[error("cannot read {}: it does not exist", .path.display())]
    Missing { path: PathBuf },
    #[error("{} is not a key file; restore it from a backup (never replace it silently: bundles signed with it would no longer match)", .path.display())]
    NotAKeyFile { path: PathBuf },
    #[error("{} is readable by others; run `chmod 600 {}`", .path.display(), .path.display())]
    ReadableByOthers { path: PathBuf },
    #[error("{} does not hold an EdDSA key; restore it from a backup", .path.display())]
    NotEdDsa { path: PathBuf },
    #[error("no randomness for a new anchor key: {0}")]
    NoRandomnessForAnchor(getrandom::Error),
    #[error("no randomness: {0}")]
    NoRandomness(getrandom::Error),
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A new reviewer key could not be written; `missing_dir` is its directory when that
    /// does not exist.
    #[error("cannot create {}: {source}{}", .path.display(), missing_dir_hint(.missing_dir.as_deref()))]
    CreateReviewerKey {
        path: PathBuf,
        #[source]
        source: io::Error,
        missing_dir: Option<PathBuf>,
    },
    #[error("{} already exists; choose another path (a key is never overwritten)", .path.display())]
    Exists { path: PathBuf },
    #[error("{} does not match anchor.key; one of them was replaced. Restore the pair from a backup, or move both aside to start a new key", .path.display())]
    PublicMismatch { path: PathBuf },
    #[error("cannot read {}: {source}", .path.display())]
    ReadPublic {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not an Ed25519 public key (anchor.pub JSON or 64 hex characters)", .path.display())]
    NotAPublicKey { path: PathBuf },
}

fn missing_dir_hint(dir: Option<&Path>) -> String {
    match dir {
        Some(dir) => format!(
            "; its directory does not exist: create it first (`mkdir -p -m 700 {}`)",
            dir.display()
        ),
        None => String::new(),
    }
}

/// The sealed state's MAC key for the hook's hot path: read from the seed alone, without the
/// elliptic-curve work of loading the signing key (the key is created first if it is missing).
pub fn state_mac_key(attenu_dir: &Path) -> Result<[u8; 32], KeyError> {
    let key_path = attenu_dir.join("anchor.key");
    match fs::read_owned(&key_path, MAX_KEY_FILE_BYTES).map_err(|e| key_read_error(&key_path, e))? {
        Some((bytes, meta)) => Ok(mac_key_from_seed(&parse_seed(&key_path, &bytes, &meta)?.0)),
        None => load_or_create(attenu_dir).map(|k| k.state_mac_key()),
    }
}

/// The key id: names the key by its public half, so two projects' keys are told apart.
pub fn kid_for(public: &VerifyingKey) -> String {
    format!(
        "attenu-hook-{}",
        &hex(&Sha256::digest(public.as_bytes()))[..16]
    )
}

/// Loads the anchor key, creating it (and `anchor.pub`) on first use.
pub fn load_or_create(attenu_dir: &Path) -> Result<AnchorKey, KeyError> {
    let key_path = attenu_dir.join("anchor.key");
    if !fs::check_regular_file(&key_path)? {
        // Ignored by git before it exists (see `fs::GIT_IGNORE_FILE`).
        fs::ensure_git_ignore(attenu_dir);
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(KeyError::NoRandomnessForAnchor)?;
        let signing = SigningKey::from_bytes(&seed);
        let doc =
            json!({"alg": "EdDSA", "kid": kid_for(&signing.verifying_key()), "key": hex(&seed)});
        // Losing the race is fine: the winner's key is loaded below.
        if let Err(source) = fs::create_exclusive(&key_path, doc.to_string().as_bytes(), 0o600) {
            return Err(KeyError::Create {
                path: key_path,
                source,
            });
        }
    }
    let key = load(&key_path)?;
    ensure_public(attenu_dir, &key)?;
    Ok(key)
}

/// Loads an existing key file (the anchor key, or a reviewer key from `keygen`).
pub fn load(path: &Path) -> Result<AnchorKey, KeyError> {
    let (seed, kid) = read_seed(path)?;
    let signing = SigningKey::from_bytes(&seed);
    let kid = kid.unwrap_or_else(|| kid_for(&signing.verifying_key()));
    Ok(AnchorKey { signing, kid })
}

/// A key file is one small JSON object; anything far larger is not one.
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// The seed and key id of a key file, after checking it is a private regular file.
fn read_seed(path: &Path) -> Result<([u8; 32], Option<String>), KeyError> {
    let (bytes, meta) = fs::read_owned(path, MAX_KEY_FILE_BYTES)
        .map_err(|e| key_read_error(path, e))?
        .ok_or_else(|| KeyError::Missing {
            path: path.to_path_buf(),
        })?;
    parse_seed(path, &bytes, &meta)
}

/// A key file far too large is not a key file: moving it aside would make the hook create a
/// new key, so the advice is to restore it.
fn key_read_error(path: &Path, e: fs::ReadError) -> KeyError {
    match e {
        fs::ReadError::TooLarge { .. } => KeyError::NotAKeyFile {
            path: path.to_path_buf(),
        },
        other => KeyError::Read(other),
    }
}

/// The seed and key id in `bytes`, read from `path` whose metadata is `meta`.
fn parse_seed(
    path: &Path,
    bytes: &[u8],
    meta: &std::fs::Metadata,
) -> Result<([u8; 32], Option<String>), KeyError> {
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(KeyError::ReadableByOthers {
            path: path.to_path_buf(),
        });
    }
    let doc: Value = serde_json::from_slice(bytes).map_err(|_| KeyError::NotAKeyFile {
        path: path.to_path_buf(),
    })?;
    let seed = doc
        .get("key")
        .and_then(Value::as_str)
        .and_then(unhex)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .filter(|_| doc.get("alg").and_then(Value::as_str) == Some("EdDSA"))
        .ok_or_else(|| KeyError::NotEdDsa {
            path: path.to_path_buf(),
        })?;
    Ok((
        seed,
        doc.get("kid").and_then(Value::as_str).map(str::to_string),
    ))
}

fn ensure_public(attenu_dir: &Path, key: &AnchorKey) -> Result<(), KeyError> {
    let pub_path = attenu_dir.join("anchor.pub");
    let doc = key.public_document();
    if !fs::check_regular_file(&pub_path)? {
        if let Err(source) = fs::create_exclusive(&pub_path, doc.to_string().as_bytes(), 0o644) {
            return Err(KeyError::Create {
                path: pub_path,
                source,
            });
        }
    }
    let existing = read_public(&pub_path)?;
    if existing != key.verifying() {
        return Err(KeyError::PublicMismatch { path: pub_path });
    }
    Ok(())
}

/// Reads the project's own `anchor.pub` by the one rule for key files ([`parse_pinned`]).
fn read_public(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeyError::ReadPublic {
        path: path.to_path_buf(),
        source,
    })?;
    parse_pinned(&text).map_err(|_| KeyError::NotAPublicKey {
        path: path.to_path_buf(),
    })
}

/// Writes a new reviewer key (0600) for `keygen`; refuses to overwrite.
pub fn generate_to(path: &Path) -> Result<AnchorKey, KeyError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(KeyError::NoRandomness)?;
    let signing = SigningKey::from_bytes(&seed);
    let kid = kid_for(&signing.verifying_key());
    let doc = json!({"alg": "EdDSA", "kid": kid, "key": hex(&seed)});
    let created =
        fs::create_exclusive(path, doc.to_string().as_bytes(), 0o600).map_err(|source| {
            KeyError::CreateReviewerKey {
                path: path.to_path_buf(),
                source,
                missing_dir: path
                    .parent()
                    .filter(|dir| !dir.as_os_str().is_empty() && !dir.exists())
                    .map(Path::to_path_buf),
            }
        })?;
    if !created {
        return Err(KeyError::Exists {
            path: path.to_path_buf(),
        });
    }
    Ok(AnchorKey { signing, kid })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `keygen`'s refusals print what the `String` errors they replaced printed.
    #[test]
    fn keygen_says_how_to_fix_the_path() {
        let dir = std::env::temp_dir().join(format!("attenu-keys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let missing = dir.join("absent");
        let path = missing.join("k");
        let e = generate_to(&path).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot create {}: {}; its directory does not exist: create it first (`mkdir -p -m 700 {}`)",
                path.display(),
                std::io::Error::from_raw_os_error(libc::ENOENT),
                missing.display()
            )
        );
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k");
        generate_to(&path).unwrap();
        assert_eq!(
            generate_to(&path).err().unwrap().to_string(),
            format!(
                "{} already exists; choose another path (a key is never overwritten)",
                path.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
