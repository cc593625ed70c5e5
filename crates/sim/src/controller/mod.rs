//! A minimal in-process workload controller: for each Deployment one ReplicaSet per pod
//! template (named `<deployment>-<pod-template-hash>`) and Running, Ready Pods named
//! `<replicaset>-<5 random>`, as kube-controller-manager's deployment and replicaset
//! controllers and the kubelet would leave them. Template changes roll out at once: the new
//! ReplicaSet is scaled up and old ones to zero. Status is written through the `status`
//! subresource (managers `kube-controller-manager` and `kubelet`), so watchers see the same
//! event sequence shape as on a cluster. StatefulSets (`<name>-<ordinal>` pods), DaemonSets
//! (one pod on the single simulated node) and Jobs (pods that succeed) get the same treatment,
//! and every namespace gets its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap.
//! The kubelet's part ([`kubelet`]): containers start when the Secrets and ConfigMaps they
//! read exist, and can be restarted.
//!
//! The controllers take the changes they want from a queue the store fills as it commits,
//! and reconcile the workloads the changes concern; finding what a workload owns goes
//! through the store's dependents index, so a reconcile costs what that workload has, not
//! what the store holds, and a settled store costs nothing.

mod daemonset;
mod deployment;
mod job;
mod kubelet;
mod namespace;
mod pods;
mod statefulset;
mod volumes;

pub use kubelet::{restart_container, Kubelet};

use super::store::{now_rfc3339, Change, Store, WriteCtx};
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

const MANAGER: &str = "kube-controller-manager";
/// Changes taken from the queue at a time.
const BATCH: usize = 4096;

struct Types {
    deploy: ResourceType,
    rs: ResourceType,
    pod: ResourceType,
    event: ResourceType,
    sts: ResourceType,
    ds: ResourceType,
    job: ResourceType,
    namespace: ResourceType,
    configmap: ResourceType,
    secret: ResourceType,
    service_account: ResourceType,
    pvc: ResourceType,
    /// The pods waiting for a config, shared with the `/_sim/restart-container` endpoint.
    kubelet: Arc<Kubelet>,
}

/// Records a Normal core/v1 Event about `about` (see [`record_event_of_type`]).
fn record_event(
    store: &Store,
    t: &Types,
    about: &Value,
    component: &str,
    reason: &str,
    message: &str,
) {
    record_event_of_type(store, t, about, component, reason, message, "Normal");
}

/// Records a core/v1 Event about `about`, named `<name>.<hex nanos>` like client-go's
/// event recorder, so `kubectl describe` and `kubectl get events` show the controllers' work.
fn record_event_of_type(
    store: &Store,
    t: &Types,
    about: &Value,
    component: &str,
    reason: &str,
    message: &str,
    ty: &str,
) {
    let now = now_rfc3339();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let ns = meta(about, "namespace");
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.{nanos:x}", meta(about, "name")), "namespace": ns},
        "involvedObject": {
            "apiVersion": about["apiVersion"], "kind": about["kind"], "name": meta(about, "name"),
            "namespace": ns, "uid": meta(about, "uid"), "resourceVersion": meta(about, "resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": ty,
        "eventTime": null,
        "reportingComponent": component,
        "reportingInstance": "",
    });
    let _ = store.create(&t.event, Some(&ns), event, &WriteCtx::controller(component));
}

/// Resolves the types the controllers touch (all built in).
fn types(store: &Store, kubelet: Arc<Kubelet>) -> Option<Types> {
    let resolve = |g: &str, p: &str| store.resolve(g, "v1", p);
    Some(Types {
        deploy: resolve("apps", "deployments")?,
        rs: resolve("apps", "replicasets")?,
        pod: resolve("", "pods")?,
        event: resolve("", "events")?,
        sts: resolve("apps", "statefulsets")?,
        ds: resolve("apps", "daemonsets")?,
        job: resolve("batch", "jobs")?,
        namespace: resolve("", "namespaces")?,
        configmap: resolve("", "configmaps")?,
        secret: resolve("", "secrets")?,
        service_account: resolve("", "serviceaccounts")?,
        pvc: resolve("", "persistentvolumeclaims")?,
        kubelet,
    })
}

/// Puts the per-namespace system objects into the namespaces that exist at startup, before
/// the server answers its first request.
pub fn seed(store: &Store) {
    if let Some(t) = types(store, Arc::default()) {
        for (_, name) in store.keys(&t.namespace) {
            namespace::defaults(store, &t, &name);
        }
    }
}

/// Which changes the controllers react to: a new namespace or claim, a new or changed
/// config (pods may wait for it), and changes to workloads and what they own, except the
/// controllers' own writes (a reconcile leaves its workload settled) other than deletions.
pub fn wanted(c: &Change) -> bool {
    match (c.storage.0.as_str(), c.storage.1.as_str()) {
        ("", "namespaces" | "persistentvolumeclaims") => c.kind == "ADDED",
        ("", "secrets" | "configmaps") => c.kind != "DELETED",
        ("", "pods")
        | ("apps", "deployments" | "statefulsets" | "daemonsets" | "replicasets")
        | ("batch", "jobs") => !c.internal || c.kind == "DELETED",
        _ => false,
    }
}

/// Runs until the store's feed closes: takes the queued changes (those [`wanted`] takes,
/// registered with [`Store::feed`] after [`seed`]), and reconciles each workload they
/// concern once per batch.
pub async fn run(
    store: Store,
    mut feed: tokio::sync::mpsc::UnboundedReceiver<Arc<Change>>,
    kubelet: Arc<Kubelet>,
) {
    let Some(t) = types(&store, kubelet) else {
        return;
    };
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        if feed.recv_many(&mut batch, BATCH).await == 0 {
            return;
        }
        let mut dirty = BTreeSet::new();
        let mut configs = BTreeSet::new();
        for c in batch.drain(..) {
            if matches!(c.storage.1.as_str(), "secrets" | "configmaps") && c.storage.0.is_empty() {
                if t.kubelet.awaits(c.namespace()) {
                    configs.insert(c.namespace().to_string());
                }
                continue;
            }
            collect(&store, &t, &c, &mut dirty);
        }
        // Pods that waited for a config start; their controllers count them again.
        for ns in configs {
            for pod in kubelet::config_changed(&store, &t, &ns) {
                dirty.extend(workload_of_pod(&store, &t, &ns, &pod));
            }
        }
        for (kind, ns, name) in dirty {
            // One odd object must not stop the controllers for everything else.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match kind {
                Kind::Deployment => deployment::reconcile(&store, &t, &ns, &name),
                Kind::StatefulSet => statefulset::reconcile(&store, &t, &ns, &name),
                Kind::DaemonSet => daemonset::reconcile(&store, &t, &ns, &name),
                Kind::Job => job::reconcile(&store, &t, &ns, &name),
            }));
            if outcome.is_err() {
                tracing::error!(?kind, namespace = %ns, %name, "controller reconcile panicked; skipped");
            }
            // Let the server answer requests between reconciles.
            tokio::task::yield_now().await;
        }
    }
}

fn meta(obj: &Value, field: &str) -> String {
    obj.pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn controller_owner<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| {
            r.get("kind").and_then(Value::as_str) == Some(kind)
                && r.get("controller") == Some(&json!(true))
        })
}

/// The workload kinds the controller drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Deployment,
    StatefulSet,
    DaemonSet,
    Job,
}

type Dirty = BTreeSet<(Kind, String, String)>;

/// Maps a change to the workload it concerns, if any.
fn collect(store: &Store, t: &Types, c: &Change, dirty: &mut Dirty) {
    let (group, plural) = (c.storage.0.as_str(), c.storage.1.as_str());
    // Most changes (Events, ConfigMaps, ...) concern no controller: decide before parsing.
    if !matches!(
        (group, plural),
        ("", "namespaces" | "persistentvolumeclaims" | "pods")
            | (
                "apps",
                "deployments" | "statefulsets" | "daemonsets" | "replicasets"
            )
            | ("batch", "jobs")
    ) {
        return;
    }
    let object = c.object.value();
    let ns = c.namespace().to_string();
    let deploy_of_rs = |rs: &Value| {
        controller_owner(rs, "Deployment")
            .and_then(|r| r.get("name").and_then(Value::as_str))
            .map(str::to_string)
    };
    if (group, plural, c.kind) == ("", "namespaces", "ADDED") {
        namespace::defaults(store, t, &meta(&object, "name"));
        return;
    }
    if (group, plural, c.kind) == ("", "persistentvolumeclaims", "ADDED") {
        volumes::bind_claim(store, t, c.namespace(), &meta(&object, "name"));
        return;
    }
    let target = match (group, plural) {
        ("apps", "deployments") => Some((Kind::Deployment, meta(&object, "name"))),
        ("apps", "statefulsets") => Some((Kind::StatefulSet, meta(&object, "name"))),
        ("apps", "daemonsets") => Some((Kind::DaemonSet, meta(&object, "name"))),
        ("batch", "jobs") => Some((Kind::Job, meta(&object, "name"))),
        ("apps", "replicasets") => deploy_of_rs(&object).map(|d| (Kind::Deployment, d)),
        ("", "pods") => {
            dirty.extend(workload_of_pod(store, t, &ns, &object));
            return;
        }
        _ => None,
    };
    if let Some((kind, name)) = target {
        dirty.insert((kind, ns, name));
    }
}

/// The workload a pod of `ns` belongs to (a Deployment's through its ReplicaSet).
fn workload_of_pod(
    store: &Store,
    t: &Types,
    ns: &str,
    pod: &Value,
) -> Option<(Kind, String, String)> {
    let owner = |kind: &str| {
        controller_owner(pod, kind)
            .and_then(|r| r.get("name").and_then(Value::as_str))
            .map(str::to_string)
    };
    let deploy_of_rs = |rs: &Value| {
        controller_owner(rs, "Deployment")
            .and_then(|r| r.get("name").and_then(Value::as_str))
            .map(str::to_string)
    };
    let (kind, name) = owner("ReplicaSet")
        .and_then(|rs| store.get(&t.rs, Some(ns), &rs).ok())
        .and_then(|rs| deploy_of_rs(&rs))
        .map(|d| (Kind::Deployment, d))
        .or_else(|| owner("StatefulSet").map(|s| (Kind::StatefulSet, s)))
        .or_else(|| owner("DaemonSet").map(|s| (Kind::DaemonSet, s)))
        .or_else(|| owner("Job").map(|s| (Kind::Job, s)))?;
    Some((kind, ns.to_string(), name))
}

fn owner_ref(obj: &Value, api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": meta(obj, "name"), "uid": meta(obj, "uid"),
           "controller": true, "blockOwnerDeletion": true})
}

/// The objects of type `info` in `ns` that `owner` owns (from the dependents index).
fn owned(store: &Store, info: &ResourceType, ns: &str, owner: &Value) -> Vec<Value> {
    store.owned(info, ns, &meta(owner, "uid"))
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
}
