//! Pods as the scheduler and the kubelet leave them: bound to the simulator's one node,
//! with the scheduler's and kubelet's Events, and a Running (or, for Jobs, Succeeded)
//! status written through the status subresource.

use super::{meta, owner_ref, record_event, Types, MANAGER};
use crate::store::{now_rfc3339, Store, WriteCtx};
use serde_json::{json, Value};
use sha2::Digest;

/// Creates a pod from `template` owned by `owner` (its controller) and reports it Running
/// through the status subresource as the kubelet would.
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

/// Like [`create_running_pod`]; `completes` reports the pod Succeeded instead (Job pods).
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
            &WriteCtx::controller("kubelet"),
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
