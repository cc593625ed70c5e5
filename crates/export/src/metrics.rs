//! Prometheus metrics, designed after kube-state-metrics: the drift families are rendered
//! from the drift index at every scrape (as kube-state-metrics renders from its store), so
//! they cannot disagree with `/drift`; counters and the comparison histogram are counted as
//! things happen. Per-object series exist only for drifting objects (bounded by a cap),
//! times are `*_timestamp_seconds`, build metadata is `_info`-style.
//!
//! Cardinality: `driftd_objects` has sources x classes series; `driftd_object_drift` and
//! `driftd_object_drift_since_timestamp_seconds` one each per drifting object, at most
//! `metrics.max_object_series`; the watch counters and `driftd_watch_healthy` /
//! `driftd_watch_last_event_timestamp_seconds` one per watched kind; `driftd_intents`
//! sources x intent states; `driftd_stale_locks` sources x lock kinds (a Pulumi lock's
//! source is its stack); `driftd_stale_config_pods` one per stale (workload, config) pair
//! only, gone once a rollout replaced the pods.

use driftd_core::report::{DriftClass, DriftEntry};
use driftd_engine::{DriftIndex, SharedIndex};
use driftd_engine::{Leadership, Standing};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

mod drift_slo;
use drift_slo::OldestOpen;
pub use drift_slo::{DriftEpisodes, RESOLUTION_BUCKETS};

/// Classes a desired object can be in (`unmanaged` objects belong to no source).
const SOURCE_CLASSES: [DriftClass; 5] = [
    DriftClass::InSync,
    DriftClass::Modified,
    DriftClass::Missing,
    DriftClass::Uncommitted,
    DriftClass::StaleConfig,
];

/// Every intent state, each a `driftd_intents` series per source.
const INTENT_STATES: [&str; 8] = [
    "pending",
    "expired",
    "failed",
    "interrupted",
    "committed",
    "aborted",
    "released",
    "superseded",
];

/// All metrics driftd exports, registered in one registry.
pub struct Metrics {
    registry: Registry,
    /// For the per-object families, written straight from it ([`object_series`]).
    index: SharedIndex,
    pub watch_events: IntCounterVec,
    pub watch_errors: IntCounterVec,
    pub diff_duration: Histogram,
    pub events_dropped: IntCounter,
    /// Events waiting for the publishing rate (`[events] max_per_second`).
    pub events_queued: IntGauge,
    /// `driftd_store_errors_total` and the last failure, which `/readyz` says.
    pub store_errors: super::store_errors::StoreErrors,
    /// Drift episodes opened and closed, and their time to resolution.
    pub episodes: DriftEpisodes,
}

impl Metrics {
    /// Metrics whose drift families are rendered from `index`, and `driftd_leader` from
    /// `leadership`.
    pub fn new(index: SharedIndex, leadership: Leadership) -> Metrics {
        let registry = Registry::new();
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
        let events_dropped = IntCounter::new(
            "driftd_kube_events_dropped_total",
            "Kubernetes Events not published (queue past its bound, API error, or leadership lost first).",
        )
        .unwrap();
        let events_queued = IntGauge::new(
            "driftd_kube_events_queued",
            "Kubernetes Events waiting to be published at the configured rate.",
        )
        .unwrap();
        let store_errors = super::store_errors::StoreErrors::default();
        let episodes = DriftEpisodes::new();
        let build_info = Gauge::with_opts(
            Opts::new("driftd_build_info", "Build metadata; always 1.")
                .const_label("version", env!("CARGO_PKG_VERSION")),
        )
        .unwrap();
        build_info.set(1.0);
        let leader = LeaderGauge {
            leadership,
            gauge: IntGauge::new(
                "driftd_leader",
                "1 while this replica holds the leader Lease and acts as leader (always 1 with leader election off).",
            )
            .unwrap(),
            failing: IntGauge::new(
                "driftd_leader_election_failing",
                "1 while this replica cannot read or write its leader Lease (its namespace missing, RBAC forbidding it, no answer): if every replica says so, none publishes Events.",
            )
            .unwrap(),
        };
        for collector in [
            Box::new(watch_events.clone()) as Box<dyn Collector>,
            Box::new(watch_errors.clone()),
            Box::new(diff_duration.clone()),
            Box::new(events_dropped.clone()),
            Box::new(events_queued.clone()),
            Box::new(store_errors.counter()),
            Box::new(build_info),
            Box::new(leader),
            Box::new(IndexFamilies::new(index.clone())),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        for collector in episodes.collectors() {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Metrics {
            registry,
            index,
            watch_events,
            watch_errors,
            diff_duration,
            events_dropped,
            events_queued,
            store_errors,
            episodes,
        }
    }

    /// Adds a family owned elsewhere (set once at start, like the database permission
    /// check), so `/metrics` exports it with the rest.
    /// `driftd_shard_info{shard}`: which shard a scrape target is, so dashboards and
    /// queries can tell shards apart (`""` for an unsharded instance). Their drift series
    /// never overlap: each source belongs to one shard.
    pub fn register_shard(&self, shard: &str) {
        let info = Gauge::with_opts(
            Opts::new(
                "driftd_shard_info",
                "The shard this instance is ([shard] name, empty when unsharded); always 1.",
            )
            .const_label("shard", shard),
        )
        .expect("valid metric");
        info.set(1.0);
        self.register(Box::new(info));
    }

    pub fn register(&self, collector: Box<dyn Collector>) {
        self.registry
            .register(collector)
            .expect("metric names are unique");
    }

    /// The text exposition format for `/metrics`.
    pub fn render(&self) -> String {
        // Every watched kind's counters exist from the start, at 0: `rate()` and `absent()`
        // need a series before the first event or error.
        // So do every known source's episode counters.
        let index = self.index.read().unwrap();
        for health in index.watch_health() {
            let kind = [health.kind.kind.as_str()];
            self.watch_events.with_label_values(&kind);
            self.watch_errors.with_label_values(&kind);
        }
        self.episodes.know_sources(index.sources().keys());
        drop(index);
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("encoding to a Vec cannot fail");
        let mut text = String::from_utf8(buf).expect("exposition format is UTF-8");
        object_series(&self.index.read().unwrap(), &mut text);
        text
    }
}

/// `driftd_leader` and `driftd_leader_election_failing`, read from the leadership at scrape
/// time (it lapses by time, not only when the elector notices).
struct LeaderGauge {
    leadership: Leadership,
    gauge: IntGauge,
    failing: IntGauge,
}

impl Collector for LeaderGauge {
    fn desc(&self) -> Vec<&Desc> {
        let mut descs = self.gauge.desc();
        descs.extend(self.failing.desc());
        descs
    }

    fn collect(&self) -> Vec<MetricFamily> {
        self.gauge.set(i64::from(self.leadership.is_leader()));
        let failing = matches!(self.leadership.standing(), Standing::Failing { .. });
        self.failing.set(i64::from(failing));
        let mut families = self.gauge.collect();
        families.extend(self.failing.collect());
        families
    }
}

/// The families rendered from the drift index at scrape time.
struct IndexFamilies {
    index: SharedIndex,
    descs: Vec<Desc>,
}

impl IndexFamilies {
    fn new(index: SharedIndex) -> IndexFamilies {
        let descs = render_index(&DriftIndex::new(0))
            .iter()
            .flat_map(|c| c.desc().into_iter().cloned())
            .collect();
        IndexFamilies { index, descs }
    }
}

impl Collector for IndexFamilies {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        // The index is read-locked only while its values are taken: the engine's writes wait
        // for that lock (a scrape at 100,000 objects, 50,000 drifting, takes 50-75 ms in all).
        let collectors = render_index(&self.index.read().unwrap());
        collectors.iter().flat_map(|c| c.collect()).collect()
    }
}

/// Builds the index families afresh from `index` (a family with no series is left out).
fn render_index(index: &DriftIndex) -> Vec<Box<dyn Collector>> {
    let objects = IntGaugeVec::new(
        Opts::new(
            "driftd_objects",
            "Desired objects by source and drift class (in_sync included).",
        ),
        &["source", "class"],
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
    let ready = IntGauge::new(
        "driftd_ready",
        "1 once every watcher finished its first list and drift is complete.",
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
    // A vector without labels, so that it has no series while coverage is off.
    let coverage_ratio = GaugeVec::new(
        Opts::new(
            "driftd_coverage_ratio",
            "Covered live objects a source owns, over all covered live objects (1 when none).",
        ),
        &[],
    )
    .unwrap();
    let rules_expired = IntGauge::new(
        "driftd_ignore_rules_expired",
        "Ignore rules past their `expires` time, no longer applied.",
    )
    .unwrap();
    let intents = IntGaugeVec::new(
        Opts::new(
            "driftd_intents",
            "Intents by source and state: open ones (pending, expired, failed, interrupted) and those that ended in the last 24 hours.",
        ),
        &["source", "state"],
    )
    .unwrap();
    let watch_healthy = IntGaugeVec::new(
        Opts::new(
            "driftd_watch_healthy",
            "1 while the list/watch of the kind works; 0 from its first failed attempt until the API server answers again (and before its first answer). Its objects are `stale` in /drift meanwhile.",
        ),
        &["kind"],
    )
    .unwrap();
    let watch_last_event = GaugeVec::new(
        Opts::new(
            "driftd_watch_last_event_timestamp_seconds",
            "Unix time at which the API server last answered for the kind (a list, a watch opened, a watch event).",
        ),
        &["kind"],
    )
    .unwrap();
    let stale_locks = IntGaugeVec::new(
        Opts::new(
            "driftd_stale_locks",
            "Deploy locks held by a run that is gone (kind intent, helm or pulumi; a Helm release's source is helm:NAMESPACE/NAME, a Pulumi lock's its stack), as listed at /locks.",
        ),
        &["source", "kind"],
    )
    .unwrap();

    let stale_config_pods = IntGaugeVec::new(
        Opts::new(
            "driftd_stale_config_pods",
            "Running pods of a workload (Deployment, StatefulSet, DaemonSet; by name) started before the current content of a Secret or ConfigMap (config=Kind/name) they read, as /drift lists them.",
        ),
        &["namespace", "workload", "config"],
    )
    .unwrap();

    for (source, committed_at) in index.sources() {
        // 0 for every class of a known source, so dashboards show 0, not "no data".
        for class in SOURCE_CLASSES {
            objects.with_label_values(&[source.as_str(), class.as_str()]);
        }
        for state in INTENT_STATES {
            intents.with_label_values(&[source.as_str(), state]);
        }
        // A Helm release's lock is its version in flight, never a driftd intent.
        let kind = match driftd_core::helm::parse_source(source.as_str()) {
            Some(_) => "helm",
            None => "intent",
        };
        stale_locks.with_label_values(&[source.as_str(), kind]);
        revision_timestamp
            .with_label_values(&[source.as_str()])
            .set(committed_at.as_millisecond() as f64 / 1000.0);
    }
    let mut unmanaged_count = 0;
    // Counted here and set once per series: a labelled lookup per entry was most of a
    // render at 100,000 objects.
    let mut by_class: HashMap<(&str, DriftClass), i64> = HashMap::new();
    let mut oldest = OldestOpen::default();
    for entry in index.entries() {
        oldest.see(entry);
        for used in entry.stale_config.iter().flat_map(|n| &n.configs) {
            stale_config_pods
                .with_label_values(&[
                    entry.namespace.as_deref().unwrap_or(""),
                    entry.name.as_str(),
                    used.config.as_str(),
                ])
                .add(used.pods.len() as i64);
        }
        if entry.class == DriftClass::Unmanaged {
            unmanaged_count += 1;
            let namespace = entry.namespace.as_deref().unwrap_or("");
            unmanaged
                .with_label_values(&[namespace, entry.kind.as_str()])
                .inc();
        } else {
            *by_class
                .entry((entry.source.as_str(), entry.class))
                .or_default() += 1;
        }
    }
    for ((source, class), count) in by_class {
        objects
            .with_label_values(&[source, class.as_str()])
            .add(count);
    }
    series_omitted.inc_by(index.series_omitted());
    ready.set(i64::from(index.ready()));
    if let Some(owned) = index.owned_covered() {
        let all = owned + unmanaged_count;
        let ratio = if all == 0 {
            1.0
        } else {
            owned as f64 / all as f64
        };
        coverage_ratio.with_label_values::<&str>(&[]).set(ratio);
    }
    rules_expired.set(index.rules_expired() as i64);
    for ((source, state), count) in index.intents() {
        // A source whose first deploy is still an intent has no revision yet: zeros too.
        for state in INTENT_STATES {
            intents.with_label_values(&[source.as_str(), state]);
        }
        intents
            .with_label_values(&[source.as_str(), state])
            .set(*count as i64);
    }
    // One series per kind name, as `driftd_watch_errors_total`: a kind watched at two
    // apiVersions is healthy only if both are.
    let mut health: BTreeMap<&str, (bool, Option<f64>)> = BTreeMap::new();
    for h in index.watch_health() {
        let seen = h.last_event.map(|t| t.as_millisecond() as f64 / 1000.0);
        let e = health.entry(h.kind.kind.as_str()).or_insert((true, None));
        e.0 &= h.healthy;
        e.1 = match (e.1, seen) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    for (kind, (healthy, seen)) in health {
        watch_healthy
            .with_label_values(&[kind])
            .set(i64::from(healthy));
        if let Some(seen) = seen {
            watch_last_event.with_label_values(&[kind]).set(seen);
        }
    }
    for lock in index.locks() {
        stale_locks
            .with_label_values(&[lock.source.as_str(), lock.kind.as_str()])
            .inc();
    }
    vec![
        Box::new(objects),
        Box::new(series_omitted),
        Box::new(revision_timestamp),
        Box::new(ready),
        Box::new(unmanaged),
        Box::new(coverage_ratio),
        Box::new(rules_expired),
        Box::new(intents),
        Box::new(stale_locks),
        Box::new(stale_config_pods),
        Box::new(watch_healthy),
        Box::new(watch_last_event),
        Box::new(oldest.gauge()),
    ]
}

/// `driftd_object_drift` and `driftd_object_drift_since_timestamp_seconds`, one series per
/// drifting object that holds a slot, written as exposition text straight from the index
/// (labels in name order, as the client library writes them). Built through the library's
/// vectors and protobufs, their 10,000 series (the default cap) cost about 30 MB per scrape:
/// the peak of driftd's memory at 100,000 objects while something polled `/metrics` during a
/// wave of drift.
fn object_series(index: &DriftIndex, out: &mut String) {
    object_family(
        out,
        "driftd_object_drift",
        "1 for each drifting object (capped by metrics.max_object_series).",
        index.series_holders().map(|entry| (entry, 1.0)),
    );
    object_family(
        out,
        "driftd_object_drift_since_timestamp_seconds",
        "Unix time at which the object started drifting.",
        index.series_holders().filter_map(|entry| {
            let since = entry.since?;
            Some((entry, since.as_millisecond() as f64 / 1000.0))
        }),
    );
}

/// One gauge family of per-object series; nothing when it has none (as the library leaves
/// out a family without series).
fn object_family<'a>(
    out: &mut String,
    family: &str,
    help: &str,
    series: impl Iterator<Item = (&'a DriftEntry, f64)>,
) {
    let mut series = series.peekable();
    if series.peek().is_none() {
        return;
    }
    let _ = writeln!(out, "# HELP {family} {help}\n# TYPE {family} gauge");
    for (entry, value) in series {
        let _ = writeln!(
            out,
            "{family}{{class=\"{}\",kind=\"{}\",name=\"{}\",namespace=\"{}\",source=\"{}\"}} {value}",
            entry.class.as_str(),
            LabelValue(&entry.kind),
            LabelValue(&entry.name),
            LabelValue(entry.namespace.as_deref().unwrap_or("")),
            LabelValue(&entry.source),
        );
    }
}

/// A label value escaped as the exposition format wants (backslash, quote, newline).
struct LabelValue<'a>(&'a str);

impl std::fmt::Display for LabelValue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
