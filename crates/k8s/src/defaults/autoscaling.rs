//! autoscaling (`pkg/apis/autoscaling/v1/defaults.go`, `pkg/apis/autoscaling/v2/defaults.go`):
//! HorizontalPodAutoscaler.

use serde_json::{json, Value};

use super::apps::spec_of;
use super::fields::{child, default_ptr, for_each_item, map, quantity_field};

pub(super) fn hpa(object: &mut Value, version: &str) {
    let Some(spec) = spec_of(object) else { return };
    default_ptr(spec, "minReplicas", json!(1));
    if version != "v2" {
        return;
    }
    let empty = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    for_each_item(spec.get_mut("metrics"), |metric| {
        if let Some(metric) = map(metric) {
            for source in metric.values_mut().filter_map(map) {
                if let Some(t) = source.get_mut("target").and_then(map) {
                    quantity_field(t, "value");
                    quantity_field(t, "averageValue");
                }
            }
        }
    });
    // SetDefaults_HorizontalPodAutoscalerBehavior: only when behavior is given.
    if let Some(b) = spec.get_mut("behavior").and_then(map) {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}
            ]
        });
        let down = json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        });
        for (key, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let Some(rules) = map(child(b, key)) else {
                continue;
            };
            for (k, v) in defaults.as_object().into_iter().flatten() {
                default_ptr(rules, k, v.clone());
            }
        }
    }
}
