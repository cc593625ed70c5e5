//! What the engine tells the world besides the drift index: counters for Prometheus and the
//! settled transitions that become Kubernetes Events. `export::Publisher` is the real one;
//! tests record what they get.

use super::locks::PodRef;
use driftd_core::report::{DriftEntry, StaleLock};
use driftd_k8s::TypeKey;
use driftd_store::{EpisodeChanges, StoreError};
use driftd_watch::WatchError;
use serde::Deserialize;
use std::time::Duration;

/// A drift transition that held for the settle time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announcement {
    /// Drift started, or its changed paths changed.
    Detected,
    /// The live object matches its desired state again.
    Resolved,
}

/// What an Event's `involvedObject` says of the live object beyond its key. Read from the
/// packed live copy without building its tree: a settle step can announce thousands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct LiveIdentity {
    pub uid: Option<String>,
    #[serde(rename = "resourceVersion")]
    pub resource_version: Option<String>,
}

/// One `managedFields` entry, for who wrote the live object last.
#[derive(Deserialize)]
pub(super) struct ManagedEntry {
    #[serde(default)]
    pub manager: String,
    #[serde(default)]
    pub subresource: String,
    pub time: Option<String>,
    /// The fields it owns (a tree, or its JSON text as the watchers keep it).
    #[serde(default, rename = "fieldsV1")]
    pub fields_v1: serde_json::Value,
}

/// A live object read for its `managedFields` writers only.
#[derive(Deserialize)]
pub(super) struct Written {
    #[serde(default)]
    pub metadata: WrittenMetadata,
}

#[derive(Default, Deserialize)]
pub(super) struct WrittenMetadata {
    #[serde(default, rename = "managedFields")]
    pub managed_fields: Vec<ManagedEntry>,
}

/// A live object read for its [`LiveIdentity`] only: serde skips every other field.
#[derive(Deserialize)]
pub(super) struct Identified {
    #[serde(default)]
    pub metadata: LiveIdentity,
}

/// What happened to a deploy lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockAnnouncement {
    /// The lock became stale: someone has to release it.
    Stale,
    /// This replica released it (`locks.auto_release_after`), recorded as `actor`.
    Released { actor: String },
}

/// The engine's outputs other than the index (which `/drift` and `/metrics` read directly).
pub trait Outputs {
    /// A watch event (apply or delete) of `kind` arrived.
    fn watch_event(&mut self, kind: &TypeKey);
    /// A watcher of `kind` failed; it retries with backoff.
    fn watch_error(&mut self, kind: &TypeKey, error: &WatchError);
    /// One comparison took `took`.
    fn compared(&mut self, took: Duration);
    /// Announces a settled transition of `entry`; `live` identifies the live object, if it
    /// exists.
    fn announce(
        &mut self,
        announcement: Announcement,
        entry: &DriftEntry,
        live: Option<&LiveIdentity>,
    );
    /// Drift episodes were opened or closed (recorded in the store): what the drift service
    /// level counts (episodes opened and closed, time to resolution).
    fn episodes(&mut self, changes: &EpisodeChanges);
    /// A database read or write failed while doing `what`; the engine goes on without it.
    fn store_error(&mut self, what: &str, error: &StoreError);
    /// Announces a lock transition; `pod` is its holder pod, when it is one.
    fn announce_lock(&mut self, what: LockAnnouncement, lock: &StaleLock, pod: Option<&PodRef>);
}
