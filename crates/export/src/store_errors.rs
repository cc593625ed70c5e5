//! Failed database reads and writes of `serve`: counted in `driftd_store_errors_total` and
//! said in `/readyz`'s body. A database that went read-only (full disk, a read-only mount,
//! permissions) still lets driftd compare and serve `/drift` from memory, but drift
//! episodes stop being recorded; before this, nothing but a log line said so.

use prometheus::IntCounter;
use std::sync::Mutex;
use std::time::SystemTime;

/// The counter and the last failure.
pub struct StoreErrors {
    counter: IntCounter,
    last: Mutex<Option<(SystemTime, String)>>,
}

impl Default for StoreErrors {
    fn default() -> Self {
        StoreErrors {
            counter: IntCounter::new(
                "driftd_store_errors_total",
                "Failed database reads and writes in serve (drift episodes, the desired state).",
            )
            .expect("valid metric"),
            last: Mutex::new(None),
        }
    }
}

impl StoreErrors {
    /// The counter, for the metrics registry.
    pub fn counter(&self) -> IntCounter {
        self.counter.clone()
    }

    /// Counts one failure: `what` the daemon was doing, and the store's error.
    pub fn record(&self, what: &str, error: &dyn std::fmt::Display) {
        self.counter.inc();
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((SystemTime::now(), format!("{what}: {error}")));
    }

    /// One sentence for `/readyz` when anything failed since start, else `None`.
    pub fn summary(&self, now: SystemTime) -> Option<String> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let (at, what) = last.as_ref()?;
        let count = self.counter.get();
        let ago = now.duration_since(*at).unwrap_or_default().as_secs();
        let noun = if count == 1 {
            "operation"
        } else {
            "operations"
        };
        Some(format!(
            "{count} database {noun} failed since start (driftd_store_errors_total); \
             the last {ago}s ago: {}",
            driftd_core::text::escape_control(what)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn summary_counts_and_names_the_last_failure() {
        let errors = StoreErrors::default();
        assert_eq!(errors.summary(SystemTime::now()), None);
        errors.record("cannot record drift episode", &"database: disk I/O error");
        errors.record(
            "cannot close drift episode",
            &"database: attempt to write a readonly database",
        );
        assert_eq!(errors.counter().get(), 2);
        let later = SystemTime::now() + Duration::from_secs(7);
        assert_eq!(
            errors.summary(later).unwrap(),
            "2 database operations failed since start (driftd_store_errors_total); the last 7s \
             ago: cannot close drift episode: database: attempt to write a readonly database"
        );
    }
}
