//! kube-apiserver's default mutating admission plugins, as data: what they add to an object
//! on create, after defaulting and after the field manager recorded the request.
//!
//! Only Pods, PersistentVolumeClaims and Ingresses are touched, and only on create: a
//! workload's pod template is never admitted (the Pods its controller creates are), so an
//! item a person appends to a template is drift while the same item admission appends to a
//! bare Pod is not. Sources (kubernetes/kubernetes):
//! - ServiceAccount, `plugin/pkg/admission/serviceaccount/admission.go`: `serviceAccountName:
//!   default` when unset, and unless the pod (or its service account) says
//!   `automountServiceAccountToken: false`, a projected `kube-api-access-<5 chars>` volume
//!   (`TokenVolumeSource`: token 3607 s, `kube-root-ca.crt`'s `ca.crt`, the namespace) and a
//!   read-only mount of it at `/var/run/secrets/kubernetes.io/serviceaccount` appended to
//!   every init container and container that has no mount there. A pod that already has a
//!   volume named `kube-api-access-*` gets no second one. The deprecated `serviceAccount`
//!   mirrors `serviceAccountName` (v1 conversion, `pkg/apis/core/v1/conversion.go`).
//! - DefaultTolerationSeconds, `plugin/pkg/admission/defaulttolerationseconds/admission.go`:
//!   `not-ready` and `unreachable` NoExecute tolerations for 300 s, each unless the pod
//!   already tolerates that taint (same key or empty key, NoExecute or empty effect).
//! - Priority, `plugin/pkg/admission/priority/admission.go`: `priority` from the pod's
//!   PriorityClass, or from the global default class, or 0 with `preemptionPolicy:
//!   PreemptLowerPriority` when there is none (`getDefaultPriority`).
//! - DefaultStorageClass, `plugin/pkg/admission/storage/storageclass/setdefault`: a PVC
//!   without `storageClassName` gets the cluster's default StorageClass, if there is one.
//! - DefaultIngressClass, `plugin/pkg/admission/network/defaultingressclass`: an Ingress
//!   without `ingressClassName` and without the `kubernetes.io/ingress.class` annotation
//!   gets the default IngressClass, if there is one.
//!
//! Requests defaulted from limits are `SetDefaults_Pod`, defaulting not admission
//! ([`crate::defaults`]).

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// Prefix of the token volume's name (`ServiceAccountVolumeName`).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// Where the token volume is mounted (`DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The service account of a pod that names none (`DefaultServiceAccountName`).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// `serviceaccount.WarnOnlyBoundTokenExpirationSeconds`.
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// `--default-not-ready-toleration-seconds` / `--default-unreachable-toleration-seconds`.
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;
const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// Cluster state the plugins read. The default is a fresh cluster: no default
/// StorageClass, IngressClass or PriorityClass, service accounts that automount, and the
/// two system PriorityClasses kube-apiserver creates.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionFacts {
    pub default_storage_class: Option<String>,
    pub default_ingress_class: Option<String>,
    /// PriorityClasses by name: (value, preemptionPolicy).
    pub priority_classes: BTreeMap<String, (i64, String)>,
    /// The name of the PriorityClass marked `globalDefault`, if any.
    pub global_default_priority_class: Option<String>,
}

impl Default for AdmissionFacts {
    fn default() -> Self {
        let system = |v| (v, "PreemptLowerPriority".to_string());
        AdmissionFacts {
            default_storage_class: None,
            default_ingress_class: None,
            priority_classes: [
                ("system-cluster-critical".to_string(), system(2_000_000_000)),
                ("system-node-critical".to_string(), system(2_000_001_000)),
            ]
            .into(),
            global_default_priority_class: None,
        }
    }
}

/// Applies the default admission chain to a created object of `kind` (core and
/// networking.k8s.io kinds; anything else is left alone). `token_volume` names the
/// ServiceAccount plugin's volume (`kube-api-access-` and 5 random characters upstream;
/// see [`token_volume_name`]).
pub fn admit(kind: &str, object: &mut Value, facts: &AdmissionFacts, token_volume: &str) {
    match kind {
        "Pod" => {
            service_account(object, token_volume);
            default_toleration_seconds(object);
            priority(object, facts);
        }
        "PersistentVolumeClaim" => {
            if let (Some(class), Some(spec)) =
                (&facts.default_storage_class, object.get_mut("spec"))
            {
                if spec.get("storageClassName").is_none_or(Value::is_null) {
                    spec["storageClassName"] = json!(class);
                }
            }
        }
        "Ingress" => {
            let annotated = object
                .pointer("/metadata/annotations/kubernetes.io~1ingress.class")
                .is_some();
            if let (Some(class), Some(spec), false) = (
                &facts.default_ingress_class,
                object.get_mut("spec"),
                annotated,
            ) {
                if spec.get("ingressClassName").is_none_or(Value::is_null) {
                    spec["ingressClassName"] = json!(class);
                }
            }
        }
        _ => {}
    }
}

/// A token volume name from 5 random characters of `names.SimpleNameGenerator`'s alphabet
/// (`utilrand.String`: consonants and digits without look-alikes), chosen by `pick(n)` in
/// `0..n`.
pub fn token_volume_name(mut pick: impl FnMut(usize) -> usize) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let suffix: String = (0..5)
        .map(|_| ALPHANUMS[pick(ALPHANUMS.len()) % ALPHANUMS.len()] as char)
        .collect();
    format!("{TOKEN_VOLUME_PREFIX}{suffix}")
}

/// `TokenVolumeSource`: the projected source of the token volume, as stored.
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]
    })
}

fn automounts(spec: &Value) -> bool {
    spec.get("automountServiceAccountToken") != Some(&Value::Bool(false))
}

fn service_account(pod: &mut Value, token_volume: &str) {
    if pod
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return; // mirror pods are not modified
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let named = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let account = named("serviceAccountName")
        .or_else(|| named("serviceAccount"))
        .unwrap_or_else(|| DEFAULT_SERVICE_ACCOUNT.to_string());
    spec.insert("serviceAccountName".into(), json!(account));
    spec.insert("serviceAccount".into(), json!(account));
    if !automounts(&Value::Object(spec.clone())) {
        return;
    }
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_string);
    let name = existing.clone().unwrap_or_else(|| token_volume.to_string());
    let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let mounts = c
                .as_object_mut()
                .map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            let Some(Value::Array(mounts)) = mounts else {
                continue;
            };
            if !mounts.iter().any(|m| m["mountPath"] == TOKEN_MOUNT_PATH) {
                mounts.push(mount.clone());
                mounted = true;
            }
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Value::Array(volumes) = volumes {
            volumes.push(json!({"name": name, "projected": token_volume_source()}));
        }
    }
}

/// Whether a pod with tolerations `tolerations` tolerates the NoExecute taint `key`, as
/// DefaultTolerationSeconds judges it.
fn tolerates(tolerations: &[Value], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let k = t.get("key").and_then(Value::as_str).unwrap_or("");
        let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
        (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
    })
}

fn default_toleration(key: &str) -> Value {
    json!({"key": key, "operator": "Exists", "effect": "NoExecute",
        "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
}

fn default_toleration_seconds(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Value::Array(list) = tolerations else {
        return;
    };
    for key in [NOT_READY, UNREACHABLE] {
        if !tolerates(list, key) {
            list.push(default_toleration(key));
        }
    }
}

fn priority(pod: &mut Value, facts: &AdmissionFacts) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let class = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .or_else(|| facts.global_default_priority_class.clone());
    let (value, policy) = match &class {
        Some(c) => match facts.priority_classes.get(c) {
            Some((v, p)) => (*v, Some(p.clone())),
            None => return, // unknown class: the plugin refuses the pod
        },
        None => (0, Some("PreemptLowerPriority".to_string())),
    };
    if let Some(c) = class {
        spec.insert("priorityClassName".into(), json!(c));
    }
    spec.insert("priority".into(), json!(value));
    if let Some(p) = policy {
        spec.insert("preemptionPolicy".into(), json!(p));
    }
}

/// Whether `item`, an item of the live list at `path` (field names) of a Pod that is not in
/// the desired list, is one the default admission chain appends to the desired Pod
/// `desired`: the ServiceAccount plugin's token volume or its mount in a container, or a
/// DefaultTolerationSeconds toleration. The plugins' conditions are checked against the
/// desired Pod, so an item they would not have added is still drift.
pub fn appended_by_admission(kind: &str, path: &[&str], desired: &Value, item: &Value) -> bool {
    if kind != "Pod" {
        return false;
    }
    let spec = &desired["spec"];
    let desired_volume_named_like_token = || {
        spec["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .any(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
    };
    let token_name = |v: &Value| {
        v["name"]
            .as_str()
            .is_some_and(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
    };
    match path {
        ["spec", "volumes"] => {
            automounts(spec)
                && !desired_volume_named_like_token()
                && token_name(item)
                && *item == json!({"name": item["name"], "projected": token_volume_source()})
        }
        ["spec", "containers" | "initContainers", "volumeMounts"] => {
            automounts(spec)
                && token_name(item)
                && *item
                    == json!({"name": item["name"], "readOnly": true, "mountPath": TOKEN_MOUNT_PATH})
        }
        ["spec", "tolerations"] => {
            let desired_list = spec["tolerations"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            [NOT_READY, UNREACHABLE]
                .iter()
                .any(|key| !tolerates(desired_list, key) && *item == default_toleration(key))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
