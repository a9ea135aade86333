//! Sealed files: the hook's own state files that it trusts only when it wrote them. Each is
//! `<header><hex HMAC-SHA256>\n<body>`, the MAC taken under a key derived from the anchor seed
//! over `<domain><body>`. Three formats use it: the ledger's sealed local state
//! (`ledger-<session>.state.json`), an unfinished re-verify's progress
//! (`ledger-<session>.reverify.json`) and the roster cache (`roster-cache`, its table). Each
//! has its own header and domain, so no file's body can pass for another's.
//!
//! The bytes are a format (docs/FORMATS.md): the header, the lower-case hex tag and the domain
//! of each format are fixed by what is already on disk.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// One sealed format: the text its files start with and what its MAC covers before the body.
#[derive(Debug, Clone, Copy)]
pub struct SealedFormat {
    pub header: &'static str,
    /// Bytes MACed before the body (empty for the oldest format, the sealed state).
    pub domain: &'static [u8],
}

impl SealedFormat {
    /// The whole file for `body`.
    pub fn seal(&self, key: &[u8; 32], body: &[u8]) -> Vec<u8> {
        let tag = self.tag(key, body);
        let mut bytes = Vec::with_capacity(self.header.len() + tag.len() + 1 + body.len());
        bytes.extend_from_slice(self.header.as_bytes());
        bytes.extend_from_slice(tag.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(body);
        bytes
    }

    /// The hex tag a file of this format carries for `body`.
    pub fn tag(&self, key: &[u8; 32], body: &[u8]) -> String {
        crate::ledger::chain::hex(&self.mac(key, body).finalize().into_bytes())
    }

    /// The body of a file of this format whose seal holds under `key`.
    pub fn open<'b>(&self, bytes: &'b [u8], key: &[u8; 32]) -> Option<&'b [u8]> {
        self.open_after_header(bytes.strip_prefix(self.header.as_bytes())?, key)
    }

    /// [`SealedFormat::open`] for what follows a header already matched (an earlier version's).
    pub fn open_after_header<'b>(&self, tagged: &'b [u8], key: &[u8; 32]) -> Option<&'b [u8]> {
        let nl = tagged.iter().position(|&b| b == b'\n')?;
        let (tag, body) = (std::str::from_utf8(&tagged[..nl]).ok()?, &tagged[nl + 1..]);
        let tag = crate::ledger::chain::unhex(tag)?;
        self.mac(key, body).verify_slice(&tag).ok()?;
        Some(body)
    }

    fn mac(&self, key: &[u8; 32], body: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(self.domain);
        mac.update(body);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: SealedFormat = SealedFormat {
        header: "a v1 ",
        domain: b"",
    };
    const B: SealedFormat = SealedFormat {
        header: "a v1 ",
        domain: b"b\n",
    };

    #[test]
    fn a_seal_opens_under_its_key_and_format_only() {
        let key = [7u8; 32];
        let file = A.seal(&key, b"{\"x\":1}");
        assert!(file.starts_with(b"a v1 "));
        assert_eq!(file.len(), 5 + 64 + 1 + 7);
        assert_eq!(A.open(&file, &key), Some(&b"{\"x\":1}"[..]));
        assert_eq!(A.open(&file, &[8u8; 32]), None, "another key");
        assert_eq!(B.open(&file, &key), None, "another domain");
        let mut changed = file.clone();
        *changed.last_mut().unwrap() = b'2';
        assert_eq!(A.open(&changed, &key), None, "a changed body");
        assert_eq!(A.open(&file[..file.len() - 1], &key), None, "a cut body");
    }

    /// The tag is HMAC-SHA256 over the domain and the body, in lower-case hex, as the files
    /// already on disk have it.
    #[test]
    fn the_bytes_are_the_existing_format() {
        let key = [1u8; 32];
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).unwrap();
        mac.update(b"b\nbody");
        let tag = crate::ledger::chain::hex(&mac.finalize().into_bytes());
        assert_eq!(
            B.seal(&key, b"body"),
            format!("a v1 {tag}\nbody").into_bytes()
        );
    }
}
