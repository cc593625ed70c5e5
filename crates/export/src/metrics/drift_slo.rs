//! Drift as a service level: episodes opened and closed (counters per source and class),
//! the time from detection to resolution (a histogram per source) and the oldest open
//! drift (a timestamp gauge per source). Labels are source and class only, never an
//! object: these series stay few however many objects drift.
//!
//! The counters and histogram count the episodes the engine records (drift that held for
//! `settle_seconds`); an episode an earlier run opened is observed with its whole duration
//! from when it was first seen. The oldest open drift is read from the drift index at
//! scrape time, so it agrees with `/drift`: the earliest `since` of the source's drifting
//! objects.
//!
//! The oldest drift is a timestamp (`driftd_drift_oldest_open_timestamp_seconds`), not an
//! age, as kube-state-metrics (`kube_pod_start_time`) and node_exporter
//! (`node_boot_time_seconds`) export times: it changes only when the oldest drift does, and
//! rules take the age exactly at evaluation time with `time() - x`; a gauge of age would be
//! stale by the scrape interval and grow in every sample.

use driftd_core::report::{DriftClass, DriftEntry};
use driftd_store::EpisodeChanges;
use prometheus::core::Collector;
use prometheus::{GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, Opts};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// Upper bounds of the resolution histogram, in seconds: 10 s to 4 weeks, so both a revert
/// within minutes and drift left for weeks land in a bucket of their own scale (1 m, 5 m,
/// 15 m, 30 m, 1 h, 2 h, 4 h, 8 h, 1 d, 2 d, 1 w, 2 w, 4 w).
pub const RESOLUTION_BUCKETS: [f64; 15] = [
    10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 172800.0,
    604800.0, 1209600.0, 2419200.0,
];

/// Classes an episode can have (everything a desired object can drift as).
const EPISODE_CLASSES: [DriftClass; 5] = [
    DriftClass::Modified,
    DriftClass::Missing,
    DriftClass::Uncommitted,
    DriftClass::StaleConfig,
    DriftClass::Rejected,
];

/// The counted families (see the module doc).
pub struct DriftEpisodes {
    pub opened: IntCounterVec,
    pub closed: IntCounterVec,
    pub resolution: HistogramVec,
    /// The sources that have series, so that those of a source gone from the store go too.
    sources: Mutex<BTreeSet<String>>,
}

impl DriftEpisodes {
    pub fn new() -> DriftEpisodes {
        DriftEpisodes {
            opened: IntCounterVec::new(
                Opts::new(
                    "driftd_drift_episodes_opened_total",
                    "Drift episodes opened (drift that held for settle_seconds), by source and class.",
                ),
                &["source", "class"],
            )
            .unwrap(),
            closed: IntCounterVec::new(
                Opts::new(
                    "driftd_drift_episodes_closed_total",
                    "Drift episodes closed (reverted, remediated, committed, deleted, no longer desired, or drifting in another class), by source and class.",
                ),
                &["source", "class"],
            )
            .unwrap(),
            resolution: HistogramVec::new(
                HistogramOpts::new(
                    "driftd_drift_resolution_seconds",
                    "Time from detection of a drift episode to its end, by source (episodes an earlier run opened count from when it first saw them).",
                )
                .buckets(RESOLUTION_BUCKETS.to_vec()),
                &["source"],
            )
            .unwrap(),
            sources: Mutex::new(BTreeSet::new()),
        }
    }

    /// The collectors to register.
    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.opened.clone()),
            Box::new(self.closed.clone()),
            Box::new(self.resolution.clone()),
        ]
    }

    /// Counts what a batch of episode writes opened and closed.
    pub fn record(&self, changes: &EpisodeChanges) {
        let mut sources = self.sources.lock().unwrap();
        let sources_of = changes
            .opened
            .iter()
            .map(|o| &o.source)
            .chain(changes.closed.iter().map(|c| &c.source));
        for source in sources_of {
            if !sources.contains(source) {
                sources.insert(source.clone());
            }
        }
        drop(sources);
        for opened in &changes.opened {
            self.opened
                .with_label_values(&[opened.source.as_str(), opened.class.as_str()])
                .inc();
        }
        for closed in &changes.closed {
            self.closed
                .with_label_values(&[closed.source.as_str(), closed.class.as_str()])
                .inc();
            self.resolution
                .with_label_values(&[closed.source.as_str()])
                .observe(closed.seconds());
        }
    }

    /// Creates the series of the known sources at 0, so that `increase()` sees their first
    /// episode and dashboards show 0 rather than no data; drops those of sources no longer
    /// known (as the other per-source families do: a source gone from the store is gone
    /// from `/metrics`).
    pub fn know_sources<'a>(&self, known: impl Iterator<Item = &'a String>) {
        let known: BTreeSet<&String> = known.collect();
        let mut sources = self.sources.lock().unwrap();
        sources.retain(|source| {
            if known.contains(source) {
                return true;
            }
            for class in EPISODE_CLASSES {
                let labels = [source.as_str(), class.as_str()];
                let _ = self.opened.remove_label_values(&labels);
                let _ = self.closed.remove_label_values(&labels);
            }
            let _ = self.resolution.remove_label_values(&[source.as_str()]);
            false
        });
        for source in known {
            if !sources.contains(source) {
                sources.insert(source.clone());
            }
            for class in EPISODE_CLASSES {
                self.opened.with_label_values(&[source, class.as_str()]);
                self.closed.with_label_values(&[source, class.as_str()]);
            }
            self.resolution.with_label_values(&[source]);
        }
    }
}

impl Default for DriftEpisodes {
    fn default() -> Self {
        Self::new()
    }
}

/// The earliest `since` of each source's drifting objects, as the index is read.
#[derive(Default)]
pub(super) struct OldestOpen<'a> {
    by_source: HashMap<&'a str, jiff::Timestamp>,
}

impl<'a> OldestOpen<'a> {
    /// Takes one index entry into account (`unmanaged` and in-sync ones have no source's
    /// drift).
    pub(super) fn see(&mut self, entry: &'a DriftEntry) {
        if matches!(entry.class, DriftClass::InSync | DriftClass::Unmanaged) {
            return;
        }
        let Some(since) = entry.since else { return };
        self.by_source
            .entry(entry.source.as_str())
            .and_modify(|t| *t = (*t).min(since))
            .or_insert(since);
    }

    /// `driftd_drift_oldest_open_timestamp_seconds`: a series per source with open drift.
    pub(super) fn gauge(self) -> GaugeVec {
        let gauge = GaugeVec::new(
            Opts::new(
                "driftd_drift_oldest_open_timestamp_seconds",
                "Unix time at which the oldest drift still open in the source began (absent while nothing drifts); alert on time() - this.",
            ),
            &["source"],
        )
        .unwrap();
        for (source, since) in self.by_source {
            gauge
                .with_label_values(&[source])
                .set(since.as_millisecond() as f64 / 1000.0);
        }
        gauge
    }
}
