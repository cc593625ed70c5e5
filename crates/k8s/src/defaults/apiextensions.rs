//! apiextensions.k8s.io/v1
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`):
//! CustomResourceDefinition.

use serde_json::{json, Value};

use super::apps::spec_of;
use super::fields::{declared_status, default_ptr, default_str, map};

pub(super) fn crd(object: &mut Value) {
    let storage = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v.get("name").filter(|n| n.is_string()))
        .cloned();
    // SetDefaults_CustomResourceDefinition: the storage version is the first stored one.
    if let (Some(status), Some(storage)) = (map(object).and_then(declared_status), storage) {
        let stored = status.get("storedVersions").and_then(Value::as_array);
        if stored.is_none_or(Vec::is_empty) {
            status.insert("storedVersions".into(), json!([storage]));
        }
    }
    let Some(spec) = spec_of(object) else { return };
    if let Some(names) = spec.get_mut("names").and_then(map) {
        if let Some(kind) = names
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            default_str(names, "singular", &kind.to_lowercase());
            if !kind.is_empty() {
                default_str(names, "listKind", &format!("{kind}List"));
            }
        }
    }
    default_ptr(spec, "conversion", json!({"strategy": "None"}));
    if let Some(svc) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(map)
    {
        default_ptr(svc, "port", json!(443));
    }
}
