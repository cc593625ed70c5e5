//! The engine's side of watch health: a kind is unhealthy (its objects `stale`) from a
//! failed attempt until the server answers again, and a resourceVersion lower than one
//! already seen (a restored API state) lists the kind afresh. What the index says of it all
//! (coverage, watch health, readiness) is published from here.

use super::*;
use driftd_core::diff::pointer;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// A failed attempt makes `kind` unhealthy (its objects `stale`) until the server
    /// answers again; the first failure and the recovery are logged.
    pub(super) fn health_step(&mut self, kind: &TypeKey, event: &WatchEvent) {
        let now = self.clock.wall();
        match event {
            WatchEvent::Error(_) => {
                if self.lists.failed(kind, now) {
                    tracing::warn!(kind = %kind, "watch unhealthy: what driftd shows of this kind is stale until the API server answers again");
                }
            }
            // The server's current resourceVersion is asked before a watch resumes; that
            // answer alone does not prove the watch works.
            WatchEvent::Position(_) => {}
            _ => {
                if let Some(since) = self.lists.answered(kind, now) {
                    let outage = now.duration_since(since);
                    tracing::info!(kind = %kind, since = %since, outage_seconds = outage.as_secs_f64(), "watch healthy again");
                }
            }
        }
    }

    /// A watch event's object carries the server's position between lists.
    pub(super) fn event_position(&mut self, kind: &TypeKey, object: &Value) {
        let Some(rv) =
            pointer::at(object, &["metadata", "resourceVersion"]).and_then(Value::as_str)
        else {
            return;
        };
        if self
            .lists
            .position(kind, rv, Position::Event, &mut self.watches)
        {
            self.went_back(kind, rv);
        }
    }

    pub(super) fn went_back(&self, kind: &TypeKey, rv: &str) {
        tracing::warn!(kind = %kind, resource_version = rv, "the API server's resourceVersion went back (its state was restored?): listing the kind afresh");
    }

    /// Publishes what is derived from all live state: coverage and readiness.
    pub(super) fn publish_state(&mut self) {
        let owned = self.coverage.is_on().then_some(self.owned_covered);
        let ready = self.lists.all_listed();
        let health = self.lists.health();
        let was_ready = self.index.read().unwrap().ready();
        if !ready && !was_ready {
            self.train_packing_early();
        }
        if ready && !was_ready {
            // The first lists' trees are freed: their pages go back before ready is said.
            self.compact_memory();
        }
        let mut index = self.index.write().unwrap();
        index.set_owned_covered(owned);
        index.set_watch_health(health);
        if ready && !index.ready() {
            tracing::info!(
                desired_bytes = self.desired.packed_bytes(),
                live_bytes = self.tracked.packed_bytes(),
                "every watcher finished its first list: ready"
            );
            index.set_ready(true);
        }
        // Once ready, stay ready: a re-list after a commit is not an outage.
    }
}
