//! `attenu-hook enroll`: this user's signing key, made once per machine outside any clone
//! (so wiping `.attenu/` or cloning again keeps it), and its certificate installed once the
//! team's CA has signed it.

use super::cert::{self, Cert, CertProblem, Revocations, TrustedCas};
use super::signer::{self, SignerError};
use ed25519_dalek::SigningKey;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The enrolled key.
pub struct Enrolled {
    pub key_file: PathBuf,
    /// `ssh-ed25519 AAAA… attenu-hook@<host>`, the line the CA holder certifies.
    pub public_line: String,
    /// Made by this call (not reused).
    pub created: bool,
}

/// Makes this user's signing key in `dir`, or reuses the one there.
pub fn ensure_key(dir: &Path, comment: &str) -> Result<Enrolled, SignerError> {
    ensure_private_dir(dir)?;
    let key_file = signer::key_path(dir);
    let bad = |why: String| SignerError::BadKey {
        path: key_file.clone(),
        why,
    };
    let mut created = false;
    if !crate::fs::check_regular_file(&key_file).map_err(crate::evidence::keys::KeyError::from)? {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| bad(format!("no randomness: {e}")))?;
        let pair = ssh_key::private::Ed25519Keypair::from_seed(&seed);
        let key = ssh_key::PrivateKey::new(pair.into(), comment).map_err(|e| bad(e.to_string()))?;
        let text = key
            .to_openssh(ssh_key::LineEnding::LF)
            .map_err(|e| bad(e.to_string()))?;
        // Another enroll racing this one wins or loses atomically; the winner's key is read.
        created = crate::fs::create_exclusive(&key_file, text.as_bytes(), 0o600)
            .map_err(|e| bad(e.to_string()))?;
    }
    let signing = signer::read_private(&key_file)?;
    let public_line = public_line(&signing, comment)?;
    let pub_file = dir.join("signing-key.pub");
    crate::fs::write_atomic(&pub_file, format!("{public_line}\n").as_bytes(), true).map_err(
        |e| SignerError::BadKey {
            path: pub_file,
            why: e.to_string(),
        },
    )?;
    Ok(Enrolled {
        key_file,
        public_line,
        created,
    })
}

fn public_line(signing: &SigningKey, comment: &str) -> Result<String, SignerError> {
    let public = ssh_key::public::Ed25519PublicKey(signing.verifying_key().to_bytes());
    ssh_key::PublicKey::new(public.into(), comment)
        .to_openssh()
        .map_err(|e| SignerError::BadKey {
            path: PathBuf::from("signing-key.pub"),
            why: e.to_string(),
        })
}

/// Installs the certificate in `cert_file` for the key enrolled in `dir`, after checking it
/// certifies that key for attenu-hook now, and, when the team pins CAs, that one of them
/// signed it.
pub fn install_cert(
    dir: &Path,
    cert_file: &Path,
    team_cas: Option<&TrustedCas>,
    now_secs: u64,
) -> Result<Cert, SignerError> {
    let key_file = signer::key_path(dir);
    let signing = signer::read_private(&key_file)?;
    let cert = signer::read_cert_for(cert_file, &signing)?;
    let bad = |p: CertProblem| SignerError::BadCert {
        path: cert_file.to_path_buf(),
        why: p.to_string(),
    };
    match team_cas {
        Some(cas) => cert::check(&cert, cas, &Revocations::default(), now_secs).map_err(bad)?,
        None => {
            // No team CA pinned here: check all but the CA, which the reviewer pins.
            if !cert.principals.iter().any(|p| p == cert::PRINCIPAL) {
                return Err(bad(CertProblem::WrongPrincipal(cert.principals.clone())));
            }
            if now_secs >= cert.valid_before {
                return Err(bad(CertProblem::Expired(cert.valid_before)));
            }
        }
    }
    let target = signer::cert_path(dir);
    crate::fs::write_atomic(&target, format!("{}\n", cert.line).as_bytes(), true).map_err(|e| {
        SignerError::BadCert {
            path: target.clone(),
            why: e.to_string(),
        }
    })?;
    Ok(cert)
}

/// A directory only this user can enter, created when missing; never through a link.
fn ensure_private_dir(dir: &Path) -> Result<(), SignerError> {
    let bad = |why: String| SignerError::BadKey {
        path: dir.to_path_buf(),
        why,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(bad(
            "it is not a directory (a link or a file is refused); move it aside".into(),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| bad(e.to_string())),
        Err(e) => Err(bad(e.to_string())),
    }
}
