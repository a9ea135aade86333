//! `attenu-hook audit`: judges every session an object store holds, from the store alone.
//!
//! The machines that ship are not trusted: anyone who can write `.attenu/` can cut a ledger
//! short or rewrite it from GENESIS and sign the result with the anchor key. What they cannot
//! do (on a write-once bucket) is take back what was shipped, so the audit reads the shipped
//! checkpoints, entries and bundles (`docs/SHIPPING.md`) and checks that each later state of a
//! chain extends every earlier one. Only keys the reviewer pins (`--pub`) are trusted, and only
//! the store's own times (set by its server) are used for "before" and "after".
//!
//! * [`names`]: the object keys of the layout, parsed.
//! * [`read`]: listing the store, grouping it into sessions and chains, fetching concurrently.
//! * [`objects`]: checking one object (a note, an entries object, a bundle) on its own.
//! * [`history`]: the entries of a chain as a tree of histories (each entry's parent is the
//!   entry its `prev_hash` names), with the Merkle root at every node.
//! * [`judge`]: one chain's status from its objects (pure).
//! * [`report`]: sessions, statuses, the JSON form; [`render`]: the text table.
//!
//! # Statuses, from best to worst
//!
//! `complete` < `open` < `notice` < `unverifiable` < `truncated` < `rewritten` < `forked`.
//! `notice` is a chain whose shipped entries record a lost sealed state (`context.checkpoint_lost`,
//! the `NOTICE` of `verify`): what was shipped is consistent, but entries before the record may
//! have been cut off before they left the machine, so it is never `complete`. A session has
//! the worst status of its chains, and a chain the worst of its findings. A history changed
//! after it was shipped, proven by the project's own signatures, ranks above an object that
//! cannot be checked: it is what a reviewer must act on first. `unverifiable` ranks above
//! `open` and `complete` because the store holds something that cannot be explained.

pub mod history;
pub mod judge;
pub mod names;
pub mod objects;
pub mod read;
pub mod render;
pub mod report;
pub mod trust;

#[cfg(test)]
mod tests;

pub use judge::judge_chain;
pub use read::{audit, ChainObjects, Keys, Stored};
pub use report::{ChainReport, Report, SessionReport, Status};
