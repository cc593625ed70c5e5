//! Following a set of Secrets that hold desired state recorded in the cluster (driftd's
//! cluster log, Helm's release records): a kube-runtime watcher per scope (a namespace, or
//! the whole cluster) on one label selector, folded into one map the caller reads after
//! every change. A (re-)list replaces what its scope held, so a Secret deleted while the
//! watch was down is gone once the list ends.

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Api;
use std::collections::{BTreeMap, HashSet};

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
/// ends). Watch errors are logged once per message; the watchers retry with backoff.
pub async fn follow(
    apis: Vec<Api<Secret>>,
    selector: &str,
    what: &str,
    key: fn(&Secret) -> String,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut on_change: impl FnMut(&Followed, &Change),
) {
    let config = watcher::Config::default().labels(selector);
    let streams = apis.into_iter().enumerate().map(|(scope, api)| {
        watcher::watcher(api, config.clone())
            .default_backoff()
            .map(move |event| (scope, event))
            .boxed()
    });
    let mut events = stream::select_all(streams);
    let mut objects = Followed::new();
    let mut listing: BTreeMap<usize, Followed> = BTreeMap::new();
    let mut warned = HashSet::new();
    loop {
        let next = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            next = events.next() => next,
        };
        let Some((scope, event)) = next else { return };
        match event {
            Err(err) => {
                let message = format!("{what}: {err}");
                if warned.insert(message.clone()) {
                    tracing::warn!("{message}");
                }
            }
            Ok(Event::Init) => {
                listing.insert(scope, Followed::new());
            }
            Ok(Event::InitApply(s)) => {
                if let Some(l) = listing.get_mut(&scope) {
                    l.insert(key(&s), (scope, s));
                }
            }
            Ok(Event::InitDone) => {
                let listed = listing.remove(&scope).unwrap_or_default();
                objects.retain(|_, (s, _)| *s != scope);
                objects.extend(listed);
                on_change(&objects, &Change::Listed { scope });
            }
            Ok(Event::Apply(s)) => {
                let k = key(&s);
                objects.insert(k.clone(), (scope, s));
                on_change(&objects, &Change::Applied { key: k });
            }
            Ok(Event::Delete(s)) => {
                let k = key(&s);
                objects.remove(&k);
                let change = Change::Deleted {
                    key: k,
                    secret: Box::new(s),
                };
                on_change(&objects, &change);
            }
        }
    }
}
