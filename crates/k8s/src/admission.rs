//! kube-apiserver's default admission plugins, as data: what they add to an object on
//! create, after defaulting and after the field manager recorded the request, and which
//! creates they refuse.
//!
//! Only Pods, PersistentVolumeClaims, Ingresses and PriorityClasses are concerned, and only
//! on create: a workload's pod template is never admitted (the Pods its controller creates
//! are), so an item a person appends to a template is drift while the same item admission
//! appends to a bare Pod is not. The plugins, in the order of kube-apiserver's chain
//! (`AllOrderedPlugins`, `pkg/kubeapiserver/options/plugins.go`), one module each:
//! LimitRanger (`limit_ranger`), ServiceAccount (`service_account`), Priority
//! (`priority`), DefaultTolerationSeconds (`tolerations`), DefaultStorageClass and
//! DefaultIngressClass (`classes`). The cluster state they read is [`AdmissionFacts`].
//!
//! kube-apiserver runs the mutating half of every plugin ([`mutate`]), then the object's
//! validation, then the validating half ([`validate`]); either half may refuse the
//! object (`403 Forbidden`, [`Refusal`]).
//!
//! Requests defaulted from limits are `SetDefaults_Pod`, defaulting not admission
//! ([`crate::defaults`]). Default plugins not modelled: StorageObjectInUseProtection (the
//! `kubernetes.io/pvc-protection` finalizer, which needs the controller that removes it),
//! RuntimeClass (overhead and scheduling from a pod's RuntimeClass), and the validating
//! plugins PodSecurity and ResourceQuota.

mod classes;
mod facts;
mod limit_ranger;
mod priority;
mod service_account;
mod tolerations;

use serde_json::{json, Value};

pub use facts::{AdmissionFacts, ServiceAccountFacts};
pub use limit_ranger::LIMIT_RANGER_ANNOTATION;
pub use service_account::{
    token_volume_name, token_volume_source, DEFAULT_SERVICE_ACCOUNT, TOKEN_EXPIRATION_SECONDS,
    TOKEN_MOUNT_PATH, TOKEN_VOLUME_PREFIX,
};
pub use tolerations::DEFAULT_TOLERATION_SECONDS;

/// A create an admission plugin refuses: kube-apiserver answers `403 Forbidden` with
/// `<resource> "<name>" is forbidden: <message>` (`admission.NewForbidden`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The plugin's registered name (`LimitRanger`, `Priority`).
    pub plugin: &'static str,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

fn refused(plugin: &'static str) -> impl Fn(String) -> Refusal {
    move |message| Refusal { plugin, message }
}

/// The namespace of a namespaced object, `default` when it names none.
fn namespace_of(object: &Value) -> &str {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default")
}

/// Applies the mutating half of the default chain to a created object of `kind` (core,
/// networking.k8s.io and scheduling.k8s.io kinds; anything else is left alone), for
/// callers that only want what a created object looks like: a refusal leaves the object
/// as far as the chain got. `token_volume` names the ServiceAccount plugin's volume
/// (`kube-api-access-` and 5 random characters upstream; see [`token_volume_name`]).
pub fn admit(kind: &str, object: &mut Value, facts: &AdmissionFacts, token_volume: &str) {
    let _ = mutate(kind, object, facts, token_volume);
}

/// The mutating half of the default chain on a create of `kind`, in the chain's order; the
/// first plugin to refuse stops it. See [`admit`] for `token_volume`.
pub fn mutate(
    kind: &str,
    object: &mut Value,
    facts: &AdmissionFacts,
    token_volume: &str,
) -> Result<(), Refusal> {
    match kind {
        "Pod" => {
            let ranges = facts
                .limit_ranges
                .get(namespace_of(object))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            limit_ranger::mutate(object, ranges);
            service_account::mutate(object, facts, token_volume);
            priority::mutate(object, facts).map_err(refused("Priority"))?;
            tolerations::mutate(object);
        }
        "PersistentVolumeClaim" => classes::default_storage_class(object, facts),
        "Ingress" => classes::default_ingress_class(object, facts),
        _ => {}
    }
    Ok(())
}

/// The validating half of the default chain on a create of `kind`, run on the object as
/// mutated and validated: LimitRanger's min/max/ratio checks of Pods and claims, and
/// Priority's one-global-default rule for PriorityClasses.
pub fn validate(kind: &str, object: &Value, facts: &AdmissionFacts) -> Result<(), Refusal> {
    let ranges = || {
        facts
            .limit_ranges
            .get(namespace_of(object))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    match kind {
        "Pod" => limit_ranger::validate_pod(object, ranges()).map_err(refused("LimitRanger")),
        "PersistentVolumeClaim" => {
            limit_ranger::validate_claim(object, ranges()).map_err(refused("LimitRanger"))
        }
        "PriorityClass" => priority::validate_class(object, facts).map_err(refused("Priority")),
        _ => Ok(()),
    }
}

fn automounts(spec: &Value) -> bool {
    service_account::pod_automount(spec) != Some(false)
}

/// Whether `item`, an item of the live list at `path` (field names) of a Pod that is not in
/// the desired list, is one the default admission chain appends to the desired Pod
/// `desired`: the ServiceAccount plugin's token volume, its mount in a container or its
/// account's image pull secrets, or a DefaultTolerationSeconds toleration. The plugins' conditions are checked against the
/// desired Pod, so an item they would not have added is still drift. (What LimitRanger
/// adds are keys of maps the manifest leaves out or does not set, which the differ never
/// reports, so it needs nothing here.)
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
                && *item == service_account::token_mount(item["name"].as_str().unwrap_or(""))
        }
        ["spec", "imagePullSecrets"] => {
            // The ServiceAccount plugin copies its account's list into a pod whose list is
            // empty (`len(pod.Spec.ImagePullSecrets) == 0`, so also `[]`), never into one
            // that names a secret.
            spec["imagePullSecrets"]
                .as_array()
                .is_none_or(Vec::is_empty)
                && item.as_object().is_some_and(|o| o.len() == 1)
                && item["name"].is_string()
        }
        ["spec", "tolerations"] => {
            let desired_list = spec["tolerations"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            tolerations::KEYS.iter().any(|key| {
                !tolerations::tolerates(desired_list, key)
                    && *item == tolerations::default_toleration(key)
            })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
