//! The ServiceAccount plugin (`plugin/pkg/admission/serviceaccount/admission.go`, `Admit`):
//! on create of a Pod that is not a mirror pod, `serviceAccountName: default` when unset;
//! unless the pod (or else its account) says `automountServiceAccountToken: false`, a
//! read-only mount of the token volume at `/var/run/secrets/kubernetes.io/serviceaccount`
//! appended to every init container and container without a mount at that path, and, when
//! one was appended and the pod has no volume named `kube-api-access-*` already, the
//! projected volume itself (`TokenVolumeSource`); the account's `imagePullSecrets` when the
//! pod lists none. The deprecated `serviceAccount` mirrors `serviceAccountName` (the v1
//! conversion, `pkg/apis/core/v1/conversion.go`).
//!
//! Not modelled: the refusal of a pod whose account does not exist (the plugin retries the
//! `default` account for a while, as its controller creates it; the simulator's namespace
//! controller does so asynchronously) and `LimitSecretReferences` (off by default).

use serde_json::{json, Value};

use super::facts::{AdmissionFacts, ServiceAccountFacts};

/// Prefix of the token volume's name (`ServiceAccountVolumeName` + `-`).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// Where the token volume is mounted (`DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The service account of a pod that names none (`DefaultServiceAccountName`).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// `serviceaccount.WarnOnlyBoundTokenExpirationSeconds`.
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;

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

/// The token mount the plugin appends to a container.
pub(super) fn token_mount(volume: &str) -> Value {
    json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH})
}

/// `shouldAutomount` as far as the pod decides: only an explicit `false` on the pod opts
/// out by itself (an explicit `true` overrides the account's `false`).
pub(super) fn pod_automount(spec: &Value) -> Option<bool> {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
}

pub(super) fn mutate(pod: &mut Value, facts: &AdmissionFacts, token_volume: &str) {
    if pod
        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
        .is_some()
    {
        return; // "Don't modify the spec of mirror pods."
    }
    let namespace = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default")
        .to_string();
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
    let plain = ServiceAccountFacts::default();
    let sa = facts
        .service_accounts
        .get(&(namespace, account))
        .unwrap_or(&plain);
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or(sa.automount)
        .unwrap_or(true);
    if automount {
        mount_token(spec, token_volume);
    }
    let listed = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|l| !l.is_empty());
    if !listed && !sa.image_pull_secrets.is_empty() {
        let refs: Vec<Value> = sa
            .image_pull_secrets
            .iter()
            .map(|n| json!({"name": n}))
            .collect();
        spec.insert("imagePullSecrets".into(), Value::Array(refs));
    }
}

/// `mountServiceAccountToken`.
fn mount_token(spec: &mut serde_json::Map<String, Value>, token_volume: &str) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_string);
    let name = existing.clone().unwrap_or_else(|| token_volume.to_string());
    let mount = token_mount(&name);
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
