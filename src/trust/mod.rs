//! A fleet under one team key. The team keeps an OpenSSH CA and certifies each machine's or
//! runner's signing key; a reviewer pins only the CA (`audit --ca`). This module holds what a
//! certificate must say ([`cert`]), which key signs on this machine ([`signer`]), and
//! enrollment ([`enroll`]). docs/SHIPPING.md#team-rollout walks a team through it.

pub mod cert;
pub mod enroll;
pub mod identity;
pub mod pin;
pub mod signer;

pub use cert::{Cert, CertProblem, CertView, Revocations, TrustedCas};
pub use pin::{CaPin, CaPinError};
pub use signer::{Signer, SignerError};
