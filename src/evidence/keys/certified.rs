//! The signer certificate a bundle carries (`signer.certificate` in its envelope, written when
//! the machine signs with a team-certified key), and the time its anchor says it was signed.
//!
//! The envelope follows the entries, so a bundle `export` wrote is read from its tail, in small
//! memory whatever the ledger's length; a file laid out otherwise (re-indented, say) is parsed
//! whole up to [`WHOLE_LIMIT`]. Where the certificate is read from proves nothing: a key is
//! trusted through it only when a pinned CA vouches for it ([`crate::trust::CaPin::check`]),
//! and the anchor's signature must then hold under the certified key.

use crate::trust::{Cert, CertProblem};
use serde_json::Value;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The tail read for the envelope: a certificate line is a few hundred bytes, a checkpoint
/// less; an envelope `export` wrote is far smaller than this.
const TAIL: u64 = 256 * 1024;
/// A bundle whose envelope is not in its tail is parsed whole only up to this size.
const WHOLE_LIMIT: u64 = 64 * 1024 * 1024;

/// A bundle's signer certificate and the anchor's own signing time.
#[derive(Debug, Clone)]
pub struct BundleSigner {
    pub cert: Cert,
    /// `anchor.ts`, milliseconds since the epoch, as the signer wrote it.
    pub signed_at_ms: Option<u64>,
}

/// Why a bundle's signer certificate cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SignerCertError {
    #[error("cannot read {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("its \"signer\" member has no \"certificate\" string")]
    NoCertificateString,
    #[error("its signer certificate: {0}")]
    Certificate(#[from] CertProblem),
    /// `verify --ca` of a bundle whose signer is not certified.
    #[error(
        "this bundle carries no signer certificate, so no CA vouches for the key that signed it; \
         the machine signed with its own key (`attenu-hook enroll` certifies one). Pin that key \
         with --pub FILE instead"
    )]
    Absent,
}

/// The signer the bundle at `path` names, if it names one. Errors say what is wrong with the
/// certificate or the file.
pub fn bundle_signer(path: &Path) -> Result<Option<BundleSigner>, SignerCertError> {
    let Some(envelope) = envelope(path)? else {
        return Ok(None);
    };
    let Some(signer) = envelope.get("signer") else {
        return Ok(None);
    };
    let line = signer
        .get("certificate")
        .and_then(Value::as_str)
        .ok_or(SignerCertError::NoCertificateString)?;
    let cert = Cert::parse(line)?;
    let signed_at_ms = envelope.pointer("/anchor/ts").and_then(Value::as_u64);
    Ok(Some(BundleSigner { cert, signed_at_ms }))
}

/// Everything of the bundle but its entries, or `None` when the file is not a JSON object.
fn envelope(path: &Path) -> Result<Option<Value>, SignerCertError> {
    let unreadable = |source| SignerCertError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
    let len = file.metadata().map_err(unreadable)?.len();
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL)))
        .and_then(|_| file.take(TAIL).read_to_end(&mut tail))
        .map_err(unreadable)?;
    if let Some(v) = envelope_in_tail(&tail) {
        return Ok(Some(v));
    }
    if len > WHOLE_LIMIT {
        return Ok(None);
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    Ok(serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(Value::is_object))
}

/// `export` writes `{"entries":[…],"anchor":{…},…}`: the envelope's members start at the last
/// `],"anchor":{`, which inside an entry could only stand escaped.
fn envelope_in_tail(tail: &[u8]) -> Option<Value> {
    const MARK: &[u8] = b"],\"anchor\":{";
    let at = tail.windows(MARK.len()).rposition(|w| w == MARK)?;
    let mut text = b"{".to_vec();
    text.extend_from_slice(&tail[at + 2..]);
    serde_json::from_slice::<Value>(&text)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_found_after_the_last_entries_array() {
        let tail =
            br#"x","y":["],\"anchor\":{"]}],"anchor":{"ts":5},"signer":{"certificate":"c"},"v":2}"#;
        let v = envelope_in_tail(tail).unwrap();
        assert_eq!(v.pointer("/anchor/ts"), Some(&serde_json::json!(5)));
        assert_eq!(
            v.pointer("/signer/certificate"),
            Some(&serde_json::json!("c"))
        );
    }

    #[test]
    fn no_envelope_without_the_mark() {
        assert!(envelope_in_tail(br#"{"entries":[]}"#).is_none());
    }
}
