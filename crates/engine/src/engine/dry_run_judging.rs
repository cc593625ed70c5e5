//! The engine's side of `compare = "dry-run"` sources: their objects are compared against
//! the server's answer to a dry run of the committed manifest ([`DryRuns`]) instead of the
//! static model; a refused dry run is a `rejected` finding with the server's message; a
//! failed one is logged and counted and the object keeps the judgement of its last answer.

use super::entry_of;
use super::live::Live;
use super::Engine;
use crate::dry_run_answers::DryRunOutcome;
use crate::dry_run_answers::DryRunRequest;
use crate::dry_run_answers::{Answer, DryRunAnswer};
use crate::outputs::Outputs;
use driftd_core::diff::dry_run::made_against_other_version;
use driftd_core::diff::CompareInput;
use driftd_core::report::DriftClass;
use driftd_core::report::DriftEntry;
use driftd_core::report::DryRunNote;
use driftd_k8s::ObjectKey;
use driftd_watch::WatchControl;
use std::time::Instant;
use tokio::sync::mpsc;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Connects the dry-run task: requests go to `requests`, answers come from `answers`
    /// (the run loop takes them; tests call [`Engine::dry_run_answered`]).
    pub fn with_dry_run(
        mut self,
        requests: mpsc::UnboundedSender<DryRunRequest>,
        answers: mpsc::UnboundedReceiver<DryRunAnswer>,
    ) -> Self {
        self.set_dry_run(requests, answers);
        self
    }

    pub(super) fn set_dry_run(
        &mut self,
        requests: mpsc::UnboundedSender<DryRunRequest>,
        answers: mpsc::UnboundedReceiver<DryRunAnswer>,
    ) {
        self.dry_runs.connect(requests, answers);
    }

    /// Takes in one answer of the dry-run task and judges its object again.
    pub fn dry_run_answered(&mut self, answer: DryRunAnswer) {
        let key = answer.key.clone();
        if let DryRunOutcome::Failed(why) = &answer.outcome {
            tracing::warn!(object = %key, error = %why, "server-side dry run failed; the object keeps its last judgement");
        }
        let now = self.clock.now();
        if self.dry_runs.answered(answer, now, self.clock.wall())
            && self.wanted.tracked.contains(&key)
        {
            self.evaluate(&key);
            self.settle_due();
        }
    }

    /// Asks again for the dry runs that are due (refresh period, retry after a failure).
    pub fn refresh_dry_runs(&mut self) {
        let now = self.clock.now();
        for key in self.dry_runs.due(now) {
            match self.wanted.desired.get(&key) {
                Some(desired) => {
                    self.dry_runs
                        .ask(&key, desired, self.wanted.desired.packing(), now)
                }
                None => self.dry_runs.retain(|k| *k != key),
            }
        }
    }

    /// Judges `key` (desired, of a dry-run source) by its last dry-run answer. Publishes
    /// nothing until an answer for its current revision came, and nothing from an answer
    /// made against an older live version that would report drift (a fresh one is asked
    /// for at once): drift is reported only by an answer for the live version it judges.
    pub(super) fn evaluate_dry_run(&mut self, key: &ObjectKey, live: Live) {
        let Some(desired) = self.wanted.desired.get(key) else {
            return;
        };
        let now = self.clock.now();
        let mut kept = None;
        let live = live.resolve(&mut kept, || self.live_copy(key));
        let error = self.dry_runs.error(key).map(|(message, at)| DryRunNote {
            state: "error".into(),
            message: Some(message.to_string()),
            at,
        });
        let (class, comparison, note) =
            match self
                .dry_runs
                .lookup(key, desired, self.wanted.desired.packing(), now)
            {
                None => return,
                Some(Answer::Rejected { message, at }) => (
                    DriftClass::Rejected,
                    None,
                    DryRunNote {
                        state: "rejected".into(),
                        message: Some(message.clone()),
                        at: *at,
                    },
                ),
                Some(Answer::Expected {
                    answer,
                    desired: expected,
                    at,
                }) => {
                    let started = Instant::now();
                    let comparison = self.comparing.differ.compare(&CompareInput {
                        desired: expected,
                        live,
                        previous: None,
                        facts: &self.comparing.facts,
                    });
                    self.outputs.compared(started.elapsed());
                    if comparison.class != DriftClass::InSync
                        && made_against_other_version(answer, live)
                    {
                        self.dry_runs
                            .ask(key, desired, self.wanted.desired.packing(), now);
                        return;
                    }
                    let note = DryRunNote {
                        state: "expected".into(),
                        message: None,
                        at: *at,
                    };
                    (comparison.class, Some(comparison), note)
                }
            };
        let desired = self.wanted.desired.get(key).expect("looked up above");
        let (changes, patch, ignored, schema) = match comparison {
            Some(c) => (c.changes, c.patch, c.ignored, c.schema),
            None => Default::default(),
        };
        let entry = DriftEntry {
            changes: changes.into(),
            patch: patch.into(),
            ignored,
            schema,
            dry_run: Some(Box::new(error.unwrap_or(note))),
            ..entry_of(desired, key, class)
        };
        self.publish_entry(key, entry);
    }
}
