//! The drift engine: one task that owns the desired state, the live copies of desired
//! objects, and the drift index. Watch events and new commits come in; index updates,
//! metrics, episodes and Events go out.
//!
//! Two clocks on purpose: `/drift` and `/metrics` change as soon as a comparison does (within
//! a second of a watch event), while Events and episodes only record a state that held for
//! `settle_seconds`, so a controller that briefly rewrites a field makes no event pair.

use super::SharedIndex;
use crate::export::events::{EventRequest, EventSink};
use crate::export::metrics::Metrics;
use crate::watch::{Supervisor, TypeKey, WatchEvent, WatchMessage};
use driftd_core::diff::{
    ClusterFacts, CompareInput, Comparison, Differ, DriftClass, PreparedDesired,
};
use driftd_core::report::DriftEntry;
use driftd_k8s::ObjectKey;
use driftd_store::{DesiredObject, Store};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What the outputs last said about an object (Events, episodes).
#[derive(Debug, Clone, PartialEq)]
struct Reported {
    class: DriftClass,
    paths: Vec<String>,
}

/// Settle bookkeeping of one object: what comparisons see now, since when, and what was
/// last reported.
#[derive(Debug)]
struct Track {
    observed: Option<Reported>,
    observed_at: Instant,
    reported: Option<Reported>,
}

/// Handles shared with the HTTP server.
#[derive(Clone)]
pub struct EngineHandles {
    pub index: SharedIndex,
    pub metrics: Arc<Metrics>,
}

/// See the module documentation.
pub struct Engine {
    store: Store,
    differ: Differ,
    facts: ClusterFacts,
    supervisor: Supervisor,
    inbox: mpsc::Receiver<WatchMessage>,
    events: Option<EventSink>,
    handles: EngineHandles,
    settle: Duration,
    poll: Duration,
    data_version: Option<i64>,
    desired: HashMap<ObjectKey, DesiredObject>,
    /// The desired objects as the differ compares them, made once per commit rather than
    /// on every watch event.
    prepared: HashMap<ObjectKey, PreparedDesired>,
    by_type: BTreeMap<TypeKey, BTreeSet<ObjectKey>>,
    /// Live copies of desired objects only: memory follows the desired state.
    live: HashMap<ObjectKey, Value>,
    /// Types whose watcher finished a list (or that the cluster does not serve).
    listed: HashSet<TypeKey>,
    /// Keys seen since the current (re-)list of a type began.
    relisting: HashMap<TypeKey, HashSet<ObjectKey>>,
    /// Desired keys added after their type was listed: not judged until the next list.
    awaiting_list: HashSet<ObjectKey>,
    tracks: HashMap<ObjectKey, Track>,
    /// Keys whose observed state differs from the reported one.
    unsettled: HashSet<ObjectKey>,
    /// First-seen times of episodes still open at start, so a restart keeps "since".
    open_since: HashMap<ObjectKey, Timestamp>,
    sources: BTreeSet<String>,
    /// HorizontalPodAutoscalers seen live, with their scale target (namespace, kind, name).
    hpas: HashMap<ObjectKey, ObjectKey>,
    /// Coverage: kinds and namespaces whose unowned live objects are reported.
    coverage: Coverage,
    /// Unowned live objects in coverage scope (identity only).
    unmanaged: BTreeMap<ObjectKey, TypeKey>,
    /// Ignore rules already reported as expired.
    expired_reported: BTreeSet<String>,
    /// Whether the desired state was loaded at least once (an empty one still makes us ready).
    loaded_once: bool,
    /// Every type watched: desired kinds, covered kinds, and HPAs when workloads are desired.
    wanted: BTreeSet<TypeKey>,
}

/// The `[unmanaged]` configuration, resolved.
#[derive(Debug, Default)]
struct Coverage {
    kinds: BTreeSet<TypeKey>,
    namespaces: BTreeSet<String>,
}

impl Coverage {
    fn covers_type(&self, type_key: &TypeKey) -> bool {
        self.kinds.contains(type_key)
    }

    fn covers_key(&self, key: &ObjectKey) -> bool {
        self.kinds.iter().any(|t| same_kind(t, key))
            && (self.namespaces.is_empty()
                || key
                    .namespace
                    .as_ref()
                    .is_some_and(|ns| self.namespaces.contains(ns)))
    }
}

/// How often open drift episodes get their `last_seen` moved forward.
const LAST_SEEN_PERIOD: Duration = Duration::from_secs(60);

fn hpa_type() -> TypeKey {
    TypeKey {
        api_version: "autoscaling/v2".into(),
        kind: "HorizontalPodAutoscaler".into(),
    }
}

fn same_kind(type_key: &TypeKey, key: &ObjectKey) -> bool {
    type_key.kind == key.kind
        && driftd_k8s::kinds::split_api_version(&type_key.api_version).0 == key.group
}

/// Objects Kubernetes itself creates in every namespace without an ownerReference; never
/// reported as unmanaged.
fn created_by_kubernetes(key: &ObjectKey) -> bool {
    matches!(
        (key.kind.as_str(), key.name.as_str()),
        ("ConfigMap", "kube-root-ca.crt") | ("ServiceAccount", "default")
    ) || (key.kind == "Service"
        && key.name == "kubernetes"
        && key.namespace.as_deref() == Some("default"))
        || (key.kind == "Namespace"
            && matches!(
                key.name.as_str(),
                "default" | "kube-system" | "kube-public" | "kube-node-lease"
            ))
}

impl Engine {
    /// Builds an engine over `store`, watching through `client`.
    pub fn new(
        store: Store,
        client: kube::Client,
        config: &crate::config::Config,
        handles: EngineHandles,
        events: Option<EventSink>,
    ) -> crate::Result<Engine> {
        let key = store.installation_key()?;
        let coverage = Coverage {
            kinds: config
                .unmanaged
                .type_keys()
                .map_err(|err| crate::config::ConfigError {
                    origin: "config".into(),
                    key: "unmanaged.kinds".into(),
                    reason: err.to_string(),
                })?
                .into_iter()
                .collect(),
            namespaces: config.unmanaged.namespaces.iter().cloned().collect(),
        };
        let facts = ClusterFacts {
            controller_managers: config.controller_managers.clone(),
            ..ClusterFacts::default()
        };
        let (sender, inbox) = mpsc::channel(1024);
        let mut tracks = HashMap::new();
        let mut open_since = HashMap::new();
        for episode in store.open_episodes()? {
            let class = class_from_str(&episode.class);
            open_since.insert(episode.key.clone(), episode.first_seen);
            tracks.insert(
                episode.key.clone(),
                Track {
                    observed: None,
                    observed_at: Instant::now(),
                    reported: Some(Reported {
                        class,
                        paths: episode.paths.clone(),
                    }),
                },
            );
        }
        Ok(Engine {
            store,
            differ: Differ::new(&key).with_rules(config.rule_set()),
            facts,
            supervisor: Supervisor::new(client, sender),
            inbox,
            events,
            handles,
            settle: config.settle(),
            poll: Duration::from_millis(config.desired_poll_millis),
            data_version: None,
            desired: HashMap::new(),
            prepared: HashMap::new(),
            by_type: BTreeMap::new(),
            live: HashMap::new(),
            listed: HashSet::new(),
            relisting: HashMap::new(),
            awaiting_list: HashSet::new(),
            tracks,
            unsettled: HashSet::new(),
            open_since,
            sources: BTreeSet::new(),
            hpas: HashMap::new(),
            coverage,
            unmanaged: BTreeMap::new(),
            expired_reported: BTreeSet::new(),
            wanted: BTreeSet::new(),
            loaded_once: false,
        })
    }

    /// Runs until `shutdown` completes.
    pub async fn run(
        mut self,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> crate::Result<()> {
        self.reload_desired_if_changed()?;
        let mut poll = tokio::time::interval(self.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let settle_period =
            (self.settle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        let mut settle_tick = tokio::time::interval(settle_period);
        let mut expiry_tick = tokio::time::interval(Duration::from_secs(30));
        let mut last_seen_tick = tokio::time::interval(LAST_SEEN_PERIOD);
        last_seen_tick.tick().await;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => return Ok(()),
                Some(message) = self.inbox.recv() => {
                    self.on_watch(message);
                    // Drain what else is queued before settling, to batch bursts.
                    while let Ok(message) = self.inbox.try_recv() {
                        self.on_watch(message);
                    }
                    self.settle_due();
                }
                _ = poll.tick() => {
                    if let Err(err) = self.reload_desired_if_changed() {
                        tracing::error!(error = %err, "cannot read the desired state; keeping the last one");
                    }
                }
                _ = settle_tick.tick() => self.settle_due(),
                _ = expiry_tick.tick() => self.report_expired_rules(),
                _ = last_seen_tick.tick() => self.touch_open_episodes(),
            }
        }
    }

    fn reload_desired_if_changed(&mut self) -> crate::Result<()> {
        let version = self.store.data_version()?;
        if self.data_version == Some(version) {
            return Ok(());
        }
        self.data_version = Some(version);
        let state = self.store.desired_state()?;
        let mut desired = HashMap::new();
        let mut by_type: BTreeMap<TypeKey, BTreeSet<ObjectKey>> = BTreeMap::new();
        for object in state.objects {
            by_type
                .entry(TypeKey {
                    api_version: object.api_version.clone(),
                    kind: object.key.kind.clone(),
                })
                .or_default()
                .insert(object.key.clone());
            desired.insert(object.key.clone(), object);
        }
        let first_load = !self.loaded_once;
        self.loaded_once = true;
        if self.desired == desired && !first_load {
            return Ok(());
        }
        // Objects no longer desired: forget them, close their episodes.
        let gone: Vec<ObjectKey> = self
            .desired
            .keys()
            .filter(|k| !desired.contains_key(*k))
            .cloned()
            .collect();
        for key in &gone {
            self.forget(key);
        }
        // Episodes left open by an earlier run for objects no longer desired end now.
        let orphaned: Vec<ObjectKey> = self
            .tracks
            .keys()
            .filter(|k| !desired.contains_key(*k) && !gone.contains(*k))
            .cloned()
            .collect();
        for key in &orphaned {
            self.forget(key);
        }
        // New keys of a type already listed: their live copy was not kept; re-list the type.
        let mut relist = BTreeSet::new();
        for (type_key, keys) in &by_type {
            if self.listed.contains(type_key) {
                for key in keys {
                    if !self.desired.contains_key(key) {
                        self.awaiting_list.insert(key.clone());
                        relist.insert(type_key.clone());
                    }
                }
            }
        }
        // Objects no longer desired may now be unmanaged: re-list covered kinds they belong to.
        for key in &gone {
            if let Some(t) = self.coverage.kinds.iter().find(|t| same_kind(t, key)) {
                relist.insert(t.clone());
            }
        }
        // Objects now desired are no longer unmanaged.
        let now_desired: Vec<ObjectKey> = self
            .unmanaged
            .keys()
            .filter(|k| desired.contains_key(*k))
            .cloned()
            .collect();
        for key in now_desired {
            self.drop_unmanaged(&key);
        }
        let mut wanted: BTreeSet<TypeKey> = by_type.keys().cloned().collect();
        wanted.extend(self.coverage.kinds.iter().cloned());
        if by_type
            .keys()
            .any(|t| driftd_k8s::SCALABLE_KINDS.contains(&t.kind.as_str()))
        {
            wanted.insert(hpa_type());
        } else {
            self.hpas.clear();
            self.facts.hpa_targets.clear();
        }
        self.listed.retain(|t| wanted.contains(t));
        self.relisting.retain(|t, _| wanted.contains(t));
        self.wanted = wanted.clone();
        self.prepared = desired
            .iter()
            .map(|(k, d)| (k.clone(), Differ::prepare(&d.object, d.previous.as_ref())))
            .collect();
        self.desired = desired;
        self.by_type = by_type;
        self.supervisor.restart(&relist);
        self.supervisor.sync(&wanted);

        let sources: BTreeSet<String> = state.revisions.iter().map(|r| r.source.clone()).collect();
        for removed in self.sources.difference(&sources) {
            self.handles.metrics.remove_source(removed);
        }
        for revision in &state.revisions {
            self.handles.metrics.ensure_source(&revision.source);
            self.handles.metrics.set_revision_timestamp(
                &revision.source,
                revision.committed_at.as_millisecond() as f64 / 1000.0,
            );
        }
        self.sources = sources;
        tracing::info!(
            objects = self.desired.len(),
            kinds = self.by_type.len(),
            "desired state loaded"
        );
        let keys: Vec<ObjectKey> = self.desired.keys().cloned().collect();
        for key in keys {
            self.evaluate(&key);
        }
        self.update_coverage();
        self.update_readiness();
        self.report_expired_rules();
        Ok(())
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.live.remove(key);
        self.awaiting_list.remove(key);
        self.unsettled.remove(key);
        let old = self.handles.index.write().unwrap().remove(key);
        self.handles.metrics.on_entry_change(old.as_ref(), None);
        if let Some(track) = self.tracks.remove(key) {
            if track.reported.is_some() {
                if let Err(err) = self.store.resolve_drift(key, Timestamp::now()) {
                    tracing::error!(object = %key, error = %err, "cannot close drift episode");
                }
            }
        }
    }

    fn on_watch(&mut self, message: WatchMessage) {
        let WatchMessage { type_key, event } = message;
        let metrics = &self.handles.metrics;
        match event {
            WatchEvent::Init => {
                self.relisting.insert(type_key, HashSet::new());
            }
            WatchEvent::Apply(object) => {
                metrics
                    .watch_events
                    .with_label_values(&[&type_key.kind])
                    .inc();
                let Some(key) = ObjectKey::of(&object) else {
                    return;
                };
                if let Some(seen) = self.relisting.get_mut(&type_key) {
                    seen.insert(key.clone());
                }
                if self.desired.contains_key(&key) {
                    self.live.insert(key.clone(), object);
                    self.evaluate(&key);
                } else if type_key == hpa_type() {
                    self.set_hpa(key, Some(&object));
                } else if self.coverage.covers_type(&type_key) {
                    self.consider_unmanaged(key, &type_key, &object);
                }
            }
            WatchEvent::Delete(object) => {
                metrics
                    .watch_events
                    .with_label_values(&[&type_key.kind])
                    .inc();
                let Some(key) = ObjectKey::of(&object) else {
                    return;
                };
                if self.live.remove(&key).is_some() {
                    self.evaluate(&key);
                } else if type_key == hpa_type() {
                    self.set_hpa(key, None);
                } else if self.unmanaged.contains_key(&key) {
                    self.drop_unmanaged(&key);
                    self.update_coverage();
                }
            }
            WatchEvent::InitDone => self.list_complete(type_key),
            WatchEvent::NotServed => {
                self.relisting.insert(type_key.clone(), HashSet::new());
                self.list_complete(type_key);
            }
            WatchEvent::Error(err) => {
                metrics
                    .watch_errors
                    .with_label_values(&[&type_key.kind])
                    .inc();
                tracing::warn!(kind = %type_key, error = %err, "watch failed; retrying with backoff");
            }
        }
    }

    /// A (re-)list finished: objects it did not return are gone.
    fn list_complete(&mut self, type_key: TypeKey) {
        let seen = self.relisting.remove(&type_key).unwrap_or_default();
        let keys: Vec<ObjectKey> = self
            .by_type
            .get(&type_key)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        self.listed.insert(type_key.clone());
        for key in &keys {
            if !seen.contains(key) {
                self.live.remove(key);
            }
            self.awaiting_list.remove(key);
            self.evaluate(key);
        }
        if type_key == hpa_type() {
            let gone: Vec<ObjectKey> = self
                .hpas
                .keys()
                .filter(|k| !seen.contains(*k))
                .cloned()
                .collect();
            for key in gone {
                self.set_hpa(key, None);
            }
        }
        let gone: Vec<ObjectKey> = self
            .unmanaged
            .iter()
            .filter(|(k, t)| **t == type_key && !seen.contains(*k))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            self.drop_unmanaged(&key);
        }
        self.update_coverage();
        tracing::debug!(kind = %type_key, objects = keys.len(), "list complete");
        self.update_readiness();
    }

    /// Records (or forgets) an HPA's scale target; the target's `spec.replicas` is the
    /// autoscaler's, so the target is compared again.
    fn set_hpa(&mut self, key: ObjectKey, object: Option<&Value>) {
        let target = object.and_then(driftd_k8s::hpa_scale_target);
        let old = match target.clone() {
            Some(t) => self.hpas.insert(key, t),
            None => self.hpas.remove(&key),
        };
        if old == target {
            return;
        }
        self.facts.hpa_targets = self.hpas.values().cloned().collect();
        let affected: Vec<ObjectKey> = [old, target]
            .into_iter()
            .flatten()
            .filter(|k| self.desired.contains_key(k))
            .collect();
        for key in affected {
            self.evaluate(&key);
        }
    }

    /// A live object of a covered kind that no source desires: unmanaged, unless a
    /// controller (ownerReference) or Kubernetes itself created it.
    fn consider_unmanaged(&mut self, key: ObjectKey, type_key: &TypeKey, object: &Value) {
        let owned = object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| !refs.is_empty());
        if owned || !self.coverage.covers_key(&key) || created_by_kubernetes(&key) {
            return;
        }
        if self.unmanaged.contains_key(&key) {
            return;
        }
        self.unmanaged.insert(key.clone(), type_key.clone());
        let entry = DriftEntry {
            source: String::new(),
            revision: 0,
            api_version: type_key.api_version.clone(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            class: DriftClass::Unmanaged,
            since: Some(Timestamp::now()),
            changes: Vec::new(),
            patch: json_patch::Patch::default(),
            ignored: Vec::new(),
        };
        self.handles
            .metrics
            .unmanaged_changed(key.namespace.as_deref(), &key.kind, 1);
        self.handles.index.write().unwrap().upsert(key, entry);
        self.update_coverage();
    }

    fn drop_unmanaged(&mut self, key: &ObjectKey) {
        if self.unmanaged.remove(key).is_some() {
            self.handles
                .metrics
                .unmanaged_changed(key.namespace.as_deref(), &key.kind, -1);
            let mut index = self.handles.index.write().unwrap();
            if index
                .get(key)
                .is_some_and(|e| e.class == DriftClass::Unmanaged)
            {
                index.remove(key);
            }
        }
    }

    /// `driftd_coverage_ratio`: live objects of covered kinds and namespaces that a source
    /// owns, over all such objects (controller-created ones left out).
    fn update_coverage(&self) {
        if self.coverage.kinds.is_empty() {
            return;
        }
        let managed = self
            .live
            .keys()
            .filter(|k| self.coverage.covers_key(k))
            .count();
        let all = managed + self.unmanaged.len();
        let ratio = if all == 0 {
            1.0
        } else {
            managed as f64 / all as f64
        };
        self.handles.metrics.coverage_ratio.set(ratio);
    }

    /// Moves `last_seen` of every reported, still-drifting episode to now, so the episode
    /// record says how long drift really lasted (to within [`LAST_SEEN_PERIOD`]).
    fn touch_open_episodes(&mut self) {
        let now = Timestamp::now();
        let index = self.handles.index.read().unwrap();
        for (key, track) in &self.tracks {
            let (Some(reported), Some(entry)) = (&track.reported, index.get(key)) else {
                continue;
            };
            if track.observed.as_ref() != Some(reported) {
                continue; // a transition is pending; settle_due records it
            }
            if let Err(err) = self.store.record_drift(
                key,
                &entry.source,
                reported.class.as_str(),
                now,
                &reported.paths,
            ) {
                tracing::error!(object = %key, error = %err, "cannot update drift episode");
            }
        }
    }

    /// Logs and counts ignore rules that expired since the last check.
    fn report_expired_rules(&mut self) {
        let expired = self.differ.expired_rules();
        for rule in &expired {
            if self.expired_reported.insert(rule.label.clone()) {
                tracing::warn!(
                    rule = %rule.label,
                    expired = %rule.expires,
                    "ignore rule expired and no longer applies; remove or renew it"
                );
            }
        }
        self.handles.metrics.rules_expired.set(expired.len() as i64);
    }

    fn update_readiness(&mut self) {
        let ready = self.wanted.iter().all(|t| self.listed.contains(t));
        let mut index = self.handles.index.write().unwrap();
        if ready && !index.ready() {
            tracing::info!("every watcher finished its first list: ready");
        }
        // Once ready, stay ready: a re-list after a commit is not an outage.
        let ready = ready || index.ready();
        index.set_ready(ready);
        self.handles.metrics.ready.set(i64::from(ready));
    }

    /// Compares one desired object with its live copy and updates the index.
    fn evaluate(&mut self, key: &ObjectKey) {
        let (Some(desired), Some(prepared)) = (self.desired.get(key), self.prepared.get(key))
        else {
            return;
        };
        let type_key = TypeKey {
            api_version: desired.api_version.clone(),
            kind: key.kind.clone(),
        };
        if !self.listed.contains(&type_key) || self.awaiting_list.contains(key) {
            return;
        }
        let started = Instant::now();
        let comparison: Comparison = self.differ.compare_prepared(
            Some(&desired.source),
            &CompareInput {
                desired: &desired.object,
                live: self.live.get(key),
                previous: desired.previous.as_ref(),
                facts: &self.facts,
            },
            prepared,
        );
        self.handles
            .metrics
            .diff_duration
            .observe(started.elapsed().as_secs_f64());

        let mut index = self.handles.index.write().unwrap();
        let previous_since = index
            .get(key)
            .filter(|e| e.class != DriftClass::InSync)
            .and_then(|e| e.since);
        let since = match comparison.class {
            DriftClass::InSync => None,
            _ => previous_since
                .or_else(|| self.open_since.get(key).copied())
                .or_else(|| Some(Timestamp::now())),
        };
        if comparison.class == DriftClass::InSync {
            self.open_since.remove(key);
        }
        let entry = DriftEntry {
            source: desired.source.clone(),
            revision: desired.revision,
            api_version: desired.api_version.clone(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            class: comparison.class,
            since,
            changes: comparison.changes,
            patch: comparison.patch,
            ignored: comparison.ignored,
        };
        let observed = (entry.class != DriftClass::InSync).then(|| Reported {
            class: entry.class,
            paths: entry.paths(),
        });
        let old = index.upsert(key.clone(), entry.clone());
        drop(index);
        if old.as_ref() != Some(&entry) {
            self.handles
                .metrics
                .on_entry_change(old.as_ref(), Some(&entry));
        }

        let track = self.tracks.entry(key.clone()).or_insert_with(|| Track {
            observed: None,
            observed_at: Instant::now(),
            reported: None,
        });
        if track.observed != observed {
            track.observed = observed;
            track.observed_at = Instant::now();
        }
        if track.observed != track.reported {
            self.unsettled.insert(key.clone());
        } else {
            self.unsettled.remove(key);
        }
    }

    /// Reports (episodes + Events) every observed state that held for the settle time.
    fn settle_due(&mut self) {
        let now = Instant::now();
        let due: Vec<ObjectKey> = self
            .unsettled
            .iter()
            .filter(|k| {
                self.tracks
                    .get(*k)
                    .is_some_and(|t| now.duration_since(t.observed_at) >= self.settle)
            })
            .cloned()
            .collect();
        for key in due {
            self.unsettled.remove(&key);
            let Some(track) = self.tracks.get_mut(&key) else {
                continue;
            };
            let observed = track.observed.clone();
            track.reported = observed.clone();
            let entry = self.handles.index.read().unwrap().get(&key).cloned();
            let Some(entry) = entry else { continue };
            match observed {
                Some(state) => {
                    let since = entry.since.unwrap_or_else(Timestamp::now);
                    if let Err(err) = self.store.record_drift(
                        &key,
                        &entry.source,
                        state.class.as_str(),
                        since,
                        &state.paths,
                    ) {
                        tracing::error!(object = %key, error = %err, "cannot record drift episode");
                    }
                    tracing::info!(object = %key, class = state.class.as_str(), paths = ?state.paths, "drift detected");
                    self.publish(EventRequest::detected(&entry, self.live.get(&key)));
                }
                None => {
                    if let Err(err) = self.store.resolve_drift(&key, Timestamp::now()) {
                        tracing::error!(object = %key, error = %err, "cannot close drift episode");
                    }
                    tracing::info!(object = %key, "drift resolved");
                    self.publish(EventRequest::resolved(&entry, self.live.get(&key)));
                }
            }
        }
    }

    fn publish(&self, request: EventRequest) {
        if let Some(sink) = &self.events {
            sink.send(request, &self.handles.metrics);
        }
    }
}

fn class_from_str(class: &str) -> DriftClass {
    serde_json::from_value(Value::String(class.to_string())).unwrap_or(DriftClass::Modified)
}
