//! Keeping the `last_seen` of open drift episodes current, so an episode record says how
//! long drift really lasted. An episode is open until its end held for the settle time, so
//! its object drifts still or did within that time.
//!
//! One update moves every open episode to one time, in steps of [`TOUCH_BATCH`] episodes
//! that the engine takes in turns with watch events: one statement over every open
//! episode of a widely drifting cluster would hold every event back while it runs.

use driftd_store::{Store, StoreError};
use jiff::Timestamp;

/// Open episodes whose `last_seen` one step moves (a few ms).
const TOUCH_BATCH: usize = 2048;

/// The update under way, if any.
#[derive(Debug, Default)]
pub struct LastSeen {
    /// The time episodes are moved to, and the last episode id moved.
    touching: Option<(Timestamp, i64)>,
}

impl LastSeen {
    /// Starts moving every open episode's `last_seen` to `now` (a new update replaces one
    /// still under way: its episodes are moved to the newer time).
    pub fn start(&mut self, now: Timestamp) {
        self.touching = Some((now, 0));
    }

    /// Whether an update is under way: [`LastSeen::step`] has work.
    pub fn due(&self) -> bool {
        self.touching.is_some()
    }

    /// Moves the next [`TOUCH_BATCH`] open episodes; whether more are left. A failed step
    /// ends the update (the next one starts afresh).
    pub fn step(&mut self, store: &Store) -> Result<bool, StoreError> {
        let Some((at, after)) = self.touching else {
            return Ok(false);
        };
        match store.touch_open_episodes(at, after, TOUCH_BATCH) {
            Ok(Some(last)) => {
                self.touching = Some((at, last));
                Ok(true)
            }
            Ok(None) => {
                self.touching = None;
                Ok(false)
            }
            Err(err) => {
                self.touching = None;
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_runs_until_no_open_episode_is_left() {
        let store = Store::open_in_memory().unwrap();
        let mut last_seen = LastSeen::default();
        assert!(!last_seen.due(), "nothing started");
        assert!(!last_seen.step(&store).unwrap(), "no work when not started");
        last_seen.start("2026-11-30T11:00:10Z".parse().unwrap());
        assert!(last_seen.due());
        assert!(!last_seen.step(&store).unwrap(), "no open episode: done");
        assert!(!last_seen.due(), "the update ended");
    }
}
