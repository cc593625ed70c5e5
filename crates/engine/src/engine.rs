//! The drift engine: one task that owns the desired state, the open intents, the live
//! copies of the objects they want, and the drift index. Watch messages, new commits and
//! intents come in; index updates, episodes, intent releases and [`Outputs`] go out.
//!
//! A live object that differs from its committed desired state but equals what an open
//! intent of its source wanted is `uncommitted` (`uncommitted`); deploy locks are judged
//! stale in `stale` (holder pods watched by name, Pulumi lock files scanned).
//!
//! Two clocks on purpose: `/drift` and `/metrics` change as soon as a comparison does (within
//! a second of a watch event), while Events and episodes only record a state that held for
//! `settle_seconds` ([`Settling`]), so a controller that briefly rewrites a field makes no
//! Event pair.
//!
//! The engine is built from its parts, none of which needs a cluster: the store, a
//! [`WatchControl`] to start and stop watchers, [`Outputs`] and a [`Clock`]. The run loop
//! ([`Engine::run`]) only feeds it; tests call the same steps directly.

use super::clock::Clock;
use super::coverage::Coverage;
use super::crds::{crd_kind, group_kind, is_crd_kind, is_custom, Crds, GroupKind};
use super::desired::{Desired, DesiredSet};
use super::dry_run_answers::{DryRunAnswer, DryRunOutcome, DryRunRequest, DryRuns};
use super::expired_rules::ExpiredRules;
use super::hpa::{hpa_kind, is_hpa_kind, Autoscalers};
use super::index::SharedIndex;
use super::intents::{IntentChange, IntentSet};
use super::last_seen::LastSeen;
use super::list_states::{ListEvent, Lists, Position};
use super::memory::release_free_memory;
use super::outputs::{Announcement, Outputs};
use super::settle::{Drift, Report, Settling};
use super::stale_config::StaleConfigs;
use super::tracked::TrackedSet;
use crate::Leadership;
use driftd_config::{Config, ConfigError};
use driftd_core::diff::{ClusterFacts, CompareInput, Differ};
use driftd_core::report::{Changes, DriftClass, DriftEntry, DriftPatch};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{Store, StoreError};
use driftd_watch::packed::{self, Packed, Packing};
use driftd_watch::{Applied, WatchControl, WatchEvent, WatchMessage};
use jiff::Timestamp;
use serde_json::Value;
use stale::LockState;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often open drift episodes get their `last_seen` moved forward.
const LAST_SEEN_PERIOD: Duration = Duration::from_secs(60);

/// How often expired ignore rules are looked for.
const EXPIRY_PERIOD: Duration = Duration::from_secs(30);

/// At most this many queued watch messages are handled before the engine settles and
/// publishes, so a flood cannot hold back Events.
const MAX_BATCH: usize = 4096;

/// At most this many settled drift states are recorded and announced in one step
/// (`settle_some`).
const SETTLE_BATCH: usize = 1024;

/// How often intents are checked for expiry and locks judged again (TTLs pass by time).
const LOCK_PERIOD: Duration = Duration::from_secs(1);

/// How often recently ended intents are counted again for `driftd_intents`.
const RECOUNT_PERIOD: Duration = Duration::from_secs(60);

mod dry_run_judging;
mod episodes;
mod health;
mod judging;
mod live;
mod packing;
mod publication;
mod stale;
mod stale_config_feed;
mod uncommitted;
mod unmanaged;

use driftd_watch::kept::{as_compared, kept_copy};
use live::Live;
use publication::Publication;

/// Why the engine cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// See the module documentation.
pub struct Engine<W, O> {
    store: Store,
    differ: Differ,
    facts: ClusterFacts,
    desired: DesiredSet,
    intents: IntentSet,
    /// Objects the engine keeps live copies of and judges, with their kinds: the desired
    /// ones and those only an open intent wants. Memory follows the desired state.
    tracked: TrackedSet,
    lists: Lists,
    /// Period of the periodic re-list (`relist_seconds`); `None`: off.
    relist: Option<Duration>,
    autoscalers: Autoscalers,
    /// The CRDs custom resources are compared by (their schemas are in `facts`).
    crds: Crds,
    coverage: Coverage,
    /// Of the tracked objects with a live copy, how many are of a covered kind and
    /// namespace (`driftd_coverage_ratio`'s numerator), kept as copies come and go: counted
    /// anew per burst, it cost a pass over every tracked object per watch event.
    owned_covered: usize,
    /// The settle tracker and the "since" of drift, which publishing an entry updates.
    publication: Publication,
    /// Ignore rules already reported as expired.
    expired_rules: ExpiredRules,
    index: SharedIndex,
    watches: W,
    outputs: O,
    clock: Arc<dyn Clock>,
    poll: Duration,
    locks: LockState,
    /// Leader-only work (automatic releases) asks it.
    leadership: Leadership,
    /// Who this replica is in the history it writes (`driftd/<identity>`).
    actor: String,
    /// Server-side dry runs of `compare = "dry-run"` sources, and where their answers come.
    dry_runs: DryRuns,
    dry_run_answers: Option<mpsc::UnboundedReceiver<DryRunAnswer>>,
    /// Pods running on stale config (`stale_config`).
    stale_configs: StaleConfigs,
    /// Writes the Secret/ConfigMap content records off the engine's thread (`None`: in
    /// memory, or `stale_config` off).
    content_writer: Option<driftd_store::ContentWriter>,
    /// More settled states are due than the last step took (`settle_some`).
    settle_backlog: bool,
    /// The minute's `last_seen` update of open episodes.
    last_seen: LastSeen,
    /// Watch events held to be judged together on every core (`judging`).
    held: judging::Held,
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Builds an engine over `store` that keeps `index` current. Episodes left open by an
    /// earlier run are taken over, so their drift keeps its "since" and is not announced
    /// again. Live copies and manifests are packed with `packing`, the watchers' too (the
    /// engine trains its dictionary).
    pub fn new(
        store: Store,
        config: &Config,
        index: SharedIndex,
        packing: Packing,
        watches: W,
        outputs: O,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, EngineError> {
        let key = store.installation_key()?;
        let (stale_configs, content_writer) = stale_config_feed::start(&store, config, &key)?;
        let mut settling = Settling::new(config.settle());
        let mut open_since = HashMap::new();
        for episode in store.open_episodes()? {
            let class = episode.class.parse().unwrap_or(DriftClass::Modified);
            open_since.insert(episode.key.clone(), (class, episode.first_seen));
            settling.restore(episode.key, Drift::new(class, &episode.paths));
        }
        Ok(Engine {
            store,
            differ: Differ::new(&key).with_rules(config.rule_set()),
            facts: ClusterFacts {
                controller_managers: config.controller_managers.clone(),
                ..ClusterFacts::default()
            },
            desired: DesiredSet::new(packing.clone()),
            intents: IntentSet::default(),
            tracked: TrackedSet::new(packing),
            lists: Lists::default(),
            relist: config.relist(),
            autoscalers: Autoscalers::default(),
            crds: Crds::default(),
            coverage: Coverage::new(&config.unmanaged)?,
            owned_covered: 0,
            publication: Publication {
                settling,
                open_since,
                index: index.clone(),
                clock: clock.clone(),
            },
            expired_rules: ExpiredRules::default(),
            index,
            watches,
            outputs,
            clock,
            poll: Duration::from_millis(config.desired_poll_millis),
            locks: LockState::new(config),
            leadership: Leadership::always(),
            actor: "driftd".into(),
            dry_runs: DryRuns::new(config.dry_run_sources(), config.dry_run.refresh()),
            dry_run_answers: None,
            stale_configs,
            content_writer,
            settle_backlog: false,
            last_seen: LastSeen::default(),
            held: judging::Held::default(),
        })
    }

    /// Leader-only work (releasing stale locks automatically) follows `leadership`; what this
    /// replica records in history names it `driftd/<identity>`. Without it the engine acts
    /// as the only replica.
    pub fn with_leadership(mut self, leadership: Leadership, identity: &str) -> Self {
        self.leadership = leadership;
        self.actor = format!("driftd/{identity}");
        self
    }

    /// Runs until `shutdown` completes, fed by the watchers through `inbox`. Fails only if
    /// the desired state cannot be read at start.
    pub async fn run(
        mut self,
        mut inbox: mpsc::Receiver<WatchMessage>,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<(), EngineError> {
        self.poll_desired()?;
        let mut poll = tokio::time::interval(self.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let settle_period = (self.publication.settling.settle() / 4)
            .clamp(Duration::from_millis(50), Duration::from_secs(1));
        let mut settle_tick = tokio::time::interval(settle_period);
        let mut expiry_tick = tokio::time::interval(EXPIRY_PERIOD);
        let mut last_seen_tick = tokio::time::interval(LAST_SEEN_PERIOD);
        last_seen_tick.tick().await;
        let mut lock_tick = tokio::time::interval(LOCK_PERIOD);
        let mut recount_tick = tokio::time::interval(RECOUNT_PERIOD);
        recount_tick.tick().await;
        let mut scan_tick = tokio::time::interval(self.locks.scan_period());
        let relist_period = self.relist.unwrap_or(Duration::from_secs(86400));
        let mut relist_tick =
            tokio::time::interval_at(tokio::time::Instant::now() + relist_period, relist_period);
        let mut dry_run_tick = tokio::time::interval(dry_run_judging::DRY_RUN_PERIOD);
        let mut answers = self.dry_run_answers.take();
        let mut released = self.locks.take_release_answers();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => return Ok(()),
                Some(message) = inbox.recv() => {
                    // Take what else is queued too, to batch bursts.
                    let mut batch = vec![message];
                    while batch.len() < MAX_BATCH {
                        match inbox.try_recv() {
                            Ok(message) => batch.push(message),
                            Err(_) => break,
                        }
                    }
                    self.handle(batch);
                }
                // Settled states left over by a step, in turns with the inbox.
                _ = std::future::ready(()), if self.settle_backlog => {
                    self.settle_backlog = self.settle_some();
                }
                _ = poll.tick() => {
                    if let Err(err) = self.poll_desired() {
                        tracing::error!(error = %err, "cannot read the desired state; keeping the last one");
                        self.outputs.store_error("cannot read the desired state", &err);
                    }
                }
                _ = settle_tick.tick() => self.settle_backlog = self.settle_some(),
                _ = expiry_tick.tick() => self.report_expired_rules(),
                // The minute's `last_seen` update, in steps between watch events.
                _ = std::future::ready(()), if self.last_seen.due() => {
                    self.touch_some();
                }
                _ = last_seen_tick.tick() => {
                    self.start_touching();
                    release_free_memory();
                }
                _ = lock_tick.tick() => {
                    self.intents_aged();
                    self.stale_config_flush();
                }
                _ = recount_tick.tick() => self.recount_intents(),
                _ = scan_tick.tick() => self.scan_pulumi_locks(),
                _ = relist_tick.tick(), if self.relist.is_some() => self.relist_periodically(),
                Some(answer) = dry_run_judging::next_answer(&mut answers) => self.dry_run_answered(answer),
                _ = dry_run_tick.tick(), if answers.is_some() => self.refresh_dry_runs(),
                Some(answer) = super::locks::release::next_answer(&mut released) => {
                    self.cluster_released(answer);
                }
            }
        }
    }

    /// Lists every listed kind again (`relist_seconds`): a change the watches never
    /// delivered is found within one period.
    pub fn relist_periodically(&mut self) {
        let kinds = self.lists.relist_listed(&mut self.watches);
        tracing::debug!(kinds, "periodic re-list");
    }

    /// Loads the desired state and the open intents if someone wrote since the last load.
    pub fn poll_desired(&mut self) -> Result<(), StoreError> {
        let desired = self.desired.poll(&self.store)?;
        if desired {
            self.desired_loaded();
        }
        let now = self.clock.wall();
        let intents = self
            .intents
            .poll(&self.store, &self.desired, &self.facts, now)?;
        if desired || intents == Some(IntentChange::Changed) {
            self.tracking_changed();
        } else if intents == Some(IntentChange::Renewed) {
            self.intents_aged();
        }
        Ok(())
    }

    /// A new desired state was loaded: its committed CRDs take effect, and intents' objects
    /// are prepared again where their CRD or their previous revision changed (desired
    /// objects are prepared on each comparison).
    fn desired_loaded(&mut self) {
        let kinds = self.crds.set_committed(&self.desired.crds());
        self.crds.publish(&mut self.facts);
        self.intents.reprepare(&self.desired, &self.facts, &kinds);
    }

    /// CRDs of `kinds` changed (learnt from the cluster, changed or gone there): their
    /// custom resources are prepared and compared again.
    fn crds_changed(&mut self, kinds: BTreeSet<GroupKind>) {
        if kinds.is_empty() {
            return;
        }
        tracing::info!(kinds = ?kinds, "CustomResourceDefinitions changed; comparing their custom resources again");
        self.crds.publish(&mut self.facts);
        self.intents.reprepare(&self.desired, &self.facts, &kinds);
        let keys = self
            .tracked
            .keys_of(|t| is_custom(t) && kinds.contains(&group_kind(t)));
        for key in &keys {
            self.evaluate(key);
        }
    }

    /// A CRD changed in the cluster: kube-apiserver prunes and defaults its custom
    /// resources on every read (`customresource_handler.go`), so a `default:` it gained
    /// shows on objects nobody wrote since, and no watch event says so. The tracked kinds it
    /// defines are listed again (still judged on their copies meanwhile).
    fn relist_defined_by(&mut self, crd: &Value) {
        let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let defined: GroupKind = (text("/spec/group").into(), text("/spec/names/kind").into());
        let kinds: BTreeSet<TypeKey> = self
            .tracked
            .kinds()
            .filter(|t| is_custom(t) && group_kind(t) == defined)
            .cloned()
            .collect();
        for kind in kinds {
            self.lists.relist(&kind, BTreeSet::new(), &mut self.watches);
        }
    }

    /// Discovery says the cluster serves `kind` with this scope. A custom resource committed
    /// without its CRD was keyed as namespaced: if the kind is cluster-scoped, its objects
    /// are keyed again without a namespace (the desired state is loaded again to do so).
    fn scope_learned(&mut self, kind: &TypeKey, namespaced: bool) {
        if !is_custom(kind) {
            return;
        }
        if self.desired.learn_scope(group_kind(kind), namespaced) {
            tracing::info!(kind = %kind, namespaced, "the cluster serves this kind with another scope than its objects were keyed with: keying them again");
            if let Err(err) = self.desired.load(&self.store) {
                tracing::warn!(error = %err, "cannot load the desired state again; the next poll tries");
                self.desired.reload_needed();
                return;
            }
            self.desired_loaded();
            self.tracking_changed();
        } else {
            self.publish_unresolved_scopes();
        }
    }

    /// Tells the index which tracked custom kinds nothing has given a scope yet (no CRD
    /// committed, not served by the cluster): their `/drift` entries say `scope: unresolved`.
    fn publish_unresolved_scopes(&mut self) {
        let unresolved: BTreeSet<GroupKind> = self
            .tracked
            .kinds()
            .filter(|t| is_custom(t))
            .map(group_kind)
            .filter(|gk| !self.crds.is_committed(gk) && !self.desired.scope_known(gk))
            .collect();
        self.index
            .write()
            .unwrap()
            .set_unresolved_scopes(unresolved);
    }

    /// Whether a custom resource of `kind` must wait for the cluster's CRDs to be listed
    /// before it is compared (else it would be compared schema-less first).
    fn awaits_crds(&self, kind: &TypeKey) -> bool {
        is_custom(kind)
            && !self.crds.is_committed(&group_kind(kind))
            && !self.lists.listed_once(&crd_kind())
    }

    /// The desired state or the open intents changed: keeps the live copies, watchers and
    /// index in step with the objects they want, and compares them all.
    fn tracking_changed(&mut self) {
        let now = self.clock.wall();
        let intent_only = self
            .intents
            .only_wanted(&self.desired)
            .into_iter()
            .map(|(key, kind)| (Arc::new(key), Arc::new(kind)));
        let desired = self
            .desired
            .typed_keys()
            .map(|(key, kind)| (key.clone(), kind.clone()));
        let (removed, added) = self.tracked.replace(intent_only.chain(desired));
        self.count_owned_covered();
        for key in &removed {
            self.forget(key, now);
        }
        let desired = &self.desired;
        self.dry_runs.retain(|k| desired.contains(k));
        // Episodes an earlier run left open for objects no longer desired end now.
        let orphaned: Vec<ObjectKey> = self
            .publication
            .settling
            .keys()
            .filter(|k| !self.tracked.contains(k))
            .cloned()
            .collect();
        for key in &orphaned {
            self.forget(key, now);
        }
        // Objects now desired (or being deployed) are no longer unmanaged.
        for (_, key) in &added {
            if self.coverage.forget(key) {
                self.withdraw_unmanaged(key);
            }
        }

        // Watch the tracked kinds, the covered kinds, and HPAs when something they may scale
        // is desired.
        let mut wanted: BTreeSet<TypeKey> = self.tracked.kinds().cloned().collect();
        self.watches.keep_copies_of(&wanted);
        wanted.extend(self.coverage.kinds().cloned());
        wanted.extend(self.stale_configs.kinds());
        if self.desired.has_scalable() {
            wanted.insert(hpa_kind());
        }
        // The cluster's CRDs, for custom resources whose CRD is not committed.
        if self.tracked.kinds().any(is_custom) {
            wanted.insert(crd_kind());
        }
        self.lists.sync(&wanted, &mut self.watches);
        if !self.lists.contains(&hpa_kind()) {
            self.autoscalers.clear();
            self.facts.hpa_targets.clear();
        }
        if !self.lists.contains(&crd_kind()) {
            let kinds = self.crds.clear_live();
            self.crds_changed(kinds);
        }
        // A list already delivered passed over objects that matter now: newly tracked ones
        // (live copies are kept for tracked objects only) and, for covered kinds, objects
        // no longer tracked (unmanaged now, perhaps).
        let mut relist: BTreeMap<TypeKey, BTreeSet<ObjectKey>> = BTreeMap::new();
        // (A kind whose list delivered nothing yet passed over nothing: at a first load that
        // is every kind, so its keys are not copied here, one B-tree insert per object.)
        for (kind, key) in &added {
            if self.lists.delivered(kind) {
                relist
                    .entry((**kind).clone())
                    .or_default()
                    .insert((**key).clone());
            }
        }
        for key in &removed {
            if let Some(kind) = self.coverage.kind_of(key) {
                relist.entry(kind.clone()).or_default();
            }
        }
        for (kind, waiting) in relist {
            self.lists.relist(&kind, waiting, &mut self.watches);
        }

        {
            let mut index = self.index.write().unwrap();
            index.set_sources(self.desired.sources().clone());
            index.set_revisions(self.desired.revisions().to_vec());
        }
        self.publish_unresolved_scopes();
        tracing::info!(
            objects = self.desired.len(),
            kinds = self.desired.kinds().count(),
            open_intents = self.intents.open().len(),
            "desired state loaded"
        );
        for key in &self.tracked.keys() {
            self.evaluate(key);
        }
        self.publish_state();
        self.report_expired_rules();
        self.publish_intents();
        self.refresh_locks();
        self.compact_memory();
    }

    /// Drops everything known about `key` and closes its episode.
    fn forget(&mut self, key: &ObjectKey, now: Timestamp) {
        self.set_live_copy(key, None);
        self.drop_entry(key, now);
    }

    /// Withdraws the drift entry of `key` (not an `unmanaged` one) and closes its episode.
    fn drop_entry(&mut self, key: &ObjectKey, now: Timestamp) {
        self.publication.open_since.remove(key);
        {
            let mut index = self.index.write().unwrap();
            if index
                .get(key)
                .is_some_and(|e| e.class != DriftClass::Unmanaged)
            {
                index.remove(key);
            }
        }
        if self.publication.settling.forget(key).is_some() {
            if let Err(err) = self.store.resolve_drift(key, now) {
                tracing::error!(object = %key, error = %err, "cannot close drift episode");
                self.outputs.store_error("cannot close drift episode", &err);
            }
        }
    }

    /// Handles watch messages, then publishes coverage, readiness and stale locks, and
    /// reports what settled.
    pub fn handle(&mut self, messages: impl IntoIterator<Item = WatchMessage>) {
        let mut holders_changed = false;
        self.hold_judgements();
        for message in messages {
            holders_changed |= self.on_message(message);
        }
        self.release_judgements();
        self.stale_config_flush();
        self.publish_state();
        if holders_changed {
            self.refresh_locks();
        }
        self.settle_backlog = self.settle_some();
    }

    /// Handles one message; true if it changed what is known of a lock holder pod.
    fn on_message(&mut self, message: WatchMessage) -> bool {
        let WatchMessage {
            type_key: kind,
            watcher,
            event,
        } = message;
        match &event {
            WatchEvent::Apply(_) | WatchEvent::Delete(_) => self.outputs.watch_event(&kind),
            WatchEvent::Error(err) => {
                // Every failed attempt, however soon a retry succeeds.
                self.outputs.watch_error(&kind, err);
                tracing::warn!(kind = %kind, error = %err, "watch failed; retrying with backoff");
            }
            _ => {}
        }
        // Held events are judged before anything but an ordinary object's change can change
        // what they are judged by (lists, autoscalers, CRDs).
        let ordinary = matches!(event, WatchEvent::Apply(_) | WatchEvent::Delete(_))
            && !is_hpa_kind(&kind)
            && !is_crd_kind(&kind);
        if !ordinary {
            self.judge_held();
        }
        if self.locks.holders.owns(watcher) {
            return self.locks.holders.step(watcher, &event, self.clock.wall());
        }
        if !self.lists.is_current(&kind, watcher) {
            tracing::debug!(kind = %kind, "message of a replaced or stopped watcher dropped");
            return false;
        }
        self.health_step(&kind, &event);
        match event {
            WatchEvent::Init => self.step_list(&kind, ListEvent::Init),
            WatchEvent::Apply(Applied { object, kept }) => {
                self.event_position(&kind, &object);
                if let Some(key) = ObjectKey::of(&object) {
                    self.lists.step(&kind, ListEvent::Seen(&key));
                    self.object_changed(&kind, key, Some((object, kept)));
                }
            }
            WatchEvent::Delete(object) => {
                self.event_position(&kind, &object);
                if let Some(key) = ObjectKey::of(&object) {
                    self.object_changed(&kind, key, None);
                }
            }
            WatchEvent::InitDone => self.step_list(&kind, ListEvent::Done),
            WatchEvent::Served { namespaced } => self.scope_learned(&kind, namespaced),
            WatchEvent::NotServed => self.step_list(&kind, ListEvent::NotServed),
            WatchEvent::Position(rv) | WatchEvent::Bookmark(rv) => {
                if self
                    .lists
                    .position(&kind, &rv, Position::Server, &mut self.watches)
                {
                    self.went_back(&kind, &rv);
                }
            }
            WatchEvent::Opened | WatchEvent::Error(_) => {} // health only
        }
        false
    }

    fn step_list(&mut self, kind: &TypeKey, event: ListEvent) {
        // A first list judged what it listed as it came (`Lists::judges`).
        let judged_as_listed = !self.lists.listed_once(kind);
        if let Some(listed) = self.lists.step(kind, event) {
            self.list_done(kind, &listed, judged_as_listed);
        }
    }

    /// A live object of `kind` is now `object`, of which the engine keeps `kept` when the
    /// watcher packed it (`None`: deleted).
    fn object_changed(
        &mut self,
        kind: &TypeKey,
        key: ObjectKey,
        live: Option<(Value, Option<Packed>)>,
    ) {
        let (object, kept) = live.unzip();
        let now = self.clock.wall();
        self.stale_configs.observe(kind, &key, object.as_ref(), now);
        if is_hpa_kind(kind) {
            let affected = self.autoscalers.apply(key.clone(), object.as_ref());
            self.autoscalers_changed(affected);
        }
        if is_crd_kind(kind) && self.lists.listed_once(kind) {
            let kinds = self.crds.apply_live(&key, object.as_ref());
            self.crds_changed(kinds);
            if let Some(crd) = &object {
                self.relist_defined_by(crd);
            }
        } else if is_crd_kind(kind) {
            // Still listing: taken in at the end of the list, compared once.
            self.crds.apply_live(&key, object.as_ref());
        }
        if self.tracked.contains(&key) {
            // Packed by the watcher, unless it came before the kind was tracked.
            let kept = object.as_ref().map(|o| {
                kept.flatten()
                    .unwrap_or_else(|| kept_copy(o, self.tracked.packing()))
            });
            let object = object.map(as_compared);
            self.set_live_copy(&key, kept);
            self.judge_event(key, object);
        } else if self.coverage.covers_type(kind) {
            self.covered_changed(kind, key, object.as_ref());
        }
    }

    /// A list of `kind` ended with `listed` existing: every other object of the kind is gone.
    /// The listed ones are judged again unless they were `judged_as_listed`.
    fn list_done(&mut self, kind: &TypeKey, listed: &HashSet<ObjectKey>, judged_as_listed: bool) {
        let keys = self.tracked.keys_of(|t| t == kind);
        for key in &keys {
            if !listed.contains(&**key) {
                self.set_live_copy(key, None);
            } else if judged_as_listed {
                continue;
            }
            self.evaluate(key);
        }
        if is_hpa_kind(kind) {
            let affected = self.autoscalers.retain_listed(listed);
            self.autoscalers_changed(affected);
        }
        if is_crd_kind(kind) {
            self.crds.retain_listed(listed);
            // Custom resources waited for this list: compare them all, by what it returned.
            let kinds: BTreeSet<GroupKind> = self
                .tracked
                .kinds()
                .filter(|t| is_custom(t))
                .map(group_kind)
                .collect();
            self.crds_changed(kinds);
        }
        self.stale_configs
            .retain_listed(kind, listed, self.clock.wall());
        for key in self.coverage.retain_listed(kind, listed) {
            self.withdraw_unmanaged(&key);
        }
        tracing::debug!(kind = %kind, objects = keys.len(), "list complete");
        self.publish_state();
    }

    /// The autoscaler of `affected` changed: their `spec.replicas` is compared anew.
    fn autoscalers_changed(&mut self, affected: Vec<ObjectKey>) {
        if affected.is_empty() {
            return;
        }
        self.facts.hpa_targets = self.autoscalers.targets();
        for key in affected {
            self.evaluate(&key);
        }
    }

    /// Compares one tracked object with its live copy and updates the index.
    fn evaluate(&mut self, key: &ObjectKey) {
        self.judge(key, Live::Kept);
    }

    /// The live copy of `key` (`None`: it does not exist live), unpacked.
    fn live_copy(&self, key: &ObjectKey) -> Option<Value> {
        self.tracked.live(key)
    }

    /// Puts `entry` in the index with its `since` (kept while it drifts, across classes and
    /// restarts) and tells settling what the comparison said.
    fn publish_entry(&mut self, key: &ObjectKey, entry: DriftEntry) {
        self.publication
            .publish(&self.tracked, &self.stale_configs, key, entry);
    }

    /// Logs ignore rules that expired since the last check and publishes how many are.
    pub fn report_expired_rules(&mut self) {
        let expired = self.differ.expired_rules();
        self.expired_rules.report(&expired);
        self.index.write().unwrap().set_rules_expired(expired.len());
    }
}

#[cfg(test)]
mod tests;

/// The index entry of desired object `key` judged `class`, with nothing else said yet.
fn entry_of(desired: &Desired, key: &ObjectKey, class: DriftClass) -> DriftEntry {
    DriftEntry {
        source: desired.source.to_string(),
        revision: desired.revision,
        api_version: desired.api_version().to_string(),
        kind: key.kind.clone(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        class,
        since: None,
        changes: Default::default(),
        patch: Default::default(),
        ignored: Vec::new(),
        intent: None,
        schema: None,
        dry_run: None,
        stale_config: None,
        stale: false,
        scope: None,
    }
}
