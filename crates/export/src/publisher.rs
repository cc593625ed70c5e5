//! The engine's [`Outputs`] for real: Prometheus counters and the Kubernetes Event queue.
//! Every replica counts; only the acting leader announces (a follower's settled drift is
//! still in its episodes and its `/drift`, just not an Event).

use super::events::{EventRequest, EventSink};
use super::metrics::Metrics;
use driftd_core::report::{DriftEntry, StaleLock};
use driftd_engine::Leadership;
use driftd_engine::{Announcement, LiveIdentity, LockAnnouncement, Outputs, PodRef};
use driftd_k8s::TypeKey;
use driftd_store::{EpisodeChanges, StoreError};
use driftd_watch::WatchError;
use k8s_openapi::api::core::v1::ObjectReference;
use std::sync::Arc;
use std::time::Duration;

/// Counts into [`Metrics`] and queues Events (if enabled) while leading.
pub struct Publisher {
    metrics: Arc<Metrics>,
    events: Option<EventSink>,
    leadership: Leadership,
    /// What lock Events without a holder pod are about: driftd's leader Lease.
    home: ObjectReference,
}

impl Publisher {
    pub fn new(
        metrics: Arc<Metrics>,
        events: Option<EventSink>,
        leadership: Leadership,
        home: ObjectReference,
    ) -> Publisher {
        Publisher {
            metrics,
            events,
            leadership,
            home,
        }
    }

    /// The Event sink, if Events are on and this replica leads.
    fn leading_sink(&self, what: &str) -> Option<&EventSink> {
        let sink = self.events.as_ref()?;
        if !self.leadership.is_leader() {
            tracing::debug!(what, "not the leader: the leader publishes the Event");
            return None;
        }
        Some(sink)
    }
}

impl Outputs for Publisher {
    fn watch_event(&mut self, kind: &TypeKey) {
        self.metrics
            .watch_events
            .with_label_values(&[kind.kind.as_str()])
            .inc();
    }

    fn watch_error(&mut self, kind: &TypeKey, _error: &WatchError) {
        self.metrics
            .watch_errors
            .with_label_values(&[kind.kind.as_str()])
            .inc();
    }

    fn compared(&mut self, took: Duration) {
        self.metrics.diff_duration.observe(took.as_secs_f64());
    }

    fn announce(
        &mut self,
        announcement: Announcement,
        entry: &DriftEntry,
        live: Option<&LiveIdentity>,
    ) {
        let Some(sink) = self.leading_sink(&entry.name) else {
            return;
        };
        let request = match announcement {
            Announcement::Detected => EventRequest::detected(entry, live),
            Announcement::Resolved => EventRequest::resolved(entry, live),
        };
        sink.send(request, &self.metrics);
    }

    fn store_error(&mut self, what: &str, error: &StoreError) {
        self.metrics.store_errors.record(what, error);
    }

    fn episodes(&mut self, changes: &EpisodeChanges) {
        self.metrics.episodes.record(changes);
    }

    fn announce_lock(&mut self, what: LockAnnouncement, lock: &StaleLock, pod: Option<&PodRef>) {
        let Some(sink) = self.leading_sink(&lock.id) else {
            return;
        };
        sink.send(
            EventRequest::lock(&what, lock, pod, &self.home),
            &self.metrics,
        );
    }
}
