//! Strategic-merge keys of built-in list fields (`patchMergeKey` in the Kubernetes API types).
//!
//! Both the simulator's strategic merge patch and the differ's keyed-list comparison need to
//! know which lists Kubernetes merges item by item and by which field. The table mirrors the
//! `patchMergeKey` tags in k8s.io/api (core/v1 PodSpec, Container, ServiceSpec, ObjectMeta).
//! Lists not listed here are atomic: replaced whole, compared position by position.

/// Where the pod spec sits inside an object of `kind`, as field names.
pub fn pod_spec_prefix(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template", "spec"]),
        "PodTemplate" => Some(&["template", "spec"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

const CONTAINER_LISTS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];

/// Merge key of the list at `path` (field names only, list positions left out) in an
/// object of `kind`, or `None` if the list is atomic.
pub fn merge_key(kind: &str, path: &[&str]) -> Option<&'static str> {
    if path == ["metadata", "ownerReferences"] {
        return Some("uid");
    }
    if kind == "Service" && path == ["spec", "ports"] {
        return Some("port");
    }
    // ServiceAccount.secrets: `patchStrategy:"merge" patchMergeKey:"name"`.
    if kind == "ServiceAccount" && path == ["secrets"] {
        return Some("name");
    }
    if let Some(prefix) = pod_spec_prefix(kind) {
        if path.len() > prefix.len() && path[..prefix.len()] == *prefix {
            return pod_spec_merge_key(&path[prefix.len()..]);
        }
    }
    None
}

fn pod_spec_merge_key(rest: &[&str]) -> Option<&'static str> {
    match rest {
        [list] if CONTAINER_LISTS.contains(list) => Some("name"),
        ["volumes"] | ["imagePullSecrets"] | ["resourceClaims"] | ["schedulingGates"] => {
            Some("name")
        }
        ["hostAliases"] => Some("ip"),
        ["topologySpreadConstraints"] => Some("topologyKey"),
        [list, field] if CONTAINER_LISTS.contains(list) => match *field {
            "env" => Some("name"),
            "ports" => Some("containerPort"),
            "volumeMounts" => Some("mountPath"),
            "volumeDevices" => Some("devicePath"),
            "resizePolicy" => Some("resourceName"),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_lists_of_pod_templates_and_services() {
        assert_eq!(
            merge_key("Deployment", &["spec", "template", "spec", "containers"]),
            Some("name")
        );
        assert_eq!(
            merge_key(
                "CronJob",
                &[
                    "spec",
                    "jobTemplate",
                    "spec",
                    "template",
                    "spec",
                    "containers",
                    "env"
                ]
            ),
            Some("name")
        );
        assert_eq!(
            merge_key("Pod", &["spec", "containers", "ports"]),
            Some("containerPort")
        );
        assert_eq!(merge_key("Service", &["spec", "ports"]), Some("port"));
        assert_eq!(
            merge_key("Deployment", &["spec", "template", "spec", "tolerations"]),
            None
        );
        assert_eq!(merge_key("ConfigMap", &["data"]), None);
        assert_eq!(merge_key("ServiceAccount", &["secrets"]), Some("name"));
        assert_eq!(merge_key("ServiceAccount", &["imagePullSecrets"]), None);
    }
}
