//! `attenu-hook report`: one self-contained HTML page a reviewer opens in a browser, from
//! bundles (each verified here, by [`crate::evidence::verify`]) and audit JSON.
//!
//! * [`model`]: a bundle's view, built from the verifier's report and the entries as the
//!   verifier's reader parsed them; the verdict is never recomputed.
//! * [`fleet`]: an audit's JSON, read back with the audit's own types, and its part of the page.
//! * [`html`]: the page, the overall verdict first; [`sections`]: one bundle's part;
//!   [`escape`]: every string from an input, made safe for HTML.
//!
//! Everything here is pure: the command (`crate::cli`) reads the files and writes the page.
//! The same inputs give the same page, byte for byte. docs/REPORT.md says what the page shows.

pub mod escape;
pub mod fleet;
pub mod html;
pub mod model;
mod sections;
#[cfg(test)]
mod tests;

use crate::evidence::verify::{verify_bundle_bytes, AnchorKey, InputError};
use crate::json::strict;
use crate::protocol::Exit;
use fleet::AuditView;
use html::Tone;
use model::{BundleView, KeyUsed, Source};

/// One input of the page.
#[derive(Debug, Clone)]
pub enum Input {
    Bundle(Box<BundleView>),
    Audit(AuditView),
}

/// Every input, in the order given.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub inputs: Vec<Input>,
}

/// Why an input file cannot be shown at all (exit 2, no page).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Bundle(#[from] InputError),
    #[error(
        "it looks like the JSON of `attenu-hook audit --json` but cannot be read as one ({0})"
    )]
    Audit(#[source] serde_json::Error),
}

impl Page {
    pub fn bundles(&self) -> impl Iterator<Item = &BundleView> {
        self.inputs.iter().filter_map(|i| match i {
            Input::Bundle(b) => Some(b.as_ref()),
            Input::Audit(_) => None,
        })
    }

    pub fn audits_iter(&self) -> impl Iterator<Item = &AuditView> {
        self.inputs.iter().filter_map(|i| match i {
            Input::Audit(a) => Some(a),
            Input::Bundle(_) => None,
        })
    }

    pub fn audits(&self) -> usize {
        self.audits_iter().count()
    }

    /// The worst tone of any input.
    pub fn tone(&self) -> Tone {
        let bundles = self.bundles().map(|b| html::verdict(b).1);
        let audits = self.audits_iter().map(|a| {
            if a.report.passes() {
                Tone::Good
            } else {
                Tone::Bad
            }
        });
        bundles.chain(audits).min().unwrap_or(Tone::Good)
    }

    /// The exit code, as `verify` and `audit` would give: 1 when a bundle is invalid or the
    /// audit fails, else 3 when a bundle verified only under a key that was not pinned, else 4
    /// when a bundle carries a notice (a lost sealed state its ledger records), else 0.
    pub fn exit(&self) -> Exit {
        let failed = self.bundles().any(|b| !b.report.valid)
            || self.audits_iter().any(|a| !a.report.passes());
        if failed {
            Exit::CheckFailed
        } else if self
            .bundles()
            .any(|b| b.report.key == crate::evidence::verify::KeyTrust::BundleSide)
        {
            Exit::ValidUnpinned
        } else if self.bundles().any(|b| !b.report.notices.is_empty()) {
            Exit::ValidWithNotice
        } else {
            Exit::Success
        }
    }

    /// The page's title: the verdict over every input, and what it is about.
    pub fn title(&self) -> String {
        html::page_title(self)
    }

    pub fn render(&self) -> String {
        html::render(self)
    }
}

/// One input file's bytes as the page shows them: the audit's JSON when it is one, else a
/// bundle verified under `key` (`key_used` says which key that is, for the page).
pub fn read_input(
    path: &str,
    bytes: &[u8],
    key: &AnchorKey,
    key_used: KeyUsed,
) -> Result<Input, LoadError> {
    let source = Source {
        path: path.to_string(),
        bytes: bytes.len() as u64,
        sha256: crate::ledger::chain::sha256_hex(bytes),
    };
    let text = std::str::from_utf8(bytes).ok();
    let text = text.map(|t| t.strip_prefix('\u{feff}').unwrap_or(t));
    // The verifier's own reader; on a file it refuses, the verifier says why.
    let Some(parsed) = text.and_then(|t| strict::parse(t).ok()) else {
        return Err(verify_bundle_bytes(bytes, key)
            .err()
            .unwrap_or(InputError::Unreadable)
            .into());
    };
    if fleet::is_audit(&parsed.value) {
        let report = serde_json::from_value(parsed.value.to_value()).map_err(LoadError::Audit)?;
        return Ok(Input::Audit(AuditView { source, report }));
    }
    let report = verify_bundle_bytes(bytes, key)?;
    Ok(Input::Bundle(Box::new(model::bundle_view(
        source,
        report,
        key_used,
        &parsed.value,
    ))))
}
