//! Prometheus metrics, designed after kube-state-metrics: per-object series only for drifting
//! objects (bounded by a cap), `*_timestamp_seconds` for times, `_info`-style build metadata.
//!
//! Cardinality: `driftd_objects` has sources x classes series; `driftd_object_drift` and
//! `driftd_object_drift_since_timestamp_seconds` one each per drifting object, at most
//! `metrics.max_object_series`; the watch counters one per watched kind.

use driftd_core::diff::DriftClass;
use driftd_core::report::DriftEntry;
use prometheus::{
    Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::collections::HashSet;
use std::sync::Mutex;

/// Classes a desired object can be in (`unmanaged` objects belong to no source).
const SOURCE_CLASSES: [DriftClass; 5] = [
    DriftClass::InSync,
    DriftClass::Modified,
    DriftClass::Missing,
    DriftClass::Uncommitted,
    DriftClass::StaleConfig,
];

const OBJECT_LABELS: &[&str] = &["source", "namespace", "kind", "name", "class"];

/// All metrics driftd exports, registered in one registry.
pub struct Metrics {
    registry: Registry,
    objects: IntGaugeVec,
    object_drift: IntGaugeVec,
    object_drift_since: GaugeVec,
    series_omitted: IntCounter,
    revision_timestamp: GaugeVec,
    pub watch_events: IntCounterVec,
    pub watch_errors: IntCounterVec,
    pub diff_duration: Histogram,
    pub ready: IntGauge,
    pub events_dropped: IntCounter,
    unmanaged: IntGaugeVec,
    pub coverage_ratio: Gauge,
    pub rules_expired: IntGauge,
    max_object_series: usize,
    /// Label sets of the per-object series currently exported.
    exported: Mutex<HashSet<Vec<String>>>,
}

impl Metrics {
    pub fn new(max_object_series: usize) -> Metrics {
        let registry = Registry::new();
        let objects = IntGaugeVec::new(
            Opts::new(
                "driftd_objects",
                "Desired objects by source and drift class (in_sync included).",
            ),
            &["source", "class"],
        )
        .unwrap();
        let object_drift = IntGaugeVec::new(
            Opts::new(
                "driftd_object_drift",
                "1 for each drifting object (capped by metrics.max_object_series).",
            ),
            OBJECT_LABELS,
        )
        .unwrap();
        let object_drift_since = GaugeVec::new(
            Opts::new(
                "driftd_object_drift_since_timestamp_seconds",
                "Unix time at which the object started drifting.",
            ),
            OBJECT_LABELS,
        )
        .unwrap();
        let series_omitted = IntCounter::new(
            "driftd_object_drift_series_omitted_total",
            "Drifting objects that got no per-object series because the cap was reached.",
        )
        .unwrap();
        let revision_timestamp = GaugeVec::new(
            Opts::new(
                "driftd_desired_revision_timestamp_seconds",
                "Commit time of the newest revision of each source.",
            ),
            &["source"],
        )
        .unwrap();
        let watch_events = IntCounterVec::new(
            Opts::new(
                "driftd_watch_events_total",
                "Watch events received, by kind.",
            ),
            &["kind"],
        )
        .unwrap();
        let watch_errors = IntCounterVec::new(
            Opts::new(
                "driftd_watch_errors_total",
                "Watch or discovery failures, by kind (each is retried with backoff).",
            ),
            &["kind"],
        )
        .unwrap();
        let diff_duration = Histogram::with_opts(
            HistogramOpts::new(
                "driftd_diff_duration_seconds",
                "Time to compare one desired object with its live state.",
            )
            .buckets(vec![
                0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25,
            ]),
        )
        .unwrap();
        let ready = IntGauge::new(
            "driftd_ready",
            "1 once every watcher finished its first list and drift is complete.",
        )
        .unwrap();
        let events_dropped = IntCounter::new(
            "driftd_kube_events_dropped_total",
            "Kubernetes Events not published (queue full or API error).",
        )
        .unwrap();
        let unmanaged = IntGaugeVec::new(
            Opts::new(
                "driftd_unmanaged_objects",
                "Live objects of covered kinds and namespaces that no source owns.",
            ),
            &["namespace", "kind"],
        )
        .unwrap();
        let coverage_ratio = Gauge::new(
            "driftd_coverage_ratio",
            "Covered live objects a source owns, over all covered live objects (1 when none).",
        )
        .unwrap();
        let rules_expired = IntGauge::new(
            "driftd_ignore_rules_expired",
            "Ignore rules past their `expires` time, no longer applied.",
        )
        .unwrap();
        let build_info = Gauge::with_opts(
            Opts::new("driftd_build_info", "Build metadata; always 1.")
                .const_label("version", env!("CARGO_PKG_VERSION")),
        )
        .unwrap();
        build_info.set(1.0);
        for collector in [
            Box::new(objects.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(object_drift.clone()),
            Box::new(object_drift_since.clone()),
            Box::new(series_omitted.clone()),
            Box::new(revision_timestamp.clone()),
            Box::new(watch_events.clone()),
            Box::new(watch_errors.clone()),
            Box::new(diff_duration.clone()),
            Box::new(ready.clone()),
            Box::new(events_dropped.clone()),
            Box::new(unmanaged.clone()),
            Box::new(coverage_ratio.clone()),
            Box::new(rules_expired.clone()),
            Box::new(build_info),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Metrics {
            registry,
            objects,
            object_drift,
            object_drift_since,
            series_omitted,
            revision_timestamp,
            watch_events,
            watch_errors,
            diff_duration,
            ready,
            events_dropped,
            unmanaged,
            coverage_ratio,
            rules_expired,
            max_object_series,
            exported: Mutex::new(HashSet::new()),
        }
    }

    /// Keeps the per-object and per-class series in step with one index change.
    pub fn on_entry_change(&self, old: Option<&DriftEntry>, new: Option<&DriftEntry>) {
        if let Some(old) = old {
            self.objects
                .with_label_values(&[&old.source, old.class.as_str()])
                .dec();
            if old.class != DriftClass::InSync {
                let labels = object_labels(old);
                if self.exported.lock().unwrap().remove(&labels) {
                    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
                    let _ = self.object_drift.remove_label_values(&refs);
                    let _ = self.object_drift_since.remove_label_values(&refs);
                }
            }
        }
        if let Some(new) = new {
            self.objects
                .with_label_values(&[&new.source, new.class.as_str()])
                .inc();
            if new.class != DriftClass::InSync {
                let labels = object_labels(new);
                let mut exported = self.exported.lock().unwrap();
                if exported.len() >= self.max_object_series && !exported.contains(&labels) {
                    // Count only a fresh drift, not the same object re-evaluated.
                    if old.is_none_or(|o| o.class == DriftClass::InSync) {
                        self.series_omitted.inc();
                    }
                    return;
                }
                let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
                self.object_drift.with_label_values(&refs).set(1);
                if let Some(since) = new.since {
                    self.object_drift_since
                        .with_label_values(&refs)
                        .set(since.as_millisecond() as f64 / 1000.0);
                }
                exported.insert(labels);
            }
        }
    }

    /// Adds `delta` to the unmanaged count of a namespace and kind; a count back at zero
    /// drops its series.
    pub fn unmanaged_changed(&self, namespace: Option<&str>, kind: &str, delta: i64) {
        let labels = [namespace.unwrap_or(""), kind];
        let gauge = self.unmanaged.with_label_values(&labels);
        gauge.add(delta);
        if gauge.get() <= 0 {
            let _ = self.unmanaged.remove_label_values(&labels);
        }
    }

    pub fn set_revision_timestamp(&self, source: &str, unix_seconds: f64) {
        self.revision_timestamp
            .with_label_values(&[source])
            .set(unix_seconds);
    }

    /// Exports 0 for every class of a known source, so dashboards show 0, not "no data".
    pub fn ensure_source(&self, source: &str) {
        for class in SOURCE_CLASSES {
            self.objects.with_label_values(&[source, class.as_str()]);
        }
    }

    /// Drops every series of a source that is no longer in the store.
    pub fn remove_source(&self, source: &str) {
        let _ = self.revision_timestamp.remove_label_values(&[source]);
        for class in SOURCE_CLASSES {
            let _ = self.objects.remove_label_values(&[source, class.as_str()]);
        }
    }

    /// The text exposition format for `/metrics`.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("encoding to a Vec cannot fail");
        String::from_utf8(buf).expect("exposition format is UTF-8")
    }
}

fn object_labels(entry: &DriftEntry) -> Vec<String> {
    vec![
        entry.source.clone(),
        entry.namespace.clone().unwrap_or_default(),
        entry.kind.clone(),
        entry.name.clone(),
        entry.class.as_str().to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, class: DriftClass) -> DriftEntry {
        DriftEntry {
            source: "shop".into(),
            revision: 1,
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("shop".into()),
            name: name.into(),
            class,
            since: (class != DriftClass::InSync).then(|| "2026-11-30T10:00:00Z".parse().unwrap()),
            changes: vec![],
            patch: Default::default(),
            ignored: vec![],
        }
    }

    #[test]
    fn per_object_series_are_capped_and_counted() {
        let m = Metrics::new(1);
        m.ensure_source("shop");
        let a = entry("a", DriftClass::Modified);
        let b = entry("b", DriftClass::Missing);
        m.on_entry_change(None, Some(&a));
        m.on_entry_change(None, Some(&b));
        // Re-evaluating b while still capped must not count it twice.
        m.on_entry_change(Some(&b), Some(&b));
        let text = m.render();
        assert!(text.contains(r#"driftd_object_drift{class="modified",kind="ConfigMap",name="a",namespace="shop",source="shop"} 1"#), "{text}");
        assert!(!text.contains(r#"name="b""#), "{text}");
        assert!(
            text.contains("driftd_object_drift_series_omitted_total 1"),
            "{text}"
        );
        assert!(text.contains(r#"driftd_object_drift_since_timestamp_seconds{class="modified",kind="ConfigMap",name="a",namespace="shop",source="shop"} 1796032800"#), "{text}");
        assert!(
            text.contains(r#"driftd_objects{class="missing",source="shop"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"driftd_objects{class="in_sync",source="shop"} 0"#),
            "{text}"
        );

        // a resolves: its series goes, freeing the slot for the next drift.
        m.on_entry_change(Some(&a), Some(&entry("a", DriftClass::InSync)));
        let text = m.render();
        assert!(
            !text.contains(r#"driftd_object_drift{class="modified""#),
            "{text}"
        );
        assert!(
            text.contains(r#"driftd_objects{class="in_sync",source="shop"} 1"#),
            "{text}"
        );
        m.remove_source("shop");
        assert!(!m.render().contains(r#"source="shop""#));
    }
}
