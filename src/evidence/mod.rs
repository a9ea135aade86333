//! Evidence: the anchor key, signed bundle export, and offline verification.
pub mod bundle;
pub mod checkpoint;
pub mod keys;
pub mod outbox;
pub mod prove;
pub mod queue;
pub mod verify;
