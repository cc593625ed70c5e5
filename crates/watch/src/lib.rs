//! driftd's watchers: what watchers tell the drift engine ([`WatchMessage`]), how the
//! engine starts and stops them ([`WatchControl`]), and the live copies they pack for it
//! (`kept`, `packed`).
//!
//! The engine only sees these types, so it can be driven by tests without a cluster; the
//! kube client implementation is [`Supervisor`] (list+watch in `listwatch`).

mod backoff;
pub mod kept;
mod listwatch;
mod live_object;
mod outbox;
pub mod packed;
pub mod secrets;
mod supervisor;

pub use backoff::Backoff;
pub use live_object::LiveObject;
pub use supervisor::{watch_client, Supervisor};

use driftd_k8s::TypeKey;
use kept::kept_copy;
use packed::{Packed, Packing};
use serde_json::Value;
use std::collections::BTreeSet;

/// Tells the messages of one watcher run from those of the run before it: a restarted
/// watcher lists afresh, so whatever the old run still had queued is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatcherId(pub u64);

/// What a watcher tells the engine.
#[derive(Debug)]
pub enum WatchEvent {
    /// A (re-)list starts: objects neither re-listed nor changed before `InitDone` are gone
    /// (a watcher listing in place keeps sending changes meanwhile).
    Init,
    /// An object exists with this content (initial list or later change).
    Apply(Applied),
    /// An object was deleted.
    Delete(Value),
    /// The (re-)list is complete.
    InitDone,
    /// A watch stream opened: the server answers again.
    Opened,
    /// The server reported this resourceVersion (a list's, or its current one, asked before
    /// a watch resumes): how the engine notices a server whose state went back.
    Position(String),
    /// A watch bookmark at this resourceVersion: the watch works, and where the server is.
    Bookmark(String),
    /// Discovery found the kind served, with this scope: a custom kind committed without its
    /// CRD learns here whether its objects are namespaced. Sent before every (re-)list.
    Served { namespaced: bool },
    /// The kind is not served by the cluster (no CRD yet): its objects cannot exist.
    NotServed,
    /// The watch failed; the watcher retries with backoff.
    Error(WatchError),
}

impl WatchEvent {
    /// [`WatchEvent::Apply`] of `object`, with the copy the engine keeps packed by
    /// `packing` (the engine's).
    pub fn apply(object: Value, packing: &Packing) -> WatchEvent {
        WatchEvent::Apply(Applied::packed(object, packing))
    }
}

/// A live object as a watcher hands it to the engine: the tree the engine compares, and,
/// for kinds the engine keeps copies of, that copy packed already by the watcher's task,
/// beside the engine's thread, which is the bottleneck of a busy cluster. The engine packs
/// a copy it keeps that came without one.
#[derive(Debug)]
pub struct Applied {
    pub object: Value,
    /// The copy the engine keeps, packed here (`None`: a kind it keeps no copies of).
    pub kept: Option<Packed>,
}

impl Applied {
    /// For a kind the engine keeps copies of: packed here, off the engine's thread.
    pub fn packed(object: Value, packing: &Packing) -> Applied {
        let kept = Some(kept_copy(&object, packing));
        Applied { object, kept }
    }

    /// For a kind the engine only reads (Pods for stale config, holders): no work spent.
    pub fn unpacked(object: Value) -> Applied {
        Applied { object, kept: None }
    }
}

/// One message from a watcher.
#[derive(Debug)]
pub struct WatchMessage {
    pub type_key: TypeKey,
    pub watcher: WatcherId,
    pub event: WatchEvent,
}

/// Why a watcher could not deliver; every one is retried with backoff, so the engine counts
/// and logs it (each failed attempt, not only the last).
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Discovery failed for another reason than the kind not being served.
    #[error("discovery failed: {0}")]
    Discovery(#[source] kube::Error),
    /// A list request failed (HTTP error, server unreachable, bad body).
    #[error("list failed: {0}")]
    List(#[source] kube::Error),
    /// Opening a watch, or reading its stream, failed.
    #[error("watch failed: {0}")]
    Watch(#[source] kube::Error),
    /// The server ended a watch with an error event (`410 Gone`: history compacted, `504
    /// Too large resource version`, ...).
    #[error("watch ended by the server: {} ({})", .0.message, .0.code)]
    Status(Box<kube::core::Status>),
    /// A list answered without a resourceVersion: nothing to watch from.
    #[error("the list answered without a resourceVersion")]
    NoResourceVersion,
}

/// Starts and stops watchers; the drift engine decides which kinds are watched.
pub trait WatchControl {
    /// Starts a watcher for `kind`, replacing (and so re-listing) a running one. Its messages
    /// carry the returned id.
    fn start(&mut self, kind: &TypeKey) -> WatcherId;
    /// Lists `kind` again with its running watcher, which keeps streaming changes while it
    /// lists (a periodic re-list): a replaced watcher would stream nothing until its list
    /// ended, and at a million objects that list takes minutes. The watcher's messages keep
    /// the returned id. A control whose watchers cannot list in place starts a new one.
    fn relist(&mut self, kind: &TypeKey) -> WatcherId {
        self.start(kind)
    }
    /// Stops the watcher of `kind`, if one runs.
    fn stop(&mut self, kind: &TypeKey);
    /// Starts a watcher of the pods named `name`, in every namespace (a field selector on
    /// `metadata.name`): lock holders, whose deletion must be seen within one event. Its
    /// messages carry [`pod_type`] and the returned id, which the engine tells apart from
    /// a watcher of every Pod.
    fn start_pods_named(&mut self, name: &str) -> WatcherId;
    /// Stops the watcher of the pods named `name`, if one runs.
    fn stop_pods_named(&mut self, name: &str);
    /// The engine keeps live copies of objects of `kinds` only: their watchers pack those
    /// copies as they parse events, and the others do not pack at all (the engine drops,
    /// say, a Pod watched for stale config on arrival). What a control without watchers of
    /// its own needs to do: nothing.
    fn keep_copies_of(&mut self, kinds: &BTreeSet<TypeKey>) {
        let _ = kinds;
    }
}

/// The type of Pods (what pod watchers' messages carry).
pub fn pod_type() -> TypeKey {
    TypeKey {
        api_version: "v1".into(),
        kind: "Pod".into(),
    }
}
