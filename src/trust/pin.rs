//! A reviewer's pinned team CA: the CA key files and the revocation list named on the command
//! line (`audit --ca`, `verify --ca`, `report --ca`), read by one rule.

use super::cert::{self, Cert, CertProblem, Revocations, TrustedCas};
use std::path::{Path, PathBuf};

/// The CAs a reviewer pinned, what they took back, and the files named.
#[derive(Debug, Clone)]
pub struct CaPin {
    pub cas: TrustedCas,
    pub revoked: Revocations,
    pub files: Vec<PathBuf>,
}

impl CaPin {
    /// Reads every CA file (each must hold at least one CA key) and the revocation list.
    pub fn load(ca_files: &[PathBuf], revoked: Option<&Path>) -> Result<CaPin, String> {
        let read = |path: &Path| {
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        let mut text = String::new();
        for path in ca_files {
            let t = read(path)?;
            TrustedCas::parse(&t)
                .map_err(|e| format!("{} is not a CA public key file: {e}", path.display()))?;
            text.push_str(&t);
            text.push('\n');
        }
        let cas = TrustedCas::parse(&text)?;
        let revoked = match revoked {
            Some(path) => Revocations::parse(&read(path)?)
                .map_err(|e| format!("{} is not a revocation list: {e}", path.display()))?,
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
