//! Shipping evidence off the machine: the outbox (`.attenu/outbox/`, which the hook fills with
//! checkpoints and bundles) drained to object storage by a separate `ship` process.
//!
//! The hook never ships and never touches this module's runtime: it writes outbox files and
//! may call [`spawn_detached`]. The `ship` command (and the audit) run [`drain`] or [`Store`]
//! on a current-thread tokio runtime made by [`runtime`], inside their own process only.
//!
//! - [`backfill`]: queue the sessions recorded before shipping was turned on.
//! - [`target`]: `[ship] url`, parsed.
//! - [`store`]: the object store (S3-compatible or a directory), keyed below the URL's prefix.
//! - [`outbox`]: the walk of the outbox and the key alphabet.
//! - [`drain`](mod@drain): read, create, compare, remove; write [`state`].
//! - [`lock`]: one shipper per project, and the bell that makes sure no queued object waits
//!   for a shipper that already left.
//! - [`probe`]: `ship --probe` (and `doctor`): write, read back and delete one object.
//! - [`spawn`]: a detached shipper that holds no descriptor Claude Code waits on.

pub mod backfill;
pub mod credentials;
pub mod drain;
mod faults;
pub mod lock;
pub mod outbox;
pub mod probe;
pub mod spawn;
pub mod state;
pub mod store;
pub mod target;

pub use drain::{conflict_text, drain, DrainError, Failure, Outcome, Report, WhenBusy};
pub use outbox::{component_ok, key_ok, outbox_dir};
pub use spawn::spawn_detached;
pub use state::State;
pub use store::{Created, ObjectInfo, Store, StoreError};
pub use target::Target;

/// The runtime the shipper's async work runs on: one thread, the caller's. Made only in a
/// process that ships or audits; the hook's path never makes one.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
