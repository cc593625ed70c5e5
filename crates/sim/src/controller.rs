//! A minimal in-process workload controller: for each Deployment one ReplicaSet per pod
//! template (named `<deployment>-<pod-template-hash>`) and Running, Ready Pods named
//! `<replicaset>-<5 random>`, as kube-controller-manager's deployment and replicaset
//! controllers and the kubelet would leave them. Template changes roll out at once: the new
//! ReplicaSet is scaled up and old ones to zero. Status is written through the `status`
//! subresource (managers `kube-controller-manager` and `kubelet`), so watchers see the same
//! event sequence shape as on a cluster. StatefulSets (`<name>-<ordinal>` pods), DaemonSets
//! (one pod on the single simulated node) and Jobs (pods that succeed) get the same treatment,
//! and every namespace gets its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap.

use super::store::{now_rfc3339, random_suffix, Store, WriteCtx};
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use tokio::sync::broadcast::error::RecvError;

use super::store::Notice;

const MANAGER: &str = "kube-controller-manager";
const REVISION: &str = "deployment.kubernetes.io/revision";

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
    service_account: ResourceType,
    pvc: ResourceType,
}

/// Records a core/v1 Event about `about`, named `<name>.<hex nanos>` like client-go's
/// event recorder, so `kubectl describe` and `kubectl get events` show the controllers' work.
fn record_event(
    store: &Store,
    t: &Types,
    about: &Value,
    component: &str,
    reason: &str,
    message: &str,
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
        "type": "Normal",
        "eventTime": null,
        "reportingComponent": component,
        "reportingInstance": "",
    });
    let _ = store.create(&t.event, Some(&ns), event, &WriteCtx::new(component));
}

/// Resolves the types the controllers touch (all built in).
fn types(store: &Store) -> Option<Types> {
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
        service_account: resolve("", "serviceaccounts")?,
        pvc: resolve("", "persistentvolumeclaims")?,
    })
}

/// Puts the per-namespace system objects into the namespaces that exist at startup, before
/// the server answers its first request.
pub fn seed(store: &Store) {
    if let Some(t) = types(store) {
        for ns in store.all(&t.namespace) {
            namespace_defaults(store, &t, &meta(&ns, "name"));
        }
    }
}

/// Runs until the store's channel closes.
pub async fn run(store: Store) {
    let mut rx = store.subscribe();
    let Some(t) = types(&store) else { return };
    loop {
        let mut dirty = BTreeSet::new();
        let mut resync = false;
        match rx.recv().await {
            Ok(n) => collect(&store, &t, &n, &mut dirty),
            Err(RecvError::Lagged(_)) => resync = true,
            Err(RecvError::Closed) => return,
        }
        loop {
            match rx.try_recv() {
                Ok(n) => collect(&store, &t, &n, &mut dirty),
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => resync = true,
                Err(_) => break,
            }
        }
        if resync {
            for (kind, info) in [
                (Kind::Deployment, &t.deploy),
                (Kind::StatefulSet, &t.sts),
                (Kind::DaemonSet, &t.ds),
                (Kind::Job, &t.job),
            ] {
                for d in store.all(info) {
                    dirty.insert((kind, meta(&d, "namespace"), meta(&d, "name")));
                }
            }
        }
        for (kind, ns, name) in dirty {
            // One odd object must not stop the controllers for everything else.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match kind {
                Kind::Deployment => reconcile(&store, &t, &ns, &name),
                Kind::StatefulSet => reconcile_stateful_set(&store, &t, &ns, &name),
                Kind::DaemonSet => reconcile_daemon_set(&store, &t, &ns, &name),
                Kind::Job => reconcile_job(&store, &t, &ns, &name),
            }));
            if outcome.is_err() {
                tracing::error!(?kind, namespace = %ns, %name, "controller reconcile panicked; skipped");
            }
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
fn collect(store: &Store, t: &Types, n: &Notice, dirty: &mut Dirty) {
    let Notice::Change(c) = n else { return };
    let ns = c.namespace.clone();
    let deploy_of_rs = |rs: &Value| {
        controller_owner(rs, "Deployment")
            .and_then(|r| r.get("name").and_then(Value::as_str))
            .map(str::to_string)
    };
    let owner = |kind: &str| {
        controller_owner(&c.object, kind)
            .and_then(|r| r.get("name").and_then(Value::as_str))
            .map(str::to_string)
    };
    if (c.group.as_str(), c.plural.as_str(), c.kind) == ("", "namespaces", "ADDED") {
        namespace_defaults(store, t, &meta(&c.object, "name"));
        return;
    }
    if (c.group.as_str(), c.plural.as_str(), c.kind) == ("", "persistentvolumeclaims", "ADDED") {
        bind_claim(store, t, &c.namespace, &meta(&c.object, "name"));
        return;
    }
    let target = match (c.group.as_str(), c.plural.as_str()) {
        ("apps", "deployments") => Some((Kind::Deployment, meta(&c.object, "name"))),
        ("apps", "statefulsets") => Some((Kind::StatefulSet, meta(&c.object, "name"))),
        ("apps", "daemonsets") => Some((Kind::DaemonSet, meta(&c.object, "name"))),
        ("batch", "jobs") => Some((Kind::Job, meta(&c.object, "name"))),
        ("apps", "replicasets") => deploy_of_rs(&c.object).map(|d| (Kind::Deployment, d)),
        ("", "pods") => owner("ReplicaSet")
            .and_then(|rs| store.get(&t.rs, Some(&ns), &rs).ok())
            .and_then(|rs| deploy_of_rs(&rs))
            .map(|d| (Kind::Deployment, d))
            .or_else(|| owner("StatefulSet").map(|s| (Kind::StatefulSet, s)))
            .or_else(|| owner("DaemonSet").map(|s| (Kind::DaemonSet, s)))
            .or_else(|| owner("Job").map(|s| (Kind::Job, s))),
        _ => None,
    };
    if let Some((kind, name)) = target {
        dirty.insert((kind, ns, name));
    }
}

/// `pod-template-hash`: FNV-32a of the template, rendered with the same alphabet as
/// `rand.SafeEncodeString` (the real hash input is Go's deep-print of the struct, so the
/// values differ from a real cluster's, but the shape is the same).
pub fn pod_template_hash(template: &Value) -> String {
    let mut h: u32 = 0x811c9dc5;
    for b in canonical(template).bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x01000193);
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// JSON with object keys sorted, so equal templates hash equally whatever their key order.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String((*k).clone()),
                        canonical(&m[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// A ReplicaSet template without the label the controller adds, for comparing with the
/// Deployment's template (the deployment controller's `EqualIgnoreHash`).
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove("pod-template-hash");
    }
    t
}

fn owner_ref(obj: &Value, api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": meta(obj, "name"), "uid": meta(obj, "uid"),
           "controller": true, "blockOwnerDeletion": true})
}

fn owned_by(objs: Vec<Value>, ns: &str, uid: &str) -> Vec<Value> {
    objs.into_iter()
        .filter(|o| meta(o, "namespace") == ns)
        .filter(|o| {
            o.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                })
        })
        .collect()
}

fn revision(obj: &Value) -> i64 {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
}

/// Keeps a condition's timestamps when nothing about it changed, so steady state writes nothing.
fn condition(
    old: Option<&Value>,
    ty: &str,
    status: &str,
    reason: &str,
    message: &str,
    with_update: bool,
) -> Value {
    let prev = old.and_then(Value::as_array).and_then(|cs| {
        cs.iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    });
    let same = prev.is_some_and(|p| {
        p.get("status").and_then(Value::as_str) == Some(status)
            && p.get("reason").and_then(Value::as_str) == Some(reason)
            && p.get("message").and_then(Value::as_str) == Some(message)
    });
    let now = now_rfc3339();
    let keep = |f: &str| {
        prev.filter(|_| same)
            .and_then(|p| p.get(f).cloned())
            .unwrap_or_else(|| json!(now))
    };
    let mut c = json!({"type": ty, "status": status});
    if with_update {
        c["lastUpdateTime"] = keep("lastUpdateTime");
    }
    c["lastTransitionTime"] = keep("lastTransitionTime");
    c["reason"] = json!(reason);
    c["message"] = json!(message);
    c
}

/// The deployment controller's ScalingReplicaSet event.
fn scaled(store: &Store, t: &Types, d: &Value, rs_name: &str, from: i64, to: i64) {
    let dir = if to > from { "up" } else { "down" };
    let msg = format!("Scaled {dir} replica set {rs_name} from {from} to {to}");
    record_event(
        store,
        t,
        d,
        "deployment-controller",
        "ScalingReplicaSet",
        &msg,
    );
}

fn reconcile(store: &Store, t: &Types, ns: &str, name: &str) {
    let ctx = WriteCtx::new(MANAGER);
    let Ok(d) = store.get(&t.deploy, Some(ns), name) else {
        return;
    };
    let uid = meta(&d, "uid");
    let Some(template) = d.pointer("/spec/template").cloned() else {
        return;
    };
    let hash = pod_template_hash(&template);
    let rs_name = format!("{name}-{hash}");
    let replicas = d
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let owned = owned_by(store.all(&t.rs), ns, &uid);
    let max_rev = owned.iter().map(revision).max().unwrap_or(0);
    // An existing ReplicaSet with this template (e.g. after `kubectl rollout undo`) is
    // reused and becomes the newest revision, as the deployment controller does.
    let current = owned
        .iter()
        .find(|r| r.pointer("/spec/template").map(without_hash).as_ref() == Some(&template))
        .or_else(|| owned.iter().find(|r| meta(r, "name") == rs_name))
        .cloned();
    let rs_name = current.as_ref().map(|r| meta(r, "name")).unwrap_or(rs_name);

    let mut rs_template = template.clone();
    rs_template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let new_rs = match current {
        Some(rs) => {
            let before = rs
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if before != replicas {
                scaled(store, t, &d, &rs_name, before, replicas);
            }
            let rev = revision(&rs);
            let rev = if rev < max_rev { max_rev + 1 } else { rev };
            store
                .write(&t.rs, Some(ns), &rs_name, None, &ctx, |old| {
                    let mut new = old.clone();
                    new["spec"]["replicas"] = json!(replicas);
                    let a = &mut new["metadata"]["annotations"];
                    a[REVISION] = json!(rev.to_string());
                    a["deployment.kubernetes.io/desired-replicas"] = json!(replicas.to_string());
                    a["deployment.kubernetes.io/max-replicas"] = json!((replicas + 1).to_string());
                    Ok(new)
                })
                .ok()
        }
        None => {
            let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
            selector["matchLabels"]["pod-template-hash"] = json!(hash);
            let rs = json!({
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {
                    "name": rs_name, "namespace": ns,
                    "labels": rs_template["metadata"]["labels"].clone(),
                    "annotations": {
                        "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                        "deployment.kubernetes.io/max-replicas": (replicas + 1).to_string(),
                        REVISION: (max_rev + 1).to_string(),
                    },
                    "ownerReferences": [owner_ref(&d, "apps/v1", "Deployment")],
                },
                "spec": {"replicas": replicas, "selector": selector, "template": rs_template},
            });
            let created = store.create(&t.rs, Some(ns), rs, &ctx).ok();
            if created.is_some() {
                scaled(store, t, &d, &rs_name, 0, replicas);
            }
            created
        }
    };
    let Some(new_rs) = new_rs else { return };
    let mut total = (0, 0);
    for rs in owned.iter().filter(|r| meta(r, "name") != rs_name) {
        let before = rs
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if before != 0 {
            scaled(store, t, &d, &meta(rs, "name"), before, 0);
        }
        let rs = store
            .write(&t.rs, Some(ns), &meta(rs, "name"), None, &ctx, |old| {
                let mut new = old.clone();
                new["spec"]["replicas"] = json!(0);
                Ok(new)
            })
            .unwrap_or_else(|_| rs.clone());
        let (n, ready) = reconcile_pods(store, t, ns, &rs);
        total = (total.0 + n, total.1 + ready);
    }
    let (updated, updated_ready) = reconcile_pods(store, t, ns, &new_rs);
    total = (total.0 + updated, total.1 + updated_ready);

    // The revision annotation is an ordinary (main resource) update by the controller.
    let rev = revision(&new_rs).to_string();
    if d.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        != Some(&rev)
    {
        let _ = store.write(&t.deploy, Some(ns), name, None, &ctx, |old| {
            let mut new = old.clone();
            new["metadata"]["annotations"][REVISION] = json!(rev);
            Ok(new)
        });
    }
    let _ = store.write(&t.deploy, Some(ns), name, Some("status"), &ctx, |old| {
        let mut new = old.clone();
        let conds = old.pointer("/status/conditions");
        let available = updated_ready >= replicas;
        let mut status = json!({
            "observedGeneration": old.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
            "replicas": total.0,
            "updatedReplicas": updated,
            "readyReplicas": total.1,
            "availableReplicas": total.1,
        });
        if total.0 > total.1 {
            status["unavailableReplicas"] = json!(total.0 - total.1);
        }
        for k in [
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ] {
            // Zero counts are omitted (omitempty), as on a real cluster.
            if status[k] == json!(0) {
                status.as_object_mut().map(|s| s.remove(k));
            }
        }
        status["conditions"] = json!([
            if available {
                condition(
                    conds,
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.",
                    true,
                )
            } else {
                condition(
                    conds,
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                    true,
                )
            },
            condition(
                conds,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
                true
            ),
        ]);
        new["status"] = status;
        Ok(new)
    });
}

/// Brings a ReplicaSet's pods to its replica count and writes its status; returns
/// (pods, ready pods).
fn reconcile_pods(store: &Store, t: &Types, ns: &str, rs: &Value) -> (i64, i64) {
    let ctx = WriteCtx::new(MANAGER);
    let want = rs
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut pods = owned_by(store.all(&t.pod), ns, &meta(rs, "uid"));
    pods.sort_by_key(|p| meta(p, "creationTimestamp"));
    while (pods.len() as i64) > want {
        let p = pods.pop().expect("non-empty");
        if store
            .delete(&t.pod, Some(ns), &meta(&p, "name"), None, false)
            .is_ok()
        {
            let msg = format!("Deleted pod: {}", meta(&p, "name"));
            record_event(
                store,
                t,
                rs,
                "replicaset-controller",
                "SuccessfulDelete",
                &msg,
            );
        }
    }
    let rs_name = meta(rs, "name");
    while (pods.len() as i64) < want {
        let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let name = format!("{rs_name}-{}", random_suffix(5));
        let Some(running) = create_running_pod(
            store,
            t,
            rs,
            &name,
            Some(&format!("{rs_name}-")),
            &template,
            &[],
            pods.len(),
        ) else {
            break;
        };
        let msg = format!("Created pod: {name}");
        record_event(
            store,
            t,
            rs,
            "replicaset-controller",
            "SuccessfulCreate",
            &msg,
        );
        pods.push(running);
    }
    let ready = pods.iter().filter(|p| is_ready(p)).count() as i64;
    let n = pods.len() as i64;
    let _ = store.write(&t.rs, Some(ns), &rs_name, Some("status"), &ctx, |old| {
        let mut new = old.clone();
        let mut status = json!({"replicas": n, "observedGeneration": old.pointer("/metadata/generation").cloned().unwrap_or(json!(1))});
        if n > 0 {
            status["fullyLabeledReplicas"] = json!(n);
        }
        if ready > 0 {
            status["readyReplicas"] = json!(ready);
            status["availableReplicas"] = json!(ready);
        }
        new["status"] = status;
        Ok(new)
    });
    (n, ready)
}

/// Creates a pod from `template` owned by `owner` (its controller) and reports it Running
/// through the status subresource as the kubelet would.
#[allow(clippy::too_many_arguments)]
fn create_running_pod(
    store: &Store,
    t: &Types,
    owner: &Value,
    name: &str,
    generate_name: Option<&str>,
    template: &Value,
    extra_labels: &[(&str, String)],
    index: usize,
) -> Option<Value> {
    create_pod(
        store,
        t,
        owner,
        name,
        generate_name,
        template,
        extra_labels,
        index,
        false,
    )
}

/// Like [`create_running_pod`]; `completes` reports the pod Succeeded instead (Job pods).
#[allow(clippy::too_many_arguments)]
fn create_pod(
    store: &Store,
    t: &Types,
    owner: &Value,
    name: &str,
    generate_name: Option<&str>,
    template: &Value,
    extra_labels: &[(&str, String)],
    index: usize,
    completes: bool,
) -> Option<Value> {
    let ns = meta(owner, "namespace");
    let owner_av = owner["apiVersion"].as_str().unwrap_or("apps/v1");
    let owner_kind = owner["kind"].as_str().unwrap_or("");
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
            "ownerReferences": [owner_ref(owner, owner_av, owner_kind)],
        },
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    });
    if let Some(g) = generate_name {
        pod["metadata"]["generateName"] = json!(g);
    }
    for (k, v) in extra_labels {
        pod["metadata"]["labels"][*k] = json!(v);
    }
    if let Some(a) = template.pointer("/metadata/annotations") {
        pod["metadata"]["annotations"] = a.clone();
    }
    pod["spec"]["nodeName"] = json!("driftd-sim-node");
    let created = store
        .create(&t.pod, Some(&ns), pod, &WriteCtx::new(MANAGER))
        .ok()?;
    // What `kubectl describe pod` shows from the scheduler and the kubelet.
    let msg = format!("Successfully assigned {ns}/{name} to driftd-sim-node");
    record_event(store, t, &created, "default-scheduler", "Scheduled", &msg);
    for c in created
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (cname, image) = (
            c["name"].as_str().unwrap_or(""),
            c["image"].as_str().unwrap_or(""),
        );
        let pulled = format!("Container image \"{image}\" already present on machine");
        record_event(store, t, &created, "kubelet", "Pulled", &pulled);
        record_event(
            store,
            t,
            &created,
            "kubelet",
            "Created",
            &format!("Created container: {cname}"),
        );
        record_event(
            store,
            t,
            &created,
            "kubelet",
            "Started",
            &format!("Started container {cname}"),
        );
    }
    let running = store
        .write(
            &t.pod,
            Some(&ns),
            name,
            Some("status"),
            &WriteCtx::new("kubelet"),
            |old| {
                let mut new = old.clone();
                new["status"] = if completes {
                    completed_status(old, index)
                } else {
                    running_status(old, index)
                };
                Ok(new)
            },
        )
        .unwrap_or(created);
    Some(running)
}

/// What kube-controller-manager puts in every namespace: the `default` ServiceAccount
/// (serviceaccount controller) and the `kube-root-ca.crt` ConfigMap (root-ca-cert-publisher).
fn namespace_defaults(store: &Store, t: &Types, ns: &str) {
    let ctx = WriteCtx::new(MANAGER);
    if store.get(&t.service_account, Some(ns), "default").is_err() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
        let _ = store.create(&t.service_account, Some(ns), sa, &ctx);
    }
    if store
        .get(&t.configmap, Some(ns), "kube-root-ca.crt")
        .is_err()
    {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "kube-root-ca.crt", "namespace": ns,
                "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."},
            },
            "data": {"ca.crt": SIM_CA_PEM},
        });
        let _ = store.create(&t.configmap, Some(ns), cm, &ctx);
    }
}

/// A placeholder CA bundle (the simulator serves plain HTTP; nothing verifies against it).
const SIM_CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nZHJpZnRkLXNpbXVsYXRvci1wbGFjZWhvbGRlci1jYQ==\n-----END CERTIFICATE-----\n";

/// Binds a new claim the way the PV controller and a dynamic provisioner leave it: a volume
/// name in the spec, binding annotations, and a Bound status with the requested capacity.
fn bind_claim(store: &Store, t: &Types, ns: &str, name: &str) {
    let ctx = WriteCtx::new(MANAGER);
    let Ok(pvc) = store.get(&t.pvc, Some(ns), name) else {
        return;
    };
    if pvc
        .pointer("/spec/volumeName")
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty())
    {
        return;
    }
    let volume = format!("pvc-{}", meta(&pvc, "uid"));
    let bound = store.write(&t.pvc, Some(ns), name, None, &ctx, |old| {
        let mut new = old.clone();
        new["spec"]["volumeName"] = json!(volume);
        let a = &mut new["metadata"]["annotations"];
        a["pv.kubernetes.io/bind-completed"] = json!("yes");
        a["pv.kubernetes.io/bound-by-controller"] = json!("yes");
        a["volume.beta.kubernetes.io/storage-provisioner"] = json!("driftd.sim/local");
        a["volume.kubernetes.io/storage-provisioner"] = json!("driftd.sim/local");
        Ok(new)
    });
    if bound.is_err() {
        return;
    }
    let _ = store.write(&t.pvc, Some(ns), name, Some("status"), &ctx, |old| {
        let mut new = old.clone();
        let storage = old.pointer("/spec/resources/requests/storage").cloned().unwrap_or(json!("1Gi"));
        new["status"] = json!({
            "phase": "Bound",
            "accessModes": old.pointer("/spec/accessModes").cloned().unwrap_or(json!(["ReadWriteOnce"])),
            "capacity": {"storage": storage},
        });
        Ok(new)
    });
}

/// StatefulSet: pods `<name>-<ordinal>`, replaced when the template revision changes.
fn reconcile_stateful_set(store: &Store, t: &Types, ns: &str, name: &str) {
    let Ok(sts) = store.get(&t.sts, Some(ns), name) else {
        return;
    };
    let Some(template) = sts.pointer("/spec/template").cloned() else {
        return;
    };
    let revision = format!("{name}-{}", pod_template_hash(&template));
    let replicas = sts
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0) as usize;
    let mut pods = owned_by(store.all(&t.pod), ns, &meta(&sts, "uid"));
    pods.retain(|p| {
        let ordinal = meta(p, "name")
            .rsplit_once('-')
            .and_then(|(_, o)| o.parse::<usize>().ok());
        let current = p
            .pointer("/metadata/labels/controller-revision-hash")
            .and_then(Value::as_str)
            == Some(&revision);
        let keep = ordinal.is_some_and(|o| o < replicas) && current;
        if !keep
            && store
                .delete(&t.pod, Some(ns), &meta(p, "name"), None, false)
                .is_ok()
        {
            let msg = format!(
                "delete Pod {} in StatefulSet {name} successful",
                meta(p, "name")
            );
            record_event(
                store,
                t,
                &sts,
                "statefulset-controller",
                "SuccessfulDelete",
                &msg,
            );
        }
        keep
    });
    for i in 0..replicas {
        let pod_name = format!("{name}-{i}");
        if pods.iter().any(|p| meta(p, "name") == pod_name) {
            continue;
        }
        let mut tpl = template.clone();
        tpl["spec"]["hostname"] = json!(pod_name);
        // One claim per template and ordinal, `<claim>-<pod>`, mounted as a volume of the pod.
        for claim in sts
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let claim_name = claim
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("data");
            let pvc_name = format!("{claim_name}-{pod_name}");
            if store.get(&t.pvc, Some(ns), &pvc_name).is_err() {
                let mut pvc = json!({
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": pvc_name, "namespace": ns,
                        "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({}))},
                    "spec": claim.get("spec").cloned().unwrap_or(json!({})),
                });
                if let Some(l) = claim.pointer("/metadata/labels").and_then(Value::as_object) {
                    for (k, v) in l {
                        pvc["metadata"]["labels"][k] = v.clone();
                    }
                }
                let _ = store.create(&t.pvc, Some(ns), pvc, &WriteCtx::new(MANAGER));
                let msg =
                    format!("create Claim {pvc_name} Pod {pod_name} in StatefulSet {name} success");
                record_event(
                    store,
                    t,
                    &sts,
                    "statefulset-controller",
                    "SuccessfulCreate",
                    &msg,
                );
            }
            let volumes = tpl["spec"]["volumes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !volumes.iter().any(|v| v["name"] == claim_name) {
                let mut volumes = volumes;
                volumes.push(
                    json!({"name": claim_name, "persistentVolumeClaim": {"claimName": pvc_name}}),
                );
                tpl["spec"]["volumes"] = Value::Array(volumes);
            }
        }
        if let Some(svc) = sts
            .pointer("/spec/serviceName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            tpl["spec"]["subdomain"] = json!(svc);
        }
        let labels = [
            ("controller-revision-hash", revision.clone()),
            ("statefulset.kubernetes.io/pod-name", pod_name.clone()),
            ("apps.kubernetes.io/pod-index", i.to_string()),
        ];
        if let Some(p) = create_running_pod(store, t, &sts, &pod_name, None, &tpl, &labels, i) {
            let msg = format!("create Pod {pod_name} in StatefulSet {name} successful");
            record_event(
                store,
                t,
                &sts,
                "statefulset-controller",
                "SuccessfulCreate",
                &msg,
            );
            pods.push(p);
        }
    }
    let ready = pods.iter().filter(|p| is_ready(p)).count();
    let _ = store.write(&t.sts, Some(ns), name, Some("status"), &WriteCtx::new(MANAGER), |old| {
        let mut new = old.clone();
        let mut status = json!({
            "observedGeneration": old.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
            "replicas": pods.len(),
            "readyReplicas": ready,
            "currentReplicas": pods.len(),
            "updatedReplicas": pods.len(),
            "availableReplicas": ready,
            "currentRevision": revision,
            "updateRevision": revision,
            "collisionCount": 0,
        });
        for k in ["readyReplicas", "currentReplicas", "updatedReplicas"] {
            if status[k] == json!(0) {
                status.as_object_mut().map(|s| s.remove(k));
            }
        }
        new["status"] = status;
        Ok(new)
    });
}

/// DaemonSet: one pod on the simulator's single node.
fn reconcile_daemon_set(store: &Store, t: &Types, ns: &str, name: &str) {
    let Ok(ds) = store.get(&t.ds, Some(ns), name) else {
        return;
    };
    let Some(template) = ds.pointer("/spec/template").cloned() else {
        return;
    };
    let hash = pod_template_hash(&template);
    let generation = ds
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut pods = owned_by(store.all(&t.pod), ns, &meta(&ds, "uid"));
    pods.retain(|p| {
        let current = p
            .pointer("/metadata/labels/controller-revision-hash")
            .and_then(Value::as_str)
            == Some(&hash);
        if !current
            && store
                .delete(&t.pod, Some(ns), &meta(p, "name"), None, false)
                .is_ok()
        {
            let msg = format!("Deleted pod: {}", meta(p, "name"));
            record_event(
                store,
                t,
                &ds,
                "daemonset-controller",
                "SuccessfulDelete",
                &msg,
            );
        }
        current
    });
    if pods.is_empty() {
        let pod_name = format!("{name}-{}", random_suffix(5));
        let labels = [
            ("controller-revision-hash", hash.clone()),
            ("pod-template-generation", generation.to_string()),
        ];
        if let Some(p) = create_running_pod(
            store,
            t,
            &ds,
            &pod_name,
            Some(&format!("{name}-")),
            &template,
            &labels,
            0,
        ) {
            let msg = format!("Created pod: {pod_name}");
            record_event(
                store,
                t,
                &ds,
                "daemonset-controller",
                "SuccessfulCreate",
                &msg,
            );
            pods.push(p);
        }
    }
    let ready = pods.iter().filter(|p| is_ready(p)).count();
    let _ = store.write(
        &t.ds,
        Some(ns),
        name,
        Some("status"),
        &WriteCtx::new(MANAGER),
        |old| {
            let mut new = old.clone();
            new["status"] = json!({
                "currentNumberScheduled": 1,
                "desiredNumberScheduled": 1,
                "numberAvailable": ready,
                "numberMisscheduled": 0,
                "numberReady": ready,
                "observedGeneration": generation,
                "updatedNumberScheduled": pods.len(),
            });
            Ok(new)
        },
    );
}

/// Job: runs `completions` pods to success, then marks the Job Complete.
fn reconcile_job(store: &Store, t: &Types, ns: &str, name: &str) {
    let Ok(job) = store.get(&t.job, Some(ns), name) else {
        return;
    };
    let Some(template) = job.pointer("/spec/template").cloned() else {
        return;
    };
    let completions = job
        .pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0) as usize;
    let mut pods = owned_by(store.all(&t.pod), ns, &meta(&job, "uid"));
    let complete = job
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Complete" && c["status"] == "True")
        });
    if complete || job.pointer("/spec/suspend") == Some(&json!(true)) {
        return;
    }
    while pods.len() < completions {
        let pod_name = format!("{name}-{}", random_suffix(5));
        let Some(p) = create_pod(
            store,
            t,
            &job,
            &pod_name,
            Some(&format!("{name}-")),
            &template,
            &[],
            pods.len(),
            true,
        ) else {
            break;
        };
        let msg = format!("Created pod: {pod_name}");
        record_event(store, t, &job, "job-controller", "SuccessfulCreate", &msg);
        pods.push(p);
    }
    let succeeded = pods
        .iter()
        .filter(|p| p.pointer("/status/phase").and_then(Value::as_str) == Some("Succeeded"))
        .count();
    let done = succeeded >= completions;
    let _ = store.write(
        &t.job,
        Some(ns),
        name,
        Some("status"),
        &WriteCtx::new(MANAGER),
        |old| {
            let mut new = old.clone();
            let now = now_rfc3339();
            let start = old
                .pointer("/status/startTime")
                .cloned()
                .unwrap_or(json!(now));
            let mut status = json!({
                "startTime": start,
                "active": completions.saturating_sub(succeeded),
                "succeeded": succeeded,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
            });
            if status["active"] == json!(0) {
                status.as_object_mut().map(|s| s.remove("active"));
            }
            if done {
                status["completionTime"] = json!(now);
                let cond = |ty: &str, reason: &str, msg: &str| {
                    json!({"type": ty, "status": "True",
                "lastProbeTime": now, "lastTransitionTime": now, "reason": reason, "message": msg})
                };
                status["conditions"] = json!([
                    cond(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods"
                    ),
                    cond(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods"
                    ),
                ]);
            }
            new["status"] = status;
            Ok(new)
        },
    );
    if done {
        record_event(
            store,
            t,
            &job,
            "job-controller",
            "Completed",
            "Job completed",
        );
    }
}

/// What the kubelet reports for a pod whose containers all exited 0.
fn completed_status(pod: &Value, index: usize) -> Value {
    let mut status = running_status(pod, index);
    let now = now_rfc3339();
    status["phase"] = json!("Succeeded");
    if let Some(cs) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for c in cs {
            c["ready"] = json!(false);
            c["started"] = json!(false);
            c["state"] = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}});
        }
    }
    if let Some(conds) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conds {
            if c["type"] == "Ready" || c["type"] == "ContainersReady" {
                c["status"] = json!("False");
                c["reason"] = json!("PodCompleted");
            }
        }
    }
    status
}

/// What the kubelet reports for a started pod whose containers all run.
fn running_status(pod: &Value, index: usize) -> Value {
    let now = now_rfc3339();
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            let digest = hex::encode(sha2::Sha256::digest(image.as_bytes()));
            json!({
                "name": c.get("name").cloned().unwrap_or(json!("")),
                "image": image,
                "imageID": format!("{image}@sha256:{digest}"),
                "containerID": format!("containerd://{}", hex::encode(sha2::Sha256::digest(format!("{}{}", meta(pod, "uid"), image).as_bytes()))),
                "ready": true,
                "started": true,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
                "lastState": {},
            })
        })
        .collect();
    let has_resources = containers.iter().any(|c| {
        c.pointer("/resources/requests")
            .is_some_and(|r| r.as_object().is_some_and(|m| !m.is_empty()))
            || c.pointer("/resources/limits")
                .is_some_and(|r| r.as_object().is_some_and(|m| !m.is_empty()))
    });
    let cond = |ty: &str| json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let ip = format!("10.244.0.{}", 10 + index % 240);
    json!({
        "phase": "Running",
        "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
        "hostIP": "10.0.0.10",
        "hostIPs": [{"ip": "10.0.0.10"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "containerStatuses": statuses,
        "qosClass": if has_resources { "Burstable" } else { "BestEffort" },
    })
}

use sha2::Digest;
