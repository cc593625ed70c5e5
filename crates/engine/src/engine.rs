//! The drift engine: one task that owns the desired state, the open intents, the live
//! copies of the objects they want, and the drift index. Watch messages, new commits and
//! intents come in; index updates, episodes, intent releases and [`Outputs`] go out.
//!
//! The engine is a coordinator over parts, each owning its state (`wanted`, `comparing`,
//! `watching`, `unmanaged`, `publication`, `stale` locks, dry runs, `stale_config_feed`,
//! `audit`).
//! Five things happen to it, and its methods route each to the parts it concerns: a watch
//! event, a list done, tracking changed (a commit or an intent), a tick (`Tick`) and an
//! answer of a task it asked (`Answer`).
//!
//! A live object that differs from its committed desired state but equals what an open
//! intent of its source wanted is `uncommitted` (`uncommitted`); deploy locks are judged
//! stale in `stale` (holder pods watched by name, Pulumi lock files scanned).
//!
//! Two clocks on purpose: `/drift` and `/metrics` change as soon as a comparison does (within
//! a second of a watch event), while Events and episodes only record a state that held for
//! `settle_seconds` ([`Settling`](crate::settle::Settling)), so a controller that briefly
//! rewrites a field makes no Event pair.
//!
//! Nothing here needs a cluster: the engine is built from the store, a [`WatchControl`] to
//! start and stop watchers, [`Outputs`] and a [`Clock`]. The run loop ([`Engine::run`])
//! only feeds it; tests call the same steps directly.

use super::clock::Clock;
use super::crds::{crd_kind, group_kind, is_crd_kind, is_custom, GroupKind};
use super::desired::Desired;
use super::dry_run_answers::DryRuns;
use super::hpa::{hpa_kind, is_hpa_kind};
use super::index::SharedIndex;
use super::intents::IntentChange;
use super::list_states::{ListEvent, Position};
use super::memory::release_free_memory;
use super::outputs::Outputs;
use crate::Leadership;
use driftd_config::{Config, ConfigError};
use driftd_core::report::{DriftClass, DriftEntry};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{Ending, EpisodeEnd, EpisodeWrite, Store, StoreError};
use driftd_watch::packed::{Packed, Packing};
use driftd_watch::{Applied, WatchControl, WatchEvent, WatchMessage};
use jiff::Timestamp;
use serde_json::Value;
use stale::LockState;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// At most this many queued watch messages are handled before the engine settles and
/// publishes, so a flood cannot hold back Events.
const MAX_BATCH: usize = 4096;

/// At most this many settled drift states are recorded and announced in one step
/// (`settle_some`).
const SETTLE_BATCH: usize = 1024;

mod audit;
mod comparing;
mod custom_kinds;
mod dry_run_judging;
mod episodes;
mod judging;
mod live;
mod packing;
mod publication;
mod readiness;
mod stale;
mod stale_config_feed;
mod timers;
mod uncommitted;
mod unmanaged;
mod wanted;
mod watching;

use audit::Audit;
pub use audit::AuditBatches;
use comparing::Comparing;
use driftd_watch::kept::{as_compared, kept_copy};
use live::Live;
use publication::Publication;
use stale_config_feed::StaleConfigFeed;
use timers::{Answer, Answers, Periods, Tick, Timers};
use unmanaged::Unmanaged;
use wanted::Wanted;
use watching::Watching;

/// Why the engine cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// See the module documentation. Each field but the store, the clock and the outputs is a
/// part owning its state; the engine's methods route the few things that happen (a watch
/// event, a list done, tracking changed, a tick, an answer) to the parts they concern.
pub struct Engine<W, O> {
    store: Store,
    clock: Arc<dyn Clock>,
    outputs: O,
    /// The desired state, the open intents, and the objects they want with live copies.
    wanted: Wanted,
    /// The rules and cluster facts comparisons are made with.
    comparing: Comparing,
    /// The watchers and their lists.
    watching: Watching<W>,
    /// `[unmanaged]` coverage.
    unmanaged: Unmanaged,
    /// The index, settling, and episodes.
    publication: Publication,
    /// Stale deploy locks (holder pods, Pulumi lock files, automatic releases).
    locks: LockState,
    /// Server-side dry runs of `compare = "dry-run"` sources.
    dry_runs: DryRuns,
    /// Pods running on stale config (`stale_config`).
    stale_config: StaleConfigFeed,
    /// Recent writes from audit events: who made the changes.
    audit: Audit,
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
        Ok(Engine {
            stale_config: StaleConfigFeed::start(&store, config, &key)?,
            publication: Publication::new(&store, config.settle(), index, clock.clone())?,
            comparing: Comparing::new(&key, config),
            wanted: Wanted::new(packing, Duration::from_millis(config.desired_poll_millis)),
            watching: Watching::new(watches, config.relist()),
            unmanaged: Unmanaged::new(config)?,
            locks: LockState::new(config),
            dry_runs: DryRuns::new(config.dry_run_sources(), config.dry_run.refresh()),
            audit: Audit::new(&config.audit),
            store,
            clock,
            outputs,
        })
    }

    /// Leader-only work (releasing stale locks automatically) follows `leadership`; what this
    /// replica records in history names it `driftd/<identity>`. Without it the engine acts
    /// as the only replica.
    pub fn with_leadership(mut self, leadership: Leadership, identity: &str) -> Self {
        self.locks.leadership = leadership;
        self.locks.actor = format!("driftd/{identity}");
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
        let mut answers = Answers {
            dry_runs: self.dry_runs.take_answers(),
            releases: self.locks.take_release_answers(),
            audit: self.audit.take_batches(),
        };
        let mut timers = Timers::start(Periods {
            poll: self.wanted.poll,
            settle: self.publication.settling.settle(),
            lock_scan: self.locks.scan_period(),
            relist: self.watching.relist_period(),
            dry_runs: answers.dry_runs.is_some(),
        });
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
                // Work left over by a step (settled states, the minute's `last_seen`), in
                // turns with the inbox.
                _ = std::future::ready(()), if self.has_leftover_work() => self.leftover_step(),
                tick = timers.next() => self.on_tick(tick),
                answer = answers.next() => match answer {
                    Answer::DryRun(answer) => self.dry_run_answered(answer),
                    Answer::Released(answer) => self.cluster_released(answer),
                    Answer::Audit(records) => self.audit_received(records),
                },
            }
        }
    }

    /// Whether a step left work over that is done in turns with watch events.
    fn has_leftover_work(&self) -> bool {
        self.publication.backlog || self.publication.last_seen.due()
    }

    /// One step of the work left over: settled states first, then `last_seen`.
    fn leftover_step(&mut self) {
        if self.publication.backlog {
            self.publication.backlog = self.settle_some();
        } else {
            self.touch_some();
        }
    }

    /// Hands clock-driven work to the part it is due to.
    fn on_tick(&mut self, tick: Tick) {
        match tick {
            Tick::PollDesired => {
                if let Err(err) = self.poll_desired() {
                    tracing::error!(error = %err, "cannot read the desired state; keeping the last one");
                    self.outputs
                        .store_error("cannot read the desired state", &err);
                }
            }
            Tick::Settle => self.publication.backlog = self.settle_some(),
            Tick::RulesExpiry => self.report_expired_rules(),
            Tick::LastSeen => {
                self.audit.trail.expire(self.clock.wall());
                self.start_touching();
                release_free_memory();
            }
            Tick::Locks => {
                self.intents_aged();
                self.stale_config_flush();
            }
            Tick::RecountIntents => self.recount_intents(),
            Tick::ScanLocks => self.scan_pulumi_locks(),
            Tick::Relist => self.relist_periodically(),
            Tick::DryRuns => self.refresh_dry_runs(),
        }
    }

    /// Lists every listed kind again (`relist_seconds`): a change the watches never
    /// delivered is found within one period.
    pub fn relist_periodically(&mut self) {
        self.watching.relist_listed();
    }

    /// Loads the desired state and the open intents if someone wrote since the last load.
    pub fn poll_desired(&mut self) -> Result<(), StoreError> {
        let desired = self.wanted.desired.poll(&self.store)?;
        if desired {
            self.desired_loaded();
        }
        let now = self.clock.wall();
        let intents = self.wanted.intents.poll(
            &self.store,
            &self.wanted.desired,
            &self.comparing.facts,
            now,
        )?;
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
        let kinds = self
            .comparing
            .crds
            .set_committed(&self.wanted.desired.crds());
        self.comparing.crds.publish(&mut self.comparing.facts);
        self.wanted
            .intents
            .reprepare(&self.wanted.desired, &self.comparing.facts, &kinds);
    }

    /// The desired state or the open intents changed: keeps the live copies, watchers and
    /// index in step with the objects they want, and compares them all.
    fn tracking_changed(&mut self) {
        let now = self.clock.wall();
        let (removed, added) = self.wanted.retrack();
        self.unmanaged.recount(self.wanted.tracked.live_keys());
        for key in &removed {
            self.forget(key, now);
        }
        let desired = &self.wanted.desired;
        self.dry_runs.retain(|k| desired.contains(k));
        // Episodes an earlier run left open for objects no longer desired end now.
        let orphaned: Vec<ObjectKey> = self
            .publication
            .settling
            .keys()
            .filter(|k| !self.wanted.tracked.contains(k))
            .cloned()
            .collect();
        for key in &orphaned {
            self.forget(key, now);
        }
        // Objects now desired (or being deployed) are no longer unmanaged.
        for (_, key) in &added {
            self.unmanaged.now_tracked(key, &self.publication.index);
        }

        // Watch the tracked kinds, the covered kinds, and HPAs when something they may scale
        // is desired.
        let mut wanted: BTreeSet<TypeKey> = self.wanted.tracked.kinds().cloned().collect();
        self.watching.watches.keep_copies_of(&wanted);
        wanted.extend(self.unmanaged.coverage.kinds().cloned());
        wanted.extend(self.stale_config.judgement.kinds());
        if self.wanted.desired.has_scalable() {
            wanted.insert(hpa_kind());
        }
        // The cluster's CRDs, for custom resources whose CRD is not committed.
        if self.wanted.tracked.kinds().any(is_custom) {
            wanted.insert(crd_kind());
        }
        self.watching.sync(&wanted);
        if !self.watching.lists.contains(&hpa_kind()) {
            self.comparing.forget_autoscalers();
        }
        if !self.watching.lists.contains(&crd_kind()) {
            let kinds = self.comparing.crds.clear_live();
            self.crds_changed(kinds);
        }
        // A list already delivered passed over objects that matter now: newly tracked ones
        // (live copies are kept for tracked objects only) and, for covered kinds, objects
        // no longer tracked (unmanaged now, perhaps).
        let mut relist: BTreeMap<TypeKey, BTreeSet<ObjectKey>> = BTreeMap::new();
        // (A kind whose list delivered nothing yet passed over nothing: at a first load that
        // is every kind, so its keys are not copied here, one B-tree insert per object.)
        for (kind, key) in &added {
            if self.watching.lists.delivered(kind) {
                relist
                    .entry((**kind).clone())
                    .or_default()
                    .insert((**key).clone());
            }
        }
        for key in &removed {
            if let Some(kind) = self.unmanaged.coverage.kind_of(key) {
                relist.entry(kind.clone()).or_default();
            }
        }
        for (kind, waiting) in relist {
            self.watching.relist(&kind, waiting);
        }

        {
            let mut index = self.publication.index.write().unwrap();
            index.set_sources(self.wanted.desired.sources().clone());
            index.set_revisions(self.wanted.desired.revisions().to_vec());
        }
        self.publish_unresolved_scopes();
        tracing::info!(
            objects = self.wanted.desired.len(),
            kinds = self.wanted.desired.kinds().count(),
            open_intents = self.wanted.intents.open().len(),
            "desired state loaded"
        );
        for key in &self.wanted.tracked.keys() {
            self.evaluate(key);
        }
        self.publish_state();
        self.report_expired_rules();
        self.publish_intents();
        self.refresh_locks();
        self.compact_memory();
    }

    /// Drops everything known about `key` and closes its episode: no longer desired.
    fn forget(&mut self, key: &ObjectKey, now: Timestamp) {
        self.set_live_copy(key, None);
        self.drop_entry(key, now, EpisodeEnd::NoLongerDesired);
    }

    /// Withdraws the drift entry of `key` (not an `unmanaged` one) and closes its episode,
    /// ended `how`.
    fn drop_entry(&mut self, key: &ObjectKey, now: Timestamp, how: EpisodeEnd) {
        self.publication.open_since.remove(key);
        self.publication.endings.remove(key);
        {
            let mut index = self.publication.index.write().unwrap();
            if index
                .get(key)
                .is_some_and(|e| e.class != DriftClass::Unmanaged)
            {
                index.remove(key);
            }
        }
        if self.publication.settling.forget(key).is_some() {
            let ending = [EpisodeWrite::Resolved {
                key,
                at: now,
                ending: Ending::new(how),
            }];
            match self.store.write_episodes(&ending) {
                Ok(changes) => self.outputs.episodes(&changes),
                Err(err) => {
                    tracing::error!(object = %key, error = %err, "cannot close drift episode");
                    self.outputs.store_error("cannot close drift episode", &err);
                }
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
        self.publication.backlog = self.settle_some();
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
        if !self.watching.lists.is_current(&kind, watcher) {
            tracing::debug!(kind = %kind, "message of a replaced or stopped watcher dropped");
            return false;
        }
        self.watching.health_step(&kind, &event, self.clock.wall());
        match event {
            WatchEvent::Init => self.step_list(&kind, ListEvent::Init),
            WatchEvent::Apply(Applied { object, kept }) => {
                self.watching.event_position(&kind, &object);
                if let Some(key) = ObjectKey::of(&object) {
                    self.watching.lists.step(&kind, ListEvent::Seen(&key));
                    self.object_changed(&kind, key, Some((object, kept)));
                }
            }
            WatchEvent::Delete(object) => {
                self.watching.event_position(&kind, &object);
                if let Some(key) = ObjectKey::of(&object) {
                    self.object_changed(&kind, key, None);
                }
            }
            WatchEvent::InitDone => self.step_list(&kind, ListEvent::Done),
            WatchEvent::Served { namespaced } => self.scope_learned(&kind, namespaced),
            WatchEvent::NotServed => self.step_list(&kind, ListEvent::NotServed),
            WatchEvent::Position(rv) | WatchEvent::Bookmark(rv) => {
                self.watching.position(&kind, &rv, Position::Server);
            }
            WatchEvent::Opened | WatchEvent::Error(_) => {} // health only
        }
        false
    }

    fn step_list(&mut self, kind: &TypeKey, event: ListEvent) {
        // A list judged what it listed as it came (`Lists::judges`), except, on a re-list,
        // the objects it waited for.
        let first = !self.watching.lists.listed_once(kind);
        // Copied only when a list ends: `Seen` comes once per listed object.
        let waiting = match event {
            ListEvent::Done => self.watching.lists.waiting(kind),
            _ => BTreeSet::new(),
        };
        if let Some(listed) = self.watching.lists.step(kind, event) {
            let judged_as_listed = |key: &ObjectKey| first || !waiting.contains(key);
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
        self.stale_config
            .judgement
            .observe(kind, &key, object.as_ref(), now);
        if is_hpa_kind(kind) {
            let affected = self
                .comparing
                .autoscaler_changed(key.clone(), object.as_ref());
            self.evaluate_all(&affected);
        }
        if is_crd_kind(kind) && self.watching.lists.listed_once(kind) {
            let kinds = self.comparing.crds.apply_live(&key, object.as_ref());
            self.crds_changed(kinds);
            if let Some(crd) = &object {
                self.relist_defined_by(crd);
            }
        } else if is_crd_kind(kind) {
            // Still listing: taken in at the end of the list, compared once.
            self.comparing.crds.apply_live(&key, object.as_ref());
        }
        if self.wanted.tracked.contains(&key) {
            // Packed by the watcher, unless it came before the kind was tracked.
            let kept = object.as_ref().map(|o| {
                kept.flatten()
                    .unwrap_or_else(|| kept_copy(o, self.wanted.tracked.packing()))
            });
            let object = object.map(as_compared);
            self.set_live_copy(&key, kept);
            self.judge_event(key, object);
        } else if self.unmanaged.coverage.covers_type(kind) {
            self.unmanaged.covered_changed(
                kind,
                key,
                object.as_ref(),
                now,
                &self.stale_config.judgement,
                &self.publication.index,
            );
        }
    }

    /// A list of `kind` ended with `listed` existing: every other object of the kind is gone.
    /// The listed ones are judged again unless they were `judged_as_listed` (at a million
    /// objects, judging a re-listed kind again held `/drift` back for tens of seconds).
    fn list_done(
        &mut self,
        kind: &TypeKey,
        listed: &HashSet<ObjectKey>,
        judged_as_listed: impl Fn(&ObjectKey) -> bool,
    ) {
        let keys = self.wanted.tracked.keys_of(|t| t == kind);
        for key in &keys {
            if !listed.contains(&**key) {
                self.set_live_copy(key, None);
            } else if judged_as_listed(key) {
                continue;
            }
            self.evaluate(key);
        }
        if is_hpa_kind(kind) {
            let affected = self.comparing.autoscalers_listed(listed);
            self.evaluate_all(&affected);
        }
        if is_crd_kind(kind) {
            self.comparing.crds.retain_listed(listed);
            // Custom resources waited for this list: compare them all, by what it returned.
            let kinds: BTreeSet<GroupKind> = self
                .wanted
                .tracked
                .kinds()
                .filter(|t| is_custom(t))
                .map(group_kind)
                .collect();
            self.crds_changed(kinds);
        }
        self.stale_config
            .judgement
            .retain_listed(kind, listed, self.clock.wall());
        self.unmanaged.listed(kind, listed, &self.publication.index);
        tracing::debug!(kind = %kind, objects = keys.len(), "list complete");
        self.publish_state();
    }

    /// Compares `keys` anew (what they are compared by changed).
    fn evaluate_all(&mut self, keys: &[ObjectKey]) {
        for key in keys {
            self.evaluate(key);
        }
    }

    /// Compares one tracked object with its live copy and updates the index.
    fn evaluate(&mut self, key: &ObjectKey) {
        self.judge(key, Live::Kept);
    }

    /// Keeps `live` as the live copy of tracked `key` (`None`: gone), and the count of
    /// covered objects a source owns with it.
    fn set_live_copy(&mut self, key: &ObjectKey, live: Option<Packed>) {
        let now_live = live.is_some();
        if let Some(was_live) = self.wanted.tracked.set_live(key, live) {
            self.unmanaged.live_changed(key, was_live, now_live);
        }
    }

    /// The live copy of `key` (`None`: it does not exist live), unpacked.
    fn live_copy(&self, key: &ObjectKey) -> Option<Value> {
        self.wanted.tracked.live(key)
    }

    /// Puts `entry` in the index with its `since` (kept while it drifts, across classes and
    /// restarts) and tells settling what the comparison said.
    fn publish_entry(&mut self, key: &ObjectKey, entry: DriftEntry) {
        self.publication.publish(
            &self.wanted.tracked,
            &self.stale_config.judgement,
            key,
            entry,
        );
    }

    /// Logs ignore rules that expired since the last check and publishes how many are.
    pub fn report_expired_rules(&mut self) {
        self.comparing.report_expired_rules(&self.publication.index);
    }
}

#[cfg(test)]
mod tests;

/// The index entry of desired object `key` judged `class`, with nothing else said yet.
fn entry_of(desired: &Desired, key: &ObjectKey, class: DriftClass) -> DriftEntry {
    DriftEntry::new(
        desired.source.to_string(),
        desired.revision,
        desired.api_version().to_string(),
        key,
        class,
    )
}
