//! The built-in resource types driftd and the simulator know without asking discovery.
//!
//! Mirrors what kube-apiserver serves in its discovery documents for these kinds (group,
//! version, plural, scope, short names, categories), so the simulator's discovery and the
//! manifest loader's namespace defaulting agree with a real cluster.

use std::sync::LazyLock;

use serde_json::Value;

/// One servable resource type (a built-in, or a version a CustomResourceDefinition lists),
/// as a discovery document describes it. The simulator serves these, the manifest loader
/// takes scopes from them; both read CRDs with [`CustomResourceTypes::read`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    /// Discovery categories; kubectl's `get all` expands the `all` category.
    pub categories: Vec<String>,
    /// Subresources served besides the main resource (e.g. `status`, `scale`).
    pub subresources: Vec<String>,
    /// Defined by a CustomResourceDefinition rather than built into kube-apiserver.
    pub custom: bool,
    /// Whether the version is served (a CRD may list versions it no longer serves).
    pub served: bool,
    /// Whether objects are stored in this version (one version of a CRD).
    pub storage: bool,
}

impl ResourceType {
    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the subresource `sub` (`status`, `scale`) is served.
    pub fn has(&self, sub: &str) -> bool {
        self.subresources.iter().any(|s| s == sub)
    }
}

/// A built-in table row: group, version, kind, plural, namespaced, short names,
/// categories, subresources. The singular is the lower-cased kind, as for every built-in.
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

fn builtin_type(row: &Row) -> ResourceType {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let (group, version, kind, plural, namespaced, short, categories, subresources) = *row;
    ResourceType {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: strings(short),
        categories: strings(categories),
        subresources: strings(subresources),
        custom: false,
        served: true,
        storage: true,
    }
}

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];
const STATUS: &[&str] = &["status"];
const SCALE: &[&str] = &["status", "scale"];

/// Built-in types served by the simulator and known to the manifest loader.
pub static BUILTIN: LazyLock<Vec<ResourceType>> =
    LazyLock::new(|| BUILTIN_ROWS.iter().map(builtin_type).collect());

const BUILTIN_ROWS: &[Row] = &[
    (
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        NONE,
        STATUS,
    ),
    (
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        &["cm"],
        NONE,
        NONE,
    ),
    ("", "v1", "Secret", "secrets", true, NONE, NONE, NONE),
    ("", "v1", "Service", "services", true, &["svc"], ALL, STATUS),
    (
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        &["sa"],
        NONE,
        NONE,
    ),
    ("", "v1", "Pod", "pods", true, &["po"], ALL, STATUS),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
        NONE,
        STATUS,
    ),
    ("", "v1", "Event", "events", true, &["ev"], NONE, NONE),
    (
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
        ALL,
        SCALE,
    ),
    (
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        &["rs"],
        ALL,
        SCALE,
    ),
    (
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        &["sts"],
        ALL,
        SCALE,
    ),
    (
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
        ALL,
        STATUS,
    ),
    ("batch", "v1", "Job", "jobs", true, NONE, ALL, STATUS),
    (
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        &["cj"],
        ALL,
        STATUS,
    ),
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        &["ing"],
        NONE,
        STATUS,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        NONE,
        NONE,
        NONE,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        NONE,
        NONE,
        NONE,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        NONE,
        NONE,
        NONE,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        NONE,
        NONE,
        NONE,
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        &["hpa"],
        ALL,
        STATUS,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
        NONE,
        STATUS,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        NONE,
        NONE,
        NONE,
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        &["ev"],
        NONE,
        NONE,
    ),
];

/// What a CustomResourceDefinition declares: the kind, its scope, and one resource type per
/// version it lists (served or not). One reading of a CRD for the simulator, which serves
/// the served versions, and the manifest loader, which needs only the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomResourceTypes {
    pub group: String,
    pub kind: String,
    /// `spec.scope` is required; `Cluster` is the only cluster-scoped value.
    pub namespaced: bool,
    /// One per `spec.versions` entry, in order.
    pub versions: Vec<ResourceType>,
}

impl CustomResourceTypes {
    /// Reads the CustomResourceDefinition `crd`; `None` without `spec.group` or
    /// `spec.names.kind`, which every other name derives from.
    pub fn read(crd: &Value) -> Option<CustomResourceTypes> {
        let spec = crd.get("spec")?;
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let texts = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let group = spec.get("group")?.as_str()?.to_string();
        let names = &spec["names"];
        let kind = names.get("kind")?.as_str()?.to_string();
        let singular = match names["singular"].as_str() {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => kind.to_lowercase(),
        };
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        let versions = spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| ResourceType {
                group: group.clone(),
                version: text(&v["name"]),
                kind: kind.clone(),
                plural: text(&names["plural"]),
                singular: singular.clone(),
                namespaced,
                short_names: texts(&names["shortNames"]),
                categories: texts(&names["categories"]),
                subresources: ["status", "scale"]
                    .into_iter()
                    .filter(|s| v.pointer(&format!("/subresources/{s}")).is_some())
                    .map(str::to_string)
                    .collect(),
                custom: true,
                served: v["served"].as_bool().unwrap_or(true),
                storage: v["storage"].as_bool().unwrap_or(false),
            })
            .collect();
        Some(CustomResourceTypes {
            group,
            kind,
            namespaced,
            versions,
        })
    }

    /// The versions served, as the resource types a server offers.
    pub fn served(&self) -> impl Iterator<Item = &ResourceType> {
        self.versions.iter().filter(|v| v.served)
    }
}

/// Splits an apiVersion into (group, version); the core group is "".
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Looks up a built-in type by apiVersion and kind.
pub fn builtin(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    let (group, version) = split_api_version(api_version);
    BUILTIN
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

/// Whether a built-in group/kind is namespaced, whatever the version; `None` if unknown
/// (a custom resource whose scope only its CRD can tell).
pub fn builtin_namespaced(group: &str, kind: &str) -> Option<bool> {
    BUILTIN
        .iter()
        .find(|r| r.group == group && r.kind == kind)
        .map(|r| r.namespaced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_reads_into_one_type_per_version() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "example.com", "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"],
                          "categories": ["all"]},
                "versions": [
                    {"name": "v1beta1", "served": false, "storage": false},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas"}}}]}});
        let t = CustomResourceTypes::read(&crd).unwrap();
        assert_eq!(
            (t.group.as_str(), t.kind.as_str(), t.namespaced),
            ("example.com", "Widget", false)
        );
        let served: Vec<&ResourceType> = t.served().collect();
        assert_eq!(served.len(), 1);
        let v1 = served[0];
        assert_eq!(v1.api_version(), "example.com/v1");
        assert_eq!(v1.singular, "widget");
        assert_eq!(v1.short_names, ["wd"]);
        assert_eq!(v1.categories, ["all"]);
        assert!(v1.has("status") && v1.has("scale") && v1.custom && v1.storage);
        assert!(!t.versions[0].served && !t.versions[0].storage && !t.versions[0].has("status"));

        // Scope comes from the CRD even when it lists no versions; group and kind are needed.
        let bare = json!({"spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Gadget"}}});
        let t = CustomResourceTypes::read(&bare).unwrap();
        assert!(t.namespaced && t.versions.is_empty());
        assert_eq!(
            CustomResourceTypes::read(&json!({"spec": {"names": {"kind": "X"}}})),
            None
        );
    }

    #[test]
    fn core_and_grouped_versions_split() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(
            builtin("apps/v1", "Deployment").unwrap().plural,
            "deployments"
        );
        assert_eq!(builtin_namespaced("", "Namespace"), Some(false));
        assert_eq!(builtin_namespaced("example.com", "Widget"), None);
    }
}
