//! A JSON text that does not parse, as data: serde_json's own error (its message, line,
//! column and category), shared so the errors that carry it stay `Clone` and comparable.

use serde_json::error::Category;
use std::fmt;
use std::sync::Arc;

/// Why a text is not JSON; shown exactly as serde_json shows it ("expected value at line 1
/// column 2").
#[derive(Debug, Clone)]
pub struct SyntaxError(Arc<serde_json::Error>);

impl SyntaxError {
    /// The line (from 1) where reading stopped.
    pub fn line(&self) -> usize {
        self.0.line()
    }

    /// The column (from 1) where reading stopped.
    pub fn column(&self) -> usize {
        self.0.column()
    }

    /// Whether the text was cut short, malformed, or of the wrong shape.
    pub fn category(&self) -> Category {
        self.0.classify()
    }

    /// The nesting went past the reader's depth limit (128 levels). serde_json gives this
    /// no category of its own, only its message, so the message is what is asked.
    pub fn is_too_deep(&self) -> bool {
        self.0.to_string().starts_with("recursion limit exceeded")
    }

    /// serde_json's error itself.
    pub fn inner(&self) -> &serde_json::Error {
        &self.0
    }
}

impl From<serde_json::Error> for SyntaxError {
    fn from(e: serde_json::Error) -> Self {
        SyntaxError(Arc::new(e))
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SyntaxError {}

/// Two are equal when they say the same thing at the same place.
impl PartialEq for SyntaxError {
    fn eq(&self, other: &Self) -> bool {
        (self.line(), self.column(), self.category())
            == (other.line(), other.column(), other.category())
            && self.to_string() == other.to_string()
    }
}

impl Eq for SyntaxError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> SyntaxError {
        serde_json::from_str::<serde_json::Value>(text)
            .unwrap_err()
            .into()
    }

    #[test]
    fn it_shows_what_serde_json_shows_and_keeps_where() {
        let e = error("{\"a\": 01}");
        let theirs = serde_json::from_str::<serde_json::Value>("{\"a\": 01}").unwrap_err();
        assert_eq!(e.to_string(), theirs.to_string());
        assert_eq!((e.line(), e.column()), (1, 8));
        assert_eq!(e.category(), Category::Syntax);
        assert_eq!(e, e.clone());
        assert_ne!(e, error("[1,"));
        assert!(error(&"[".repeat(200)).is_too_deep());
        assert!(!e.is_too_deep());
    }
}
