//! Remediation of `remediation = "auto"` sources: the leader re-applies their `modified`
//! and `missing` objects with the same code as `driftd reconcile --apply`
//! ([`crate::apply`], in plan order, waiting for dependencies), rate-limited by
//! `[remediation]`, and records each attempt in the store's history (actor
//! `driftd/<identity>`) and as an Event (`Remediated`, `RemediationFailed`).
//!
//! What it leaves alone: objects of a source with an open intent (a deploy in flight or
//! unfinished: its objects are the deploy's business, and `uncommitted` is never
//! remediated), drift younger than `settle_seconds`, objects whose kind's watch is
//! failing (their state is not known), and an object tried within `retry_seconds`.

use crate::apply::{ApplyOptions, Cluster};
use crate::reconcile;
use driftd_config::{Config, RemediationConfig};
use driftd_core::diff::DriftClass;
use driftd_core::report::DriftEntry;
use driftd_engine::Leadership;
use driftd_engine::SharedIndex;
use driftd_export::events::{EventRequest, EventSink, RateLimit};
use driftd_export::metrics::Metrics;
use driftd_k8s::ObjectKey;
use driftd_store::{RemediationEvent, RemediationOutcome, Store};
use prometheus::{IntCounterVec, Opts};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How often the drift index is looked at.
const TICK: Duration = Duration::from_millis(500);

/// Everything the remediation task needs; [`spawn`] starts it.
pub struct Remediator {
    pub store: Store,
    pub cluster: Cluster,
    pub index: SharedIndex,
    pub leadership: Leadership,
    pub events: Option<EventSink>,
    pub metrics: Arc<Metrics>,
    /// The replica's identity, as in the leader Lease.
    pub identity: String,
}

/// Starts the task; it ends when `stop` turns true (dropping its Event sink).
pub fn spawn(
    remediator: Remediator,
    config: &Config,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let counter = IntCounterVec::new(
        Opts::new(
            "driftd_remediations_total",
            "Objects of remediation = \"auto\" sources the leader re-applied, by source and outcome (applied, failed).",
        ),
        &["source", "outcome"],
    )
    .expect("valid metric");
    remediator.metrics.register(Box::new(counter.clone()));
    let task = Task {
        sources: config.remediated_sources(),
        settle: config.settle(),
        limit: RateLimit::new(
            config.remediation.max_per_minute / 60.0,
            (config.remediation.max_per_minute / 6.0) as u32,
            Instant::now(),
        ),
        config: config.remediation.clone(),
        last_attempt: HashMap::new(),
        counter,
        r: remediator,
    };
    tracing::info!(
        sources = ?task.sources,
        "remediation on (as leader) for these sources"
    );
    tokio::spawn(task.run(stop))
}

/// Which drift entries remediation may act on now (a pure decision, unit-tested).
struct Eligible<'a> {
    /// Sources with `remediation = "auto"`.
    sources: &'a BTreeSet<String>,
    /// Sources with an open intent.
    open: &'a HashSet<String>,
    /// `(apiVersion, kind)` whose watch is failing.
    stale: &'a HashSet<(String, String)>,
    settle: Duration,
    retry: Duration,
}

impl Eligible<'_> {
    /// `since_last`: how long ago the object was last tried, if ever.
    fn allows(&self, e: &DriftEntry, now: jiff::Timestamp, since_last: Option<Duration>) -> bool {
        self.sources.contains(&e.source)
            && matches!(e.class, DriftClass::Modified | DriftClass::Missing)
            && !self.open.contains(&e.source)
            && !self
                .stale
                .contains(&(e.api_version.clone(), e.kind.clone()))
            && e.since.is_some_and(|since| {
                now.duration_since(since).as_secs_f64() >= self.settle.as_secs_f64()
            })
            && since_last.is_none_or(|ago| ago >= self.retry)
    }
}

struct Task {
    r: Remediator,
    sources: BTreeSet<String>,
    settle: Duration,
    config: RemediationConfig,
    limit: RateLimit,
    last_attempt: HashMap<ObjectKey, Instant>,
    counter: IntCounterVec,
}

fn key_of(entry: &DriftEntry) -> ObjectKey {
    ObjectKey {
        group: driftd_k8s::kinds::split_api_version(&entry.api_version)
            .0
            .to_string(),
        kind: entry.kind.clone(),
        namespace: entry.namespace.clone(),
        name: entry.name.clone(),
    }
}

impl Task {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = tick.tick() => {}
            }
            if !self.r.leadership.is_leader() {
                continue;
            }
            for entry in self.in_plan_order(self.candidates()) {
                let now = Instant::now();
                if self.limit.ready_at(now) > now {
                    break;
                }
                self.limit.take(now);
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => return,
                    _ = self.remediate(&entry) => {}
                }
            }
        }
    }

    /// `entries` by source, each source's in its plan order (a Namespace before its
    /// objects, a CRD before its custom resources); a source that cannot be planned keeps
    /// its entries in the order given (each attempt then fails, saying why).
    fn in_plan_order(&self, entries: Vec<DriftEntry>) -> Vec<DriftEntry> {
        let mut positions: HashMap<String, HashMap<ObjectKey, usize>> = HashMap::new();
        for source in entries
            .iter()
            .map(|e| e.source.clone())
            .collect::<BTreeSet<_>>()
        {
            let plan = reconcile::load(&self.r.store, &source).and_then(|r| r.plan());
            if let Ok(plan) = plan {
                positions.insert(
                    source,
                    plan.steps
                        .into_iter()
                        .enumerate()
                        .map(|(i, s)| (s.key, i))
                        .collect(),
                );
            }
        }
        let mut entries = entries;
        entries.sort_by_cached_key(|e| {
            let at = positions
                .get(&e.source)
                .and_then(|p| p.get(&key_of(e)))
                .copied()
                .unwrap_or(usize::MAX);
            (e.source.clone(), at, key_of(e))
        });
        entries
    }

    /// Drifting objects of remediated sources that may be remediated now.
    fn candidates(&self) -> Vec<DriftEntry> {
        let open: HashSet<String> = match self.r.store.open_intents() {
            Ok(intents) => intents.into_iter().map(|o| o.intent.source).collect(),
            Err(e) => {
                tracing::warn!("remediation: cannot read open intents, skipping: {e}");
                return Vec::new();
            }
        };
        let index = self.r.index.read().unwrap_or_else(|e| e.into_inner());
        let stale: HashSet<(String, String)> = index
            .stale_kinds()
            .into_iter()
            .map(|k| (k.api_version, k.kind))
            .collect();
        let now = Instant::now();
        let wall = jiff::Timestamp::now();
        let rules = Eligible {
            sources: &self.sources,
            open: &open,
            stale: &stale,
            settle: self.settle,
            retry: self.config.retry(),
        };
        index
            .entries()
            .filter(|e| {
                let last = self
                    .last_attempt
                    .get(&key_of(e))
                    .map(|at| now.duration_since(*at));
                rules.allows(e, wall, last)
            })
            .cloned()
            .collect()
    }

    async fn remediate(&mut self, entry: &DriftEntry) {
        let key = key_of(entry);
        self.last_attempt.insert(key.clone(), Instant::now());
        let result = self.apply(&entry.source, &key).await;
        let (outcome, detail) = match &result {
            Ok(revision) => (
                RemediationOutcome::Applied,
                format!(
                    "{} object re-applied from revision {revision}{}",
                    entry.class.as_str(),
                    fields(entry)
                ),
            ),
            Err(e) => (RemediationOutcome::Failed, e.clone()),
        };
        let revision = *result.as_ref().unwrap_or(&entry.revision);
        let label = match outcome {
            RemediationOutcome::Applied => "applied",
            RemediationOutcome::Failed => "failed",
        };
        self.counter
            .with_label_values(&[entry.source.as_str(), label])
            .inc();
        match outcome {
            RemediationOutcome::Applied => {
                tracing::info!(source = %entry.source, object = %key, "remediated: {detail}")
            }
            RemediationOutcome::Failed => {
                tracing::warn!(source = %entry.source, object = %key, "remediation failed: {detail}")
            }
        }
        let event = RemediationEvent {
            source: entry.source.clone(),
            revision,
            key,
            at: jiff::Timestamp::now(),
            actor: format!("driftd/{}", self.r.identity),
            outcome,
            detail: detail.clone(),
        };
        if let Err(e) = self.r.store.record_remediation(&event) {
            tracing::warn!("remediation: cannot record it in the history: {e}");
        }
        if let Some(sink) = &self.r.events {
            sink.send(
                EventRequest::remediation(entry, outcome, &detail),
                &self.r.metrics,
            );
        }
    }

    /// Applies the committed state of `key`, after its dependencies; the revision applied.
    async fn apply(&mut self, source: &str, key: &ObjectKey) -> Result<i64, String> {
        let revision = reconcile::load(&self.r.store, source).map_err(|e| e.to_string())?;
        let plan = revision.plan().map_err(|e| e.to_string())?;
        let write = HashSet::from([key.clone()]);
        let steps = revision
            .steps(&self.r.store, &plan, &write)
            .map_err(|e| e.to_string())?;
        let options = ApplyOptions {
            force_conflicts: self.config.force_conflicts,
            timeout: self.config.timeout(),
            ..ApplyOptions::default()
        };
        self.r
            .cluster
            .apply_in_order(&steps, &options, |_| {})
            .await
            .map_err(|e| e.to_string())?;
        Ok(revision.revision.id)
    }
}

#[cfg(test)]
mod tests;

/// `: field, field` of a modified entry (names only, never values).
fn fields(entry: &DriftEntry) -> String {
    if entry.changes.is_empty() {
        return String::new();
    }
    let names: Vec<String> = entry
        .changes
        .to_vec()
        .into_iter()
        .map(|c| c.field)
        .collect();
    format!(": {}", names.join(", "))
}
