//! Watchers, one task per (apiVersion, kind) the engine asks for, and one per name of the
//! pods that hold deploy locks.
//!
//! Each kind's task resolves its kind through discovery, then lists and watches the kind
//! cluster-wide ([`super::listwatch`]: bookmarks, `410 Gone` re-lists, jittered backoff
//! capped at a few seconds) and forwards plain JSON to the drift engine over a channel. The
//! task is an explicit state machine ([`WatcherState`]) stepped by one function. A holder
//! pod's task streams Pods with the field selector `metadata.name=NAME` (Pods are always
//! served: no discovery).
//!
//! Watchers use a client without the kube client's own retries ([`watch_client`]): those
//! retry 429/503/504 up to 15 times over minutes, invisibly, so an outage looked healthy
//! and recovery waited for the longest of those sleeps.

use super::listwatch::{self, is_not_found, End, Selectors};
use super::live_object::LiveObject;
use super::outbox::{Outbox, RelistRequest};
use super::packed::Packing;
use super::{pod_type, WatchControl, WatchError, WatchEvent, WatchMessage, WatcherId};
use driftd_k8s::TypeKey;
use kube::api::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;

/// How long to wait before asking discovery again for a kind the cluster does not serve.
const NOT_SERVED_RETRY: Duration = Duration::from_secs(10);

/// How long to wait before retrying a failed discovery.
const DISCOVERY_RETRY: Duration = Duration::from_secs(2);

/// List pages fetched and handed over at once, over every watcher. A page is parsed whole
/// (500 object trees, several MB) before it is sent, and a cold start lists every kind at
/// once: unbounded, those pages made most of `driftd serve`'s peak RSS. The
/// engine takes objects one at a time anyway, so two pages in flight keep it busy.
const LIST_PAGES_AT_ONCE: usize = 2;

/// States of one watcher task.
enum WatcherState {
    /// Asking discovery which resource serves the kind.
    Resolving,
    /// The kind is not served; ask again later.
    NotServed,
    /// Streaming the resource.
    Watching(ApiResource),
    /// The engine is gone; the task ends.
    Done,
}

/// Runs one watcher task per kind the engine asked for, on a kube client.
pub struct Supervisor {
    client: Client,
    sender: mpsc::Sender<WatchMessage>,
    tasks: BTreeMap<TypeKey, KindTask>,
    /// Holder pod watchers, by pod name.
    pod_tasks: BTreeMap<String, JoinHandle<()>>,
    last_id: u64,
    /// Shared by every watcher: see [`LIST_PAGES_AT_ONCE`].
    list_pages: Arc<Semaphore>,
    /// Which kinds' watchers pack the copies the engine keeps.
    copies: CopyFlags,
    /// What they pack with: the engine's.
    packing: Packing,
    /// The runtime watchers run on: the one that made the supervisor, not the engine's own
    /// thread, which is busy comparing.
    runtime: tokio::runtime::Handle,
}

/// The task watching one kind, and how to ask it to list again in place.
struct KindTask {
    handle: JoinHandle<()>,
    id: WatcherId,
    relist: Arc<RelistRequest>,
}

impl Supervisor {
    /// Watchers send their messages to `sender`, the engine's inbox. Call it inside the
    /// runtime the watchers are to run on. Copies are packed with `packing`, the one the
    /// engine unpacks them with.
    pub fn new(client: Client, sender: mpsc::Sender<WatchMessage>, packing: Packing) -> Supervisor {
        Supervisor {
            client,
            sender,
            tasks: BTreeMap::new(),
            pod_tasks: BTreeMap::new(),
            last_id: 0,
            list_pages: Arc::new(Semaphore::new(LIST_PAGES_AT_ONCE)),
            copies: CopyFlags::default(),
            packing,
            runtime: tokio::runtime::Handle::current(),
        }
    }
}

impl WatchControl for Supervisor {
    fn start(&mut self, kind: &TypeKey) -> WatcherId {
        if let Some(task) = self.tasks.remove(kind) {
            tracing::info!(kind = %kind, "restarting watcher so that it lists again");
            task.handle.abort();
        } else {
            tracing::info!(kind = %kind, "starting watcher");
        }
        self.last_id += 1;
        let id = WatcherId(self.last_id);
        let relist = Arc::new(RelistRequest::default());
        let outbox = Outbox {
            key: kind.clone(),
            id,
            sender: self.sender.clone(),
            list_pages: self.list_pages.clone(),
            pack: self.copies.flag(kind),
            packing: self.packing.clone(),
            relist: relist.clone(),
        };
        let handle = self.runtime.spawn(run_watcher(self.client.clone(), outbox));
        self.tasks
            .insert(kind.clone(), KindTask { handle, id, relist });
        id
    }

    fn relist(&mut self, kind: &TypeKey) -> WatcherId {
        match self.tasks.get(kind) {
            Some(task) if !task.handle.is_finished() => {
                tracing::info!(kind = %kind, "listing again while the watch goes on");
                task.relist.ask();
                task.id
            }
            _ => self.start(kind),
        }
    }

    fn stop(&mut self, kind: &TypeKey) {
        if let Some(task) = self.tasks.remove(kind) {
            tracing::info!(kind = %kind, "kind no longer wanted: stopping its watcher");
            task.handle.abort();
        }
    }

    fn start_pods_named(&mut self, name: &str) -> WatcherId {
        if let Some(task) = self.pod_tasks.remove(name) {
            task.abort();
        }
        tracing::info!(pod = name, "watching the pods of this name: a lock holder");
        self.last_id += 1;
        let id = WatcherId(self.last_id);
        let outbox = Outbox {
            key: pod_type(),
            id,
            sender: self.sender.clone(),
            list_pages: self.list_pages.clone(),
            // Holder pods are read for their liveness, never kept.
            pack: Arc::new(AtomicBool::new(false)),
            packing: self.packing.clone(),
            // Never asked: holder pods are not re-listed periodically.
            relist: Arc::default(),
        };
        let task = self.runtime.spawn(run_pod_watcher(
            self.client.clone(),
            name.to_string(),
            outbox,
        ));
        self.pod_tasks.insert(name.to_string(), task);
        id
    }

    fn stop_pods_named(&mut self, name: &str) {
        if let Some(task) = self.pod_tasks.remove(name) {
            tracing::info!(
                pod = name,
                "no lock held by pods of this name: stopping its watcher"
            );
            task.abort();
        }
    }

    fn keep_copies_of(&mut self, kinds: &BTreeSet<TypeKey>) {
        self.copies.set(kinds);
    }
}

/// Per kind, whether its watcher packs the copies the engine keeps: a flag each watcher
/// reads per event, so a commit that starts or stops tracking a kind takes effect on the
/// running watcher (copies already on their way unpacked are packed by the engine).
#[derive(Default)]
struct CopyFlags(BTreeMap<TypeKey, Arc<AtomicBool>>);

impl CopyFlags {
    /// The flag of `kind` (unset until [`CopyFlags::set`] names it).
    fn flag(&mut self, kind: &TypeKey) -> Arc<AtomicBool> {
        self.0.entry(kind.clone()).or_default().clone()
    }

    /// Sets the flags of `kinds`, clears every other.
    fn set(&mut self, kinds: &BTreeSet<TypeKey>) {
        for (kind, flag) in &self.0 {
            flag.store(kinds.contains(kind), Ordering::Relaxed);
        }
        for kind in kinds {
            self.flag(kind).store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.handle.abort();
        }
        for task in self.pod_tasks.values() {
            task.abort();
        }
    }
}

/// The client watchers use: `config`'s, without the kube client's retries of 429, 503 and
/// 504 (`default_retry`), so every failed attempt reaches the watcher, is counted and makes
/// its kind unhealthy, and the watcher's own short backoff decides when to try again.
pub fn watch_client(mut config: kube::Config) -> Result<Client, kube::Error> {
    config.default_retry = false;
    Client::try_from(config)
}

async fn run_watcher(client: Client, outbox: Outbox) {
    let mut state = WatcherState::Resolving;
    loop {
        state = step(state, &client, &outbox).await;
        if matches!(state, WatcherState::Done) {
            return;
        }
    }
}

/// Advances one watcher by one state.
async fn step(state: WatcherState, client: &Client, outbox: &Outbox) -> WatcherState {
    let key = &outbox.key;
    match state {
        WatcherState::Resolving => {
            let (group, version) = driftd_k8s::kinds::split_api_version(&key.api_version);
            let gvk = GroupVersionKind::gvk(group, version, &key.kind);
            match kube::discovery::pinned_kind(client, &gvk).await {
                Ok((resource, caps)) => {
                    let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
                    if !outbox.send(WatchEvent::Served { namespaced }).await {
                        return WatcherState::Done;
                    }
                    WatcherState::Watching(resource)
                }
                Err(err) if is_not_found(&err) => {
                    tracing::warn!(kind = %key, "the cluster does not serve this kind");
                    if !outbox.send(WatchEvent::NotServed).await {
                        return WatcherState::Done;
                    }
                    WatcherState::NotServed
                }
                Err(err) => {
                    if !outbox
                        .send(WatchEvent::Error(WatchError::Discovery(err)))
                        .await
                    {
                        return WatcherState::Done;
                    }
                    tokio::time::sleep(DISCOVERY_RETRY).await;
                    WatcherState::Resolving
                }
            }
        }
        WatcherState::NotServed => {
            tokio::time::sleep(NOT_SERVED_RETRY).await;
            WatcherState::Resolving
        }
        WatcherState::Watching(resource) => {
            let api: Api<LiveObject> = Api::all_with(client.clone(), &resource);
            match listwatch::run(api, &resource, &Selectors::default(), outbox).await {
                End::NotFound => WatcherState::Resolving,
                End::EngineGone => WatcherState::Done,
            }
        }
        WatcherState::Done => WatcherState::Done,
    }
}

/// Streams the pods named `name`, in every namespace, until the engine is gone.
async fn run_pod_watcher(client: Client, name: String, outbox: Outbox) {
    let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&());
    let selectors = Selectors {
        fields: Some(format!("metadata.name={name}")),
        labels: None,
    };
    loop {
        let api: Api<LiveObject> = Api::all_with(client.clone(), &resource);
        match listwatch::run(api, &resource, &selectors, &outbox).await {
            End::EngineGone => return,
            End::NotFound => tokio::time::sleep(DISCOVERY_RETRY).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(name: &str) -> TypeKey {
        TypeKey {
            api_version: "v1".into(),
            kind: name.into(),
        }
    }

    #[test]
    fn a_running_watcher_packs_once_its_kind_is_tracked_and_stops_when_it_is_not() {
        let mut copies = CopyFlags::default();
        let (sender, _inbox) = mpsc::channel(1);
        let outbox = Outbox {
            key: kind("ConfigMap"),
            id: WatcherId(1),
            sender,
            list_pages: Arc::new(Semaphore::new(1)),
            pack: copies.flag(&kind("ConfigMap")),
            packing: Packing::new(),
            relist: Arc::default(),
        };
        let object = json!({"kind": "ConfigMap", "data": {"k": "v"}, "status": {}});
        let kept = |event: WatchEvent| match event {
            WatchEvent::Apply(applied) => applied.kept,
            other => panic!("an apply: {other:?}"),
        };
        assert!(
            kept(outbox.applied(object.clone())).is_none(),
            "not told yet"
        );
        copies.set(&[kind("ConfigMap"), kind("Secret")].into());
        assert!(
            kept(outbox.applied(object.clone())).is_some_and(|k| outbox
                .packing
                .same(&k, &crate::kept::kept_copy(&object, &outbox.packing))),
            "the copy the engine keeps"
        );
        assert!(
            copies.flag(&kind("Secret")).load(Ordering::Relaxed),
            "told before it starts"
        );
        copies.set(&[kind("Secret")].into());
        assert!(kept(outbox.applied(object)).is_none(), "no longer tracked");
    }
}
