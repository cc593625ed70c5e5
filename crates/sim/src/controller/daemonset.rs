//! The daemonset controller: one pod on the simulator's single node, replaced when the
//! template changes.

use super::deployment::pod_template_hash;
use super::pods::create_running_pod;
use super::{is_ready, meta, owned, record_event, Types, MANAGER};
use crate::store::{random_suffix, Store, WriteCtx};
use serde_json::{json, Value};

/// DaemonSet: one pod on the simulator's single node.
pub(super) fn reconcile(store: &Store, t: &Types, ns: &str, name: &str) {
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
    let mut pods = owned(store, &t.pod, ns, &ds);
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
        &WriteCtx::controller(MANAGER),
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
