//! Pods as their controllers create them and the scheduler binds them: on the simulator's
//! one node, with the scheduler's Event; the kubelet ([`super::kubelet`]) then starts them.

use super::{kubelet, meta, owner_ref, record_event, Types, MANAGER};
use crate::store::{Store, WriteCtx};
use serde_json::{json, Value};

/// Creates a pod from `template` owned by `owner` (its controller), which the kubelet
/// starts (Running once every container runs).
#[allow(clippy::too_many_arguments)]
pub(super) fn create_running_pod(
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

/// Like [`create_running_pod`]; `completes` has its containers exit 0 once started, the
/// pod Succeeded (Job pods).
#[allow(clippy::too_many_arguments)]
pub(super) fn create_pod(
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
        .create(&t.pod, Some(&ns), pod, &WriteCtx::controller(MANAGER))
        .ok()?;
    // What `kubectl describe pod` shows from the scheduler; the kubelet's own follow.
    let msg = format!("Successfully assigned {ns}/{name} to driftd-sim-node");
    record_event(store, t, &created, "default-scheduler", "Scheduled", &msg);
    Some(kubelet::admit(store, t, &created, index, completes))
}
