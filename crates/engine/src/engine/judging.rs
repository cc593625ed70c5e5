//! Judging: a tracked object compared with its live copy into its index entry.
//!
//! A burst of watch events is judged on every core. The engine's one thread is what limits
//! driftd on a busy cluster (comparing, unpacking the desired side and freeing the trees
//! are most of its work, while the watchers' threads have room), so the events of one batch that only need a comparison are held, compared together on
//! [`par::map_consumed`]'s threads, and their entries published in the events' order by the
//! engine's thread as they come, while the rest are still compared. Anything else the
//! engine does first judges what is held, so it sees the same state as if every event had
//! been judged on arrival.

use super::entry_of;
use super::live::Live;
use super::uncommitted;
use super::Engine;
use crate::audit_trail::AuditTrail;
use crate::desired::Desired;
use crate::intents::IntentSet;
use crate::outputs::Outputs;
use driftd_core::diff::ClusterFacts;
use driftd_core::diff::CompareInput;
use driftd_core::diff::Differ;
use driftd_core::par;
use driftd_core::report::Changes;
use driftd_core::report::DriftClass;
use driftd_core::report::DriftEntry;
use driftd_core::report::DriftPatch;
use driftd_k8s::ObjectKey;
use driftd_watch::packed::Packing;
use driftd_watch::WatchControl;
use serde_json::Value;
use std::time::Duration;
use std::time::Instant;

/// Held events compared per thread at least, and taken at a time by a thread (a chunk of
/// [`par::map_consumed`]): a comparison takes 30-100 µs, starting a thread some tens.
const MIN_JUDGED_PER_THREAD: usize = 16;

/// Held events judged together at most: bounds the live trees held (about 10 KB each).
const MAX_HELD: usize = 256;

/// What judging reads of the engine: shared by the threads that judge a burst together.
struct Judging<'a> {
    differ: &'a Differ,
    facts: &'a ClusterFacts,
    intents: &'a IntentSet,
    packing: &'a Packing,
    audit: &'a AuditTrail,
}

impl Judging<'_> {
    /// The entry of `key` (committed as `desired`) judged against `live`, and how long the
    /// comparison took. A modified object that equals what an open intent of its source
    /// wanted is `uncommitted`.
    fn entry(
        &self,
        key: &ObjectKey,
        desired: &Desired,
        live: Option<&Value>,
    ) -> (DriftEntry, Duration) {
        let started = Instant::now();
        let manifest = desired.manifest(self.packing);
        let previous = desired.previous(self.packing);
        let comparison = self.differ.compare_in(
            Some(&desired.source),
            &CompareInput {
                desired: &manifest,
                live,
                previous: previous.as_ref(),
                facts: self.facts,
            },
        );
        let took = started.elapsed();
        let intent = match (comparison.class, live) {
            (DriftClass::Modified, Some(live)) => {
                self.intents
                    .matching(Some(&desired.source), key, live, self.differ, self.facts)
            }
            _ => None,
        };
        let class = match intent {
            Some(_) => DriftClass::Uncommitted,
            None => comparison.class,
        };
        let who = self.audit.who(key, class, live, &comparison.changes);
        let entry = DriftEntry {
            who: (!who.is_empty()).then(|| Box::new(who)),
            changes: Changes::new(&comparison.changes),
            patch: DriftPatch::new(&comparison.patch),
            ignored: comparison.ignored,
            intent: intent.map(|i| Box::new(uncommitted::intent_ref(i, key, false))),
            schema: comparison.schema,
            ..entry_of(desired, key, class)
        };
        (entry, took)
    }
}

/// How a tracked object is judged.
enum Route<'a> {
    /// Nothing committed desires it: only an open intent can explain it.
    IntentOnly,
    /// Not yet: its kind is being listed again, or waits for CRDs.
    NotYet,
    /// By a server-side dry run of its committed object.
    DryRun,
    /// By comparison with its committed object alone: such events can be held.
    Compare(&'a Desired),
}

/// Watch events held for judging together (see the module documentation).
#[derive(Default)]
pub(super) struct Held {
    /// Whether events are held now: only while a batch of watch messages is handled.
    holding: bool,
    events: Vec<(ObjectKey, Option<Value>)>,
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// From now on, events that only need a comparison are held and judged together.
    pub(super) fn hold_judgements(&mut self) {
        self.comparing.held.holding = true;
    }

    /// Judges what is held and stops holding.
    pub(super) fn release_judgements(&mut self) {
        self.judge_held();
        self.comparing.held.holding = false;
    }

    /// Tracked object `key` is `live` now (`None`: deleted), as a watch event said.
    pub(super) fn judge_event(&mut self, key: ObjectKey, live: Option<Value>) {
        if self.comparing.held.holding && matches!(self.route(&key), Route::Compare(_)) {
            self.comparing.held.events.push((key, live));
            if self.comparing.held.events.len() >= MAX_HELD {
                self.judge_held();
            }
            return;
        }
        self.judge(&key, Live::Fresh(live.as_ref()));
    }

    /// How `key` is judged now.
    fn route(&self, key: &ObjectKey) -> Route<'_> {
        let Some(desired) = self.wanted.desired.get(key) else {
            return Route::IntentOnly;
        };
        if !self.watching.lists.judges(&desired.kind, key) || self.awaits_crds(&desired.kind) {
            return Route::NotYet;
        }
        if self.dry_runs.applies(key, desired) {
            return Route::DryRun;
        }
        Route::Compare(desired)
    }

    /// Judges the held events on every core and publishes their entries in order.
    pub(super) fn judge_held(&mut self) {
        if self.comparing.held.events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.comparing.held.events);
        let judging = Judging {
            differ: &self.comparing.differ,
            facts: &self.comparing.facts,
            intents: &self.wanted.intents,
            packing: self.wanted.desired.packing(),
            audit: &self.audit.trail,
        };
        let desired = &self.wanted.desired;
        let (tracked, stale_configs) = (&self.wanted.tracked, &self.stale_config.judgement);
        let publication = &mut self.publication;
        let outputs = &mut self.outputs;
        par::map_consumed(
            events,
            MIN_JUDGED_PER_THREAD,
            |(key, live)| {
                // Nothing that held events changes the desired state (a commit is polled
                // between batches).
                let desired = desired.get(&key)?;
                let (entry, took) = judging.entry(&key, desired, live.as_ref());
                Some((key, entry, took))
            },
            |judged| {
                if let Some((key, entry, took)) = judged {
                    outputs.compared(took);
                    publication.publish(tracked, stale_configs, &key, entry);
                }
            },
        );
    }

    /// Compares one tracked object with `live` and updates the index; what is held is
    /// judged first.
    pub(super) fn judge(&mut self, key: &ObjectKey, live: Live) {
        self.judge_held();
        let desired = match self.route(key) {
            Route::IntentOnly => return self.evaluate_intent_only(key, live),
            Route::NotYet => return,
            Route::DryRun => return self.evaluate_dry_run(key, live),
            Route::Compare(desired) => desired,
        };
        let mut kept = None;
        let live = live.resolve(&mut kept, || self.live_copy(key));
        let judging = Judging {
            differ: &self.comparing.differ,
            facts: &self.comparing.facts,
            intents: &self.wanted.intents,
            packing: self.wanted.desired.packing(),
            audit: &self.audit.trail,
        };
        let (entry, took) = judging.entry(key, desired, live);
        self.outputs.compared(took);
        self.publish_entry(key, entry);
    }
}
