//! Bare Pods written by other people (`../shared/real-manifests`, and the Kubernetes
//! documentation's examples in `../shared/real-manifests-2/website`; SOURCES.md in each),
//! as a real cluster stores them after the default admission chain, compared with their
//! manifests: they must be in sync.
//!
//! Two kinds of check, kept apart because they prove different things:
//!
//! * **Fidelity** (`admission_adds_what_the_plugins_sources_say_to_real_pods`,
//!   `limit_ranger_gives_the_documentations_pods_what_a_cluster_gave_them`): for a few real
//!   pods, every field the admission chain adds is written out by hand below, each with the
//!   upstream source line it follows or the documentation output it reproduces. driftd's
//!   admission model must add exactly those fields, and the live object made of the
//!   manifest, defaulting and these hand-written fields must be in sync. Defaulting is
//!   driftd's own model here (the simulator's `server_defaults::as_created`, checked
//!   against kube's `defaults_test.go` cases elsewhere); these tests vouch only for the
//!   admission part.
//! * **Consistency** (`every_bare_pod_..._is_in_sync_with_drift_models_admission`): every
//!   bare Pod of the collection, its live object built with driftd's own defaulting and
//!   admission code, the same code the differ prepares the desired side with. This shows
//!   the differ accepts whatever driftd's model says a cluster adds (appended list items,
//!   LimitRanger's resources and annotation), across real pod shapes; it cannot show that
//!   the model is right, which is what the fidelity tests and the plugins' own upstream
//!   cases (`crates/k8s/src/admission/tests/`) are for.

use std::path::{Path, PathBuf};

use driftd_core::diff::{ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_core::manifest::{self, LoadOptions, ManifestObject};
use driftd_k8s::admission::{self, AdmissionFacts};
use driftd_sim::server_defaults;
use serde_json::{json, Value};

use crate::scaffold::shared_dir;

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// The objects of one file of the shared folder (`real-manifests/...` or
/// `real-manifests-2/...`).
fn load(relative: &str) -> Vec<ManifestObject> {
    let path = shared_dir().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
    manifest::parse_text(&text, relative, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn the_pod(relative: &str) -> Value {
    load(relative)
        .into_iter()
        .find(|o| o.key.kind == "Pod")
        .unwrap_or_else(|| panic!("{relative} holds a Pod"))
        .object
}

/// What kube-apiserver does to a created Pod before admission: its defaulting (driftd's
/// model), and the namespace of the request (`kubectl apply` without `-n`: `default`).
fn defaulted(desired: &Value) -> Value {
    let mut live = desired.clone();
    server_defaults::as_created("v1", "Pod", &mut live);
    live["metadata"]["namespace"] = json!("default");
    live
}

/// The server's own bookkeeping, which the differ never compares.
fn stored(mut live: Value) -> Value {
    live["metadata"]["uid"] = json!("6f1c2a4e-0000-4000-8000-000000000001");
    live["metadata"]["resourceVersion"] = json!("1");
    live["spec"]["nodeName"] = json!("node-1");
    live
}

fn assert_in_sync(differ: &Differ, desired: &Value, live: &Value, what: &str) {
    let c = differ.compare(&CompareInput {
        desired,
        live: Some(live),
        previous: None,
        facts: &ClusterFacts::default(),
    });
    let changes: Vec<&str> = c.changes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(c.class, DriftClass::InSync, "{what}: {changes:?}");
}

/// Sets `value` at the RFC 6901 `pointer` of `object`, creating objects on the way; an
/// index one past an array's end appends (an admission plugin appends to lists).
fn set(object: &mut Value, pointer: &str, value: Value) {
    let mut at = object;
    let parts: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if let Value::Array(items) = at {
            let index: usize = part.parse().unwrap();
            if index == items.len() {
                items.push(if last { value.clone() } else { json!({}) });
            }
            at = &mut items[index];
        } else {
            if at.get(*part).is_none() {
                at[*part] = json!({});
            }
            at = &mut at[*part];
        }
        if last {
            *at = value;
            return;
        }
    }
}

const TOKEN: &str = "kube-api-access-x7k2q";

/// The token volume v1.32 appends, written out from `TokenVolumeSource()` in
/// `plugin/pkg/admission/serviceaccount/admission.go`: `DefaultMode:
/// ProjectedVolumeSourceDefaultMode` (0644), the `serviceAccountToken` projection with
/// `ExpirationSeconds: serviceaccount.WarnOnlyBoundTokenExpirationSeconds` (3607) at
/// `token`, `kube-root-ca.crt`'s `ca.crt`, and the namespace through the downward API.
fn token_volume() -> Value {
    json!({"name": TOKEN, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
}

/// `mountServiceAccountToken`'s `volumeMount`: `ReadOnly: true`, `MountPath:
/// DefaultAPITokenMountPath`.
fn token_mount() -> Value {
    json!({"name": TOKEN, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
}

/// What every Pod of these manifests gets in a fresh cluster besides the token volume and
/// mounts, which depend on the pod's lists:
/// - `serviceAccountName: default`: serviceaccount/admission.go, `if
///   len(pod.Spec.ServiceAccountName) == 0 { pod.Spec.ServiceAccountName =
///   DefaultServiceAccountName }`; `serviceAccount` is its v1 mirror
///   (`pkg/apis/core/v1/conversion.go`, `out.DeprecatedServiceAccount =
///   in.ServiceAccountName`);
/// - `priority: 0` and `preemptionPolicy: PreemptLowerPriority`: priority/admission.go,
///   `getDefaultPriority` without a global default class
///   (`DefaultPriorityWhenNoDefaultClassExists`, `preemptLowerPriority`);
/// - two tolerations, appended: defaulttolerationseconds/admission.go,
///   `notReadyToleration` and `unreachableToleration` (`TolerationOpExists`,
///   `TaintEffectNoExecute`, `defaultNotReadyTolerationSeconds` = 300), the manifests
///   having none that tolerates those taints.
fn fresh_cluster_additions() -> Vec<(&'static str, Value)> {
    vec![
        ("/spec/serviceAccountName", json!("default")),
        ("/spec/serviceAccount", json!("default")),
        ("/spec/priority", json!(0)),
        ("/spec/preemptionPolicy", json!("PreemptLowerPriority")),
        (
            "/spec/tolerations",
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}]),
        ),
    ]
}

/// Checks driftd's admission model against `additions` for the pod of `relative`, then
/// the hand-built live object against the manifest.
fn check_pod(relative: &str, facts: &AdmissionFacts, additions: &[(&str, Value)]) {
    let desired = the_pod(relative);
    let mut expected = defaulted(&desired);
    for (pointer, value) in fresh_cluster_additions().iter().chain(additions) {
        set(&mut expected, pointer, value.clone());
    }
    let mut modelled = defaulted(&desired);
    admission::admit("Pod", &mut modelled, facts, TOKEN);
    assert_eq!(modelled, expected, "{relative}: driftd's admission model");
    assert_in_sync(
        &Differ::new(b"real-pods"),
        &desired,
        &stored(expected),
        relative,
    );
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn admission_adds_what_the_plugins_sources_say_to_real_pods() {
    let fresh = AdmissionFacts::default();
    // An init container and a container that mount a volume: the token mount is appended
    // to each (`mountServiceAccountToken` loops over `InitContainers` then `Containers`,
    // appending where no mount is at the token path), the volume after the pod's own.
    check_pod(
        "real-manifests/examples/_archived/javaweb-tomcat-sidecar/javaweb.yaml",
        &fresh,
        &[
            ("/spec/volumes/1", token_volume()),
            ("/spec/initContainers/0/volumeMounts/1", token_mount()),
            ("/spec/containers/0/volumeMounts/1", token_mount()),
        ],
    );
    // A container and nothing else: the lists are created.
    check_pod(
        "real-manifests/examples/_archived/cpu-manager/be.yaml",
        &fresh,
        &[
            ("/spec/volumes", json!([token_volume()])),
            ("/spec/containers/0/volumeMounts", json!([token_mount()])),
        ],
    );
    // Requests and limits given: no LimitRange, so the resources are the manifest's.
    check_pod(
        "real-manifests/examples/_archived/cpu-manager/exclusive-1.yaml",
        &fresh,
        &[
            ("/spec/volumes", json!([token_volume()])),
            ("/spec/containers/0/volumeMounts", json!([token_mount()])),
        ],
    );
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn limit_ranger_gives_the_documentations_pods_what_a_cluster_gave_them() {
    // memory-defaults.yaml (the LimitRange `mem-limit-range`: default 512Mi, default
    // request 256Mi), created in the pods' namespace.
    let mut range =
        load("real-manifests-2/website/content/en/examples/admin/resource/memory-defaults.yaml")
            .remove(0)
            .object;
    range["metadata"]["namespace"] = json!("default");
    let facts = AdmissionFacts::from_objects([&range]);
    let token = [
        ("/spec/volumes", json!([token_volume()])),
        ("/spec/containers/0/volumeMounts", json!([token_mount()])),
    ];
    // memory-default-namespace.md: `kubectl get pod default-mem-demo --output=yaml` shows
    // `resources: {limits: {memory: 512Mi}, requests: {memory: 256Mi}}`. The annotation
    // (not shown there) follows `mergeContainerResources`: sorted names, " request for
    // container <name>", then " limit for ...", joined by "; " after "LimitRanger plugin
    // set: ".
    let mut additions = token.to_vec();
    additions.push((
        "/spec/containers/0/resources",
        json!({"limits": {"memory": "512Mi"}, "requests": {"memory": "256Mi"}}),
    ));
    additions.push((
        "/metadata/annotations",
        json!({"kubernetes.io/limit-ranger": "LimitRanger plugin set: memory request for container \
            default-mem-demo-ctr; memory limit for container default-mem-demo-ctr"}),
    ));
    check_pod(
        "real-manifests-2/website/content/en/examples/admin/resource/memory-defaults-pod.yaml",
        &facts,
        &additions,
    );
    // "What if you specify a Container's limit, but not its request?": `requests: {memory:
    // 1Gi}`, "not assigned the default memory request value of 256Mi", and LimitRanger
    // sets nothing (so no annotation).
    let mut additions = token.to_vec();
    additions.push((
        "/spec/containers/0/resources",
        json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}}),
    ));
    check_pod(
        "real-manifests-2/website/content/en/examples/admin/resource/memory-defaults-pod-2.yaml",
        &facts,
        &additions,
    );
}

/// The ten lists the admission chain appends to when the manifest already has them:
/// volumes, every (init) container's volumeMounts, tolerations.
fn appended_to_existing_lists(desired: &Value, live: &Value) -> usize {
    let mut lists = vec!["/spec/volumes".to_string(), "/spec/tolerations".to_string()];
    for list in ["containers", "initContainers"] {
        for i in 0..desired["spec"][list].as_array().map_or(0, Vec::len) {
            lists.push(format!("/spec/{list}/{i}/volumeMounts"));
        }
    }
    lists
        .iter()
        .filter(|p| {
            let len = |v: &Value| v.pointer(p).and_then(Value::as_array).map(Vec::len);
            matches!((len(desired), len(live)), (Some(d), Some(l)) if l > d)
        })
        .count()
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn every_bare_pod_of_the_real_manifests_is_in_sync_with_driftds_model_of_admission() {
    let root = shared_dir().join("real-manifests");
    let mut files = Vec::new();
    yaml_files(&root, &mut files);
    files.sort();
    let differ = Differ::new(b"real-pods");
    // A fresh cluster, and one whose namespace has a LimitRange defaulting cpu and memory
    // (LimitRanger then adds resources and its annotation to most pods).
    let limited = json!({"apiVersion": "v1", "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "512Mi"},
            "defaultRequest": {"cpu": "250m", "memory": "256Mi"}}]}});
    let clusters = [
        ("fresh", AdmissionFacts::default()),
        ("limit-range", AdmissionFacts::from_objects([&limited])),
    ];
    let (mut pods, mut appended, mut limited_pods, mut failures) = (0, 0, 0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        // Files the collection skips for a reason (generateName, templates) do not parse.
        let Ok(objects) = manifest::parse_text(&text, &name, &LoadOptions::default()) else {
            continue;
        };
        for (i, d) in objects.iter().filter(|o| o.key.kind == "Pod").enumerate() {
            pods += 1;
            for (cluster, facts) in &clusters {
                let mut live = defaulted(&d.object);
                let mut draw = pods * 7 + i;
                let token = admission::token_volume_name(|n| {
                    draw = draw * 31 + 11;
                    draw % n
                });
                admission::admit("Pod", &mut live, facts, &token);
                if *cluster == "fresh" {
                    appended += appended_to_existing_lists(&d.object, &live);
                } else if live
                    .pointer("/metadata/annotations/kubernetes.io~1limit-ranger")
                    .is_some()
                {
                    limited_pods += 1;
                }
                let c = differ.compare(&CompareInput {
                    desired: &d.object,
                    live: Some(&stored(live)),
                    previous: None,
                    facts: &ClusterFacts::default(),
                });
                if c.class != DriftClass::InSync {
                    let changes: Vec<String> = c.changes.iter().map(|c| c.field.clone()).collect();
                    failures.push(format!(
                        "{name} ({}, {cluster}): {}",
                        d.key,
                        changes.join(", ")
                    ));
                }
            }
        }
    }
    assert_eq!(pods, 17, "the collection's bare Pods (SOURCES.md)");
    assert!(
        appended >= 9,
        "admission appended to lists the manifests have only {appended} times"
    );
    assert_eq!(
        limited_pods, 13,
        "LimitRanger defaults every pod but the four cpu-manager exclusive-* pods, whose \
         containers set cpu and memory requests and limits"
    );
    assert!(
        failures.is_empty(),
        "{} bare Pod admissions drift:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
