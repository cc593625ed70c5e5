//! The statefulset controller: pods `<name>-<ordinal>` with claims from
//! volumeClaimTemplates, replaced when the template revision changes.

use super::deployment::pod_template_hash;
use super::pods::create_running_pod;
use super::{is_ready, meta, owned, record_event, Types, MANAGER};
use crate::store::{Store, WriteCtx};
use serde_json::{json, Value};

/// StatefulSet: pods `<name>-<ordinal>`, replaced when the template revision changes.
pub(super) fn reconcile(store: &Store, t: &Types, ns: &str, name: &str) {
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
    let mut pods = owned(store, &t.pod, ns, &sts);
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
                let _ = store.create(&t.pvc, Some(ns), pvc, &WriteCtx::controller(MANAGER));
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
    let _ = store.write(&t.sts, Some(ns), name, Some("status"), &WriteCtx::controller(MANAGER), |old| {
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
