//! DefaultTolerationSeconds (`plugin/pkg/admission/defaulttolerationseconds/admission.go`):
//! a Pod gets `not-ready` and `unreachable` NoExecute tolerations for 300 s, each unless it
//! already tolerates that taint (a toleration with the same key or an empty key, and the
//! NoExecute effect or an empty effect). The items are appended, after the pod's own.

use serde_json::{json, Value};

/// `--default-not-ready-toleration-seconds` / `--default-unreachable-toleration-seconds`.
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;
/// `v1.TaintNodeNotReady` and `v1.TaintNodeUnreachable`, in the order the plugin appends.
pub(super) const KEYS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// Whether a pod with tolerations `tolerations` tolerates the NoExecute taint `key`, as
/// DefaultTolerationSeconds judges it.
pub(super) fn tolerates(tolerations: &[Value], key: &str) -> bool {
    tolerations.iter().any(|t| {
        let k = t.get("key").and_then(Value::as_str).unwrap_or("");
        let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
        (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
    })
}

/// The toleration the plugin appends for `key`.
pub(super) fn default_toleration(key: &str) -> Value {
    json!({"key": key, "operator": "Exists", "effect": "NoExecute",
        "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
}

pub(super) fn mutate(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Value::Array(list) = tolerations else {
        return;
    };
    for key in KEYS {
        if !tolerates(list, key) {
            list.push(default_toleration(key));
        }
    }
}
