//! The drift index (what `/drift` and `/metrics` show) and the engine that keeps it current.
//!
//! The engine is the index's only writer; HTTP handlers read it through [`SharedIndex`].

mod engine;

pub use engine::{Engine, EngineHandles};

use driftd_core::report::{DriftEntry, DriftFilter};
use driftd_k8s::ObjectKey;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// The current drift of every desired object whose kind has been listed.
#[derive(Debug, Default)]
pub struct DriftIndex {
    entries: BTreeMap<ObjectKey, DriftEntry>,
    ready: bool,
}

impl DriftIndex {
    /// Sets the entry of `key`, returning the previous one.
    pub fn upsert(&mut self, key: ObjectKey, entry: DriftEntry) -> Option<DriftEntry> {
        self.entries.insert(key, entry)
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<DriftEntry> {
        self.entries.remove(key)
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&DriftEntry> {
        self.entries.get(key)
    }

    /// Entries matching `filter`, ordered by source, kind, namespace, name.
    pub fn query(&self, filter: &DriftFilter) -> Vec<DriftEntry> {
        let mut out: Vec<DriftEntry> = self
            .entries
            .values()
            .filter(|e| filter.matches(e))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            (&a.source, &a.kind, &a.namespace, &a.name).cmp(&(
                &b.source,
                &b.kind,
                &b.namespace,
                &b.name,
            ))
        });
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True once the desired state is loaded and every watcher finished its first list.
    pub fn ready(&self) -> bool {
        self.ready
    }

    pub fn set_ready(&mut self, ready: bool) {
        self.ready = ready;
    }
}

/// Read access for HTTP handlers; the engine holds the write side.
pub type SharedIndex = Arc<RwLock<DriftIndex>>;
