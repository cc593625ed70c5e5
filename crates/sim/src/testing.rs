//! Helpers for tests that drive the simulator (its own and driftd's): waiting for a
//! condition with a deadline instead of sleeping for a fixed time.

use std::time::{Duration, Instant};

/// Polls `check` every 50 ms until it returns `Some`, or panics naming `what` after
/// `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
