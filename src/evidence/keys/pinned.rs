//! The public keys a reviewer passes with `--pub FILE` (`verify`, a proof's `verify`,
//! `report`, `audit`), read by one rule, and the one choice of the key a bundle's anchor is
//! checked with (`verify`, `report`).
//!
//! A key file is `anchor.pub`'s JSON form `{"alg":"EdDSA","kid":...,"public_key":"<64 hex>"}`
//! (`alg` may be absent or null) or the 64 hex characters alone, with white space around
//! either. Anything else is refused, including another `alg` and a leading byte order mark: a
//! file one command trusts, every command trusts, and one it refuses, every command refuses.
//!
//! A new kind of pinned key (an OpenSSH CA, say) is added here, in [`load_pinned`], and every
//! command that takes `--pub` reads it.

use super::kid_for;
use crate::evidence::verify::{shown, AnchorKey};
use crate::json::tree::Json;
use crate::ledger::chain;
use ed25519_dalek::VerifyingKey;
use std::path::{Path, PathBuf};

/// A public key read from a key file the reviewer named.
#[derive(Debug, Clone)]
pub struct PinnedKey {
    pub key: VerifyingKey,
    /// [`kid_for`] the key: what the ledger's anchors and checkpoints name it by.
    pub kid: String,
    /// The file it was read from.
    pub path: PathBuf,
}

/// Why a key file's text is not an Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublicKeyError {
    #[error("it starts with a byte order mark (U+FEFF); save it as UTF-8 without one")]
    ByteOrderMark,
    #[error("the key file is not valid JSON ({0})")]
    NotJson(crate::json::SyntaxError),
    #[error("the key file is not a JSON object")]
    NotAnObject,
    /// The `alg` as shown (escaped when needed).
    #[error("the key file's alg is {0}, not \"EdDSA\"; only Ed25519 anchor keys are verified")]
    NotEdDsa(String),
    #[error("the key file has no \"public_key\" string")]
    NoPublicKey,
    #[error("the public key is {0} characters long; an Ed25519 public key is 64 hex characters")]
    WrongLength(usize),
    #[error("the public key is not hexadecimal")]
    NotHex,
    #[error("the public key is not a valid Ed25519 point")]
    NotAPoint,
}

/// Why a key file could not be used, with the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file the reviewer passed with `--pub`.
    #[error(
        "cannot use the key file {}: {why}. Pass the anchor.pub you trust (JSON with \"public_key\", or 64 hex characters)",
        .path.display()
    )]
    Pinned { path: PathBuf, why: KeyFileProblem },
    /// The `anchor.pub` found beside a bundle, used when no key was pinned.
    #[error(
        "the key file {} beside {} cannot be used: {why}. Pass the key you trust with --pub FILE",
        .path.display(), .bundle.display()
    )]
    BesideBundle {
        path: PathBuf,
        bundle: PathBuf,
        why: KeyFileProblem,
    },
    /// The bundle's signer certificate cannot be read, or (with `--ca`) is absent.
    #[error("{}: {why}", .bundle.display())]
    Certificate {
        bundle: PathBuf,
        why: super::certified::SignerCertError,
    },
    /// With `--ca`: the certificate does not certify the signer under the pinned CA.
    #[error(
        "{}: the signer's certificate (key id {key_id:?}) is not valid under the CA you pinned ({ca}): {why}",
        .bundle.display()
    )]
    NotCertified {
        bundle: PathBuf,
        key_id: String,
        ca: String,
        why: crate::trust::CertProblem,
    },
}

/// What is wrong with a key file: it cannot be read, or its text is not a key.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileProblem {
    #[error("cannot read it ({0})")]
    Unreadable(#[from] std::io::Error),
    #[error(transparent)]
    NotAKey(#[from] PublicKeyError),
}

/// Reads the key file at `path` by the one rule above.
pub fn load_pinned(path: &Path) -> Result<PinnedKey, KeyFileError> {
    read_key(path).map_err(|why| KeyFileError::Pinned {
        path: path.to_path_buf(),
        why,
    })
}

fn read_key(path: &Path) -> Result<PinnedKey, KeyFileProblem> {
    let text = std::fs::read_to_string(path)?;
    let key = parse_pinned(&text)?;
    Ok(PinnedKey {
        kid: kid_for(&key),
        key,
        path: path.to_path_buf(),
    })
}

/// The key in a key file's text, by the one rule above.
pub fn parse_pinned(text: &str) -> Result<VerifyingKey, PublicKeyError> {
    if text.starts_with('\u{feff}') {
        return Err(PublicKeyError::ByteOrderMark);
    }
    let text = text.trim();
    let hex = if text.starts_with('{') {
        key_in_json(text)?
    } else {
        text.to_string()
    };
    if hex.len() != 64 {
        return Err(PublicKeyError::WrongLength(hex.len()));
    }
    let raw = chain::unhex(&hex).ok_or(PublicKeyError::NotHex)?;
    let bytes: [u8; 32] = raw.try_into().map_err(|_| PublicKeyError::NotHex)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| PublicKeyError::NotAPoint)
}

/// The `public_key` of the JSON form, which names no algorithm but EdDSA.
fn key_in_json(text: &str) -> Result<String, PublicKeyError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| PublicKeyError::NotJson(e.into()))?;
    let obj = v.as_object().ok_or(PublicKeyError::NotAnObject)?;
    match obj.get("alg") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(a)) if a == "EdDSA" => {}
        Some(other) => return Err(PublicKeyError::NotEdDsa(shown(&Json::from_value(other)))),
    }
    match obj.get("public_key") {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        _ => Err(PublicKeyError::NoPublicKey),
    }
}

/// The key a bundle's anchor is checked with, as `verify` and `report` choose it.
#[derive(Debug, Clone)]
pub enum KeyChoice {
    /// The key passed with `--pub`.
    Pinned(PinnedKey),
    /// No key was pinned; `anchor.pub` beside the bundle was read. Whoever rewrote the bundle
    /// could have replaced it too, so the verdict says the key was not pinned.
    BesideBundle(PinnedKey),
    /// The key the bundle's own signer certificate certifies. Pinned when `through` names the
    /// CA files that vouched for it at the anchor's signing time (`--ca`); otherwise as weak as
    /// a key beside the bundle, since whoever rewrote it could have put in their own.
    Certified {
        cert: Box<crate::trust::Cert>,
        through: Option<String>,
        /// The anchor's own signing time (ms), at which the CA's check was made.
        at_ms: Option<u64>,
    },
    /// Neither: the anchor is not checked, and the verdict is invalid (`anchor-not-checked`).
    Unchecked,
}

impl KeyChoice {
    /// `pinned` when the reviewer passed one, else the bundle's own signer certificate, else
    /// an `anchor.pub` in the bundle's directory, else none.
    pub fn for_bundle(bundle: &Path, pinned: Option<&PinnedKey>) -> Result<Self, KeyFileError> {
        if let Some(k) = pinned {
            return Ok(KeyChoice::Pinned(k.clone()));
        }
        if let Some(signer) = signer_of(bundle)? {
            return Ok(KeyChoice::Certified {
                cert: Box::new(signer.cert),
                through: None,
                at_ms: signer.signed_at_ms,
            });
        }
        let dir = match bundle.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let side = dir.join("anchor.pub");
        if !side.exists() {
            return Ok(KeyChoice::Unchecked);
        }
        read_key(&side)
            .map(KeyChoice::BesideBundle)
            .map_err(|why| KeyFileError::BesideBundle {
                path: side,
                bundle: bundle.to_path_buf(),
                why,
            })
    }

    /// The key the bundle's signer certificate certifies, trusted only when `ca` vouches for
    /// it at the anchor's signing time (`verify --ca`). The store's time, which a signer
    /// cannot choose, is what `audit --ca` checks instead.
    pub fn under_ca(bundle: &Path, ca: &crate::trust::CaPin) -> Result<Self, KeyFileError> {
        let Some(signer) = signer_of(bundle)? else {
            return Err(KeyFileError::Certificate {
                bundle: bundle.to_path_buf(),
                why: super::certified::SignerCertError::Absent,
            });
        };
        let at = signer.signed_at_ms.unwrap_or(0) / 1000;
        ca.check(&signer.cert, at)
            .map_err(|why| KeyFileError::NotCertified {
                bundle: bundle.to_path_buf(),
                key_id: signer.cert.key_id.clone(),
                ca: ca.shown(),
                why,
            })?;
        Ok(KeyChoice::Certified {
            cert: Box::new(signer.cert),
            through: Some(ca.shown()),
            at_ms: signer.signed_at_ms,
        })
    }

    /// The key as the verifier takes it.
    pub fn anchor_key(&self) -> AnchorKey {
        match self {
            KeyChoice::Pinned(k) => AnchorKey::Pinned(k.key),
            KeyChoice::BesideBundle(k) => AnchorKey::FromBundleSide(k.key),
            KeyChoice::Certified {
                cert,
                through: Some(_),
                ..
            } => AnchorKey::Pinned(cert.public),
            KeyChoice::Certified { cert, .. } => AnchorKey::FromBundleSide(cert.public),
            KeyChoice::Unchecked => AnchorKey::None,
        }
    }

    /// The key file read, if any.
    pub fn key(&self) -> Option<&PinnedKey> {
        match self {
            KeyChoice::Pinned(k) | KeyChoice::BesideBundle(k) => Some(k),
            KeyChoice::Certified { .. } | KeyChoice::Unchecked => None,
        }
    }

    /// The certificate the key came from, as the report shows it.
    pub fn certificate(&self) -> Option<crate::trust::cert::Certified> {
        match self {
            KeyChoice::Certified {
                cert,
                through,
                at_ms,
            } => Some(crate::trust::cert::Certified {
                view: crate::trust::CertView::of(cert),
                kid: cert.kid(),
                through: through.clone(),
                checked_at: through
                    .as_ref()
                    .map(|_| crate::trust::cert::utc(at_ms.unwrap_or(0) / 1000)),
            }),
            _ => None,
        }
    }
}

/// The bundle's signer, an unreadable certificate being the bundle's fault.
fn signer_of(bundle: &Path) -> Result<Option<super::certified::BundleSigner>, KeyFileError> {
    super::certified::bundle_signer(bundle).map_err(|why| KeyFileError::Certificate {
        bundle: bundle.to_path_buf(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    #[test]
    fn one_rule_for_every_key_file() {
        let key = parse_pinned(HEX).unwrap();
        for ok in [
            format!("{HEX}\n"),
            format!("  {{\"alg\":\"EdDSA\",\"kid\":\"k\",\"public_key\":\"{HEX}\"}}\n"),
            format!("{{\"public_key\":\"{HEX}\"}}"),
            format!("{{\"alg\":null,\"public_key\":\"{HEX}\"}}"),
        ] {
            assert_eq!(parse_pinned(&ok), Ok(key), "{ok}");
        }
        let refused = |text: String| parse_pinned(&text).unwrap_err();
        assert_eq!(
            refused(format!("\u{feff}{HEX}")),
            PublicKeyError::ByteOrderMark
        );
        assert_eq!(
            refused(format!("{{\"alg\":\"RS256\",\"public_key\":\"{HEX}\"}}")),
            PublicKeyError::NotEdDsa("RS256".into())
        );
        assert_eq!(
            refused(format!("{{\"alg\":\"RS 256\",\"public_key\":\"{HEX}\"}}")),
            PublicKeyError::NotEdDsa("\"RS\\u0020256\"".into())
        );
        assert_eq!(refused("[1]".into()), PublicKeyError::WrongLength(3));
        assert_eq!(refused("{}".into()), PublicKeyError::NoPublicKey);
        assert_eq!(refused(format!("{}zz", &HEX[2..])), PublicKeyError::NotHex);
    }
}
