//! The audit part: the API server's recent writes ([`AuditTrail`]), taken in from the
//! daemon's audit intake (the webhook, the audit log), and the entries judged again when a
//! write that concerns them arrives after their watch event.

use super::episodes::changers;
use super::Engine;
use crate::audit_trail::{builtin_kind, AuditTrail};
use crate::outputs::Outputs;
use driftd_config::AuditConfig;
use driftd_core::audit::AuditRecord;
use driftd_core::report::DriftClass;
use driftd_k8s::ObjectKey;
use driftd_store::Changer;
use driftd_watch::WatchControl;
use std::collections::BTreeSet;
use tokio::sync::mpsc;

/// Batches of audit records the intake sends the engine.
pub type AuditBatches = mpsc::Receiver<Vec<AuditRecord>>;

/// See the module documentation.
pub(super) struct Audit {
    pub(super) trail: AuditTrail,
    /// Taken by the run loop.
    batches: Option<AuditBatches>,
}

impl Audit {
    pub(super) fn new(config: &AuditConfig) -> Audit {
        Audit {
            trail: AuditTrail::new(config.retention(), config.max_events),
            batches: None,
        }
    }

    pub(super) fn take_batches(&mut self) -> Option<AuditBatches> {
        self.batches.take()
    }
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Audit records come from `batches` (the daemon's webhook and log reader).
    pub fn with_audit(mut self, batches: AuditBatches) -> Self {
        self.audit.batches = Some(batches);
        self
    }

    /// Keeps `records`, and judges again the drifting entries they may name the author of:
    /// their watch event may have come first.
    pub fn audit_received(&mut self, records: Vec<AuditRecord>) {
        let now = self.clock.wall();
        let mut concerned = BTreeSet::new();
        for record in records {
            concerned.extend(self.keys_of(&record));
            self.audit.trail.insert(record, now);
        }
        let drifting: Vec<ObjectKey> = {
            let index = self.publication.index.read().unwrap();
            concerned
                .into_iter()
                .filter(|k| {
                    index.get(k).is_some_and(|e| {
                        !matches!(e.class, DriftClass::InSync | DriftClass::Unmanaged)
                    })
                })
                .collect()
        };
        for key in &drifting {
            self.evaluate(key);
        }
        // The drift may have been recorded before its audit events came: name the people
        // in its open episode too.
        let named: Vec<(&ObjectKey, Vec<Changer>)> = {
            let index = self.publication.index.read().unwrap();
            drifting
                .iter()
                .filter_map(|key| {
                    let entry = index.get(key).filter(|e| e.who.is_some())?;
                    Some((key, changers(entry)))
                })
                .collect()
        };
        if !named.is_empty() {
            if let Err(err) = self.store.add_episode_changers(&named) {
                tracing::error!(error = %err, "cannot record who changed drifting objects");
                self.outputs
                    .store_error("cannot record who changed drifting objects", &err);
            }
        }
    }

    /// The tracked objects a record may be about: its built-in kind's, else those of the
    /// tracked custom kinds of its group.
    fn keys_of(&self, record: &AuditRecord) -> Vec<ObjectKey> {
        let o = &record.object;
        let key = |kind: &str| ObjectKey {
            group: o.api_group.clone(),
            kind: kind.to_string(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
        };
        if let Some(kind) = builtin_kind(&o.api_group, &o.resource) {
            return vec![key(kind)];
        }
        self.wanted
            .tracked
            .kinds()
            .filter(|t| driftd_k8s::kinds::split_api_version(&t.api_version).0 == o.api_group)
            .map(|t| key(&t.kind))
            .filter(|k| self.wanted.tracked.contains(k))
            .collect()
    }
}
