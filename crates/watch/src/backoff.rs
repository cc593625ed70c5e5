//! How long a watcher waits before its next attempt after a failure: exponential, jittered,
//! and capped low, so a kind is listed again within a few seconds of the API server
//! answering again. (kube-runtime's default, after client-go's reflector, caps at 30 s and
//! only resets after 120 s of success, and the kube client's own retries of 429/503/504 wait
//! up to minutes on top, so recovery would lag an outage by a large part of its length.)
//!
//! Jitter spreads the watchers' retries (one per kind, and every replica) so they do not hit
//! a recovering API server in lockstep: each wait is drawn between half and all of the
//! exponential step.

use rand::Rng;
use std::time::Duration;

/// The first wait after a success.
pub const MIN: Duration = Duration::from_millis(200);
/// No wait is longer than this.
pub const MAX: Duration = Duration::from_secs(5);

/// Exponential backoff with jitter between `min` and `max`; reset after a success.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    /// The next exponential step (before jitter).
    step: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(MIN, MAX)
    }
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Backoff {
        let min = min.min(max);
        Backoff {
            min,
            max,
            step: min,
        }
    }

    /// The next wait: between half and all of the current step, which then doubles up to
    /// the cap.
    pub fn next_wait(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(self.max);
        let half = step / 2;
        half + step.mul_f64(rand::rng().random_range(0.0..=0.5))
    }

    /// After a success the next failure waits `min` again.
    pub fn reset(&mut self) {
        self.step = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_the_cap_with_jitter_and_reset() {
        let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
        let waits: Vec<Duration> = (0..12).map(|_| b.next_wait()).collect();
        // 200 ms, 400 ms, ... each between half and all of its step.
        let mut step = Duration::from_millis(200);
        for w in &waits {
            assert!(
                *w >= step / 2 && *w <= step,
                "{w:?} outside [{:?}, {step:?}]",
                step / 2
            );
            step = (step * 2).min(Duration::from_secs(5));
        }
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(5)));
        assert!(
            waits[11] >= Duration::from_millis(2500),
            "capped, not reset"
        );
        // Jitter: twelve capped draws are not all equal.
        let capped: Vec<Duration> = (0..12).map(|_| b.next_wait()).collect();
        assert!(capped.iter().any(|w| *w != capped[0]), "{capped:?}");
        b.reset();
        assert!(b.next_wait() <= Duration::from_millis(200));
    }
}
