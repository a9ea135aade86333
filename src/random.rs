//! Fresh randomness for ids and salts, read at the edges and passed into the pure builders.

use crate::ledger::chain::hex;

/// The system's randomness is unavailable.
#[derive(Debug, thiserror::Error)]
#[error("no randomness available: {0}")]
pub struct NoRandomness(getrandom::Error);

/// A fresh random hex string of `n` bytes (call ids, salts).
pub fn random_hex(n: usize) -> Result<String, NoRandomness> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(NoRandomness)?;
    Ok(hex(&b))
}
