//! Strategic-merge keys of built-in list fields (`patchMergeKey` in the Kubernetes API types,
//! `x-kubernetes-patch-merge-key` in the OpenAPI spec).
//!
//! Both the simulator's strategic merge patch and the differ's keyed-list comparison need to
//! know which lists Kubernetes merges item by item and by which field. The table is kept by
//! hand in the shape of the API types (what a pod spec, a container, an ObjectMeta holds;
//! where each kind holds them) and checked against every keyed list the spec gives the
//! kinds below (`testdata/patch_merge_keys.tsv`, extracted by the script beside it).
//! Lists not listed here are atomic: replaced whole, compared position by position. Two
//! kinds of `patchStrategy` without a key are not modelled: `metadata.finalizers` (merged as
//! a set of strings) and `retainKeys` on a struct (a Deployment's `strategy`). Lists inside a
//! CRD's schema are keyed only at the top of `openAPIV3Schema`: the recursion through
//! `properties` has field names the table cannot know.

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

/// Keyed lists of a container (Container and EphemeralContainerCommon alike).
const CONTAINER: &[(&str, &str)] = &[
    ("env", "name"),
    ("ports", "containerPort"),
    ("volumeMounts", "mountPath"),
    ("volumeDevices", "devicePath"),
];

/// Keyed lists of a PodSpec besides its containers' lists, relative to it.
const POD_SPEC: &[(&[&str], &str)] = &[
    (&["containers"], "name"),
    (&["initContainers"], "name"),
    (&["ephemeralContainers"], "name"),
    (&["volumes"], "name"),
    (&["imagePullSecrets"], "name"),
    (&["resourceClaims"], "name"),
    (&["schedulingGates"], "name"),
    (&["evictionResponders"], "name"),
    (&["hostAliases"], "ip"),
    (&["topologySpreadConstraints"], "topologyKey"),
    (
        &[
            "volumes",
            "ephemeral",
            "volumeClaimTemplate",
            "metadata",
            "ownerReferences",
        ],
        "uid",
    ),
];

/// Keyed lists at fixed places of a kind, besides its pod spec and its ObjectMetas.
const KIND: &[(&str, &[&str], &str)] = &[
    ("Service", &["spec", "ports"], "port"),
    ("ServiceAccount", &["secrets"], "name"),
    ("Job", &["spec", "scheduling", "resourceClaims"], "name"),
    (
        "CronJob",
        &[
            "spec",
            "jobTemplate",
            "spec",
            "scheduling",
            "resourceClaims",
        ],
        "name",
    ),
    (
        "CustomResourceDefinition",
        &[
            "spec",
            "versions",
            "schema",
            "openAPIV3Schema",
            "x-kubernetes-validations",
        ],
        "rule",
    ),
    ("Namespace", &["status", "conditions"], "type"),
    ("Service", &["status", "conditions"], "type"),
    ("ReplicationController", &["status", "conditions"], "type"),
    ("PersistentVolumeClaim", &["status", "conditions"], "type"),
    (
        "PersistentVolumeClaim",
        &["status", "healthStatus", "healthConditions"],
        "status",
    ),
    (
        "StatefulSet",
        &["spec", "volumeClaimTemplates", "status", "conditions"],
        "type",
    ),
    (
        "StatefulSet",
        &[
            "spec",
            "volumeClaimTemplates",
            "status",
            "healthStatus",
            "healthConditions",
        ],
        "status",
    ),
    ("Deployment", &["status", "conditions"], "type"),
    ("ReplicaSet", &["status", "conditions"], "type"),
    ("StatefulSet", &["status", "conditions"], "type"),
    ("DaemonSet", &["status", "conditions"], "type"),
    ("Job", &["status", "conditions"], "type"),
    ("HorizontalPodAutoscaler", &["status", "conditions"], "type"),
    ("Pod", &["status", "conditions"], "type"),
    ("Pod", &["status", "hostIPs"], "ip"),
    ("Pod", &["status", "podIPs"], "ip"),
    ("Pod", &["status", "resourceClaimStatuses"], "name"),
    (
        "Pod",
        &["status", "nodeAllocatableResourceClaimStatuses"],
        "resourceClaimName",
    ),
    (
        "Pod",
        &["status", "nodeAllocatableResourceClaimStatuses", "mapping"],
        "name",
    ),
    (
        "Pod",
        &["status", "nodeAllocatableResourceClaimStatuses", "overhead"],
        "name",
    ),
    (
        "Pod",
        &["status", "volumeHealth", "healthConditions"],
        "status",
    ),
];

/// Keyed lists of each container status (containerStatuses, initContainerStatuses,
/// ephemeralContainerStatuses of a Pod).
const CONTAINER_STATUS: &[(&str, &str)] = &[
    ("volumeMounts", "mountPath"),
    ("allocatedResourcesStatus", "name"),
];
const CONTAINER_STATUS_LISTS: &[&str] = &[
    "containerStatuses",
    "initContainerStatuses",
    "ephemeralContainerStatuses",
];

/// Where an object of `kind` holds an ObjectMeta besides its own `metadata` (whose
/// `ownerReferences` are keyed by `uid`): pod templates, job templates, claim templates.
fn embedded_object_meta(kind: &str) -> Vec<&'static [&'static str]> {
    let mut places: Vec<&'static [&'static str]> = Vec::new();
    if let Some(prefix) = pod_spec_prefix(kind) {
        if prefix.len() > 1 {
            places.push(&prefix[..prefix.len() - 1]);
        }
    }
    match kind {
        "CronJob" => places.push(&["spec", "jobTemplate"]),
        "StatefulSet" => places.push(&["spec", "volumeClaimTemplates"]),
        _ => {}
    }
    places
}

/// Merge key of the list at `path` (field names only, list positions left out) in an
/// object of `kind`, or `None` if the list is atomic.
pub fn merge_key(kind: &str, path: &[&str]) -> Option<&'static str> {
    if let Some((last2, meta)) = path.split_last_chunk::<2>().map(|(p, l)| (l, p)) {
        if *last2 == ["metadata", "ownerReferences"]
            && (meta.is_empty() || embedded_object_meta(kind).contains(&meta))
        {
            return Some("uid");
        }
    }
    if let Some((_, _, key)) = KIND.iter().find(|(k, p, _)| *k == kind && *p == path) {
        return Some(key);
    }
    if let Some(prefix) = pod_spec_prefix(kind) {
        if let Some(rest) = path.strip_prefix(prefix) {
            return pod_spec_merge_key(rest);
        }
    }
    if kind == "Pod" {
        if let ["status", list, field] = path {
            if CONTAINER_STATUS_LISTS.contains(list) {
                return lookup(CONTAINER_STATUS, field);
            }
        }
    }
    None
}

fn lookup(table: &[(&str, &'static str)], field: &str) -> Option<&'static str> {
    table.iter().find(|(f, _)| *f == field).map(|(_, k)| *k)
}

fn pod_spec_merge_key(rest: &[&str]) -> Option<&'static str> {
    if let Some((_, key)) = POD_SPEC.iter().find(|(p, _)| *p == rest) {
        return Some(key);
    }
    match rest {
        [list, field] if CONTAINER_LISTS.contains(list) => lookup(CONTAINER, field),
        _ => None,
    }
}

/// Every keyed list the table knows in an object of `kind`, as (path, key): the
/// enumeration the spec check compares in the other direction.
#[cfg(test)]
fn keyed_lists(kind: &str) -> Vec<(Vec<&'static str>, &'static str)> {
    let mut out: Vec<(Vec<&'static str>, &'static str)> =
        vec![(vec!["metadata", "ownerReferences"], "uid")];
    for meta in embedded_object_meta(kind) {
        let mut p = meta.to_vec();
        p.extend(["metadata", "ownerReferences"]);
        out.push((p, "uid"));
    }
    for (k, p, key) in KIND {
        if *k == kind {
            out.push((p.to_vec(), key));
        }
    }
    if let Some(prefix) = pod_spec_prefix(kind) {
        for (p, key) in POD_SPEC {
            out.push(([prefix, p].concat(), key));
        }
        for list in CONTAINER_LISTS {
            for (field, key) in CONTAINER {
                out.push(([prefix, &[*list, *field]].concat(), key));
            }
        }
    }
    if kind == "Pod" {
        for list in CONTAINER_STATUS_LISTS {
            for (field, key) in CONTAINER_STATUS {
                out.push((vec!["status", list, field], key));
            }
        }
    }
    out
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
        assert_eq!(
            merge_key(
                "Deployment",
                &["spec", "template", "metadata", "ownerReferences"]
            ),
            Some("uid")
        );
        assert_eq!(
            merge_key(
                "Widget",
                &["spec", "template", "metadata", "ownerReferences"]
            ),
            None,
            "no embedded ObjectMeta is known in a custom resource"
        );
    }

    /// One row of `testdata/patch_merge_keys.tsv`.
    struct SpecList<'a> {
        kind: &'a str,
        path: Vec<&'a str>,
        definition: &'a str,
        strategy: &'a str,
        key: &'a str,
    }

    fn spec_lists() -> Vec<SpecList<'static>> {
        include_str!("../testdata/patch_merge_keys.tsv")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                assert_eq!(f.len(), 5, "{l}");
                SpecList {
                    kind: f[0],
                    path: f[1].split('.').collect(),
                    definition: f[2],
                    strategy: f[3],
                    key: f[4],
                }
            })
            // The events.k8s.io Event shares the core Event's kind name; neither has lists.
            .filter(|r| r.kind != "Event.events.k8s.io")
            .collect()
    }

    #[test]
    fn every_keyed_list_of_the_openapi_spec_agrees_with_the_table() {
        let mut wrong = Vec::new();
        for row in spec_lists() {
            let got = merge_key(row.kind, &row.path);
            if row.key.is_empty() {
                // Keyless strategies: sets of strings and retainKeys structs (module doc).
                let set = row.path.ends_with(&["metadata", "finalizers"]);
                let retain = row.strategy == "retainKeys";
                assert!(set || retain, "unmodelled strategy: {}", row.definition);
                assert_eq!(got, None, "{} {}", row.kind, row.path.join("."));
            } else if got != Some(row.key) {
                wrong.push(format!(
                    "{} {} ({}): spec says {}, table says {got:?}",
                    row.kind,
                    row.path.join("."),
                    row.definition,
                    row.key
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn every_list_the_table_keys_is_keyed_in_the_openapi_spec() {
        let spec = spec_lists();
        let kinds: std::collections::BTreeSet<&str> = spec.iter().map(|r| r.kind).collect();
        for kind in kinds {
            for (path, key) in keyed_lists(kind) {
                let row = spec.iter().find(|r| r.kind == kind && r.path == path);
                assert_eq!(
                    row.map(|r| r.key),
                    Some(key),
                    "{kind} {}: keyed by {key} in the table only",
                    path.join(".")
                );
            }
        }
    }
}
