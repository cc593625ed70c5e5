//! The engine's [`Outputs`] for real: Prometheus counters and the Kubernetes Event queue.
//! Every replica counts; only the acting leader announces (a follower's settled drift is
//! still in its episodes and its `/drift`, just not an Event).

use super::events::{EventRequest, EventSink};
use super::metrics::Metrics;
use crate::drift::{Announcement, Outputs};
use crate::leader::Leadership;
use crate::watch::WatchError;
use driftd_core::report::DriftEntry;
use driftd_k8s::TypeKey;
use driftd_store::StoreError;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Counts into [`Metrics`] and queues Events (if enabled) while leading.
pub struct Publisher {
    metrics: Arc<Metrics>,
    events: Option<EventSink>,
    leadership: Leadership,
}

impl Publisher {
    pub fn new(
        metrics: Arc<Metrics>,
        events: Option<EventSink>,
        leadership: Leadership,
    ) -> Publisher {
        Publisher {
            metrics,
            events,
            leadership,
        }
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

    fn announce(&mut self, announcement: Announcement, entry: &DriftEntry, live: Option<&Value>) {
        let Some(sink) = &self.events else {
            return;
        };
        if !self.leadership.is_leader() {
            tracing::debug!(kind = %entry.kind, name = %entry.name, ?announcement, "not the leader: the leader publishes the Event");
            return;
        }
        let request = match announcement {
            Announcement::Detected => EventRequest::detected(entry, live),
            Announcement::Resolved => EventRequest::resolved(entry, live),
        };
        sink.send(request, &self.metrics);
    }

    fn store_error(&mut self, what: &str, error: &StoreError) {
        self.metrics.store_errors.record(what, error);
    }
}
