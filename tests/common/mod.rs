//! Shared helpers for the integration tests (tests/README.md shows them in use): temporary
//! projects and their builders, hook calls built up and run as the real binary with a payload on
//! stdin (the way Claude Code runs it), assertions, and the operator commands.
#![allow(dead_code)]

mod assertions;
mod builders;
pub mod case_steps;
pub mod case_view;
pub mod decision_kit;
mod evidence_kit;
pub mod faults;
mod gate;
pub mod gated;
pub mod harness;
mod ledger_kit;
pub mod operator;
mod payloads;
mod process;
pub mod project_kit;
pub mod snapshot;
pub mod wiring_kit;
pub use assertions::*;
pub use builders::*;
#[allow(unused_imports)]
pub use evidence_kit::*;
pub use gate::*;
#[allow(unused_imports)]
pub use harness::{need_reference_python, need_root, need_test_faults, need_tool, skip};
#[allow(unused_imports)]
pub use ledger_kit::*;
pub use payloads::*;
pub use process::*;
#[allow(unused_imports)]
pub use snapshot::{assert_snapshot, mask, transcript};

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const BIN: &str = env!("CARGO_BIN_EXE_attenu-hook");
