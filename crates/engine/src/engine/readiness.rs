//! What the index says of all live state together: coverage, watch health, and readiness
//! (every watcher finished its first list), with the memory work due when it comes.

use super::Engine;
use crate::outputs::Outputs;
use driftd_watch::WatchControl;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Publishes what is derived from all live state: coverage and readiness.
    pub(super) fn publish_state(&mut self) {
        let owned = self.unmanaged.owned_covered();
        let ready = self.watching.lists.all_listed();
        let health = self.watching.lists.health();
        let was_ready = self.publication.index.read().unwrap().ready();
        if !ready && !was_ready {
            self.train_packing_early();
        }
        if ready && !was_ready {
            // The first lists' trees are freed: their pages go back before ready is said.
            self.compact_memory();
        }
        let mut index = self.publication.index.write().unwrap();
        index.set_owned_covered(owned);
        index.set_watch_health(health);
        if ready && !index.ready() {
            tracing::info!(
                desired_bytes = self.wanted.desired.packed_bytes(),
                live_bytes = self.wanted.tracked.packed_bytes(),
                "every watcher finished its first list: ready"
            );
            index.set_ready(true);
        }
        // Once ready, stay ready: a re-list after a commit is not an outage.
    }
}
