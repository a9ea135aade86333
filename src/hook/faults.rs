//! Fault switches for the crash, deadline and race tests, read from the environment only in
//! a build with the `test-faults` feature (`cargo test --features test-faults`); in any other
//! build every switch here does nothing. Each can only make the hook fail or wait, and every
//! failure path denies (or, after the tool ran, stops Claude), so none can widen what is
//! allowed. [`pause`] also serves one command: `log`'s table waits between its two reads of
//! the ledgers (`ATTENU_TEST_PAUSE_BETWEEN_LOG_PASSES`), for the test that replaces one there.

/// `ATTENU_HOOK_TEST_PANIC` panics; `ATTENU_HOOK_TEST_STALL_MS` sleeps.
pub(super) fn after_config() {
    #[cfg(feature = "test-faults")]
    {
        if std::env::var_os("ATTENU_HOOK_TEST_PANIC").is_some() {
            panic!("ATTENU_HOOK_TEST_PANIC is set");
        }
        stall("ATTENU_HOOK_TEST_STALL_MS");
    }
}

/// For the race tests: with the named variable set to a directory, says `derived` there and
/// waits (at most 10 s) until the test says `go`.
pub(crate) fn pause(var: &str) {
    #[cfg(feature = "test-faults")]
    {
        use std::time::{Duration, Instant};
        let Some(dir) = std::env::var_os(var).map(std::path::PathBuf::from) else {
            return;
        };
        let _ = std::fs::write(dir.join("derived"), b"");
        let until = Instant::now() + Duration::from_secs(10);
        while !dir.join("go").exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    #[cfg(not(feature = "test-faults"))]
    let _ = var;
}

/// Sleeps for the milliseconds the named variable gives, if any (the deadline tests, and a
/// stuck disk under the last-resort marker).
pub(super) fn stall(var: &str) {
    #[cfg(feature = "test-faults")]
    if let Some(ms) =
        std::env::var_os(var).and_then(|v| v.to_str().and_then(|v| v.parse::<u64>().ok()))
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    #[cfg(not(feature = "test-faults"))]
    let _ = var;
}
