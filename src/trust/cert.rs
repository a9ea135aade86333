//! OpenSSH certificates (PROTOCOL.certkeys) as the team's trust root: a team CA certifies each
//! signing key with `ssh-keygen -s CA -I <key id> -n attenu-hook -V <validity> KEY.pub`, and a
//! reviewer pins only the CA. Parsing and signature checks are the `ssh-key` crate's; what a
//! certificate must say to certify an attenu-hook signer is decided here, and nowhere else.

use ed25519_dalek::VerifyingKey;
use ssh_key::{certificate::CertType, Certificate, Fingerprint, HashAlg, PublicKey};
use std::collections::BTreeSet;

/// The principal a certificate must name (`ssh-keygen -n attenu-hook`). An empty principal
/// list, which OpenSSH reads as "any", is refused: a certificate made for logins must not
/// certify evidence by accident.
pub const PRINCIPAL: &str = "attenu-hook";

/// A certificate for an Ed25519 signing key, parsed and summarized. Being parsed says nothing
/// about trust: [`check`] decides that against the pinned CAs.
#[derive(Debug, Clone)]
pub struct Cert {
    /// The certificate as one OpenSSH line (`ssh-ed25519-cert-v01@openssh.com AAAA… comment`).
    pub line: String,
    /// `-I`: who the team certified (for example `alice@laptop` or `ci-main`).
    pub key_id: String,
    pub serial: u64,
    pub principals: Vec<String>,
    /// Seconds since the epoch: valid from `valid_after` to before `valid_before`.
    pub valid_after: u64,
    pub valid_before: u64,
    /// The certified key.
    pub public: VerifyingKey,
    /// SHA256 fingerprint of the CA that signed it, as `ssh-keygen -l` prints it.
    pub ca_fingerprint: String,
    inner: Certificate,
}

/// Why a certificate does not certify a signer; each sentence says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertProblem {
    #[error(
        "not an OpenSSH certificate ({0}); pass the `*-cert.pub` file that `ssh-keygen -s` wrote"
    )]
    Unreadable(ssh_key::Error),
    #[error(
        "its key is not a valid Ed25519 point: the certificate is corrupt; certify the key again"
    )]
    NotAPoint,
    #[error("it certifies a {0} key; attenu-hook signs with Ed25519 keys (`attenu-hook enroll` makes one)")]
    NotEd25519(String),
    #[error("it is a host certificate; certify the key as a user key (`ssh-keygen -s CA -I ID -n attenu-hook …`, without -h)")]
    HostCertificate,
    #[error("it is signed by CA {ca}, which is not a pinned team CA")]
    UnknownCa { ca: String },
    #[error("its CA signature does not verify: the certificate was altered or is corrupt")]
    BadSignature,
    #[error(
        "it names the principals {0:?}, not `attenu-hook`; certify again with `-n attenu-hook`"
    )]
    WrongPrincipal(Vec<String>),
    #[error("it carries the critical option `{0}`, which attenu-hook does not understand; certify again without -O")]
    CriticalOption(String),
    #[error("it expired at {}", crate::trust::cert::utc(*.0))]
    Expired(u64),
    #[error("it is not valid before {}", crate::trust::cert::utc(*.0))]
    NotYetValid(u64),
    #[error("its {0} is revoked")]
    Revoked(String),
    #[error("it certifies another key ({0}), not this signing key")]
    OtherKey(String),
}

impl Cert {
    /// Parses one certificate line (the whole text of a `-cert.pub` file).
    pub fn parse(text: &str) -> Result<Cert, CertProblem> {
        let line = text.trim().trim_start_matches('\u{feff}');
        let inner = Certificate::from_openssh(line).map_err(CertProblem::Unreadable)?;
        let ed = inner
            .public_key()
            .ed25519()
            .ok_or_else(|| CertProblem::NotEd25519(inner.algorithm().to_string()))?;
        let public = VerifyingKey::from_bytes(&ed.0).map_err(|_| CertProblem::NotAPoint)?;
        Ok(Cert {
            line: line.to_string(),
            key_id: inner.key_id().to_string(),
            serial: inner.serial(),
            principals: inner.valid_principals().to_vec(),
            valid_after: inner.valid_after(),
            valid_before: inner.valid_before(),
            public,
            ca_fingerprint: inner
                .signature_key()
                .fingerprint(HashAlg::Sha256)
                .to_string(),
            inner,
        })
    }

    /// The attenu-hook key id of the certified key.
    pub fn kid(&self) -> String {
        crate::evidence::keys::kid_for(&self.public)
    }
}

/// What a reviewer is shown of the certificate a key was trusted through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CertView {
    /// `ssh-keygen -I`: who the team certified.
    pub key_id: String,
    pub principals: Vec<String>,
    pub serial: u64,
    /// The CA's SHA256 fingerprint.
    pub ca: String,
    /// RFC 3339.
    pub valid_before: String,
}

impl CertView {
    pub fn of(c: &Cert) -> CertView {
        CertView {
            key_id: c.key_id.clone(),
            principals: c.principals.clone(),
            serial: c.serial,
            ca: c.ca_fingerprint.clone(),
            valid_before: utc(c.valid_before),
        }
    }
}

/// A bundle's signer certificate as `verify` reports it: what it says, the key it
/// certifies, and the CA files that vouched for it (none when no CA was pinned).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Certified {
    #[serde(flatten)]
    pub view: CertView,
    /// The attenu-hook key id of the certified key.
    pub kid: String,
    /// The pinned CA files (`--ca`), when checked against them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub through: Option<String>,
    /// When the check was made: the anchor's own signing time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked_at: Option<String>,
}

/// The CAs a team trusts: `ssh-ed25519 AAAA… [comment]` lines, as in OpenSSH's
/// `TrustedUserCAKeys` (blank lines and `#` comments allowed).
#[derive(Debug, Clone, Default)]
pub struct TrustedCas {
    fingerprints: Vec<Fingerprint>,
}

/// Why a CA key file or a revocation list cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustListError {
    #[error("line {line}: {why}")]
    Line { line: usize, why: LineProblem },
    #[error("it holds no CA key (expected `ssh-ed25519 AAAA…` lines)")]
    NoCaKey,
}

/// What is wrong with one line of a CA key file or a revocation list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    #[error("not an OpenSSH public key ({0})")]
    NotAPublicKey(String),
    #[error("a serial is a whole number")]
    NotASerial,
    #[error("expected `id:<key id>`, `serial:<n>` or an `ssh-ed25519 AAAA…` key")]
    NotARevocation,
    #[error("only Ed25519 keys sign for attenu-hook")]
    NotEd25519,
}

impl TrustedCas {
    /// Parses CA public key lines; every line must be a key.
    pub fn parse(text: &str) -> Result<TrustedCas, TrustListError> {
        let mut cas = TrustedCas::default();
        for (i, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            cas.add(line)
                .map_err(|why| TrustListError::Line { line: i + 1, why })?;
        }
        if cas.fingerprints.is_empty() {
            return Err(TrustListError::NoCaKey);
        }
        Ok(cas)
    }

    /// Adds one CA public key line.
    pub fn add(&mut self, line: &str) -> Result<(), LineProblem> {
        let key =
            PublicKey::from_openssh(line).map_err(|e| LineProblem::NotAPublicKey(e.to_string()))?;
        self.fingerprints.push(key.fingerprint(HashAlg::Sha256));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }

    /// The pinned CAs' fingerprints, as `ssh-keygen -l` prints them.
    pub fn fingerprints(&self) -> Vec<String> {
        self.fingerprints.iter().map(|f| f.to_string()).collect()
    }
}

/// Certificates the team has taken back: by key id (`-I`), by serial (`-z`), or by the
/// certified key itself. One entry a line: `id:<key id>`, `serial:<n>`, or a public key line.
#[derive(Debug, Clone, Default)]
pub struct Revocations {
    key_ids: BTreeSet<String>,
    serials: BTreeSet<u64>,
    keys: BTreeSet<[u8; 32]>,
}

impl Revocations {
    pub fn parse(text: &str) -> Result<Revocations, TrustListError> {
        let mut r = Revocations::default();
        for (i, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
            let line = line.trim();
            let bad = |why| TrustListError::Line { line: i + 1, why };
            if line.is_empty() || line.starts_with('#') {
                continue;
            } else if let Some(id) = line.strip_prefix("id:") {
                r.key_ids.insert(id.trim().to_string());
            } else if let Some(n) = line.strip_prefix("serial:") {
                r.serials
                    .insert(n.trim().parse().map_err(|_| bad(LineProblem::NotASerial))?);
            } else {
                let key =
                    PublicKey::from_openssh(line).map_err(|_| bad(LineProblem::NotARevocation))?;
                let ed = key
                    .key_data()
                    .ed25519()
                    .ok_or_else(|| bad(LineProblem::NotEd25519))?;
                r.keys.insert(ed.0);
            }
        }
        Ok(r)
    }

    fn revoked(&self, cert: &Cert) -> Option<String> {
        if self.key_ids.contains(&cert.key_id) {
            Some(format!("key id {:?}", cert.key_id))
        } else if self.serials.contains(&cert.serial) {
            Some(format!("serial {}", cert.serial))
        } else if self.keys.contains(cert.public.as_bytes()) {
            Some("key".to_string())
        } else {
            None
        }
    }
}

/// Whether `cert` certifies an attenu-hook signer at `at` (seconds since the epoch) under one
/// of `cas`, and is not revoked. The checks run in the order a person fixes them: who signed
/// it, whether it is intact, what it is for, when, and whether it was taken back.
pub fn check(
    cert: &Cert,
    cas: &TrustedCas,
    revoked: &Revocations,
    at: u64,
) -> Result<(), CertProblem> {
    if cert.inner.cert_type() != CertType::User {
        return Err(CertProblem::HostCertificate);
    }
    let ca = cert.inner.signature_key().fingerprint(HashAlg::Sha256);
    if !cas.fingerprints.contains(&ca) {
        return Err(CertProblem::UnknownCa { ca: ca.to_string() });
    }
    if cert.valid_after >= cert.valid_before {
        return Err(CertProblem::Expired(cert.valid_before));
    }
    // The CA and the signature, at a moment inside the window: the window itself is checked
    // below, with its own words.
    if cert
        .inner
        .validate_at(cert.valid_after, &cas.fingerprints)
        .is_err()
    {
        return Err(CertProblem::BadSignature);
    }
    if !cert.principals.iter().any(|p| p == PRINCIPAL) {
        return Err(CertProblem::WrongPrincipal(cert.principals.clone()));
    }
    if let Some((name, _)) = cert.inner.critical_options().iter().next() {
        return Err(CertProblem::CriticalOption(name.clone()));
    }
    if at < cert.valid_after {
        return Err(CertProblem::NotYetValid(cert.valid_after));
    }
    if at >= cert.valid_before {
        return Err(CertProblem::Expired(cert.valid_before));
    }
    if let Some(what) = revoked.revoked(cert) {
        return Err(CertProblem::Revoked(what));
    }
    Ok(())
}

/// A time in seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC` (OpenSSH's "forever" as
/// such).
pub fn utc(secs: u64) -> String {
    if secs == u64::MAX {
        return "forever".to_string();
    }
    crate::clock::rfc3339_ms(secs.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_line_is_named_by_its_number_and_its_problem() {
        let e = Revocations::parse("# taken back\nid:alice\nserial:x\n").unwrap_err();
        assert_eq!(
            e,
            TrustListError::Line {
                line: 3,
                why: LineProblem::NotASerial
            }
        );
        assert_eq!(e.to_string(), "line 3: a serial is a whole number");
        assert_eq!(
            Revocations::parse("nonsense").unwrap_err(),
            TrustListError::Line {
                line: 1,
                why: LineProblem::NotARevocation
            }
        );
        assert_eq!(
            TrustedCas::parse("# none\n\n").unwrap_err(),
            TrustListError::NoCaKey
        );
        assert!(matches!(
            TrustedCas::parse("\nnot a key").unwrap_err(),
            TrustListError::Line {
                line: 2,
                why: LineProblem::NotAPublicKey(_)
            }
        ));
    }
}
