//! The corpus's `metadata.managedFields` against the field manager model both kube-apiserver
//! and the simulator follow (`staging/src/k8s.io/apimachinery/pkg/util/managedfields`,
//! `crates/sim/src/fields.rs`): an Update owns what it added or changed, taking it from
//! every other manager; removed fields are owned by nobody; a create is recorded on the
//! object *after defaulting* but *before* admission plugins, registry strategies and
//! allocations run (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go` calls
//! the field manager before `Admit` and `r.Create`). The differ's `manager`/`changed_at`
//! come from these entries, so a hand-built entry that breaks the model would make the
//! corpus assert an attribution no cluster produces.

use super::{live_items, load_cases};
use driftd_sim::fields;
use serde_json::Value;
use std::collections::BTreeSet;

type Path = Vec<String>;

/// Live fields nobody's Update owns, because they are written after the field manager ran
/// (FieldsV1 paths; `*` matches one element). Each names the kube source that writes it.
const WRITTEN_AFTER_THE_FIELD_MANAGER: &[(&str, &[&str])] = &[
    // pkg/registry/core/service/storage/alloc.go: allocated on create.
    ("Service", &["f:spec", "f:clusterIP"]),
    ("Service", &["f:spec", "f:clusterIPs"]),
    ("Service", &["f:spec", "f:ipFamilies"]),
    ("Service", &["f:spec", "f:ipFamilyPolicy"]),
    ("Service", &["f:spec", "f:healthCheckNodePort"]),
    ("Service", &["f:spec", "f:ports", "*", "f:nodePort"]),
    // pkg/registry/batch/job/strategy.go (generateSelector), in PrepareForCreate.
    ("Job", &["f:spec", "f:selector"]),
    ("Job", &["f:metadata", "f:labels"]),
    ("Job", &["f:spec", "f:template", "f:metadata", "f:labels"]),
    // pkg/registry/core/namespace/strategy.go (PrepareForCreate).
    ("Namespace", &["f:spec", "f:finalizers"]),
    // plugin/pkg/admission/storage/storageclass/setdefault (DefaultStorageClass) and
    // plugin/pkg/admission/storage/storageobjectinuseprotection (pvc-protection finalizer).
    ("PersistentVolumeClaim", &["f:spec", "f:storageClassName"]),
    ("PersistentVolumeClaim", &["f:metadata", "f:finalizers"]),
    // Pod admission (plugin/pkg/admission/serviceaccount, priority): the service account,
    // its token volume and the mounts of it, the priority; the scheduler's binding
    // (pods/binding) sets nodeName.
    ("Pod", &["f:spec", "f:serviceAccountName"]),
    ("Pod", &["f:spec", "f:serviceAccount"]),
    ("Pod", &["f:spec", "f:priority"]),
    ("Pod", &["f:spec", "f:preemptionPolicy"]),
    ("Pod", &["f:spec", "f:nodeName"]),
    (
        "Pod",
        &["f:spec", "f:volumes", "k:{\"name\":\"kube-api-access-*"],
    ),
    (
        "Pod",
        &["f:spec", "f:containers", "*", "f:volumeMounts", TOKEN_MOUNT],
    ),
    (
        "Pod",
        &[
            "f:spec",
            "f:initContainers",
            "*",
            "f:volumeMounts",
            TOKEN_MOUNT,
        ],
    ),
];

/// The ServiceAccount plugin's mount of the token volume, as a FieldsV1 key.
const TOKEN_MOUNT: &str = "k:{\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}";

/// Whether FieldsV1 element `e` matches pattern element `p`: equal, `*` for any element, or
/// a pattern ending in `*` for elements with that prefix.
fn element_matches(p: &str, e: &str) -> bool {
    p == "*" || p == e || p.strip_suffix('*').is_some_and(|pre| e.starts_with(pre))
}

fn exempt(kind: &str, path: &[String]) -> bool {
    WRITTEN_AFTER_THE_FIELD_MANAGER.iter().any(|(k, prefix)| {
        *k == kind
            && path.len() >= prefix.len()
            && prefix.iter().zip(path).all(|(p, e)| element_matches(p, e))
    })
}

/// Every field of `live` an Update could own: the set the field manager records for a
/// create of the whole object (status and server metadata left out), without `null`s, which
/// structured-merge-diff does not track.
fn ownable(kind: &str, live: &Value) -> BTreeSet<Path> {
    let mut copy = live.clone();
    copy["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    fields::record(
        kind,
        None,
        &mut copy,
        &fields::Write {
            manager: "everything",
            subresource: None,
            api_version: "v1",
            time: "",
        },
    );
    let all = fields::owners(&copy).pop().map(|o| o.fields);
    all.unwrap_or_default()
        .into_iter()
        .filter(|p| fields::value_at(live, p).is_some_and(|v| !v.is_null()))
        .collect()
}

/// The ways `live`'s managedFields break the model.
/// `extra`: FieldsV1 path prefixes the case says a mutating webhook wrote (after the field
/// manager ran, so nobody owns them).
fn problems(live: &Value, extra: &[Vec<String>]) -> Vec<String> {
    let kind = live["kind"].as_str().unwrap_or("");
    let owners = fields::owners(live);
    let mut out = Vec::new();
    match owners.first() {
        Some(o) if o.manager == "kubectl-client-side-apply" && o.operation == "Update" => {
            let entry = &live["metadata"]["managedFields"][0];
            if entry["time"] != live["metadata"]["creationTimestamp"] {
                out.push("the creating entry is not at creationTimestamp".to_string());
            }
        }
        _ => out.push("the first entry is not kubectl's create".to_string()),
    }
    let mut owned: BTreeSet<Path> = BTreeSet::new();
    for (i, o) in owners.iter().enumerate() {
        let who = format!("{} ({})", o.manager, o.subresource);
        for p in &o.fields {
            let status = p.first().is_some_and(|e| e == "f:status");
            if status != (o.subresource == "status") {
                out.push(format!("{who} owns {}", fields::describe(p)));
            }
            if fields::value_at(live, p).is_none() {
                out.push(format!("{who} owns {}, absent live", fields::describe(p)));
            }
        }
        // An Update takes what it wrote from every earlier manager: no field is owned twice.
        if o.operation == "Update" {
            for later in owners[i + 1..].iter().filter(|l| l.operation == "Update") {
                for p in o.fields.intersection(&later.fields) {
                    out.push(format!(
                        "{} owned by both {} and {}",
                        fields::describe(p),
                        o.manager,
                        later.manager
                    ));
                }
            }
        }
        owned.extend(o.fields.iter().cloned());
    }
    for p in ownable(kind, live) {
        let webhook = extra.iter().any(|e| p.starts_with(e));
        if !owned.contains(&p) && !exempt(kind, &p) && !webhook {
            out.push(format!("nobody owns {}", fields::describe(&p)));
        }
    }
    out
}

#[test]
fn live_managed_fields_follow_the_field_manager_model() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in load_cases() {
        for live in live_items(&case.live) {
            checked += 1;
            let extra: Vec<Vec<String>> = case.expected["written_after_the_field_manager"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| serde_json::from_value(p.clone()).expect("FieldsV1 paths"))
                .collect();
            for p in problems(live, &extra) {
                failures.push(format!("{} ({}): {p}", case.name, live["kind"]));
            }
        }
    }
    assert!(checked >= 90, "only {checked} live objects");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
