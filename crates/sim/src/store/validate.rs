//! The write rules kube-apiserver's registries and decoder apply before storing: the
//! decoding and metadata validation `driftd commit` shares ([`driftd_k8s::validation`]), the
//! few semantic validations users hit most, and which kinds keep `metadata.generation`.

use super::super::status::ApiError;
use driftd_k8s::kinds::ResourceType;
use serde_json::Value;

/// Kinds whose registry strategy maintains `metadata.generation` (workloads and anything
/// with a spec the controllers observe); custom resources always get one.
pub fn tracks_generation(info: &ResourceType) -> bool {
    info.custom
        || matches!(
            info.group.as_str(),
            "apps" | "batch" | "autoscaling" | "networking.k8s.io" | "apiextensions.k8s.io"
        )
}

/// Validates a create or an update as kube-apiserver does before storing, with the same
/// driftd-k8s functions `driftd commit` uses, so both refuse the same objects in the same
/// words: the body decoded into the kind's Go type (`400 BadRequest`), then the name rule of
/// the kind (RBAC names need only be path segments), namespace, labels, annotations (256 KiB
/// together), finalizers, ConfigMap/Secret keys (`422 Invalid`). `obj` is the request body;
/// it is checked as served through `info` in the request's namespace `ns`.
pub fn validate_request(
    info: &ResourceType,
    ns: Option<&str>,
    obj: &Value,
) -> Result<(), ApiError> {
    let mut copy = obj.clone();
    copy["apiVersion"] = Value::String(info.api_version());
    copy["kind"] = Value::String(info.kind.clone());
    if !copy.get("metadata").is_some_and(Value::is_object) {
        copy["metadata"] = Value::Object(Default::default());
    }
    if let Some(md) = copy["metadata"].as_object_mut() {
        match ns {
            // The request's namespace fills an empty one (`EnsureObjectNamespaceMatchesRequestNamespace`).
            Some(ns)
                if info.namespaced
                    && md
                        .get("namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty() =>
            {
                md.insert("namespace".into(), Value::String(ns.to_string()));
            }
            // kube-apiserver clears the namespace of a cluster-scoped object.
            _ if !info.namespaced => {
                md.remove("namespace");
            }
            _ => {}
        }
    }
    driftd_k8s::validation::validate_create(&copy, info.namespaced).map_err(ApiError::rejected)
}

/// A few of kube-apiserver's validations that users hit most (selector/template mismatch,
/// containers without image); not the full validation suite.
pub fn validate_object(info: &ResourceType, name: &str, obj: &Value) -> Result<(), ApiError> {
    let invalid = |field: &str, detail: &str| {
        Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            field,
            detail,
        ))
    };
    let pod_spec = match driftd_k8s::merge_keys::pod_spec_prefix(&info.kind) {
        Some(prefix) if !info.custom => {
            let ptr: String = prefix.iter().map(|p| format!("/{p}")).collect();
            obj.pointer(&ptr)
        }
        _ => None,
    };
    if let Some(spec) = pod_spec {
        let prefix = driftd_k8s::merge_keys::pod_spec_prefix(&info.kind)
            .unwrap_or(&[])
            .join(".");
        match spec.get("containers").and_then(Value::as_array) {
            Some(cs) if !cs.is_empty() => {
                for (i, c) in cs.iter().enumerate() {
                    if c.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                    {
                        return invalid(
                            &format!("{prefix}.containers[{i}].name"),
                            "Required value",
                        );
                    }
                    if c.get("image")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                    {
                        return invalid(
                            &format!("{prefix}.containers[{i}].image"),
                            "Required value",
                        );
                    }
                }
            }
            _ => return invalid(&format!("{prefix}.containers"), "Required value"),
        }
    }
    if matches!(
        info.kind.as_str(),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
    ) && !info.custom
    {
        let Some(sel) = obj.pointer("/spec/selector") else {
            return invalid("spec.selector", "Required value");
        };
        let labels = obj.pointer("/spec/template/metadata/labels");
        if !label_selector_matches(sel, labels) {
            // Go's %#v of a map[string]string, as the validation message prints it.
            let mut pairs: Vec<String> = labels
                .and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| format!("{k:?}:{}", v)).collect())
                .unwrap_or_default();
            pairs.sort();
            let shown = format!("map[string]string{{{}}}", pairs.join(", "));
            return invalid(
                "spec.template.metadata.labels",
                &format!("Invalid value: {shown}: `selector` does not match template `labels`"),
            );
        }
    }
    Ok(())
}

/// Whether a `metav1.LabelSelector` (matchLabels + matchExpressions) selects `labels`.
/// An empty selector selects everything, as `metav1.LabelSelectorAsSelector` does.
pub fn label_selector_matches(sel: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        if !ml.iter().all(|(k, v)| get(k) == v.as_str()) {
            return false;
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let vals: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let v = get(key);
            let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => v.is_some_and(|v| vals.contains(&v)),
                "NotIn" => !v.is_some_and(|v| vals.contains(&v)),
                "Exists" => v.is_some(),
                "DoesNotExist" => v.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// Whether two maps are equal outside the keys `skip` names (no copies).
fn equal_except(a: Option<&Value>, b: Option<&Value>, skip: &[&str]) -> bool {
    let (Some(a), Some(b)) = (a.and_then(Value::as_object), b.and_then(Value::as_object)) else {
        return a == b;
    };
    let kept = |m: &serde_json::Map<String, Value>| {
        m.keys().filter(|k| !skip.contains(&k.as_str())).count()
    };
    kept(a) == kept(b)
        && a.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .all(|(k, v)| b.get(k) == Some(v))
}

/// Whether the spec-like content (everything outside metadata and status, which
/// `generation` tracks) is the same.
pub fn same_spec(a: &Value, b: &Value) -> bool {
    equal_except(
        Some(a),
        Some(b),
        &["metadata", "status", "apiVersion", "kind"],
    )
}

/// Whether two versions differ only in the bookkeeping that changes on every write
/// (managedFields, resourceVersion): such a write is a no-op.
pub fn same_but_bookkeeping(a: &Value, b: &Value) -> bool {
    equal_except(Some(a), Some(b), &["metadata"])
        && equal_except(
            a.get("metadata"),
            b.get("metadata"),
            &["managedFields", "resourceVersion"],
        )
}

pub fn check_type(info: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str) {
        let group = driftd_k8s::kinds::split_api_version(av).0;
        if group != info.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                info.api_version()
            )));
        }
    }
    if let Some(kind) = obj.get("kind").and_then(Value::as_str) {
        if kind != info.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                info.kind
            )));
        }
    }
    check_shapes(info, obj)
}

/// The one shape the write path needs before validation: `metadata` must be an object (the
/// rest of the decoder's type checks are [`validate_request`]'s, with the decoder's words).
pub fn check_shapes(info: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    match obj.get("metadata") {
        None | Some(Value::Null) | Some(Value::Object(_)) => Ok(()),
        Some(got) => {
            let got = match got {
                Value::Null => "null",
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            Err(ApiError::bad_request(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: json: cannot unmarshal {got} into Go struct field {kind}.metadata of type v1.ObjectMeta",
                kind = info.kind,
                v = info.version,
            )))
        }
    }
}
