#![no_main]
//! Fuzz target `settings`: see `fuzz/props.rs` for what it asserts.

#[path = "../props.rs"]
mod props;

libfuzzer_sys::fuzz_target!(|data: &[u8]| props::settings(data));
