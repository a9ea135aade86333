//! A reviewer's pinned team CA: the CA key files and the revocation list named on the command
//! line (`audit --ca`, `verify --ca`, `report --ca`), read by one rule.

use super::cert::{self, Cert, CertProblem, Revocations, TrustListError, TrustedCas};
use std::path::{Path, PathBuf};

/// Why the pinned CA files or the revocation list cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaPinError {
    #[error("cannot read {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a CA public key file: {why}", .path.display())]
    NotCaKeys { path: PathBuf, why: TrustListError },
    #[error("{} is not a revocation list: {why}", .path.display())]
    NotRevocations { path: PathBuf, why: TrustListError },
    #[error(transparent)]
    NoCa(TrustListError),
}

/// The CAs a reviewer pinned, what they took back, and the files named.
#[derive(Debug, Clone)]
pub struct CaPin {
    pub cas: TrustedCas,
    pub revoked: Revocations,
    pub files: Vec<PathBuf>,
}

impl CaPin {
    /// Reads every CA file (each must hold at least one CA key) and the revocation list.
    pub fn load(ca_files: &[PathBuf], revoked: Option<&Path>) -> Result<CaPin, CaPinError> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| CaPinError::Unreadable {
                path: path.to_path_buf(),
                source,
            })
        };
        let mut text = String::new();
        for path in ca_files {
            let t = read(path)?;
            TrustedCas::parse(&t).map_err(|why| CaPinError::NotCaKeys {
                path: path.clone(),
                why,
            })?;
            text.push_str(&t);
            text.push('\n');
        }
        let cas = TrustedCas::parse(&text).map_err(CaPinError::NoCa)?;
        let revoked = match revoked {
            Some(path) => {
                Revocations::parse(&read(path)?).map_err(|why| CaPinError::NotRevocations {
                    path: path.to_path_buf(),
                    why,
                })?
            }
            None => Revocations::default(),
        };
        Ok(CaPin {
            cas,
            revoked,
            files: ca_files.to_vec(),
        })
    }

    /// Whether `cert` certified an attenu-hook signer at `at` (seconds since the epoch).
    pub fn check(&self, cert: &Cert, at: u64) -> Result<(), CertProblem> {
        cert::check(cert, &self.cas, &self.revoked, at)
    }

    /// The CA files as one line for messages.
    pub fn shown(&self) -> String {
        let names: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    }
}
