//! The deployment and replicaset controllers: one ReplicaSet per pod template, scaled to
//! the Deployment's replicas (old ones to zero), its Pods created Running, and status and
//! revision annotations written as kube-controller-manager writes them.

use super::pods::create_running_pod;
use super::{is_ready, meta, owned, owner_ref, record_event, Types, MANAGER};
use crate::store::{now_rfc3339, random_suffix, Store, WriteCtx};
use serde_json::{json, Value};

const REVISION: &str = "deployment.kubernetes.io/revision";

/// `pod-template-hash`: FNV-32a of the template, rendered with the same alphabet as
/// `rand.SafeEncodeString` (the real hash input is Go's deep-print of the struct, so the
/// values differ from a real cluster's, but the shape is the same).
pub(super) fn pod_template_hash(template: &Value) -> String {
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

fn revision(obj: &Value) -> i64 {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
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

pub(super) fn reconcile(store: &Store, t: &Types, ns: &str, name: &str) {
    let ctx = WriteCtx::controller(MANAGER);
    let Ok(d) = store.get(&t.deploy, Some(ns), name) else {
        return;
    };
    let Some(template) = d.pointer("/spec/template").cloned() else {
        return;
    };
    let hash = pod_template_hash(&template);
    let rs_name = format!("{name}-{hash}");
    let replicas = d
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let owned = owned(store, &t.rs, ns, &d);
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
    let ctx = WriteCtx::controller(MANAGER);
    let want = rs
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let mut pods = owned(store, &t.pod, ns, rs);
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
