//! `attenu-hook-ship`: the network commands of attenu-hook (`ship`, `audit`), in their own
//! binary so the hook's stays small; `attenu-hook ship|audit` runs this one.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(attenu_hook::cli::shipper::main())
}
