//! The drift index (what `/drift` and `/metrics` show) and the engine that keeps it current.
//!
//! The engine is the index's only writer; HTTP handlers read it through [`SharedIndex`].

mod engine;

pub use engine::{Engine, EngineHandles};

use crate::diff::{Change, DriftClass, IgnoredCount};
use crate::k8s::ObjectKey;
use jiff::Timestamp;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// The drift state of one desired object, as `/drift` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftEntry {
    /// Empty (and left out of JSON) for `unmanaged` objects, which no source owns.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    pub revision: i64,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub class: DriftClass,
    /// When the object started drifting; absent while in sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    pub changes: Vec<Change>,
    /// RFC 6902 patch that, applied to the live object, restores the desired fields (Secret
    /// values as hash placeholders: not directly applicable to Secrets).
    #[serde(skip_serializing_if = "patch_is_empty")]
    pub patch: json_patch::Patch,
    /// Differences hidden by ignore rules, per rule, so an over-broad rule can be noticed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<IgnoredCount>,
}

fn patch_is_empty(patch: &json_patch::Patch) -> bool {
    patch.0.is_empty()
}

impl DriftEntry {
    /// Paths of the changes: what Events and episodes compare to tell a new drift from the
    /// same drift seen again.
    pub fn paths(&self) -> Vec<String> {
        self.changes.iter().map(|c| c.path.clone()).collect()
    }
}

/// Filters of `GET /drift`; empty fields match everything.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct DriftFilter {
    pub source: Option<String>,
    pub namespace: Option<String>,
    pub kind: Option<String>,
    /// One class; without it, every class but `in_sync`.
    pub class: Option<String>,
}

impl DriftFilter {
    pub fn matches(&self, entry: &DriftEntry) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.source, &entry.source)
            && eq(&self.namespace, entry.namespace.as_deref().unwrap_or(""))
            && eq(&self.kind, &entry.kind)
            && match &self.class {
                Some(class) => class == entry.class.as_str(),
                None => entry.class != DriftClass::InSync,
            }
    }
}

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
