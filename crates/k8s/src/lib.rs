//! Kubernetes knowledge shared by the simulator, the manifest loader and the differ:
//! resource types, object identity, quantities and strategic-merge keys.

pub mod defaults;
pub mod kinds;
pub mod merge_keys;
pub mod quantity;

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
