//! Placeholder until the verifier lands (being written in parallel).
use std::path::Path;

pub fn run(_bundle: &Path, _pub_path: Option<&Path>, _json: bool) -> i32 {
    eprintln!("attenu-hook verify: not built yet");
    2
}
