//! The open intents (pending, expired, failed, interrupted) as the engine compares against
//! them: what live objects may equal instead of the committed desired state (class
//! `uncommitted`), and the locks that may be stale.
//!
//! Intents change with every renewal (a heartbeat moves `expires_at` and bumps the
//! database's `data_version`), so a reload reads the intent rows first and fetches objects
//! only when an intent began or ended; each object is prepared for comparison once, like a
//! desired object. Expiry is derived from the engine's clock ([`IntentSet::refresh`]), not
//! from the store's reading time.

use super::crds::{group_kind, is_custom, GroupKind};
use super::desired::DesiredSet;
use driftd_core::diff::{ClusterFacts, CompareInput, Differ, PreparedDesired};
use driftd_core::report::DriftClass;
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{IntentInfo, IntentState, Store, StoreError};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Ended intents count in `driftd_intents` for this long after they ended.
pub const RECENT: SignedDuration = SignedDuration::from_hours(24);

/// One object an open intent wanted, ready to compare.
#[derive(Debug)]
pub struct IntentObject {
    pub kind: TypeKey,
    pub object: Value,
    /// The committed object it would replace: fields the intent dropped are not its.
    pub previous: Option<Value>,
    pub prepared: PreparedDesired,
}

/// An open intent and its objects.
#[derive(Debug)]
pub struct Open {
    pub info: IntentInfo,
    pub objects: HashMap<ObjectKey, IntentObject>,
}

/// What a reload found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentChange {
    /// Nothing, or only renewals of pending intents (new `expires_at`).
    Renewed,
    /// An intent began, ended, or changed state: comparisons may change.
    Changed,
}

/// The open intents, oldest first.
#[derive(Debug, Default)]
pub struct IntentSet {
    data_version: Option<i64>,
    open: Vec<Open>,
    /// Intents that ended within [`RECENT`] (as of the last count), by (source, state).
    ended: BTreeMap<(String, &'static str), usize>,
}

/// The state of `info` at `now`: a pending intent past its expiry reads as expired.
fn state_at(info: &IntentInfo, now: Timestamp) -> IntentState {
    match info.state {
        IntentState::Pending | IntentState::Expired if info.expires_at <= now => {
            IntentState::Expired
        }
        IntentState::Pending | IntentState::Expired => IntentState::Pending,
        other => other,
    }
}

/// The state as stored: expiry is a reading of `pending`, not a transition.
fn stored(state: IntentState) -> IntentState {
    match state {
        IntentState::Expired => IntentState::Pending,
        other => other,
    }
}

impl IntentSet {
    /// Reloads if another connection wrote since the last load.
    pub fn poll(
        &mut self,
        store: &Store,
        desired: &DesiredSet,
        facts: &ClusterFacts,
        now: Timestamp,
    ) -> Result<Option<IntentChange>, StoreError> {
        let version = store.data_version()?;
        if self.data_version == Some(version) {
            return Ok(None);
        }
        let change = self.load(store, desired, facts, now)?;
        self.data_version = Some(version);
        Ok(Some(change))
    }

    /// Reads the open intents; objects only of intents not loaded before.
    pub fn load(
        &mut self,
        store: &Store,
        desired: &DesiredSet,
        facts: &ClusterFacts,
        now: Timestamp,
    ) -> Result<IntentChange, StoreError> {
        let mut rows = store.intents(None, false)?;
        rows.reverse(); // oldest first
        let same_intents = rows.len() == self.open.len()
            && rows.iter().zip(&self.open).all(|(row, open)| {
                row.id == open.info.id && stored(row.state) == stored(open.info.state)
            });
        if same_intents {
            // Renewals: new expiries. The state stays as last derived, so that
            // [`IntentSet::refresh`] reports an expiry or a revival.
            for (mut row, open) in rows.into_iter().zip(&mut self.open) {
                row.state = open.info.state;
                open.info = row;
            }
            return Ok(IntentChange::Renewed);
        }
        let mut known: HashMap<i64, Open> = self.open.drain(..).map(|o| (o.info.id, o)).collect();
        let mut fetched: Option<HashMap<i64, Vec<driftd_store::IntentObject>>> = None;
        for mut row in rows {
            row.state = state_at(&row, now);
            let objects = match known.remove(&row.id) {
                Some(open) => open.objects,
                None => {
                    let fetched = match &mut fetched {
                        Some(f) => f,
                        None => fetched.insert(
                            store
                                .open_intents()?
                                .into_iter()
                                .map(|o| (o.intent.id, o.objects))
                                .collect(),
                        ),
                    };
                    // Ended between the two reads: the next poll sees it gone.
                    let Some(objects) = fetched.remove(&row.id) else {
                        continue;
                    };
                    prepare(objects, desired, facts)
                }
            };
            self.open.push(Open { info: row, objects });
        }
        self.recount(store, now)?;
        Ok(IntentChange::Changed)
    }

    /// Prepares the objects again against a new desired state (their `previous` changed)
    /// or new CRDs (custom resources of `kinds`).
    pub fn reprepare(
        &mut self,
        desired: &DesiredSet,
        facts: &ClusterFacts,
        kinds: &BTreeSet<GroupKind>,
    ) {
        for open in &mut self.open {
            for (key, object) in &mut open.objects {
                let previous = desired.get(key).map(|d| d.manifest(desired.packing()));
                let crd_changed =
                    is_custom(&object.kind) && kinds.contains(&group_kind(&object.kind));
                if previous != object.previous || crd_changed {
                    object.prepared =
                        Differ::prepare_with(&object.object, previous.as_ref(), facts);
                    object.previous = previous;
                }
            }
        }
    }

    /// Derives states at `now`; returns the ids whose state changed (expired by time).
    pub fn refresh(&mut self, now: Timestamp) -> Vec<i64> {
        let mut changed = Vec::new();
        for open in &mut self.open {
            let state = state_at(&open.info, now);
            if state != open.info.state {
                open.info.state = state;
                changed.push(open.info.id);
            }
        }
        changed
    }

    /// Counts ended intents anew (the [`RECENT`] window moves with time).
    pub fn recount(&mut self, store: &Store, now: Timestamp) -> Result<(), StoreError> {
        let since = now.saturating_sub(RECENT).unwrap_or(now);
        self.ended.clear();
        for info in store.intents(None, true)? {
            if !info.state.is_open() && info.ended_at.is_some_and(|at| at >= since) {
                *self
                    .ended
                    .entry((info.source, info.state.as_str()))
                    .or_default() += 1;
            }
        }
        Ok(())
    }

    /// Intents by (source, state): open ones, and ended ones within [`RECENT`].
    pub fn counts(&self) -> BTreeMap<(String, &'static str), usize> {
        let mut counts = self.ended.clone();
        for open in &self.open {
            *counts
                .entry((open.info.source.clone(), open.info.state.as_str()))
                .or_default() += 1;
        }
        counts
    }

    /// The open intents, oldest first.
    pub fn open(&self) -> &[Open] {
        &self.open
    }

    /// The newest open intent (of `source`, or any) whose object `key` the live object
    /// equals, compared with the same differ, rules and facts as the committed desired state.
    pub fn matching(
        &self,
        source: Option<&str>,
        key: &ObjectKey,
        live: &Value,
        differ: &Differ,
        facts: &ClusterFacts,
    ) -> Option<&IntentInfo> {
        self.open.iter().rev().find_map(|open| {
            if source.is_some_and(|s| s != open.info.source) {
                return None;
            }
            let object = open.objects.get(key)?;
            let comparison = differ.compare_prepared(
                Some(&open.info.source),
                &CompareInput {
                    desired: &object.object,
                    live: Some(live),
                    previous: object.previous.as_ref(),
                    facts,
                },
                &object.prepared,
            );
            (comparison.class == DriftClass::InSync).then_some(&open.info)
        })
    }

    /// Objects only open intents want (no committed revision desires them), with their
    /// kinds: their live copies are kept too, to tell an apply that created them.
    pub fn only_wanted(&self, desired: &DesiredSet) -> BTreeMap<ObjectKey, TypeKey> {
        let mut keys = BTreeMap::new();
        for open in &self.open {
            for (key, object) in &open.objects {
                if !desired.contains(key) {
                    keys.entry(key.clone())
                        .or_insert_with(|| object.kind.clone());
                }
            }
        }
        keys
    }

    /// Keys of every object of the intents `ids`.
    pub fn keys_of(&self, ids: &[i64]) -> Vec<ObjectKey> {
        self.open
            .iter()
            .filter(|o| ids.contains(&o.info.id))
            .flat_map(|o| o.objects.keys().cloned())
            .collect()
    }
}

fn prepare(
    objects: Vec<driftd_store::IntentObject>,
    desired: &DesiredSet,
    facts: &ClusterFacts,
) -> HashMap<ObjectKey, IntentObject> {
    objects
        .into_iter()
        .map(|o| {
            let previous = desired.get(&o.key).map(|d| d.manifest(desired.packing()));
            let prepared = Differ::prepare_with(&o.object, previous.as_ref(), facts);
            let kind = TypeKey {
                api_version: o.api_version,
                kind: o.key.kind.clone(),
            };
            (
                o.key,
                IntentObject {
                    kind,
                    object: o.object,
                    previous,
                    prepared,
                },
            )
        })
        .collect()
}
