//! Unit tests of the audit.
