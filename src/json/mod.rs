//! The JSON layer: every way this crate reads or writes JSON that a hash or a signature
//! depends on, in one place. Anything else (settings, the payload, reports) uses
//! `serde_json::Value` directly.
//!
//! | module | what | used by | speed (why it exists) |
//! |---|---|---|---|
//! | [`canonical`] | RFC 8785 bytes of a `serde_json::Value` (or a [`tree::Json`]) | every hash and signature | the reference form; a format contract with attenu-guard |
//! | [`strict`] | text → [`tree::Json`], noting a duplicate member name | `verify`'s full pass, `report`, a streamed ledger's line not in the exact form | about half the time of `serde_json::Value` on a bundle: no allocation per member |
//! | [`tree`] | [`tree::Json`], a tree whose strings borrow the text and whose objects are sorted member lists | the verifier | see [`strict`] |
//! | [`exact`] | is this text exactly the canonical form? then its entry hash from its own bytes | the store's re-verify, the streaming pass | skips parse + canonicalize + serialize for the lines the hook wrote (nearly all) |
//! | [`exact_tree`] | [`exact`] that also builds the [`tree::Json`] in the same pass | `verify`'s streaming pass, a streamed ledger (`log`, `crate::ledger::read::Stream`) | one pass per entry instead of three; one allocation per object |
//! | [`split`] | cuts a bundle's top-level object and its `entries` into element texts from a stream | `verify`'s streaming pass | a 1M-entry bundle in small memory (BENCHMARKS.md) |
//!
//! The invariant that ties them together: for any text, each fast reader either gives up
//! (`None` / [`split::GiveUp`]) or gives exactly what the slow one gives. [`exact`] answers
//! only when `canonical::to_vec(serde_json::from_slice(text))` would be the text itself, so its
//! hash is the hash the slow path computes; [`exact_tree`] answers with the tree
//! [`strict::parse_one`] would build; [`strict`]'s tree means what `serde_json::from_str::<Value>`
//! reads ([`tree::Json::to_value`] gives that `Value` back). A caller therefore always has a
//! slow path that decides, and a verdict never depends on which path ran. Each module's tests,
//! `evidence::verify::tests::stream` and the fuzz targets `canonical`, `ledger_line` and `bundle`
//! hold these equalities.

pub mod canonical;
mod error;
pub mod exact_tree;
pub mod strict;
pub mod tree;

pub(crate) mod exact;
pub(crate) mod split;

pub use error::SyntaxError;
