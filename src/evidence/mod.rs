//! Evidence: the anchor key, signed bundle export, and offline verification.
pub mod bundle;
pub mod checkpoint;
pub mod doc;
pub mod doc_exact;
pub mod keys;
pub mod log;
pub mod outbox;
pub mod prove;
pub mod queue;
pub mod strict;
pub mod verify;
