//! C2SP signed notes (<https://c2sp.org/signed-note>, v1.0.0) with Ed25519 signatures:
//!
//! ```text
//! <text, ending in a newline>
//!
//! — <key name> <base64(key ID (4 bytes, big-endian) || signature)>
//! ```
//!
//! The key ID is `SHA-256(name || 0x0A || 0x01 || public key)[:4]` and a verifier key (vkey)
//! is printed `<name>+<hex key ID>+<base64(0x01 || public key)>`. Opening a note follows the
//! spec: signatures whose name and key ID match no known key are ignored; one that matches
//! must verify, or the whole note is rejected; and at least one must verify.

use super::encoding::{b64_decode, b64_encode, control_character, hex_decode, hex_encode};
use super::NoteError;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// The signature type byte of plain Ed25519 note signatures.
pub const ED25519: u8 = 0x01;

/// The most signature lines read from one note. The spec requires accepting at least 16;
/// Go's implementation stops at 100, and so do we.
pub const MAX_SIGNATURES: usize = 100;

const SIG_PREFIX: &str = "\u{2014} ";

/// Whether `name` can name a key: non-empty, without Unicode white space or `+` (the spec),
/// and without control characters (which no note may contain, so such a name could never
/// appear in one).
pub fn is_valid_key_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c.is_whitespace() || c == '+' || c.is_control())
}

/// `SHA-256(name || 0x0A || sig_type || public_key)[:4]` as a big-endian integer.
pub fn key_id(name: &str, sig_type: u8, public_key: &[u8]) -> u32 {
    let digest = Sha256::new()
        .chain_update(name.as_bytes())
        .chain_update([b'\n', sig_type])
        .chain_update(public_key)
        .finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// A key trusted to sign notes: its name, key ID and Ed25519 public key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierKey {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl VerifierKey {
    /// The verifier key for `key` under `name`, with the recommended key ID. Small-order
    /// (weak) keys are refused: anyone can forge signatures for them.
    pub fn new(name: &str, key: VerifyingKey) -> Result<Self, NoteError> {
        if !is_valid_key_name(name) {
            return Err(NoteError::InvalidKeyName(name.to_string()));
        }
        if key.is_weak() {
            return Err(NoteError::MalformedVerifierKey(
                "Ed25519 key has small order",
            ));
        }
        let id = key_id(name, ED25519, key.as_bytes());
        Ok(Self {
            name: name.to_string(),
            id,
            key,
        })
    }

    /// Reads `<name>+<8 lowercase hex digits>+<base64(0x01 || 32-byte key)>`, checking that
    /// the key ID is the one the name and key give. Small-order (weak) keys are refused.
    pub fn parse(vkey: &str) -> Result<Self, NoteError> {
        let mut parts = vkey.splitn(3, '+');
        let (Some(name), Some(id_hex), Some(key64)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(NoteError::MalformedVerifierKey("expected name+keyid+key"));
        };
        if !is_valid_key_name(name) {
            return Err(NoteError::InvalidKeyName(name.to_string()));
        }
        let stated = hex_decode::<4>(id_hex).map(u32::from_be_bytes).ok_or(
            NoteError::MalformedVerifierKey("key ID is not 8 lowercase hex digits"),
        )?;
        let material = b64_decode(key64).ok_or(NoteError::MalformedVerifierKey(
            "key is not canonical base64",
        ))?;
        let (&sig_type, public) = material
            .split_first()
            .ok_or(NoteError::MalformedVerifierKey("key is empty"))?;
        if sig_type != ED25519 {
            return Err(NoteError::UnsupportedSignatureType(sig_type));
        }
        let public: [u8; 32] = public
            .try_into()
            .map_err(|_| NoteError::MalformedVerifierKey("Ed25519 key is not 32 bytes"))?;
        let computed = key_id(name, sig_type, &public);
        if stated != computed {
            return Err(NoteError::KeyIdMismatch { stated, computed });
        }
        let key = VerifyingKey::from_bytes(&public)
            .map_err(|_| NoteError::MalformedVerifierKey("not an Ed25519 public key"))?;
        if key.is_weak() {
            return Err(NoteError::MalformedVerifierKey(
                "Ed25519 key has small order",
            ));
        }
        Ok(Self {
            name: name.to_string(),
            id: computed,
            key,
        })
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key ID.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The Ed25519 public key.
    pub fn key(&self) -> &VerifyingKey {
        &self.key
    }
}

impl fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut material = vec![ED25519];
        material.extend_from_slice(self.key.as_bytes());
        let id = hex_encode(&self.id.to_be_bytes());
        write!(f, "{}+{id}+{}", self.name, b64_encode(&material))
    }
}

impl FromStr for VerifierKey {
    type Err = NoteError;

    fn from_str(s: &str) -> Result<Self, NoteError> {
        Self::parse(s)
    }
}

/// One signature line of a note, not yet verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name.
    pub name: String,
    /// The key ID (the first four bytes of the encoded signature).
    pub key_id: u32,
    /// The signature bytes after the key ID.
    pub signature: Vec<u8>,
}

impl NoteSignature {
    fn to_line(&self) -> String {
        let mut bytes = self.key_id.to_be_bytes().to_vec();
        bytes.extend_from_slice(&self.signature);
        format!("{SIG_PREFIX}{} {}\n", self.name, b64_encode(&bytes))
    }

    /// Reads a line without its newline; `line` numbers the signature lines from 1.
    fn parse(text: &str, line: usize) -> Result<Self, NoteError> {
        let bad = |reason| NoteError::MalformedSignature { line, reason };
        let rest = text
            .strip_prefix(SIG_PREFIX)
            .ok_or(bad("does not start with an em dash"))?;
        let (name, sig64) = rest
            .split_once(' ')
            .ok_or(bad("has no space after the key name"))?;
        if !is_valid_key_name(name) {
            return Err(bad("has an invalid key name"));
        }
        let bytes = b64_decode(sig64).ok_or(bad("signature is not canonical base64"))?;
        match bytes.as_slice() {
            [a, b, c, d, signature @ ..] if !signature.is_empty() => Ok(Self {
                name: name.to_string(),
                key_id: u32::from_be_bytes([*a, *b, *c, *d]),
                signature: signature.to_vec(),
            }),
            _ => Err(bad("signature is shorter than a key ID and one byte")),
        }
    }
}

/// A note: text that ends in a newline, and its signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    text: String,
    signatures: Vec<NoteSignature>,
}

/// A note that verified: its text, the known keys that signed it, and the signatures from
/// keys not known (ignored, as the spec requires; they may be witness cosignatures).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The signed text, with its final newline.
    pub text: String,
    /// The known keys with a valid signature, each once, in signature order.
    pub verified: Vec<VerifierKey>,
    /// The signatures by unknown keys, each distinct one once.
    pub unknown: Vec<NoteSignature>,
}

impl Note {
    /// An unsigned note; `text` must end in a newline and contain no other control character.
    pub fn new(text: impl Into<String>) -> Result<Self, NoteError> {
        let text = text.into();
        if let Some(offset) = control_character(&text) {
            return Err(NoteError::ControlCharacter { offset });
        }
        if !text.ends_with('\n') {
            return Err(NoteError::TextWithoutFinalNewline);
        }
        Ok(Self {
            text,
            signatures: Vec::new(),
        })
    }

    /// [`Note::parse`] for bytes, which must be UTF-8.
    pub fn parse_bytes(msg: &[u8]) -> Result<Self, NoteError> {
        Self::parse(std::str::from_utf8(msg).map_err(|_| NoteError::NotUtf8)?)
    }

    /// Reads a signed note's structure without verifying anything: no control character but
    /// newline, text up to the last blank line, then one or more well-formed signature lines
    /// (at most [`MAX_SIGNATURES`]), the last ending in a newline.
    pub fn parse(msg: &str) -> Result<Self, NoteError> {
        if let Some(offset) = control_character(msg) {
            return Err(NoteError::ControlCharacter { offset });
        }
        let split = msg.rfind("\n\n").ok_or(NoteError::NoSignatureBlock)?;
        let (text, block) = (&msg[..split + 1], &msg[split + 2..]);
        let Some(block) = block.strip_suffix('\n') else {
            return Err(if block.is_empty() {
                NoteError::Unsigned
            } else {
                NoteError::MissingFinalNewline
            });
        };
        // Counted lazily, so an oversized note is refused before anything is decoded.
        if block.split('\n').nth(MAX_SIGNATURES).is_some() {
            return Err(NoteError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        let signatures = block
            .split('\n')
            .enumerate()
            .map(|(i, line)| NoteSignature::parse(line, i + 1))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            text: text.to_string(),
            signatures,
        })
    }

    /// The signed text, with its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The signature lines, in order.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// Adds an Ed25519 signature by `key` under `name`, replacing any signature with the
    /// same name and key ID.
    pub fn sign(&mut self, name: &str, key: &SigningKey) -> Result<(), NoteError> {
        let vkey = VerifierKey::new(name, key.verifying_key())?;
        let signature = key.sign(self.text.as_bytes()).to_bytes().to_vec();
        self.signatures
            .retain(|s| s.name != vkey.name || s.key_id != vkey.id);
        if self.signatures.len() >= MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        self.signatures.push(NoteSignature {
            name: vkey.name,
            key_id: vkey.id,
            signature,
        });
        Ok(())
    }

    /// The encoded note; a note needs at least one signature.
    pub fn to_text(&self) -> Result<String, NoteError> {
        if self.signatures.is_empty() {
            return Err(NoteError::Unsigned);
        }
        let mut out = format!("{}\n", self.text);
        for s in &self.signatures {
            out.push_str(&s.to_line());
        }
        Ok(out)
    }

    /// Verifies the signatures against `known` keys. Every signature whose name and key ID
    /// match a known key is checked (strict Ed25519), and one failure rejects the note.
    pub fn verify(&self, known: &[VerifierKey]) -> Result<Opened, NoteError> {
        let mut verified: Vec<VerifierKey> = Vec::new();
        let mut unknown: Vec<NoteSignature> = Vec::new();
        for sig in &self.signatures {
            let Some(key) = known_key(known, &sig.name, sig.key_id)? else {
                if !unknown.contains(sig) {
                    unknown.push(sig.clone());
                }
                continue;
            };
            let ok = Signature::from_slice(&sig.signature)
                .is_ok_and(|s| key.key.verify_strict(self.text.as_bytes(), &s).is_ok());
            if !ok {
                return Err(NoteError::InvalidSignature {
                    name: sig.name.clone(),
                    id: sig.key_id,
                });
            }
            if !verified.contains(key) {
                verified.push(key.clone());
            }
        }
        if verified.is_empty() {
            return Err(NoteError::NoVerifiedSignature);
        }
        Ok(Opened {
            text: self.text.clone(),
            verified,
            unknown,
        })
    }
}

/// The known key with this name and ID; two different ones are an error, since either might
/// be the signer.
fn known_key<'a>(
    known: &'a [VerifierKey],
    name: &str,
    id: u32,
) -> Result<Option<&'a VerifierKey>, NoteError> {
    let mut matching = known.iter().filter(|k| k.name == name && k.id == id);
    let first = matching.next();
    if let Some(first) = first {
        if matching.any(|k| k.key != first.key) {
            return Err(NoteError::AmbiguousKey {
                name: name.to_string(),
                id,
            });
        }
    }
    Ok(first)
}

/// Signs `text` (which must end in a newline) with `key` under `name` and returns the note.
pub fn sign(text: &str, name: &str, key: &SigningKey) -> Result<String, NoteError> {
    let mut note = Note::new(text)?;
    note.sign(name, key)?;
    note.to_text()
}

/// Parses and verifies a signed note against `known` keys.
pub fn open(msg: &str, known: &[VerifierKey]) -> Result<Opened, NoteError> {
    Note::parse(msg)?.verify(known)
}

#[cfg(test)]
#[path = "note_tests.rs"]
mod tests;
