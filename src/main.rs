#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    attenu_hook::cli::main()
}
