//! What the reviewer trusts: single keys (`--pub`), or a team CA (`--ca`) whose certificates
//! the store itself carries (`<kid>/certificate/<sha256>.pub`, shipped beside each chain).
//! With a CA, a session's key is trusted only through a certificate that the CA signed for
//! the `attenu-hook` principal, that was valid when the store received the session's newest
//! object, and that is not revoked (`crate::trust::cert::check`).

use super::read::Keys;
use crate::trust::{CaPin, Cert, CertProblem, CertView};
use ed25519_dalek::VerifyingKey;
use std::collections::BTreeMap;

/// Why no key of a session's `kid` is trusted.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    #[error("no --pub key has the id {kid}, so nothing of project {kid} can be checked; pass that project's anchor.pub")]
    NoPubKey { kid: String },
    #[error("{kid} has no certificate in the store, so it is not a key the pinned CA vouches for (an unenrolled machine signs with its own key: `attenu-hook enroll`)")]
    NoCertificate { kid: String },
    #[error(
        "{kid} is not certified by the pinned CA when the store received this session: {}",
        .problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    NotCertified {
        kid: String,
        problems: Vec<CertIssue>,
    },
}

/// Why one certificate stored for a `kid` does not certify it.
#[derive(Debug, thiserror::Error)]
pub enum CertIssue {
    #[error("a certificate stored under {kid} certifies another key ({other})")]
    OtherKey { kid: String, other: String },
    #[error("the certificate for key id {key_id:?}: {problem}")]
    Refused {
        key_id: String,
        problem: CertProblem,
    },
}

/// The reviewer's pins.
pub enum Pinning {
    Keys(Keys),
    Ca(CaPin),
}

/// The key a session of `kid` is checked with, and the certificate behind it; or why none is
/// trusted. `certs` are the certificates the store holds for `kid`; `at_ms` is the store's
/// time of the session's newest object.
pub fn key_for(
    pinning: &Pinning,
    certs: &BTreeMap<String, Vec<Cert>>,
    kid: &str,
    at_ms: u64,
) -> Result<(VerifyingKey, Option<CertView>), Untrusted> {
    match pinning {
        Pinning::Keys(keys) => {
            keys.get(kid)
                .map(|k| (*k, None))
                .ok_or_else(|| Untrusted::NoPubKey {
                    kid: kid.to_string(),
                })
        }
        Pinning::Ca(pin) => {
            let mine = certs.get(kid).map(Vec::as_slice).unwrap_or_default();
            let mut problems = Vec::new();
            for c in mine {
                if c.kid() != kid {
                    problems.push(CertIssue::OtherKey {
                        kid: kid.to_string(),
                        other: c.kid(),
                    });
                    continue;
                }
                match pin.check(c, at_ms / 1000) {
                    Ok(()) => return Ok((c.public, Some(CertView::of(c)))),
                    Err(problem) => problems.push(CertIssue::Refused {
                        key_id: c.key_id.clone(),
                        problem,
                    }),
                }
            }
            let kid = kid.to_string();
            Err(if problems.is_empty() {
                Untrusted::NoCertificate { kid }
            } else {
                Untrusted::NotCertified { kid, problems }
            })
        }
    }
}

/// Findings about the fleet as a whole, from the sessions' certificates: a certificate key id
/// that signed with more than one key (a machine whose key changed mid-history), and a CA with
/// no session at all.
/// `trusted` lists the sessions whose key was trusted: their kid, and the certificate.
pub fn fleet_findings(pinning: &Pinning, trusted: &[(String, Option<CertView>)]) -> Vec<String> {
    let mut out = Vec::new();
    match pinning {
        Pinning::Ca(_) => {
            let certified: Vec<(&String, &CertView)> = trusted
                .iter()
                .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
                .collect();
            if certified.is_empty() {
                out.push("no session in the store is signed by a key the pinned CA certified: check the URL's prefix and the CA file".to_string());
            }
            let mut by_id: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (kid, view) in certified {
                let kids = by_id.entry(view.key_id.as_str()).or_default();
                if !kids.contains(&kid.as_str()) {
                    kids.push(kid);
                }
            }
            for (id, kids) in by_id.into_iter().filter(|(_, k)| k.len() > 1) {
                out.push(format!(
                    "key id {id:?} signed sessions with {} different keys ({}): its key changed mid-history; confirm with its owner that each was theirs",
                    kids.len(),
                    kids.join(", ")
                ));
            }
        }
        Pinning::Keys(keys) => {
            for kid in keys.keys() {
                if !trusted.iter().any(|(k, _)| k == kid) {
                    out.push(format!(
                        "the store holds no session of the pinned key {kid}"
                    ));
                }
            }
        }
    }
    out.sort();
    out
}
