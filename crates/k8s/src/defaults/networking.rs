//! networking.k8s.io/v1 (`pkg/apis/networking/v1/defaults.go`): NetworkPolicy and
//! IngressClass. (Ingress has no defaults in v1: `pathType` is required.)

use serde_json::{json, Value};

use super::apps::spec_of;
use super::fields::{default_ptr, default_str, for_each_item, map};

pub(super) fn network_policy(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    for dir in ["ingress", "egress"] {
        for_each_item(spec.get_mut(dir), |rule| {
            for_each_item(rule.get_mut("ports"), |p| {
                if let Some(p) = map(p) {
                    default_str(p, "protocol", "TCP");
                }
            });
        });
    }
    let empty_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// SetDefaults_IngressClass: parameters that name no scope are cluster-scoped.
pub(super) fn ingress_class(object: &mut Value) {
    if let Some(p) = object.pointer_mut("/spec/parameters").and_then(map) {
        default_ptr(p, "scope", json!("Cluster"));
    }
}
