//! Fault switches for the shipper's race tests, read from the environment only in a build
//! with the `test-faults` feature; in any other build they do nothing.

/// `ATTENU_SHIP_TEST_PAUSE=<dir>`: after the last scan found nothing new, and before the lock
/// is let go, says `paused` there and waits (at most 60 s) until the test says `go`. This is
/// the window in which a shipper started for a newly queued object finds the lock taken.
pub(super) fn pause_before_release() {
    #[cfg(feature = "test-faults")]
    {
        use std::time::{Duration, Instant};
        let Some(dir) = std::env::var_os("ATTENU_SHIP_TEST_PAUSE").map(std::path::PathBuf::from)
        else {
            return;
        };
        let _ = std::fs::write(dir.join("paused"), b"");
        let until = Instant::now() + Duration::from_secs(60);
        while !dir.join("go").exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
