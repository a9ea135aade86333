//! The project's anchor key: an Ed25519 key created on first use under `.attenu/`
//! (`anchor.key`, 0600, the 32-byte seed) with its public half in `anchor.pub`, in the
//! recipe's JSON form `{"alg":"EdDSA","kid":...,"public_key":"<64 hex>"}`. Creation is atomic
//! (several hook processes starting at once agree on one key) and an existing key is never
//! replaced: a damaged or mismatched key file is an error that says what to do.

use crate::fs;
use crate::ledger::chain::{hex, unhex};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub struct AnchorKey {
    pub signing: SigningKey,
    pub kid: String,
}

impl AnchorKey {
    pub fn verifying(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.signing.sign(msg).to_bytes()
    }

    /// The key that seals the ledger checkpoint, derived so it is never the signing key itself.
    pub fn checkpoint_mac_key(&self) -> [u8; 32] {
        mac_key_from_seed(&self.signing.to_bytes())
    }

    /// The `anchor.pub` document.
    pub fn public_document(&self) -> Value {
        json!({"alg": "EdDSA", "kid": self.kid, "public_key": hex(self.verifying().as_bytes())})
    }
}

fn mac_key_from_seed(seed: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"attenu-hook checkpoint mac v1\0");
    h.update(seed);
    h.finalize().into()
}

/// The checkpoint MAC key for the hook's hot path: read from the seed alone, without the
/// elliptic-curve work of loading the signing key (the key is created first if it is missing).
pub fn checkpoint_mac_key(attenu_dir: &Path) -> Result<[u8; 32], String> {
    let key_path = attenu_dir.join("anchor.key");
    match fs::read_owned(&key_path, MAX_KEY_FILE_BYTES).map_err(|e| key_read_error(&key_path, e))? {
        Some((bytes, meta)) => Ok(mac_key_from_seed(&parse_seed(&key_path, &bytes, &meta)?.0)),
        None => load_or_create(attenu_dir).map(|k| k.checkpoint_mac_key()),
    }
}

/// The key id: names the key by its public half, so two projects' keys are told apart.
pub fn kid_for(public: &VerifyingKey) -> String {
    format!(
        "attenu-hook-{}",
        &hex(&Sha256::digest(public.as_bytes()))[..16]
    )
}

/// Loads the anchor key, creating it (and `anchor.pub`) on first use.
pub fn load_or_create(attenu_dir: &Path) -> Result<AnchorKey, String> {
    let key_path = attenu_dir.join("anchor.key");
    if !fs::check_regular_file(&key_path)? {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| format!("no randomness for a new anchor key: {e}"))?;
        let signing = SigningKey::from_bytes(&seed);
        let doc =
            json!({"alg": "EdDSA", "kid": kid_for(&signing.verifying_key()), "key": hex(&seed)});
        // Losing the race is fine: the winner's key is loaded below.
        fs::create_exclusive(&key_path, doc.to_string().as_bytes(), 0o600)
            .map_err(|e| format!("cannot create {}: {e}", key_path.display()))?;
    }
    let key = load(&key_path)?;
    ensure_public(attenu_dir, &key)?;
    Ok(key)
}

/// Loads an existing key file (the anchor key, or a reviewer key from `keygen`).
pub fn load(path: &Path) -> Result<AnchorKey, String> {
    let (seed, kid) = read_seed(path)?;
    let signing = SigningKey::from_bytes(&seed);
    let kid = kid.unwrap_or_else(|| kid_for(&signing.verifying_key()));
    Ok(AnchorKey { signing, kid })
}

/// A key file is one small JSON object; anything far larger is not one.
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// The seed and key id of a key file, after checking it is a private regular file.
fn read_seed(path: &Path) -> Result<([u8; 32], Option<String>), String> {
    let (bytes, meta) = fs::read_owned(path, MAX_KEY_FILE_BYTES)
        .map_err(|e| key_read_error(path, e))?
        .ok_or_else(|| format!("cannot read {}: it does not exist", path.display()))?;
    parse_seed(path, &bytes, &meta)
}

/// A key file far too large is not a key file: moving it aside would make the hook create a
/// new key, so the advice is to restore it.
fn key_read_error(path: &Path, e: fs::ReadError) -> String {
    match e {
        fs::ReadError::TooLarge(_) => not_a_key_file(path),
        other => other.into(),
    }
}

fn not_a_key_file(path: &Path) -> String {
    format!("{} is not a key file; restore it from a backup (never replace it silently: bundles signed with it would no longer match)", path.display())
}

/// The seed and key id in `bytes`, read from `path` whose metadata is `meta`.
fn parse_seed(
    path: &Path,
    bytes: &[u8],
    meta: &std::fs::Metadata,
) -> Result<([u8; 32], Option<String>), String> {
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "{} is readable by others; run `chmod 600 {}`",
            path.display(),
            path.display()
        ));
    }
    let doc: Value = serde_json::from_slice(bytes).map_err(|_| not_a_key_file(path))?;
    let seed = doc
        .get("key")
        .and_then(Value::as_str)
        .and_then(unhex)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .filter(|_| doc.get("alg").and_then(Value::as_str) == Some("EdDSA"))
        .ok_or_else(|| {
            format!(
                "{} does not hold an EdDSA key; restore it from a backup",
                path.display()
            )
        })?;
    Ok((
        seed,
        doc.get("kid").and_then(Value::as_str).map(str::to_string),
    ))
}

fn ensure_public(attenu_dir: &Path, key: &AnchorKey) -> Result<(), String> {
    let pub_path = attenu_dir.join("anchor.pub");
    let doc = key.public_document();
    if !fs::check_regular_file(&pub_path)? {
        fs::create_exclusive(&pub_path, doc.to_string().as_bytes(), 0o644)
            .map_err(|e| format!("cannot create {}: {e}", pub_path.display()))?;
    }
    let existing = read_public(&pub_path)?;
    if existing != key.verifying() {
        return Err(format!(
            "{} does not match anchor.key; one of them was replaced. Restore the pair from a backup, or move both aside to start a new key",
            pub_path.display()
        ));
    }
    Ok(())
}

/// Reads a public key file: the `anchor.pub` JSON form, or a bare 64-hex line.
pub fn read_public(path: &Path) -> Result<VerifyingKey, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_public(&text).ok_or_else(|| {
        format!(
            "{} is not an Ed25519 public key (anchor.pub JSON or 64 hex characters)",
            path.display()
        )
    })
}

pub fn parse_public(text: &str) -> Option<VerifyingKey> {
    let text = text.trim();
    let hex_key = match serde_json::from_str::<Value>(text) {
        Ok(doc) => doc.get("public_key")?.as_str()?.to_string(),
        Err(_) => text.to_string(),
    };
    let bytes: [u8; 32] = unhex(&hex_key)?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

/// Writes a new reviewer key (0600) for `keygen`; refuses to overwrite.
pub fn generate_to(path: &Path) -> Result<AnchorKey, String> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness: {e}"))?;
    let signing = SigningKey::from_bytes(&seed);
    let kid = kid_for(&signing.verifying_key());
    let doc = json!({"alg": "EdDSA", "kid": kid, "key": hex(&seed)});
    if !fs::create_exclusive(path, doc.to_string().as_bytes(), 0o600).map_err(|e| {
        let hint = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => format!(
                "; its directory does not exist: create it first (`mkdir -p -m 700 {}`)",
                dir.display()
            ),
            _ => String::new(),
        };
        format!("cannot create {}: {e}{hint}", path.display())
    })? {
        return Err(format!(
            "{} already exists; choose another path (a key is never overwritten)",
            path.display()
        ));
    }
    Ok(AnchorKey { signing, kid })
}
