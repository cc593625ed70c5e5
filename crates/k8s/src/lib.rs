//! Kubernetes knowledge shared by the simulator, the manifest loader and the differ:
//! resource types, object identity, quantities, strategic-merge keys, kube-apiserver's
//! defaults for declared fields, and when a live object's rollout is complete (`rollout`).

pub mod admission;
pub mod api_types;
pub mod consumption;
pub mod convert;
pub mod crd;
pub mod defaults;
pub mod field_labels;
pub mod kinds;
pub mod merge_keys;
pub mod object_ref;
pub mod quantity;
pub mod rollout;
pub mod secret;
pub mod selector;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod validation;

#[cfg(test)]
mod fuzz_tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Identity of an object across API versions: group, kind, namespace and name.
///
/// The version is left out on purpose: `apps/v1` and `apps/v1beta2` Deployments are the
/// same object to kube-apiserver.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    /// Builds the key of a JSON object from its apiVersion, kind and metadata, if present.
    pub fn of(object: &Value) -> Option<ObjectKey> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let metadata = object.get("metadata")?;
        let name = metadata.get("name")?.as_str()?;
        let namespace = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .map(str::to_string);
        Some(ObjectKey {
            group: kinds::split_api_version(api_version).0.to_string(),
            kind: kind.to_string(),
            namespace,
            name: name.to_string(),
        })
    }
}

/// Kinds whose `spec.replicas` a HorizontalPodAutoscaler may own (those with a `scale`
/// subresource among the built-ins the HPA controller scales).
pub const SCALABLE_KINDS: &[&str] = &[
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "ReplicationController",
];

/// The object whose `spec.replicas` a HorizontalPodAutoscaler (any version) owns: its
/// `spec.scaleTargetRef` (apiVersion, kind, name) in the HPA's own namespace, since an HPA
/// can only scale objects in its namespace. `None` when the reference is incomplete; the HPA
/// controller cannot resolve it either (`podautoscaler/horizontal.go` parses the apiVersion
/// into the group it maps). An HPA without a namespace is taken to be in `default`, as
/// kubectl would create it.
pub fn hpa_scale_target(hpa: &Value) -> Option<ObjectKey> {
    let target = hpa.pointer("/spec/scaleTargetRef")?;
    let api_version = target
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let namespace = hpa
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default");
    Some(ObjectKey {
        group: kinds::split_api_version(api_version).0.to_string(),
        kind: target.get("kind")?.as_str()?.to_string(),
        namespace: Some(namespace.to_string()),
        name: target.get("name")?.as_str()?.to_string(),
    })
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gk = if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        };
        match &self.namespace {
            Some(ns) => write!(f, "{gk} {ns}/{}", self.name),
            None => write!(f, "{gk} {}", self.name),
        }
    }
}

/// A kind as desired objects spell it: apiVersion and kind. One watcher per `TypeKey`; the
/// version is kept (unlike [`ObjectKey`]) because it decides which resource is listed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TypeKey {
    pub api_version: String,
    pub kind: String,
}

impl TypeKey {
    /// The group part of the apiVersion (`""` for the core group).
    pub fn group(&self) -> &str {
        kinds::split_api_version(&self.api_version).0
    }

    /// Whether `key` is an object of this kind (any version of the group).
    pub fn is_kind_of(&self, key: &ObjectKey) -> bool {
        self.kind == key.kind && self.group() == key.group
    }
}

impl std::fmt::Display for TypeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hpa_scale_target_is_in_the_hpa_namespace_with_the_referenced_group() {
        let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}});
        let target = hpa_scale_target(&hpa).unwrap();
        assert_eq!(target.to_string(), "Deployment.apps shop/web");
        let mut no_ns = hpa.clone();
        no_ns["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        assert_eq!(
            hpa_scale_target(&no_ns).unwrap().namespace.as_deref(),
            Some("default")
        );
        let mut no_name = hpa;
        no_name["spec"]["scaleTargetRef"]
            .as_object_mut()
            .unwrap()
            .remove("name");
        assert_eq!(hpa_scale_target(&no_name), None);
    }
}
