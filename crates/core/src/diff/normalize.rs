//! Spelling-insensitive equality: when two differently written values are the same to
//! kube-apiserver (quantities, Secret `stringData` vs `data`, empty vs absent, the default
//! namespace), they must not show up as drift.

use driftd_k8s::quantity;
use serde_json::Value;

/// `null`, `{}` and `[]`: what a desired object may write for a field the server then leaves
/// out. Mirrors kube-apiserver dropping empty optional fields (`omitempty`) when it stores.
pub fn is_vacuous(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Whether desired value `d` at `names` (field names and map keys) is a zero value
/// kube-apiserver's encoder leaves out (a non-pointer `omitempty` field of a built-in type:
/// `readOnly: false`, `initialDelaySeconds: 0`, `args: []`), so an absent live field is the
/// same. From the table generated from the Go API types ([`driftd_k8s::api_types`]); custom
/// resources are stored as written.
pub fn is_omitted_zero(api_version: &str, kind: &str, names: &[&str], d: &Value) -> bool {
    driftd_k8s::api_types::omitted_when_zero(api_version, kind, names, d)
}

/// Whether the field at `names` (field names, list positions left out) in an object of
/// `kind` is a `resource.Quantity` in the Kubernetes API, so "1000m", "1" and 1 are equal.
pub fn is_quantity_field(kind: &str, names: &[&str]) -> bool {
    // ResourceRequirements (containers, pod-level resources, PVC spec.resources and
    // StatefulSet volumeClaimTemplates): resources.requests / resources.limits.
    if names
        .windows(2)
        .any(|w| w[0] == "resources" && (w[1] == "requests" || w[1] == "limits"))
    {
        return true;
    }
    let last = names.last().copied().unwrap_or("");
    // emptyDir.sizeLimit and PodSpec.overhead are quantities wherever a pod spec sits.
    if last == "sizeLimit" || names.contains(&"overhead") {
        return true;
    }
    match kind {
        "ResourceQuota" => names.starts_with(&["spec", "hard"]),
        "LimitRange" => {
            names.starts_with(&["spec", "limits"])
                && names.get(2).is_some_and(|f| {
                    matches!(
                        *f,
                        "max" | "min" | "default" | "defaultRequest" | "maxLimitRequestRatio"
                    )
                })
        }
        "PersistentVolume" => names.starts_with(&["spec", "capacity"]),
        // autoscaling/v2 MetricTarget.value / averageValue (averageUtilization is an int).
        "HorizontalPodAutoscaler" => {
            names.contains(&"target") && matches!(last, "value" | "averageValue")
        }
        _ => false,
    }
}

/// Equality of two quantities in any spelling ("1Gi" and "1024Mi", 1 and "1000m"); values
/// that are not quantities are equal only if identical.
pub fn quantities_equal(desired: &Value, live: &Value) -> bool {
    quantity::equal_values(desired, live)
}

/// Equality of two scalars. Numbers compare by value (1 and 1.0 are one JSON number to
/// kube-apiserver); strings never equal numbers, as int-or-string fields keep their type
/// (`targetPort: 8080` and `targetPort: "8080"` are different ports).
pub fn scalars_equal(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                x == y
            } else {
                a.as_f64() == b.as_f64()
            }
        }
        _ => desired == live,
    }
}

/// The bytes a `[]byte` field's base64 text stands for, decoded as kube-apiserver's JSON
/// decoder does (Go's `base64.StdEncoding`: padding required, `\r` and `\n` skipped, so a
/// value wrapped over lines is the same bytes); `None` if Go would refuse it.
pub fn decode_secret_value(v: &Value) -> Option<Vec<u8>> {
    driftd_k8s::validation::base64_decode(v.as_str()?).ok()
}

/// Equality of two `[]byte` values (Secret `data`, ConfigMap `binaryData`, `caBundle`) by
/// their decoded bytes; text that does not decode is equal only to itself.
pub fn bytes_equal(desired: &Value, live: &Value) -> bool {
    match (decode_secret_value(desired), decode_secret_value(live)) {
        (Some(a), Some(b)) => a == b,
        _ => desired == live,
    }
}

/// The desired object as kube-apiserver would store it where that matters for comparison:
/// a Secret's `stringData` is folded into `data` (base64), `stringData` winning on
/// conflicts, as the Secret REST strategy does (it never stores `stringData`).
pub fn desired_as_stored(kind: &str, desired: &Value) -> Value {
    let mut out = desired.clone();
    if kind == "Secret" {
        super::secret::fold_string_data(&mut out);
    }
    out
}

/// Removes `creationTimestamp: null` from every ObjectMeta of a desired object: the encoder's
/// zero time, which `kubectl create --dry-run=client -o yaml` writes into manifests, is not
/// something anyone declares.
pub fn drop_null_creation_timestamps(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                if meta.get("creationTimestamp") == Some(&Value::Null) {
                    meta.remove("creationTimestamp");
                }
            }
            m.values_mut().for_each(drop_null_creation_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_creation_timestamps),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quantity_fields_are_recognised_by_path() {
        let c = [
            "spec",
            "template",
            "spec",
            "containers",
            "resources",
            "limits",
            "cpu",
        ];
        assert!(is_quantity_field("Deployment", &c));
        assert!(is_quantity_field(
            "PersistentVolumeClaim",
            &["spec", "resources", "requests", "storage"]
        ));
        assert!(is_quantity_field(
            "ResourceQuota",
            &["spec", "hard", "pods"]
        ));
        assert!(is_quantity_field(
            "HorizontalPodAutoscaler",
            &["spec", "metrics", "resource", "target", "averageValue"]
        ));
        assert!(!is_quantity_field(
            "HorizontalPodAutoscaler",
            &[
                "spec",
                "metrics",
                "resource",
                "target",
                "averageUtilization"
            ]
        ));
        assert!(!is_quantity_field(
            "Service",
            &["spec", "ports", "targetPort"]
        ));
    }

    #[test]
    fn numbers_and_strings_keep_their_type_outside_quantities() {
        assert!(scalars_equal(&json!(1), &json!(1.0)));
        assert!(!scalars_equal(&json!(8080), &json!("8080")));
        assert!(quantities_equal(&json!(1), &json!("1")));
        assert!(quantities_equal(&json!(0.5), &json!("500m")));
        assert!(quantities_equal(&json!("1Gi"), &json!("1024Mi")));
        assert!(!quantities_equal(&json!("1"), &json!("2")));
    }

    #[test]
    fn string_data_folds_into_base64_data() {
        let d = json!({"kind":"Secret","data":{"a":"eA=="},"stringData":{"b":"pw","a":"y"}});
        let s = desired_as_stored("Secret", &d);
        assert_eq!(s["data"], json!({"a":"eQ==","b":"cHc="}));
        assert!(s.get("stringData").is_none());
        assert!(bytes_equal(&json!("cHc="), &json!("cHc=")));
        assert!(!bytes_equal(&json!("cHc="), &json!("cQ==")));
    }
}
