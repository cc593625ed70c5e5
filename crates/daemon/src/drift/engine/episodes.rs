//! The engine's side of drift episodes: a drift state that held for the settle time is
//! recorded in the store and announced as an Event, and open episodes are kept current.

use super::*;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Records (episodes) and announces (Events) every drift state that held for the
    /// settle time.
    pub fn settle_due(&mut self) {
        for Report { key, drift } in self.settling.due(self.clock.now()) {
            let Some(entry) = self.index.read().unwrap().get(&key).cloned() else {
                continue;
            };
            let live = self.live_copy(&key);
            let live = live.as_ref();
            match drift {
                Some(drift) => {
                    let since = entry.since.unwrap_or_else(|| self.clock.wall());
                    if let Err(err) = self.store.record_drift(
                        &key,
                        &entry.source,
                        drift.class.as_str(),
                        since,
                        &drift.paths,
                    ) {
                        tracing::error!(object = %key, error = %err, "cannot record drift episode");
                        self.outputs
                            .store_error("cannot record drift episode", &err);
                    }
                    tracing::info!(object = %key, class = drift.class.as_str(), paths = ?drift.paths, "drift detected");
                    self.outputs.announce(Announcement::Detected, &entry, live);
                }
                None => {
                    if let Err(err) = self.store.resolve_drift(&key, self.clock.wall()) {
                        tracing::error!(object = %key, error = %err, "cannot close drift episode");
                        self.outputs.store_error("cannot close drift episode", &err);
                    }
                    tracing::info!(object = %key, "drift resolved");
                    self.outputs.announce(Announcement::Resolved, &entry, live);
                }
            }
        }
    }

    /// Moves `last_seen` of every reported, still-drifting episode to now, so the episode
    /// record says how long drift really lasted (the run loop calls it every minute).
    pub fn touch_open_episodes(&mut self) {
        let now = self.clock.wall();
        let index = self.index.read().unwrap();
        for (key, drift) in self.settling.steady() {
            let Some(entry) = index.get(key) else {
                continue;
            };
            if let Err(err) =
                self.store
                    .record_drift(key, &entry.source, drift.class.as_str(), now, &drift.paths)
            {
                tracing::error!(object = %key, error = %err, "cannot update drift episode");
                self.outputs
                    .store_error("cannot update drift episode", &err);
            }
        }
    }
}
