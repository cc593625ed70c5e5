//! What the built-in API types print: which fields kube-apiserver's JSON encoder leaves out
//! when they hold their zero value, and which kinds are built in at all.
//!
//! kube-apiserver encodes with Go's encoding/json: a non-pointer `bool`, number, string,
//! slice or map field tagged `omitempty` is not printed when it is `false`, `0`, `""` or
//! empty, and an `omitzero` field is not printed when zero. So a manifest that spells such a
//! zero value (`initialDelaySeconds: 0`, `hostNetwork: false`, `args: []`) is in sync with a
//! live object without the field, while a pointer field set to zero (`replicas: 0`) is
//! printed and compared. Structs are printed even with `omitempty` (`{}`).
//!
//! The table (`api_types.tsv`) is generated from the Go API types by
//! `testdata/extract_omitempty_fields.py` (its header names the source commits): one row per
//! kind (group, version, kind, root type) and one per field of every struct reachable from a
//! kind (json name, zero shape if omitted when zero, map levels, child struct). Paths are
//! walked through it by field name, map keys as steps of their own, list positions left out.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

/// The JSON shape of a zero value a field is left out with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Zero {
    Bool,
    Number,
    String,
    List,
    Map,
    /// `omitzero`: whatever the type's zero value is.
    Any,
}

impl Zero {
    fn parse(s: &str) -> Option<Zero> {
        Some(match s {
            "bool" => Zero::Bool,
            "number" => Zero::Number,
            "string" => Zero::String,
            "list" => Zero::List,
            "map" => Zero::Map,
            "any" => Zero::Any,
            _ => return None,
        })
    }

    fn holds(self, v: &Value) -> bool {
        let zero_number = |v: &Value| v.as_f64() == Some(0.0);
        match (self, v) {
            (Zero::Bool, Value::Bool(b)) => !b,
            (Zero::Number, Value::Number(_)) => zero_number(v),
            (Zero::String, Value::String(s)) => s.is_empty(),
            (Zero::List, Value::Array(a)) => a.is_empty(),
            (Zero::Map, Value::Object(m)) => m.is_empty(),
            (Zero::Any, Value::Null) => true,
            (Zero::Any, Value::Bool(b)) => !b,
            (Zero::Any, Value::Number(_)) => zero_number(v),
            (Zero::Any, Value::String(s)) => s.is_empty(),
            (Zero::Any, Value::Array(a)) => a.is_empty(),
            (Zero::Any, Value::Object(m)) => m.is_empty(),
            _ => false,
        }
    }
}

/// One field of a struct type.
#[derive(Debug)]
struct Field {
    zero: Option<Zero>,
    /// Map levels between the field and its child (map keys are path steps).
    maps: usize,
    child: Option<&'static str>,
}

struct Table {
    kinds: HashMap<(&'static str, &'static str, &'static str), &'static str>,
    types: HashMap<&'static str, HashMap<&'static str, Field>>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut table = Table {
        kinds: HashMap::new(),
        types: HashMap::new(),
    };
    for line in include_str!("api_types.tsv").lines() {
        let cols: Vec<&'static str> = line.split('\t').collect();
        match cols.as_slice() {
            ["K", group, version, kind, root] => {
                table.kinds.insert((group, version, kind), root);
            }
            ["F", ty, json, zero, maps, child] => {
                let field = Field {
                    zero: Zero::parse(zero),
                    maps: maps.parse().expect("map levels are a number"),
                    child: (*child != "-").then_some(*child),
                };
                table.types.entry(ty).or_default().insert(json, field);
            }
            _ => assert!(line.starts_with('#'), "bad api_types.tsv line: {line}"),
        }
    }
    table
});

const OBJECT_META: &str = "apimachinery/pkg/apis/meta/v1.ObjectMeta";

/// Whether `api_version`/`kind` is a kind of the built-in API (any group/version k8s.io/api
/// publishes, and CustomResourceDefinition); everything else is a custom resource or an
/// aggregated API.
pub fn is_builtin(api_version: &str, kind: &str) -> bool {
    let (group, version) = crate::kinds::split_api_version(api_version);
    TABLE.kinds.contains_key(&(group, version, kind))
}

/// Whether the value `v` at `path` (field names and map keys; list positions left out) of an
/// object of `api_version`/`kind` is a zero value kube-apiserver never prints there. `false`
/// for paths the table does not know (custom resources, map values, unknown fields).
pub fn omitted_when_zero(api_version: &str, kind: &str, path: &[&str], v: &Value) -> bool {
    let (group, version) = crate::kinds::split_api_version(api_version);
    let Some(root) = TABLE.kinds.get(&(group, version, kind)) else {
        return false;
    };
    field_at(root, path)
        .and_then(|f| f.zero)
        .is_some_and(|zero| zero.holds(v))
}

/// The field `path` ends at, walked from struct type `ty`; `None` if the path ends at a map
/// value or leaves the known types.
fn field_at(ty: &str, path: &[&str]) -> Option<&'static Field> {
    let (first, rest) = path.split_first()?;
    let field = TABLE.types.get(ty)?.get(*first)?;
    if rest.is_empty() {
        return Some(field);
    }
    // Map keys are steps of their own; the path may end inside the map.
    let rest = rest.get(field.maps..)?;
    if rest.is_empty() {
        return None;
    }
    field_at(field.child?, rest)
}

const QUANTITY: &str = "apimachinery/pkg/api/resource.Quantity";
/// The child the table names for a `[]byte` field: base64 text in JSON.
const BYTES: &str = "[]byte";

/// What a scalar at some path of a built-in object is to kube-apiserver, where its JSON
/// spelling is not the value: see [`scalar_type`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    /// A `resource.Quantity`: stored in canonical form, so "1Gi", "1024Mi" and 1073741824
    /// are one value.
    Quantity,
    /// A Go `[]byte` (a Secret's `data` value, a ConfigMap's `binaryData` value, a
    /// webhook's `caBundle`): base64 text decoded to bytes and printed in canonical base64,
    /// so two spellings of the same bytes (wrapped over lines, as `base64` prints them) are
    /// one value.
    Bytes,
    /// Anything else: the JSON value is the value.
    Plain,
}

/// The [`ScalarType`] of the value at `path` (field names and map keys; list positions left
/// out) of an object of `api_version`/`kind`; `None` for kinds the table does not know
/// (custom resources).
pub fn scalar_type(api_version: &str, kind: &str, path: &[&str]) -> Option<ScalarType> {
    let (group, version) = crate::kinds::split_api_version(api_version);
    let mut ty = *TABLE.kinds.get(&(group, version, kind))?;
    let mut rest = path;
    loop {
        let Some((first, tail)) = rest.split_first() else {
            return Some(ScalarType::Plain);
        };
        let Some(field) = TABLE.types.get(ty).and_then(|t| t.get(*first)) else {
            return Some(ScalarType::Plain);
        };
        let at_value = tail.len() == field.maps;
        match field.child {
            Some(QUANTITY) if at_value => return Some(ScalarType::Quantity),
            Some(BYTES) if at_value => return Some(ScalarType::Bytes),
            Some(child) if tail.len() > field.maps => {
                ty = child;
                rest = &tail[field.maps..];
            }
            _ => return Some(ScalarType::Plain),
        }
    }
}

/// Whether the Go type of a built-in kind has a `status` field: kube-apiserver serves a
/// `/status` subresource for each such kind (its registry's status strategy).
pub fn has_status(group: &str, version: &str, kind: &str) -> bool {
    TABLE
        .kinds
        .get(&(group, version, kind))
        .and_then(|root| TABLE.types.get(root))
        .is_some_and(|fields| fields.contains_key("status"))
}

/// The Go struct (without its package, e.g. `DeploymentSpec`) whose field `path` (field
/// names, list positions left out) ends at: how Go's JSON decoder names a field in a type
/// error (`Go struct field DeploymentSpec.spec.replicas`). `None` outside the known types.
pub fn struct_of_field(api_version: &str, kind: &str, path: &[&str]) -> Option<&'static str> {
    let (group, version) = crate::kinds::split_api_version(api_version);
    let mut ty: &'static str = TABLE.kinds.get(&(group, version, kind))?;
    let mut rest = path;
    loop {
        let (first, tail) = rest.split_first()?;
        let field = TABLE.types.get(ty)?.get(*first)?;
        if tail.is_empty() {
            return Some(ty.rsplit('.').next().unwrap_or(ty));
        }
        rest = tail.get(field.maps..)?;
        if rest.is_empty() {
            return Some(ty.rsplit('.').next().unwrap_or(ty));
        }
        ty = field.child?;
    }
}

/// Calls `f` with the field path (kube's notation: `spec.containers[0].resources.limits[cpu]`)
/// and value of every `resource.Quantity` of a built-in object, found through its Go types.
/// Nothing for kinds the table does not know.
pub fn for_each_quantity(object: &Value, mut f: impl FnMut(&str, &Value)) {
    let (Some(api_version), Some(kind)) = (
        object.get("apiVersion").and_then(Value::as_str),
        object.get("kind").and_then(Value::as_str),
    ) else {
        return;
    };
    let (group, version) = crate::kinds::split_api_version(api_version);
    if let Some(root) = TABLE.kinds.get(&(group, version, kind)) {
        quantities_in(root, object, String::new(), &mut f);
    }
}

fn quantities_in(ty: &str, v: &Value, path: String, f: &mut impl FnMut(&str, &Value)) {
    let (Some(fields), Value::Object(map)) = (TABLE.types.get(ty), v) else {
        return;
    };
    for (key, child) in map {
        let Some(field) = fields.get(key.as_str()) else {
            continue;
        };
        let Some(child_ty) = field.child else {
            continue;
        };
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        typed_value(child_ty, field.maps, child, here, f);
    }
}

/// A value of type `ty` under `maps` levels of maps, possibly inside lists.
fn typed_value(ty: &str, maps: usize, v: &Value, path: String, f: &mut impl FnMut(&str, &Value)) {
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                typed_value(ty, maps, item, format!("{path}[{i}]"), f);
            }
        }
        Value::Object(entries) if maps > 0 => {
            for (k, item) in entries {
                typed_value(ty, maps - 1, item, format!("{path}[{k}]"), f);
            }
        }
        _ if maps > 0 => {}
        _ if ty == QUANTITY => f(&path, v),
        _ => quantities_in(ty, v, path, f),
    }
}

/// The JSON names of ObjectMeta's fields: what `metadata` keeps when kube-apiserver decodes
/// it into the Go type (a custom resource's root or embedded `metadata` loses anything else).
pub fn object_meta_fields() -> impl Iterator<Item = &'static str> {
    TABLE.types[OBJECT_META].keys().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn omitted(api_version: &str, kind: &str, path: &str, v: Value) -> bool {
        let path: Vec<&str> = path.split('.').collect();
        omitted_when_zero(api_version, kind, &path, &v)
    }

    #[test]
    fn scalars_are_typed_by_their_go_type() {
        use ScalarType::{Bytes, Plain, Quantity};
        let t = |av: &str, kind: &str, path: &str| {
            let path: Vec<&str> = path.split('.').collect();
            scalar_type(av, kind, &path)
        };
        // core/v1 types.go: `Data map[string][]byte` (Secret), `BinaryData map[string][]byte`
        // (ConfigMap); admissionregistration/v1 types.go: `CABundle []byte` in
        // WebhookClientConfig; certificates/v1 types.go: `Request []byte`.
        assert_eq!(t("v1", "Secret", "data.tls~crt"), Some(Bytes));
        assert_eq!(t("v1", "Secret", "data"), Some(Plain));
        assert_eq!(t("v1", "Secret", "stringData.a"), Some(Plain));
        assert_eq!(t("v1", "ConfigMap", "binaryData.logo"), Some(Bytes));
        assert_eq!(t("v1", "ConfigMap", "data.app"), Some(Plain));
        let webhook = "webhooks.clientConfig.caBundle";
        let mwc = "MutatingWebhookConfiguration";
        assert_eq!(
            t("admissionregistration.k8s.io/v1", mwc, webhook),
            Some(Bytes)
        );
        let csr = "CertificateSigningRequest";
        assert_eq!(
            t("certificates.k8s.io/v1", csr, "spec.request"),
            Some(Bytes)
        );
        // `Limits ResourceList` (map[ResourceName]resource.Quantity) in ResourceRequirements;
        // storage/v1 CSIStorageCapacity: `Capacity *resource.Quantity`.
        let limits = "spec.template.spec.containers.resources.limits.cpu";
        assert_eq!(t("apps/v1", "Deployment", limits), Some(Quantity));
        assert_eq!(t("apps/v1", "Deployment", "spec.replicas"), Some(Plain));
        let capacity = "CSIStorageCapacity";
        assert_eq!(t("storage.k8s.io/v1", capacity, "capacity"), Some(Quantity));
        assert_eq!(
            t("v1", "LimitRange", "spec.limits.max.memory"),
            Some(Quantity)
        );
        assert_eq!(t("example.com/v1", "Widget", "data.a"), None);
    }

    #[test]
    fn non_pointer_omitempty_zero_values_are_not_printed() {
        let c = "spec.template.spec.containers";
        // Probe.InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
        let probe = format!("{c}.livenessProbe.initialDelaySeconds");
        assert!(omitted("apps/v1", "Deployment", &probe, json!(0)));
        assert!(!omitted("apps/v1", "Deployment", &probe, json!(5)));
        // PodSpec.HostNetwork bool, Container.Args []string, EnvVar.Value string.
        assert!(omitted("v1", "Pod", "spec.hostNetwork", json!(false)));
        assert!(omitted(
            "batch/v1",
            "CronJob",
            "spec.jobTemplate.spec.template.spec.containers.args",
            json!([])
        ));
        assert!(omitted(
            "apps/v1",
            "StatefulSet",
            &format!("{c}.env.value"),
            json!("")
        ));
        // Pointers are printed when set: DeploymentSpec.Replicas *int32,
        // PodSpec.AutomountServiceAccountToken *bool.
        assert!(!omitted("apps/v1", "Deployment", "spec.replicas", json!(0)));
        assert!(!omitted(
            "v1",
            "Pod",
            "spec.automountServiceAccountToken",
            json!(false)
        ));
        // A struct with omitempty is printed: PodSpec.Affinity is a pointer, Service
        // status.loadBalancer a struct.
        assert!(!omitted("v1", "Service", "status.loadBalancer", json!({})));
        // Keys of a map are values, not fields: labels {"a": ""} keeps its entry.
        assert!(!omitted("v1", "ConfigMap", "metadata.labels.a", json!("")));
        assert!(!omitted("v1", "ConfigMap", "data.key", json!("")));
        // The wrong shape for the field is not its zero value.
        assert!(!omitted("v1", "Pod", "spec.hostNetwork", json!(0)));
        // Custom resources and unknown fields are not in the table.
        assert!(!omitted("example.com/v1", "Widget", "spec.size", json!(0)));
        assert!(!omitted("v1", "Pod", "spec.noSuchField", json!(0)));
    }

    #[test]
    fn map_values_lead_into_their_struct() {
        // ResourceList map values are Quantity structs (no fields); a NetworkPolicy's
        // podSelector.matchLabels is a map of strings.
        assert!(!omitted(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "spec.podSelector.matchLabels.app",
            json!("")
        ));
        assert!(omitted(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "spec.podSelector.matchLabels",
            json!({})
        ));
        // ConfigMap.Data map[string]string with omitempty: an empty map is not printed.
        assert!(omitted("v1", "ConfigMap", "data", json!({})));
    }

    #[test]
    fn every_group_of_the_api_is_built_in() {
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("apps/v1", "Deployment"),
            ("policy/v1", "PodDisruptionBudget"),
            ("networking.k8s.io/v1", "NetworkPolicy"),
            ("storage.k8s.io/v1", "StorageClass"),
            ("autoscaling/v1", "HorizontalPodAutoscaler"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ] {
            assert!(is_builtin(api_version, kind), "{api_version} {kind}");
        }
        assert!(!is_builtin("monitoring.coreos.com/v1", "ServiceMonitor"));
        assert!(!is_builtin("v1", "PodList"), "lists are not kinds");
        let meta: Vec<&str> = object_meta_fields().collect();
        for f in [
            "name",
            "namespace",
            "labels",
            "annotations",
            "ownerReferences",
        ] {
            assert!(meta.contains(&f), "{f}");
        }
        assert!(!meta.contains(&"unspecified"));
    }
}
