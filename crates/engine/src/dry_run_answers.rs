//! What the engine knows of the server-side dry runs of `compare = "dry-run"` sources: per
//! desired object, the server's answer for its current revision (the object it would
//! store, or its refusal), whether a request is out, and when to ask again. The requests
//! themselves are made by the cluster client's dry-run task (`driftd_cluster::dry_run_task`),
//! never here: the engine stays free of I/O and is tested without a cluster.
//!
//! When to ask: once per (revision, object) and then every `dry_run.refresh_seconds` (what
//! a webhook answers can change without anything driftd sees changing); again at once when
//! an answer made against an older live version would report drift (so drift is only
//! reported from an answer for the live version it judges); after a failed request, again
//! after [`RETRY`].

use super::desired::Desired;
use driftd_core::diff::dry_run;
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_watch::packed::Packing;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long after a failed request (network, 5xx) the object is asked for again.
pub const RETRY: Duration = Duration::from_secs(5);

/// A dry run the engine wants: the committed manifest of `key` at `revision`.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRunRequest {
    pub key: ObjectKey,
    pub revision: i64,
    /// The kind as committed (its apiVersion decides the resource asked).
    pub kind: TypeKey,
    pub manifest: Value,
}

/// The answer to a [`DryRunRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct DryRunAnswer {
    pub key: ObjectKey,
    pub revision: i64,
    pub outcome: DryRunOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DryRunOutcome {
    /// The object the server would store.
    Expected(Value),
    /// The server refused the manifest; its message.
    Rejected(String),
    /// The request failed (network, 5xx, throttled): nothing is known about the manifest.
    Failed(String),
}

/// The last usable answer for an object's current revision.
#[derive(Debug, Clone)]
pub enum Answer {
    Expected {
        /// The server's answer as it came (its resourceVersion tells which live version
        /// it was made against).
        answer: Value,
        /// The answer as a desired object ([`dry_run::expected_desired`]).
        desired: Value,
        at: Timestamp,
    },
    Rejected {
        message: String,
        at: Timestamp,
    },
}

#[derive(Debug, Default)]
struct Known {
    revision: i64,
    answer: Option<Answer>,
    answered: Option<Instant>,
    /// A request is out since then.
    asked: Option<Instant>,
    /// The last request failed: why and when; cleared by the next answer.
    error: Option<(String, Timestamp, Instant)>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct DryRuns {
    sources: BTreeSet<String>,
    refresh: Duration,
    requests: Option<mpsc::UnboundedSender<DryRunRequest>>,
    /// Where the answers come, until the run loop takes them to wait on.
    answers: Option<mpsc::UnboundedReceiver<DryRunAnswer>>,
    known: HashMap<ObjectKey, Known>,
}

impl DryRuns {
    pub fn new(sources: BTreeSet<String>, refresh: Duration) -> DryRuns {
        DryRuns {
            sources,
            refresh,
            requests: None,
            answers: None,
            known: HashMap::new(),
        }
    }

    /// Where requests go (the dry-run task) and its answers come. Without it nothing is
    /// asked and the objects of dry-run sources stay unjudged.
    pub fn connect(
        &mut self,
        requests: mpsc::UnboundedSender<DryRunRequest>,
        answers: mpsc::UnboundedReceiver<DryRunAnswer>,
    ) {
        self.requests = Some(requests);
        self.answers = Some(answers);
    }

    /// The dry-run task's answers, for the run loop to wait on (`None`: not connected).
    pub fn take_answers(&mut self) -> Option<mpsc::UnboundedReceiver<DryRunAnswer>> {
        self.answers.take()
    }

    /// Whether `desired` is compared against a dry run: its source asks for it, and it is
    /// not a Secret (a Secret's committed values are kept as keyed hashes, and its values
    /// must not travel through another path than the watch; it stays on the static model).
    pub fn applies(&self, key: &ObjectKey, desired: &Desired) -> bool {
        self.sources.contains(&*desired.source) && !(key.group.is_empty() && key.kind == "Secret")
    }

    /// The answer for `desired`'s current revision, asking for one if none is out and none
    /// is known (a newer revision drops an older revision's answer).
    /// `packing` unpacks the manifest asked about.
    pub fn lookup(
        &mut self,
        key: &ObjectKey,
        desired: &Desired,
        packing: &Packing,
        now: Instant,
    ) -> Option<&Answer> {
        let known = self.known.entry(key.clone()).or_default();
        if known.revision != desired.revision {
            *known = Known {
                revision: desired.revision,
                ..Known::default()
            };
        }
        let retry_due = known
            .error
            .as_ref()
            .is_none_or(|(_, _, failed)| now.duration_since(*failed) >= RETRY);
        if known.answer.is_none() && known.asked.is_none() && retry_due {
            self.ask(key, desired, packing, now);
        }
        self.known.get(key).and_then(|k| k.answer.as_ref())
    }

    /// Asks for a fresh dry run of `desired` (its manifest unpacked by `packing`) unless
    /// one is out.
    pub fn ask(&mut self, key: &ObjectKey, desired: &Desired, packing: &Packing, now: Instant) {
        let Some(requests) = &self.requests else {
            return;
        };
        let known = self.known.entry(key.clone()).or_default();
        if known.asked.is_some() {
            return;
        }
        known.revision = desired.revision;
        known.asked = Some(now);
        let _ = requests.send(DryRunRequest {
            key: key.clone(),
            revision: desired.revision,
            kind: (*desired.kind).clone(),
            manifest: desired.manifest(packing),
        });
    }

    /// Takes in an answer. Returns false for an answer about a revision no longer current
    /// (or an object no longer desired): it is dropped.
    pub fn answered(&mut self, answer: DryRunAnswer, now: Instant, wall: Timestamp) -> bool {
        let Some(known) = self.known.get_mut(&answer.key) else {
            return false;
        };
        if known.revision != answer.revision {
            return false;
        }
        known.asked = None;
        match answer.outcome {
            DryRunOutcome::Expected(answer) => {
                known.answer = Some(Answer::Expected {
                    desired: dry_run::expected_desired(&answer),
                    answer,
                    at: wall,
                });
                known.answered = Some(now);
                known.error = None;
            }
            DryRunOutcome::Rejected(message) => {
                known.answer = Some(Answer::Rejected { message, at: wall });
                known.answered = Some(now);
                known.error = None;
            }
            DryRunOutcome::Failed(message) => known.error = Some((message, wall, now)),
        }
        true
    }

    /// Why the last request for `key` failed, and when, if it did.
    pub fn error(&self, key: &ObjectKey) -> Option<(&str, Timestamp)> {
        self.known
            .get(key)
            .and_then(|k| k.error.as_ref())
            .map(|(m, at, _)| (m.as_str(), *at))
    }

    /// Objects whose answer is older than the refresh period, or whose last request failed
    /// [`RETRY`] ago, with none out.
    pub fn due(&self, now: Instant) -> Vec<ObjectKey> {
        self.known
            .iter()
            .filter(|(_, k)| k.asked.is_none())
            .filter(|(_, k)| {
                let stale = k
                    .answered
                    .is_some_and(|at| now.duration_since(at) >= self.refresh);
                let retry = k
                    .error
                    .as_ref()
                    .is_some_and(|(_, _, failed)| now.duration_since(*failed) >= RETRY);
                stale || retry
            })
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Forgets objects `keep` says are no longer desired.
    pub fn retain(&mut self, keep: impl Fn(&ObjectKey) -> bool) {
        self.known.retain(|key, _| keep(key));
    }
}
