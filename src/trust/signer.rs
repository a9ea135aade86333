//! Which key signs this machine's checkpoints and bundles.
//!
//! 1. A CI runner's key and certificate from its secret store: `ATTENU_SIGNING_KEY_FILE` (an
//!    OpenSSH private key, as `ssh-keygen -t ed25519 -N ''` writes it) and
//!    `ATTENU_SIGNING_CERT_FILE`. A runner never mints a key.
//! 2. This user's enrolled key (`attenu-hook enroll`), outside any clone, with its
//!    certificate once `enroll --cert` installed one.
//! 3. Otherwise the clone's own anchor key (`.attenu/anchor.key`): trust on first use, as
//!    before, so one person on one laptop needs nothing.
//!
//! The anchor key keeps sealing the local state in every case; only signatures change hands.

use super::cert::Cert;
use crate::evidence::keys::{self, AnchorKey, KeyError};
use ed25519_dalek::SigningKey;
use std::path::{Path, PathBuf};

pub const KEY_ENV: &str = "ATTENU_SIGNING_KEY_FILE";
pub const CERT_ENV: &str = "ATTENU_SIGNING_CERT_FILE";

/// The key that signs, and the certificate that vouches for it when there is one.
pub struct Signer {
    pub key: AnchorKey,
    pub cert: Option<Cert>,
    pub source: Source,
}

impl Signer {
    /// The clone's own anchor key, uncertified.
    pub fn anchor(key: AnchorKey) -> Signer {
        Signer {
            key,
            cert: None,
            source: Source::Anchor,
        }
    }
}

/// Where the signing key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `ATTENU_SIGNING_KEY_FILE` (a CI runner).
    Environment(PathBuf),
    /// The enrolled key of this user.
    Enrolled(PathBuf),
    /// The clone's anchor key.
    Anchor,
}

/// Why no signer could be had; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("{KEY_ENV} and {CERT_ENV} go together: set both (a CI runner signs with a certified key), or neither")]
    HalfConfigured,
    #[error("cannot read the signing key {}: {why}", .path.display())]
    BadKey { path: PathBuf, why: String },
    #[error("the certificate {} cannot be used: {why}", .path.display())]
    BadCert { path: PathBuf, why: String },
}

/// The directory of this user's enrolled key: `$ATTENU_HOME`, else
/// `$XDG_CONFIG_HOME/attenu-hook`, else `~/.config/attenu-hook`.
pub fn enrolled_dir() -> Option<PathBuf> {
    let var = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("ATTENU_HOME")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("attenu-hook")))
        .or_else(|| var("HOME").map(|h| h.join(".config").join("attenu-hook")))
}

/// The enrolled key's files in `dir`.
pub fn key_path(dir: &Path) -> PathBuf {
    dir.join("signing-key")
}
pub fn cert_path(dir: &Path) -> PathBuf {
    dir.join("signing-key-cert.pub")
}

/// The signer of this machine for the clone whose state is `attenu`.
pub fn load(attenu: &Path) -> Result<Signer, SignerError> {
    let key_env = std::env::var_os(KEY_ENV).filter(|v| !v.is_empty());
    let cert_env = std::env::var_os(CERT_ENV).filter(|v| !v.is_empty());
    match (key_env, cert_env) {
        (Some(key), Some(cert)) => {
            let key = PathBuf::from(key);
            let signing = read_private(&key)?;
            let cert = read_cert_for(&PathBuf::from(cert), &signing)?;
            return Ok(signer(signing, Some(cert), Source::Environment(key)));
        }
        (None, None) => {}
        _ => return Err(SignerError::HalfConfigured),
    }
    if let Some(dir) = enrolled_dir() {
        let key = key_path(&dir);
        if crate::fs::check_regular_file(&key).map_err(KeyError::from)? {
            let signing = read_private(&key)?;
            let cert_file = cert_path(&dir);
            let cert = if crate::fs::check_regular_file(&cert_file).map_err(KeyError::from)? {
                Some(read_cert_for(&cert_file, &signing)?)
            } else {
                None
            };
            return Ok(signer(signing, cert, Source::Enrolled(key)));
        }
    }
    Ok(Signer::anchor(keys::load_or_create(attenu)?))
}

fn signer(signing: SigningKey, cert: Option<Cert>, source: Source) -> Signer {
    let kid = keys::kid_for(&signing.verifying_key());
    Signer {
        key: AnchorKey { signing, kid },
        cert,
        source,
    }
}

/// A private key file that is this user's and no one else's, in OpenSSH's format.
pub fn read_private(path: &Path) -> Result<SigningKey, SignerError> {
    let bad = |why: String| SignerError::BadKey {
        path: path.to_path_buf(),
        why,
    };
    let bytes = read_secret(path).map_err(|e| bad(e.to_string()))?;
    let key = ssh_key::PrivateKey::from_openssh(&bytes)
        .map_err(|e| bad(format!("not an OpenSSH private key ({e})")))?;
    if key.is_encrypted() {
        return Err(bad(
            "it is encrypted with a passphrase; a hook cannot ask for one (make it with `ssh-keygen -t ed25519 -N ''`)"
                .into(),
        ));
    }
    let pair = key
        .key_data()
        .ed25519()
        .ok_or_else(|| bad(format!("it is a {} key, not Ed25519", key.algorithm())))?;
    Ok(SigningKey::from_bytes(&pair.private.to_bytes()))
}

/// Reads a secret file: regular, this user's, not readable by group or others.
fn read_secret(path: &Path) -> Result<Vec<u8>, KeyError> {
    use std::os::unix::fs::PermissionsExt;
    match crate::fs::read_owned(path, 64 * 1024) {
        Ok(Some((bytes, meta))) => {
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(KeyError::ReadableByOthers {
                    path: path.to_path_buf(),
                });
            }
            Ok(bytes)
        }
        Ok(None) => Err(KeyError::Missing {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(KeyError::Read(e)),
    }
}

/// The certificate in `path`, which must certify `signing`'s public key.
pub fn read_cert_for(path: &Path, signing: &SigningKey) -> Result<Cert, SignerError> {
    let bad = |why: String| SignerError::BadCert {
        path: path.to_path_buf(),
        why,
    };
    let bytes = match crate::fs::read_owned(path, 64 * 1024) {
        Ok(Some((b, _))) => b,
        Ok(None) => return Err(bad("it does not exist".into())),
        Err(e) => return Err(bad(e.to_string())),
    };
    let cert = Cert::parse(&String::from_utf8_lossy(&bytes)).map_err(|e| bad(e.to_string()))?;
    if cert.public != signing.verifying_key() {
        return Err(bad(
            super::cert::CertProblem::OtherKey(cert.kid()).to_string()
        ));
    }
    Ok(cert)
}
