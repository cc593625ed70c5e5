//! The engine's time, injected so tests can move it by hand: a monotonic clock for the
//! settle time and a wall clock for "drifting since" and episodes.

use jiff::Timestamp;
use std::time::Instant;

/// Where the engine reads the time.
pub trait Clock: Send + Sync {
    /// Monotonic time: how long a drift state held.
    fn now(&self) -> Instant;
    /// Wall time: what `since`, Events and episodes show.
    fn wall(&self) -> Timestamp;
}

/// The system clocks.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to (tests).
#[cfg(any(test, feature = "testing"))]
pub struct ManualClock {
    start: Instant,
    wall_start: Timestamp,
    elapsed: std::sync::Mutex<std::time::Duration>,
}

#[cfg(any(test, feature = "testing"))]
impl ManualClock {
    /// Starts at `wall_start`.
    pub fn new(wall_start: Timestamp) -> ManualClock {
        ManualClock {
            start: Instant::now(),
            wall_start,
            elapsed: Default::default(),
        }
    }

    pub fn advance(&self, by: std::time::Duration) {
        *self.elapsed.lock().unwrap() += by;
    }
}

#[cfg(any(test, feature = "testing"))]
impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + *self.elapsed.lock().unwrap()
    }

    fn wall(&self) -> Timestamp {
        let elapsed = *self.elapsed.lock().unwrap();
        self.wall_start + jiff::SignedDuration::try_from(elapsed).expect("test durations are small")
    }
}
