//! The `attenu-hook` binary. Everything it does lives in the library; this file only starts it.
//!
//! Claude Code starts this binary once for every hook event, so its start is part of the cost
//! of every tool call. std's usual entry (`fn main`, run by `lang_start`) spends about 0.1 ms
//! here before `main` runs, mostly for its stack-overflow message: it reads `/proc/self/maps`
//! to find the main thread's stack guard and maps an alternate signal stack for every thread.
//! A stack overflow kills the process with a signal with or without that message, so on Linux
//! with glibc (where std still collects the arguments itself, from `.init_array`) the binary
//! enters at C's `main` and does the parts of std's start it relies on: the standard
//! descriptors are open, a closed stdout is an error rather than a SIGPIPE death (so hook mode
//! can still block with exit 2), and stdout is flushed before exit. `tests/binary_start.rs`
//! holds these to what std's start does. Elsewhere it is an ordinary `fn main`.
// (Not in unit-test builds, whose `main` is the test harness.)
#![cfg_attr(all(target_os = "linux", target_env = "gnu", not(test)), no_main)]
#![deny(unsafe_code)]

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(attenu_hook::cli::main())
}

#[cfg(all(target_os = "linux", target_env = "gnu", not(test)))]
mod c_entry {
    use std::ffi::{c_char, c_int};
    use std::io::Write;

    /// A panic that escapes `cli::main` on the command line (std's exit code for it). Hook mode
    /// catches its own and denies; one that still escaped would exit 2, which blocks the call.
    const PANIC_EXIT: u8 = 101;

    // `no_mangle` is what makes this the C entry point; `unsafe_code` flags it because an
    // exported symbol could clash with another of that name. The libc calls are in `start`.
    #[allow(unsafe_code)]
    #[no_mangle]
    extern "C" fn main(argc: c_int, _argv: *const *const c_char) -> c_int {
        if !start() {
            // A standard descriptor is closed and cannot be filled: a file this process opens
            // could become its stdout. std's own start aborts here; exit 2 blocks the call.
            return 2;
        }
        if usize::try_from(argc).ok() != Some(std::env::args_os().len()) {
            // std did not collect the arguments: hook mode would run instead of the command.
            // (Not eprintln!, which panics, and so aborts here, when stderr is gone.)
            let _ = writeln!(std::io::stderr(), "attenu-hook: this build cannot read its arguments (std no longer collects them before main); build it from source again and report this");
            return 2;
        }
        let hook_mode = argc <= 1;
        let code = std::panic::catch_unwind(attenu_hook::cli::main).unwrap_or(if hook_mode {
            2
        } else {
            PANIC_EXIT
        });
        let _ = std::io::stdout().flush();
        c_int::from(code)
    }

    /// What std's start does that this binary relies on. False when a closed standard
    /// descriptor cannot be filled.
    #[allow(unsafe_code)]
    fn start() -> bool {
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        });
        loop {
            // SAFETY: `fds` is a valid array of three pollfd for the duration of the call; a
            // zero timeout never blocks.
            if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } >= 0 {
                break;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return false;
            }
        }
        for pfd in fds {
            if pfd.revents & libc::POLLNVAL != 0 && !fill_closed_descriptor(pfd.fd) {
                return false;
            }
        }
        // SAFETY: setting a signal's disposition to SIG_IGN installs no handler and touches no
        // memory; it is the call std's own start makes.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        true
    }

    /// Opens /dev/null into the lowest free descriptor, which is `fd`: the descriptors are
    /// filled in ascending order, so every one below `fd` is open by then.
    fn fill_closed_descriptor(fd: c_int) -> bool {
        use std::os::fd::IntoRawFd;
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            // Kept open for the life of the process, like the descriptor it stands in for.
            Ok(f) => f.into_raw_fd() == fd,
            Err(_) => false,
        }
    }
}
