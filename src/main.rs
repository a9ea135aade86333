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
//!
//! In hook mode it also keeps the deadline with a signal instead of the library's watchdog
//! thread, which costs about 0.2 ms of every call here (starting it wakes the other CPU, and
//! the exit has to stop it): see `deadline_signal`.
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

    /// A panic that escapes `cli::main` (none should: hook mode catches its own and denies).
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
            eprintln!("attenu-hook: this build cannot read its arguments (std no longer collects them before main); build it from source again and report this");
            return 2;
        }
        let hook_mode = argc <= 1;
        let timer: Option<attenu_hook::hook::DeadlineTimer<'_>> = (hook_mode
            && std::env::var_os("ATTENU_HOOK_TEST_WATCHDOG_THREAD").is_none()
            && deadline_signal::install())
        .then_some(&deadline_signal::arm);
        // Nothing the timer refers to is left half-changed by a panic: it is a plain function.
        let run = std::panic::AssertUnwindSafe(|| attenu_hook::cli::main_with(timer));
        let code = std::panic::catch_unwind(run).unwrap_or(PANIC_EXIT);
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
        // SAFETY: `fds` is a valid array of three pollfd for the duration of the call; a zero
        // timeout never blocks.
        if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } < 0 {
            return false;
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

    /// Hook mode's deadline as SIGALRM from an interval timer (`ITIMER_REAL` counts elapsed
    /// time, so a change of the system clock does not move it). The handler does what the
    /// library's watchdog thread does, with async-signal-safe calls only: if the main thread
    /// has not claimed the answer, it writes the deny prepared before the timer was first
    /// armed and ends the process with exit 2. A main thread stuck in the kernel (a disk that
    /// does not answer) delays that exit as it would delay the watchdog thread's.
    mod deadline_signal {
        use std::ffi::c_int;
        use std::sync::OnceLock;
        use std::time::{Duration, Instant};

        /// The deny the handler writes, as (stdout, stderr) bytes.
        static OUTPUT: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();

        /// Prepares the answer and installs the handler. False if a call failed: the library's
        /// watchdog thread then keeps the deadline.
        #[allow(unsafe_code)]
        pub fn install() -> bool {
            let _ = OUTPUT.set(attenu_hook::hook::deadline_output());
            // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, empty mask, no flags),
            // and every field that matters is set below; the pointers passed are to live
            // locals. The handler only calls async-signal-safe functions.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_deadline as extern "C" fn(c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()) != 0 {
                    return false;
                }
                // A blocked SIGALRM (the mask is inherited across exec) would never arrive.
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGALRM);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) == 0
            }
        }

        /// Sets the timer to fire at `at` (at once if it has passed).
        #[allow(unsafe_code)]
        pub fn arm(at: Instant) {
            // Zero would disarm the timer rather than fire it.
            let left = at
                .saturating_duration_since(Instant::now())
                .max(Duration::from_micros(1));
            let timer = libc::itimerval {
                it_interval: libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                },
                it_value: libc::timeval {
                    tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
                    tv_usec: libc::suseconds_t::from(left.subsec_micros()),
                },
            };
            // SAFETY: `timer` is a valid itimerval for the duration of the call, and the old
            // value is not asked for. With these values setitimer cannot fail.
            unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
        }

        #[allow(unsafe_code)]
        extern "C" fn on_deadline(_signal: c_int) {
            if !attenu_hook::hook::claim_answer() {
                // The main thread is answering; it exits on its own.
                return;
            }
            if let Some((stdout, stderr)) = OUTPUT.get() {
                write_all(1, stdout);
                write_all(2, stderr);
            }
            // SAFETY: _exit is async-signal-safe and ends the process without running anything.
            unsafe { libc::_exit(2) }
        }

        #[allow(unsafe_code)]
        fn write_all(fd: c_int, mut bytes: &[u8]) {
            while !bytes.is_empty() {
                // SAFETY: write(2) is async-signal-safe; `bytes` is valid for its length.
                let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
                match usize::try_from(n) {
                    Ok(n) if n > 0 => bytes = &bytes[n..],
                    _ => return,
                }
            }
        }
    }
}
