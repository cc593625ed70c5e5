//! Following a set of Secrets that hold desired state recorded in the cluster (driftd's
//! cluster log, Helm's release records): one list+watch per scope (a namespace, or the
//! whole cluster) on one label selector, run by the same [`listwatch`] as every other
//! watcher (resume from resourceVersion, `410 Gone` re-list, bookmarks, backoff), folded
//! into one map the caller reads after every change. A (re-)list replaces what its scope
//! held, so a Secret deleted while the watch was down is gone once the list ends.

use super::backoff;
use super::listwatch::{self, End, Selectors};
use super::live_object::LiveObject;
use super::outbox::Outbox;
use super::packed::Packing;
use super::{WatchEvent, WatcherId};
use driftd_k8s::TypeKey;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ApiResource;
use kube::{Api, Client};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

/// Messages the scopes' list+watch runs may queue ahead of the fold: enough to keep a list
/// page moving, few enough that a slow caller holds the watches back rather than memory.
const QUEUE: usize = 64;

/// What just changed in the followed Secrets.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The scope's (re-)list ended: the map holds what it listed.
    Listed {
        scope: usize,
    },
    Applied {
        key: String,
    },
    /// With the Secret as last seen.
    Deleted {
        key: String,
        secret: Box<Secret>,
    },
}

/// The followed Secrets by key, with the scope each came from.
pub type Followed = BTreeMap<String, (usize, Secret)>;

/// Follows the Secrets of every scope in `apis` matching `selector` until `stop` is true;
/// `key` names a Secret in the map, `what` says in logs what is followed. `on_change` is
/// called after every list and every change (nothing is called before a scope's first list
/// ends). Watch errors are logged once per message; the list+watch retries with backoff.
pub async fn follow(
    apis: Vec<Api<Secret>>,
    selector: &str,
    what: &str,
    key: fn(&Secret) -> String,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut on_change: impl FnMut(&Followed, &Change),
) {
    let (sender, mut inbox) = mpsc::channel(QUEUE);
    // Dropped on return: that aborts every scope's run.
    let mut runs = JoinSet::new();
    for (scope, api) in apis.into_iter().enumerate() {
        let namespace = api.namespace().map(str::to_string);
        let outbox = Outbox {
            key: secret_type(),
            // The id carries the scope, so the fold knows whose list an event belongs to.
            id: WatcherId(scope as u64),
            sender: sender.clone(),
            list_pages: Arc::new(Semaphore::new(1)),
            // Nothing here is handed to the engine: no packed copies, so an untrained
            // packing that is never used.
            pack: Arc::new(AtomicBool::new(false)),
            packing: Packing::new(),
            // Never asked: these lists are not re-listed periodically.
            relist: Arc::default(),
        };
        let selectors = Selectors {
            fields: None,
            labels: Some(selector.to_string()),
        };
        runs.spawn(follow_scope(
            api.into_client(),
            namespace,
            selectors,
            outbox,
        ));
    }
    drop(sender);
    let mut fold = Fold::new(key);
    let mut warned = HashSet::new();
    loop {
        let next = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            next = inbox.recv() => next,
        };
        let Some(message) = next else { return };
        let scope = message.watcher.0 as usize;
        match fold.step(scope, message.event) {
            Ok(Some(change)) => on_change(&fold.objects, &change),
            Ok(None) => {}
            Err(problem) => {
                let message = format!("{what}: {problem}");
                if warned.insert(message.clone()) {
                    tracing::warn!("{message}");
                }
            }
        }
    }
}

fn secret_type() -> TypeKey {
    TypeKey {
        api_version: "v1".into(),
        kind: "Secret".into(),
    }
}

/// Lists and watches one scope's Secrets until the fold is gone. Secrets are always served;
/// a "not found" (a scope's namespace missing from discovery's point of view) is retried
/// after the longest backoff wait, as any other failure would be.
async fn follow_scope(
    client: Client,
    namespace: Option<String>,
    selectors: Selectors,
    outbox: Outbox,
) {
    let resource = ApiResource::erase::<Secret>(&());
    loop {
        let api: Api<LiveObject> = match &namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        match listwatch::run(api, &resource, &selectors, &outbox).await {
            End::EngineGone => return,
            End::NotFound => tokio::time::sleep(backoff::MAX).await,
        }
    }
}

/// The followed map, built from the list+watch events of every scope.
struct Fold {
    key: fn(&Secret) -> String,
    objects: Followed,
    /// What each scope's list under way has listed so far.
    listing: BTreeMap<usize, Followed>,
}

impl Fold {
    fn new(key: fn(&Secret) -> String) -> Fold {
        Fold {
            key,
            objects: Followed::new(),
            listing: BTreeMap::new(),
        }
    }

    /// Folds one event of `scope`: the change to report, if any, or a problem to log.
    fn step(&mut self, scope: usize, event: WatchEvent) -> Result<Option<Change>, String> {
        match event {
            WatchEvent::Init => {
                self.listing.insert(scope, Followed::new());
                Ok(None)
            }
            WatchEvent::Apply(applied) => {
                let secret = parse(applied.object)?;
                let k = (self.key)(&secret);
                if let Some(listing) = self.listing.get_mut(&scope) {
                    listing.insert(k, (scope, secret));
                    return Ok(None);
                }
                self.objects.insert(k.clone(), (scope, secret));
                Ok(Some(Change::Applied { key: k }))
            }
            WatchEvent::InitDone => {
                let listed = self.listing.remove(&scope).unwrap_or_default();
                self.objects.retain(|_, (s, _)| *s != scope);
                self.objects.extend(listed);
                Ok(Some(Change::Listed { scope }))
            }
            WatchEvent::Delete(object) => {
                let secret = parse(object)?;
                let k = (self.key)(&secret);
                self.objects.remove(&k);
                Ok(Some(Change::Deleted {
                    key: k,
                    secret: Box::new(secret),
                }))
            }
            WatchEvent::Error(err) => Err(err.to_string()),
            // Where the server stands, and that it answers: only the engine's concern.
            WatchEvent::Opened
            | WatchEvent::Position(_)
            | WatchEvent::Bookmark(_)
            | WatchEvent::Served { .. }
            | WatchEvent::NotServed => Ok(None),
        }
    }
}

/// The Secret in `object`. The parser's own message is not passed on: it may quote a value.
fn parse(object: Value) -> Result<Secret, String> {
    let name = |o: &Value| {
        let meta = &o["metadata"];
        format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or(""),
            meta["name"].as_str().unwrap_or("")
        )
    };
    let what = name(&object);
    serde_json::from_value(object)
        .map_err(|_| format!("Secret {what} does not parse as a Secret; skipped"))
}

#[cfg(test)]
mod tests;
