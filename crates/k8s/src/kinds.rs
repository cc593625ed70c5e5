//! The built-in resource types driftd and the simulator know without asking discovery.
//!
//! Mirrors what kube-apiserver serves in its discovery documents for these kinds (group,
//! version, plural, scope, short names, categories), so the simulator's discovery and the
//! manifest loader's namespace defaulting agree with a real cluster.

/// One servable resource type, as a discovery document describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Discovery categories; kubectl's `get all` expands the `all` category.
    pub categories: &'static [&'static str],
    /// Subresources served besides the main resource (e.g. `status`, `scale`).
    pub subresources: &'static [&'static str],
}

impl ResourceType {
    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

#[allow(clippy::too_many_arguments)] // a table row builder: positional on purpose
const fn rt(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [&'static str],
) -> ResourceType {
    ResourceType {
        group,
        version,
        kind,
        plural,
        namespaced,
        short_names,
        categories,
        subresources,
    }
}

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];
const STATUS: &[&str] = &["status"];
const SCALE: &[&str] = &["status", "scale"];

/// Built-in types served by the simulator and known to the manifest loader.
pub static BUILTIN: &[ResourceType] = &[
    rt(
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        NONE,
        STATUS,
    ),
    rt(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        &["cm"],
        NONE,
        NONE,
    ),
    rt("", "v1", "Secret", "secrets", true, NONE, NONE, NONE),
    rt("", "v1", "Service", "services", true, &["svc"], ALL, STATUS),
    rt(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        &["sa"],
        NONE,
        NONE,
    ),
    rt("", "v1", "Pod", "pods", true, &["po"], ALL, STATUS),
    rt(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
        NONE,
        STATUS,
    ),
    rt("", "v1", "Event", "events", true, &["ev"], NONE, NONE),
    rt(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
        ALL,
        SCALE,
    ),
    rt(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        &["rs"],
        ALL,
        SCALE,
    ),
    rt(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        &["sts"],
        ALL,
        SCALE,
    ),
    rt(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
        ALL,
        STATUS,
    ),
    rt("batch", "v1", "Job", "jobs", true, NONE, ALL, STATUS),
    rt(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        &["cj"],
        ALL,
        STATUS,
    ),
    rt(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        &["ing"],
        NONE,
        STATUS,
    ),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        NONE,
        NONE,
        NONE,
    ),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        NONE,
        NONE,
        NONE,
    ),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        NONE,
        NONE,
        NONE,
    ),
    rt(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        NONE,
        NONE,
        NONE,
    ),
    rt(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        &["hpa"],
        ALL,
        STATUS,
    ),
    rt(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
        NONE,
        STATUS,
    ),
    rt(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        NONE,
        NONE,
        NONE,
    ),
    rt(
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
