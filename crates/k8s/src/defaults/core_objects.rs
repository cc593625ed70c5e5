//! core/v1 (`pkg/apis/core/v1/defaults.go`) kinds other than pods and their controllers:
//! Service, Secret, PersistentVolumeClaim, PersistentVolume, Namespace, Endpoints, Node,
//! LimitRange and ResourceQuota.

use serde_json::{json, Map, Value};

use super::core::{in_tree_sources, pvc_spec};
use super::fields::{
    child, declared_status, default_ptr, default_str, for_each_item, map, resource_list,
};

/// SetDefaults_Service. What kube-apiserver allocates on create (clusterIP(s), ipFamilies,
/// ipFamilyPolicy, nodePorts, healthCheckNodePort) is not a default of the manifest.
pub(super) fn service(object: &mut Value) {
    let Some(m) = map(object) else { return };
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    match spec["sessionAffinity"].as_str() {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    default_str(spec, "type", "ClusterIP");
    let svc_type = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
    for_each_item(spec.get_mut("ports"), |p| {
        let Some(p) = map(p) else { return };
        default_str(p, "protocol", "TCP");
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(t) => t.as_i64() == Some(0) || t.as_str() == Some(""),
        };
        if unset {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    });
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    // service.ExternallyAccessible
    let external = svc_type == "LoadBalancer"
        || svc_type == "NodePort"
        || (svc_type == "ClusterIP" && has_external_ips);
    if external {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(svc_type.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        default_ptr(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if svc_type == "LoadBalancer" {
        default_ptr(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    // LoadBalancerIPMode (on by default since v1.30): an ingress IP is a VIP unless said.
    let ingress = declared_status(m)
        .and_then(|s| s.get_mut("loadBalancer"))
        .and_then(|lb| lb.get_mut("ingress"));
    for_each_item(ingress, |i| {
        if let Some(i) = map(i) {
            if i.get("ip")
                .and_then(Value::as_str)
                .is_some_and(|ip| !ip.is_empty())
            {
                default_ptr(i, "ipMode", json!("VIP"));
            }
        }
    });
}

/// SetDefaults_Secret. (`stringData` is folded into `data` by conversion when the server
/// stores the object, see [`crate::secret`]; a manifest keeps it.)
pub(super) fn secret(object: &mut Value) {
    if let Some(m) = map(object) {
        default_str(m, "type", "Opaque");
    }
}

pub(super) fn pvc(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(spec) = map(child(m, "spec")) {
        pvc_spec(spec);
    }
    // SetDefaults_PersistentVolumeClaim, and the ResourceList defaults of the status.
    if let Some(status) = declared_status(m) {
        default_str(status, "phase", "Pending");
        resource_list(status.get_mut("capacity"));
        resource_list(status.get_mut("allocatedResources"));
    }
}

/// SetDefaults_Namespace (the `kubernetes.io/metadata.name` label) and
/// SetDefaults_NamespaceStatus.
pub(super) fn namespace(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(name) = m
        .get("metadata")
        .and_then(|md| md.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
    {
        if let Some(labels) = map(child(m, "metadata")).map(|md| child(md, "labels")) {
            if let Some(labels) = map(labels) {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
    }
    if let Some(status) = declared_status(m) {
        default_str(status, "phase", "Active");
    }
}

/// SetDefaults_PersistentVolume on a PersistentVolume, with the ResourceList defaults of
/// its capacity and the in-tree sources' defaults. The phase sits in `status`, so it is
/// only defaulted on a status the manifest carries.
pub(super) fn persistent_volume(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(spec) = map(child(m, "spec")) {
        default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        default_ptr(spec, "volumeMode", json!("Filesystem"));
        persistent_volume_spec(spec);
    }
    if let Some(status) = declared_status(m) {
        default_str(status, "phase", "Pending");
    }
}

/// What every PersistentVolumeSpec gets, also one inlined in a VolumeAttachment (which
/// gets neither the reclaim policy nor the volume mode: those are SetDefaults_PersistentVolume's,
/// run on the PersistentVolume object only).
pub(super) fn persistent_volume_spec(spec: &mut Map<String, Value>) {
    resource_list(spec.get_mut("capacity"));
    in_tree_sources(spec);
}

/// SetDefaults_Endpoints: a port without protocol is TCP.
pub(super) fn endpoints(object: &mut Value) {
    let Some(m) = map(object) else { return };
    for_each_item(m.get_mut("subsets"), |subset| {
        for_each_item(subset.get_mut("ports"), |p| {
            if let Some(p) = map(p) {
                default_str(p, "protocol", "TCP");
            }
        });
    });
}

/// SetDefaults_NodeStatus (allocatable defaults to capacity) and the ResourceList defaults
/// of both, on a status the manifest carries.
pub(super) fn node(object: &mut Value) {
    let Some(status) = map(object).and_then(declared_status) else {
        return;
    };
    let allocatable_unset = status.get("allocatable").is_none_or(Value::is_null);
    // A nil capacity leaves allocatable nil; an empty one makes an empty allocatable,
    // which the encoder leaves out (`omitempty`), so only a non-empty one shows.
    let capacity = status
        .get("capacity")
        .filter(|c| c.as_object().is_some_and(|c| !c.is_empty()))
        .cloned();
    if let (true, Some(capacity)) = (allocatable_unset, capacity) {
        status.insert("allocatable".into(), capacity);
    }
    resource_list(status.get_mut("capacity"));
    resource_list(status.get_mut("allocatable"));
}

/// SetDefaults_LimitRangeItem on every item, then the ResourceList defaults of its lists.
pub(super) fn limit_range(object: &mut Value) {
    let Some(spec) = map(object).and_then(|m| m.get_mut("spec")).and_then(map) else {
        return;
    };
    for_each_item(spec.get_mut("limits"), |item| {
        let Some(item) = map(item) else { return };
        limit_range_item(item);
        for list in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            resource_list(item.get_mut(list));
        }
    });
}

/// For a `Container` item: the default limit comes from `max`, the default request from
/// the default limit, then from `min`, each only for a resource the target lacks.
fn limit_range_item(item: &mut Map<String, Value>) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let list = |item: &Map<String, Value>, key: &str| -> Map<String, Value> {
        item.get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut default = list(item, "default");
    let mut default_request = list(item, "defaultRequest");
    for (k, v) in list(item, "max") {
        default.entry(k).or_insert(v);
    }
    for (k, v) in default.iter() {
        default_request.entry(k.clone()).or_insert(v.clone());
    }
    for (k, v) in list(item, "min") {
        default_request.entry(k).or_insert(v);
    }
    // Go makes both maps non-nil; an empty one is left out by the encoder (`omitempty`).
    for (key, value) in [("default", default), ("defaultRequest", default_request)] {
        let given = item.get(key).is_some_and(|v| !v.is_null());
        if given || !value.is_empty() {
            item.insert(key.into(), Value::Object(value));
        }
    }
}

/// ResourceQuota has no SetDefaults_ function of its own; defaulter-gen runs
/// SetDefaults_ResourceList on its `hard` and `used` lists.
pub(super) fn resource_quota(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(spec) = m.get_mut("spec").and_then(map) {
        resource_list(spec.get_mut("hard"));
    }
    if let Some(status) = declared_status(m) {
        resource_list(status.get_mut("hard"));
        resource_list(status.get_mut("used"));
    }
}
