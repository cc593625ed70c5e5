//! kube-runtime watchers for exactly the kinds present in the desired state.
//!
//! The [`Supervisor`] starts one watcher task per (apiVersion, kind) and stops it when the
//! kind leaves the desired state. Each task resolves its kind through discovery, then streams
//! the kind cluster-wide with kube-runtime's `watcher` (list+watch, bookmarks, `410 Gone`
//! re-lists, exponential backoff) and forwards plain JSON to the drift engine over a channel.
//! The task is an explicit state machine ([`WatcherState`]) stepped by one function.

pub use driftd_k8s::TypeKey;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What a watcher tells the engine.
#[derive(Debug)]
pub enum WatchEvent {
    /// A (re-)list starts: objects not re-listed before `InitDone` are gone.
    Init,
    /// An object exists with this content (initial list or later change).
    Apply(Value),
    /// An object was deleted.
    Delete(Value),
    /// The (re-)list is complete.
    InitDone,
    /// The kind is not served by the cluster (no CRD yet): its objects cannot exist.
    NotServed,
    /// The watch failed; the watcher retries with backoff.
    Error(String),
}

/// One message from a watcher task.
#[derive(Debug)]
pub struct WatchMessage {
    pub type_key: TypeKey,
    pub event: WatchEvent,
}

/// How long to wait before asking discovery again for a kind the cluster does not serve.
const NOT_SERVED_RETRY: Duration = Duration::from_secs(10);

/// States of one watcher task.
pub enum WatcherState {
    /// Asking discovery which resource serves the kind.
    Resolving,
    /// The kind is not served; ask again later.
    NotServed,
    /// Streaming the resource.
    Watching(ApiResource),
    /// The engine is gone; the task ends.
    Done,
}

/// Starts and stops watcher tasks so that exactly the wanted kinds are watched.
pub struct Supervisor {
    client: Client,
    sender: mpsc::Sender<WatchMessage>,
    tasks: BTreeMap<TypeKey, JoinHandle<()>>,
}

impl Supervisor {
    pub fn new(client: Client, sender: mpsc::Sender<WatchMessage>) -> Supervisor {
        Supervisor {
            client,
            sender,
            tasks: BTreeMap::new(),
        }
    }

    /// Starts watchers for kinds newly wanted and stops those no longer wanted.
    /// Returns the kinds started, so the caller can await their first list.
    pub fn sync(&mut self, wanted: &BTreeSet<TypeKey>) -> Vec<TypeKey> {
        let stale: Vec<TypeKey> = self
            .tasks
            .keys()
            .filter(|k| !wanted.contains(*k))
            .cloned()
            .collect();
        for key in stale {
            if let Some(task) = self.tasks.remove(&key) {
                tracing::info!(kind = %key, "kind left the desired state: stopping its watcher");
                task.abort();
            }
        }
        let mut started = Vec::new();
        for key in wanted {
            if !self.tasks.contains_key(key) {
                tracing::info!(kind = %key, "starting watcher");
                let task = tokio::spawn(run_watcher(
                    self.client.clone(),
                    key.clone(),
                    self.sender.clone(),
                ));
                self.tasks.insert(key.clone(), task);
                started.push(key.clone());
            }
        }
        started
    }

    /// Stops the watchers of `kinds`; the next [`Supervisor::sync`] starts them afresh, which
    /// re-lists them (used when new desired objects of an already-listed kind appear, since
    /// live copies are only kept for desired objects).
    pub fn restart(&mut self, kinds: &BTreeSet<TypeKey>) {
        for key in kinds {
            if let Some(task) = self.tasks.remove(key) {
                task.abort();
            }
        }
    }

    pub fn watched(&self) -> impl Iterator<Item = &TypeKey> {
        self.tasks.keys()
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}

async fn run_watcher(client: Client, key: TypeKey, sender: mpsc::Sender<WatchMessage>) {
    let mut state = WatcherState::Resolving;
    loop {
        state = step(state, &client, &key, &sender).await;
        if matches!(state, WatcherState::Done) {
            return;
        }
    }
}

/// Advances one watcher by one state.
async fn step(
    state: WatcherState,
    client: &Client,
    key: &TypeKey,
    sender: &mpsc::Sender<WatchMessage>,
) -> WatcherState {
    let send = |event| {
        sender.send(WatchMessage {
            type_key: key.clone(),
            event,
        })
    };
    match state {
        WatcherState::Resolving => {
            let (group, version) = driftd_k8s::kinds::split_api_version(&key.api_version);
            let gvk = GroupVersionKind::gvk(group, version, &key.kind);
            match kube::discovery::pinned_kind(client, &gvk).await {
                Ok((resource, _caps)) => WatcherState::Watching(resource),
                Err(err) if is_not_found(&err) => {
                    tracing::warn!(kind = %key, "the cluster does not serve this kind");
                    if send(WatchEvent::NotServed).await.is_err() {
                        return WatcherState::Done;
                    }
                    WatcherState::NotServed
                }
                Err(err) => {
                    if send(WatchEvent::Error(err.to_string())).await.is_err() {
                        return WatcherState::Done;
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    WatcherState::Resolving
                }
            }
        }
        WatcherState::NotServed => {
            tokio::time::sleep(NOT_SERVED_RETRY).await;
            WatcherState::Resolving
        }
        WatcherState::Watching(resource) => {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let mut stream =
                Box::pin(watcher::watcher(api, watcher::Config::default()).default_backoff());
            while let Some(item) = stream.next().await {
                let event = match item {
                    Ok(Event::Init) => WatchEvent::Init,
                    Ok(Event::InitApply(o)) | Ok(Event::Apply(o)) => {
                        WatchEvent::Apply(to_json(o, &resource))
                    }
                    Ok(Event::Delete(o)) => WatchEvent::Delete(to_json(o, &resource)),
                    Ok(Event::InitDone) => WatchEvent::InitDone,
                    Err(err) => WatchEvent::Error(err.to_string()),
                };
                if send(event).await.is_err() {
                    return WatcherState::Done;
                }
            }
            WatcherState::Resolving
        }
        WatcherState::Done => WatcherState::Done,
    }
}

fn is_not_found(err: &kube::Error) -> bool {
    match err {
        kube::Error::Discovery(_) => true,
        kube::Error::Api(status) => status.code == 404,
        _ => false,
    }
}

/// List items come without apiVersion/kind (as kube-apiserver sends them); put them back so
/// every live object carries its type like a `kubectl get -o json` object does.
fn to_json(object: DynamicObject, resource: &ApiResource) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(resource.api_version.clone()));
        map.entry("kind")
            .or_insert_with(|| Value::String(resource.kind.clone()));
    }
    value
}
