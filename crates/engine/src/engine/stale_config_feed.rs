//! The engine's side of `stale_config` (the judgement is in `drift::stale_config`): what the
//! watchers see feeds it, its content records go to the store, and a workload whose stale
//! pods changed is published again.
//!
//! How an entry shows it: a tracked workload otherwise `in_sync` becomes `stale_config`;
//! `modified`, `missing`, `uncommitted` and `rejected` win over it (the entry still carries
//! the stale pods, and its Event says so); an `unmanaged` workload (coverage on) keeps its
//! class and carries them.

use super::Engine;
use crate::outputs::Announcement;
use crate::outputs::Outputs;
use crate::stale_config::StaleConfigs;
use driftd_config::Config;
use driftd_core::report::DriftClass;
use driftd_core::report::DriftEntry;
use driftd_core::report::StaleConfigNote;
use driftd_k8s::ObjectKey;
use driftd_store::ContentWriter;
use driftd_store::Store;
use driftd_store::StoreError;
use driftd_watch::WatchControl;
use jiff::Timestamp;
use std::collections::BTreeSet;

/// The judgement, and the writer of its content records off the engine's thread (`None`:
/// in memory, or `stale_config` off: the engine's own connection writes them).
pub(super) struct StaleConfigFeed {
    pub(super) judgement: StaleConfigs,
    writer: Option<ContentWriter>,
}

impl StaleConfigFeed {
    /// The judgement as `config` sets it up, with the content records of earlier runs.
    pub(super) fn start(
        store: &Store,
        config: &Config,
        key: &[u8],
    ) -> Result<StaleConfigFeed, StoreError> {
        let c = &config.stale_config;
        let (records, writer) = match c.enabled {
            true => (store.config_contents()?, store.content_writer()?),
            false => (Vec::new(), None),
        };
        let judgement = StaleConfigs::new(c.enabled, c.kubelet_sync(), key, records);
        Ok(StaleConfigFeed { judgement, writer })
    }

    /// Writes the content records gathered since the last call; what failed.
    fn write_records(&mut self, store: &Store) -> Vec<StoreError> {
        let writes = self.judgement.take_writes();
        match &self.writer {
            Some(writer) => {
                writer.record(writes);
                writer.failures()
            }
            None => store
                .record_config_contents(&writes)
                .err()
                .into_iter()
                .collect(),
        }
    }
}

/// Adds the stale pods of workload `key` to its entry; `in_sync` becomes `stale_config`.
pub(super) fn decorate(stale_configs: &StaleConfigs, key: &ObjectKey, entry: &mut DriftEntry) {
    let Some(note) = stale_configs.note(key) else {
        return;
    };
    entry.stale_config = Some(Box::new(note.clone()));
    if entry.class == DriftClass::InSync {
        entry.class = DriftClass::StaleConfig;
    }
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Writes the content records gathered since the last call and publishes every workload
    /// whose stale pods changed (or whose volume readers' sync period ended).
    pub fn stale_config_flush(&mut self) {
        if !self.stale_config.judgement.enabled() {
            return;
        }
        let failures = self.stale_config.write_records(&self.store);
        for err in failures {
            tracing::error!(error = %err, "cannot record Secret/ConfigMap content hashes");
            self.outputs
                .store_error("cannot record Secret/ConfigMap content hashes", &err);
        }
        for (key, note) in self.stale_config.judgement.flush(self.clock.wall()) {
            match &note {
                Some(note) => tracing::info!(
                    workload = %key,
                    pods = note.pod_count(),
                    configs = ?note.configs.iter().map(|c| c.config.as_str()).collect::<Vec<_>>(),
                    "pods running on stale config"
                ),
                None => tracing::info!(workload = %key, "no pods on stale config any more"),
            }
            if self.wanted.tracked.contains(&key) {
                self.evaluate(&key);
            } else {
                self.stale_config_untracked(&key, note);
            }
        }
    }

    /// A workload no source desires: its `unmanaged` entry (if coverage reports it) carries
    /// the stale pods, announced when a config becomes stale.
    fn stale_config_untracked(&mut self, key: &ObjectKey, note: Option<StaleConfigNote>) {
        let mut index = self.publication.index.write().unwrap();
        let Some(mut entry) = index
            .get(key)
            .filter(|e| e.class == DriftClass::Unmanaged)
            .cloned()
        else {
            return;
        };
        let configs = |n: Option<&StaleConfigNote>| -> BTreeSet<(String, Timestamp)> {
            n.into_iter()
                .flat_map(|n| n.configs.iter().map(|c| (c.config.clone(), c.changed_at)))
                .collect()
        };
        let newly_stale =
            !configs(note.as_ref()).is_subset(&configs(entry.stale_config.as_deref()));
        entry.stale_config = note.map(Box::new);
        index.upsert(key.clone(), entry.clone());
        drop(index);
        if newly_stale {
            self.outputs.announce(Announcement::Detected, &entry, None);
        }
    }
}
