//! The engine's side of intents: objects only an open intent wants, the intent an
//! `uncommitted` entry names (with the two ways out), intents that expire by time, and the
//! `driftd_intents` counts.

use super::live::Live;
use super::Engine;
use crate::intents::IntentChange;
use crate::outputs::Outputs;
use driftd_core::report::DriftClass;
use driftd_core::report::DriftEntry;
use driftd_core::report::IntentRef;
use driftd_k8s::ObjectKey;
use driftd_store::{EpisodeEnd, IntentInfo, IntentState};
use driftd_watch::WatchControl;

/// What `/drift` says of the intent `info` that live object `key` equals; `only_intent`:
/// no committed revision has the object (the intent created it).
pub(super) fn intent_ref(info: &IntentInfo, key: &ObjectKey, only_intent: bool) -> IntentRef {
    let release = info.release_command();
    // Helm's rollback restores the whole release (objects it did not have are deleted):
    // nothing to apply by hand, and nothing for driftd to release.
    let revert = if driftd_core::helm::PendingLock::parse(&info.source, &info.holder).is_some() {
        format!("`{release}`")
    } else if only_intent {
        format!(
            "no committed revision has this object: delete it (`{}`), then `{release}`",
            kubectl_delete(key)
        )
    } else {
        // The intent first: a source with an open intent is not reconciled.
        format!(
            "`{release}`, then `{}`",
            driftd_core::report::reconcile_command(&info.source, key)
        )
    };
    IntentRef {
        id: info.id,
        state: info.state.to_string(),
        holder: info.holder.clone(),
        author: info.author.clone(),
        created_at: info.created_at,
        keep: info.commit_command(),
        revert,
    }
}

/// `kubectl [-n NS] delete kind[.group] NAME`, the resource as kubectl resolves it.
fn kubectl_delete(key: &ObjectKey) -> String {
    let mut resource = key.kind.to_lowercase();
    if !key.group.is_empty() {
        resource = format!("{resource}.{}", key.group);
    }
    match &key.namespace {
        Some(ns) => format!("kubectl -n {ns} delete {resource} {}", key.name),
        None => format!("kubectl delete {resource} {}", key.name),
    }
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// An object only open intents want: `uncommitted` while it exists live as one of them
    /// wanted it; otherwise not reported (nothing committed wants it, and no intent explains
    /// it as it is).
    pub(super) fn evaluate_intent_only(&mut self, key: &ObjectKey, live: Live) {
        let Some(kind) = self.wanted.tracked.kind(key).cloned() else {
            return;
        };
        if !self.watching.lists.judges(&kind, key) {
            return;
        }
        let mut kept = None;
        let live = live.resolve(&mut kept, || self.live_copy(key));
        let exists = live.is_some();
        let matched = live.and_then(|live| {
            self.wanted.intents.matching(
                None,
                key,
                live,
                &self.comparing.differ,
                &self.comparing.facts,
            )
        });
        let Some(info) = matched else {
            // Nothing commits it: gone live, or no longer as an intent wanted it.
            let how = match exists {
                true => EpisodeEnd::NoLongerDesired,
                false => EpisodeEnd::Deleted,
            };
            return self.drop_entry(key, self.clock.wall(), how);
        };
        // No revision desires it.
        let entry = DriftEntry {
            intent: Some(Box::new(intent_ref(info, key, true))),
            ..DriftEntry::new(
                info.source.clone(),
                0,
                kind.api_version.clone(),
                key,
                DriftClass::Uncommitted,
            )
        };
        self.publish_entry(key, entry);
    }

    /// Reads the open intents now (after this replica wrote to them, which its own
    /// `data_version` does not show).
    pub(super) fn reload_intents(&mut self) {
        match self.wanted.intents.load(
            &self.store,
            &self.wanted.desired,
            &self.comparing.facts,
            self.clock.wall(),
        ) {
            Ok(IntentChange::Changed) => self.tracking_changed(),
            Ok(IntentChange::Renewed) => self.intents_aged(),
            Err(err) => {
                tracing::error!(error = %err, "cannot read intents; keeping the last ones");
                self.outputs.store_error("cannot read intents", &err);
            }
        }
    }

    /// Time passed, or intents were renewed: an intent that expired (or was renewed after
    /// expiring) is shown in its new state, and locks are judged again.
    pub fn intents_aged(&mut self) {
        let changed = self.wanted.intents.refresh(self.clock.wall());
        for open in self.wanted.intents.open() {
            if changed.contains(&open.info.id) && open.info.state == IntentState::Expired {
                tracing::warn!(intent = open.info.id, source = %open.info.source,
                    holder = %open.info.holder, "intent expired: its holder stopped renewing it");
                if let Err(err) = self
                    .store
                    .record_intent_expiry(open.info.id, &self.locks.actor)
                {
                    tracing::error!(intent = open.info.id, error = %err, "cannot record the expiry");
                    self.outputs
                        .store_error("cannot record an intent's expiry", &err);
                }
            }
        }
        if !changed.is_empty() {
            for key in self.wanted.intents.keys_of(&changed) {
                if self.wanted.tracked.contains(&key) {
                    self.evaluate(&key);
                }
            }
            self.publish_intents();
        }
        self.refresh_locks();
    }

    /// Counts recently ended intents again (the window moves with time).
    pub fn recount_intents(&mut self) {
        match self.wanted.intents.recount(&self.store, self.clock.wall()) {
            Ok(()) => self.publish_intents(),
            Err(err) => {
                tracing::error!(error = %err, "cannot count intents");
                self.outputs.store_error("cannot count intents", &err);
            }
        }
    }

    pub(super) fn publish_intents(&mut self) {
        let counts = self.wanted.intents.counts();
        self.publication.index.write().unwrap().set_intents(counts);
    }
}
