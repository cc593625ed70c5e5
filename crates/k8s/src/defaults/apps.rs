//! apps/v1 (`pkg/apis/apps/v1/defaults.go`): Deployment, ReplicaSet, StatefulSet, DaemonSet.

use serde_json::{json, Map, Value};

use super::core::{pvc_spec, template_of};
use super::fields::{child, default_ptr, default_str, for_each_item, map};

/// The object's `spec`, created if missing (a non-pointer struct).
pub(super) fn spec_of(object: &mut Value) -> Option<&mut Map<String, Value>> {
    map(child(map(object)?, "spec"))
}

pub(super) fn deployment(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    default_ptr(spec, "replicas", json!(1));
    if let Some(strategy) = map(child(spec, "strategy")) {
        default_str(strategy, "type", "RollingUpdate");
        if strategy["type"] == "RollingUpdate" {
            if let Some(ru) = map(child(strategy, "rollingUpdate")) {
                default_ptr(ru, "maxUnavailable", json!("25%"));
                default_ptr(ru, "maxSurge", json!("25%"));
            }
        }
    }
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    default_ptr(spec, "progressDeadlineSeconds", json!(600));
    template_of(spec);
}

pub(super) fn replica_set(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    default_ptr(spec, "replicas", json!(1));
    template_of(spec);
}

pub(super) fn stateful_set(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = map(child(spec, "updateStrategy")) {
        if us.get("type").is_none_or(|t| t.is_null() || t == "") {
            us.insert("type".into(), json!("RollingUpdate"));
            default_ptr(us, "rollingUpdate", json!({}));
        }
        if us["type"] == "RollingUpdate" {
            if let Some(ru) = us.get_mut("rollingUpdate").and_then(map) {
                default_ptr(ru, "partition", json!(0));
                // maxUnavailable: only with the alpha MaxUnavailableStatefulSet gate.
            }
        }
    }
    // StatefulSetAutoDeletePVC is GA (on) in v1.32.
    if let Some(p) = map(child(spec, "persistentVolumeClaimRetentionPolicy")) {
        default_str(p, "whenDeleted", "Retain");
        default_str(p, "whenScaled", "Retain");
    }
    default_ptr(spec, "replicas", json!(1));
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    for_each_item(spec.get_mut("volumeClaimTemplates"), |pvc_tpl| {
        let Some(t) = map(pvc_tpl) else { return };
        // Embedded PVCs are full objects: TypeMeta, ObjectMeta and the PVC's own defaults
        // (its status phase included) are part of the template.
        default_str(t, "apiVersion", "v1");
        default_str(t, "kind", "PersistentVolumeClaim");
        child(t, "metadata");
        if let Some(s) = map(child(t, "spec")) {
            pvc_spec(s);
        }
        if let Some(status) = map(child(t, "status")) {
            default_str(status, "phase", "Pending");
        }
    });
    template_of(spec);
}

pub(super) fn daemon_set(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    if let Some(us) = map(child(spec, "updateStrategy")) {
        default_str(us, "type", "RollingUpdate");
        if us["type"] == "RollingUpdate" {
            if let Some(ru) = map(child(us, "rollingUpdate")) {
                default_ptr(ru, "maxUnavailable", json!(1));
                default_ptr(ru, "maxSurge", json!(0));
            }
        }
    }
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    template_of(spec);
}
