//! Claim binding as the PV controller and a dynamic provisioner leave it.

use super::{meta, Types, MANAGER};
use crate::store::{Store, WriteCtx};
use serde_json::{json, Value};

/// Binds a new claim the way the PV controller and a dynamic provisioner leave it: a volume
/// name in the spec, binding annotations, and a Bound status with the requested capacity.
pub(super) fn bind_claim(store: &Store, t: &Types, ns: &str, name: &str) {
    let ctx = WriteCtx::controller(MANAGER);
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
