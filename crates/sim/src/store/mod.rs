//! The simulator's storage: objects as packed compact JSON text per type, one global
//! resourceVersion counter, a bounded history of changes that watches read from, indexes
//! (dependents by owner uid, what Services hold) so no write looks at every object, and the
//! write rules kube-apiserver's registries apply (server-set metadata, status/spec
//! separation, optimistic concurrency, defaults, managedFields, garbage collection).
//!
//! Layout: `object` (one stored version), `packed` (its text, compressed), `history`
//! (changes), `write` (create, update, patch), `apply` (server-side apply), `delete`
//! (deletion and garbage collection), `list` (lists at a resourceVersion), `watch` (where
//! watches start and read), `validate`, `alloc` (ClusterIPs, NodePorts), `crd` and `bulk`
//! (bulk load and bulk edit for benchmarks), `restore` (the state taken back to a snapshot,
//! as after an etcd restore).

mod admission;
mod alloc;
mod apply;
pub mod bulk;
mod crd;
mod delete;
pub mod history;
pub mod list;
pub mod object;
mod packed;
pub mod restore;
mod validate;
pub mod watch;
pub mod webhook;
mod write;

pub use delete::{DeleteOpts, Deletion};
pub use history::Change;
pub use list::{ListParams, Page};
pub use object::{Key, Stored};
pub use validate::label_selector_matches;
pub use watch::WatchStart;
pub use write::{ApplyPlan, WriteCtx, Written};

use super::server_defaults;
use super::status::{ApiError, Gr};
use driftd_k8s::kinds::ResourceType;
use history::History;
use object::{object_key, storage_form, storage_of, StorageKey};
use rand::Rng;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch as signal};

/// The group and resource a type's errors name.
fn gr(info: &ResourceType) -> Gr<'_> {
    Gr {
        group: &info.group,
        resource: &info.plural,
    }
}

const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Five characters as `generateName` and the ReplicaSet controller append.
pub fn random_suffix(n: usize) -> String {
    let mut r = rand::rng();
    (0..n)
        .map(|_| ALPHANUMS[r.random_range(0..ALPHANUMS.len())] as char)
        .collect()
}

pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn new_uid() -> String {
    server_defaults::uuid_v4(rand::rng().random())
}

/// The objects of one storage (one group and plural, all versions).
#[derive(Clone)]
struct Kind {
    id: Arc<StorageKey>,
    objects: BTreeMap<Key, Arc<Stored>>,
}

struct Inner {
    types: Arc<Vec<ResourceType>>,
    /// Structural schemas of the stored CRDs by (group, kind): how custom resources are
    /// pruned, defaulted and validated on write.
    crd_schemas: HashMap<(String, String), Arc<driftd_k8s::crd::CrdSchemas>>,
    /// group -> plural -> objects.
    kinds: HashMap<String, HashMap<String, Kind>>,
    rv: u64,
    history: History,
    /// Owner uid -> the objects whose ownerReferences name it.
    dependents: HashMap<Box<str>, BTreeSet<(Arc<StorageKey>, Key)>>,
    /// ClusterIPs and NodePorts the stored Services hold.
    services: alloc::Held,
    /// One shared copy of each apiVersion string objects are stored with.
    versions: HashMap<String, Arc<str>>,
    count: usize,
    /// JSON bytes of the stored objects (what `/_sim/stats` reports as `storedBytes`).
    bytes: usize,
    /// How many objects this store holds when it next tries to train the packing
    /// dictionary (doubled after an attempt that trained none).
    train_at: usize,
    /// The latest resourceVersion, for watches waiting for changes.
    changed: signal::Sender<u64>,
    /// The controllers' queue: every change they want, however far behind they are.
    feed: Option<(Wants, mpsc::UnboundedSender<Arc<Change>>)>,
    /// Mutating admission webhooks registered through `/_sim/webhooks`.
    webhooks: Vec<webhook::MutatingWebhook>,
}

/// Which changes a feed takes.
pub type Wants = fn(&Change) -> bool;

/// Shared storage; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
    /// Bumped to end every open watch stream (fault injection).
    closes: Arc<signal::Sender<u64>>,
}

/// Objects a store holds when it trains the packing dictionary from them (once per
/// process, see [`packed`]): enough for zstd to learn their shape, few enough that the
/// texts kept raw until then cost little.
const TRAIN_AT: usize = packed::SAMPLES;

const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Store {
    pub fn new(history_limit: usize) -> Store {
        let store = Store {
            inner: Arc::new(Mutex::new(Inner {
                types: Arc::new(crd::builtin_types()),
                crd_schemas: HashMap::new(),
                kinds: HashMap::new(),
                rv: 0,
                history: History::new(history_limit),
                dependents: HashMap::new(),
                services: alloc::Held::default(),
                versions: HashMap::new(),
                count: 0,
                bytes: 0,
                train_at: TRAIN_AT,
                changed: signal::channel(0).0,
                feed: None,
                webhooks: Vec::new(),
            })),
            closes: Arc::new(signal::channel(0).0),
        };
        let ns = store
            .resolve("", "v1", "namespaces")
            .expect("namespaces is built in");
        for name in INITIAL_NAMESPACES {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            store
                .create(&ns, None, obj, &WriteCtx::new("kube-apiserver"))
                .expect("initial namespace");
        }
        store
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// Every change from now on that `wants` takes, in order, on an unbounded queue (the
    /// controllers' input: they must not lose a change however far behind they fall, and
    /// take few enough that the queue stays short). Replaces an earlier feed.
    pub fn feed(&self, wants: Wants) -> mpsc::UnboundedReceiver<Arc<Change>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().feed = Some((wants, tx));
        rx
    }

    /// Objects stored, all types.
    pub fn object_count(&self) -> usize {
        self.lock().count
    }

    /// JSON bytes of the stored objects (not counting versions only the history holds).
    pub fn stored_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Changes the history holds.
    pub fn history_len(&self) -> usize {
        self.lock().history.held()
    }

    /// All servable types (built-in first, then CRD-defined).
    pub fn types(&self) -> Arc<Vec<ResourceType>> {
        self.lock().types.clone()
    }

    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    }

    /// Finds a type by group and kind, whatever the version (for owner references).
    pub fn resolve_kind(&self, group: &str, kind: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .iter()
            .find(|t| t.group == group && t.kind == kind)
            .cloned()
    }

    pub fn set_history_limit(&self, limit: usize) {
        self.lock().history.set_limit(limit);
    }

    /// Forgets all watch history, as an etcd compaction would: watches and continue
    /// tokens from before now get 410 Expired.
    pub fn compact(&self) {
        let mut g = self.lock();
        let rv = g.rv;
        g.history.compact(rv);
    }

    /// Registers a mutating admission webhook (see [`webhook`]).
    pub fn add_webhook(&self, hook: webhook::MutatingWebhook) -> Result<(), ApiError> {
        hook.check()?;
        self.lock().webhooks.push(hook);
        Ok(())
    }

    /// The registered webhooks, in the order they run.
    pub fn webhooks(&self) -> Vec<webhook::MutatingWebhook> {
        self.lock().webhooks.clone()
    }

    /// Removes every webhook.
    pub fn clear_webhooks(&self) {
        self.lock().webhooks.clear();
    }

    pub fn close_watches(&self) {
        self.closes.send_modify(|n| *n += 1);
    }

    /// A stored object as served through `info` (its apiVersion, and the events.k8s.io shape
    /// for Events read through that group).
    pub fn render(info: &ResourceType, obj: &Value) -> Value {
        object::render(info, obj)
    }

    pub fn get(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        self.get_stored(info, ns, name).map(|s| s.value_as(info))
    }

    /// The stored version of an object (its bytes, shared).
    pub fn get_stored(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Arc<Stored>, ApiError> {
        self.lock()
            .get(info, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(gr(info), name))
    }

    /// The keys of every stored object of a type (all namespaces).
    pub fn keys(&self, info: &ResourceType) -> Vec<Key> {
        self.lock()
            .kind(info)
            .map(|k| k.objects.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The objects of type `info` in `ns` whose ownerReferences name `owner_uid`, from the
    /// dependents index (what the controllers and the garbage collector look up).
    pub fn owned(&self, info: &ResourceType, ns: &str, owner_uid: &str) -> Vec<Value> {
        let stored: Vec<Arc<Stored>> = {
            let g = self.lock();
            let (group, plural) = storage_of(info);
            let Some(kind) = g.kind(info) else {
                return Vec::new();
            };
            g.dependents
                .get(owner_uid)
                .into_iter()
                .flatten()
                .filter(|(s, key)| s.0 == group && s.1 == plural && key.0 == ns)
                .filter_map(|(_, key)| kind.objects.get(key).cloned())
                .collect()
        };
        stored.iter().map(|s| s.value_as(info)).collect()
    }
}

impl Inner {
    fn kind(&self, info: &ResourceType) -> Option<&Kind> {
        let (group, plural) = storage_of(info);
        self.kinds.get(group)?.get(plural)
    }

    fn get(&self, info: &ResourceType, ns: Option<&str>, name: &str) -> Option<&Arc<Stored>> {
        self.kind(info)?.objects.get(&object_key(info, ns, name))
    }

    fn contains(&self, info: &ResourceType, key: &Key) -> bool {
        self.kind(info).is_some_and(|k| k.objects.contains_key(key))
    }

    /// The first type served from a storage (the one whose shape a cascade's DELETED
    /// events carry).
    fn type_of(&self, storage: &StorageKey) -> Option<&ResourceType> {
        self.types.iter().find(|t| {
            let (g, p) = storage_of(t);
            storage.0 == g && storage.1 == p
        })
    }

    /// Stores (or removes, when `obj` is None) under a new resourceVersion, keeps the
    /// indexes and the history, and wakes watchers. Returns the new version.
    fn commit(
        &mut self,
        info: &ResourceType,
        key: Key,
        obj: Option<Value>,
        event: &'static str,
        internal: bool,
    ) -> (Arc<Stored>, Value) {
        let rv = self.rv + 1;
        let av = self.shared_api_version(info);
        let mut object = match obj {
            Some(o) => o,
            None => self
                .kind(info)
                .and_then(|k| k.objects.get(&key))
                .map(|p| p.value())
                .unwrap_or(Value::Null),
        };
        storage_form(info, &mut object, rv);
        let renditions = crd::renditions(&self.crd_schemas, info, &object);
        let stored =
            Arc::new(Stored::new(rv, key.clone(), &object, av).with_renditions(renditions));
        self.put(info, key, stored.clone(), Some(&object), event, internal);
        (stored, object)
    }

    /// Stores a modification prepared by [`Store::prepare_edits`] under the next
    /// resourceVersion, as [`Inner::commit`] would store its object, without parsing it.
    fn commit_prepared(&mut self, info: &ResourceType, edit: &bulk::PreparedEdit) {
        // A custom resource's reads at other versions are rendered from the tree.
        let prepared = if info.custom {
            None
        } else {
            edit.at(self.rv + 1)
        };
        match prepared {
            Some(stored) => {
                let key = stored.key.clone();
                self.put(info, key, Arc::new(stored), None, "MODIFIED", false);
            }
            _ => {
                self.commit(
                    info,
                    edit.key().clone(),
                    Some(edit.value()),
                    "MODIFIED",
                    false,
                );
            }
        }
    }

    /// Trains the process's packing dictionary from the objects stored (at most
    /// [`packed::SAMPLES`] of them, spread over every kind), and repacks those kept raw
    /// until now. Once a dictionary exists, this only repacks.
    fn train_packing(&mut self) {
        self.train_at = self.train_at.saturating_mul(2);
        if !packed::trained() {
            let step = self.count / packed::SAMPLES + 1;
            let mut samples = packed::Samples::default();
            let objects = self.kinds.values().flat_map(HashMap::values);
            for stored in objects.flat_map(|k| k.objects.values()).step_by(step) {
                samples.add(&stored.json());
            }
            packed::train(&samples);
        }
        if !packed::trained() {
            return;
        }
        let objects = self.kinds.values_mut().flat_map(HashMap::values_mut);
        for stored in objects.flat_map(|k| k.objects.values_mut()) {
            if let Some(repacked) = stored.repacked() {
                *stored = Arc::new(repacked);
            }
        }
        // Repacked: no later count needs to look again.
        self.train_at = usize::MAX;
    }

    /// The one shared copy of `info`'s apiVersion string.
    fn shared_api_version(&mut self, info: &ResourceType) -> Arc<str> {
        let api_version = object::stored_type(info).api_version();
        match self.versions.get(&api_version) {
            Some(av) => av.clone(),
            None => {
                let av: Arc<str> = Arc::from(api_version.as_str());
                self.versions.insert(api_version, av.clone());
                av
            }
        }
    }

    /// Makes `stored` (at `self.rv + 1`) the object's version, or removes the object for
    /// `DELETED`; keeps the indexes and the history, and wakes watchers. `object` is its
    /// tree when the caller has one (parsed here only if an index needs it).
    fn put(
        &mut self,
        info: &ResourceType,
        key: Key,
        stored: Arc<Stored>,
        object: Option<&Value>,
        event: &'static str,
        internal: bool,
    ) {
        debug_assert_eq!(stored.rv, self.rv + 1);
        self.rv = stored.rv;
        let rv = self.rv;
        let (group, plural) = storage_of(info);
        if self.kind(info).is_none() {
            self.kinds.entry(group.to_string()).or_default().insert(
                plural.to_string(),
                Kind {
                    id: Arc::new((group.to_string(), plural.to_string())),
                    objects: BTreeMap::new(),
                },
            );
        }
        let kind = self
            .kinds
            .get_mut(group)
            .and_then(|k| k.get_mut(plural))
            .expect("created above");
        let prev = kind.objects.get(&key).cloned();
        let deleted = event == "DELETED";
        let replaced = if deleted {
            kind.objects.remove(&key)
        } else {
            let old = kind.objects.insert(key.clone(), stored.clone());
            self.count += 1;
            self.bytes += stored.json_len();
            old
        };
        if let Some(r) = replaced {
            self.count -= 1;
            self.bytes -= r.json_len();
        }
        let id = kind.id.clone();
        if self.count >= self.train_at {
            self.train_packing();
        }
        for uid in prev.iter().flat_map(|p| p.owners.iter()) {
            if let Some(set) = self.dependents.get_mut(uid) {
                set.remove(&(id.clone(), key.clone()));
                if set.is_empty() {
                    self.dependents.remove(uid);
                }
            }
        }
        if !deleted {
            for uid in stored.owners.iter() {
                self.dependents
                    .entry(uid.clone())
                    .or_default()
                    .insert((id.clone(), key.clone()));
            }
        }
        if id.0.is_empty() && id.1 == "services" {
            if let Some(p) = &prev {
                self.services.remove(&alloc::Holds::of_json(&p.json()));
            }
            if !deleted {
                self.services.add(&match object {
                    Some(object) => alloc::Holds::of(object),
                    None => alloc::Holds::of_json(&stored.json()),
                });
            }
        }
        let change = Arc::new(Change {
            rv,
            kind: event,
            storage: id,
            object: stored,
            prev,
            internal,
        });
        if let Some((wants, feed)) = &self.feed {
            if wants(&change) {
                let _ = feed.send(change.clone());
            }
        }
        self.history.push(change);
        self.changed.send_replace(rv);
    }
}

#[cfg(test)]
mod conversion_tests;
#[cfg(test)]
mod packing_tests;
#[cfg(test)]
mod tests;
