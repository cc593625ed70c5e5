//! Metrics between the two versions: the v1 MetricSpec and MetricStatus of the round-trip
//! annotations (`autoscaling/v1` API types, fields in their Go order) and the v2 ones kube
//! converts them to and from (`Convert_v1_*MetricSource_To_autoscaling_*` and back, in
//! `pkg/apis/autoscaling/v1/conversion.go`). A non-pointer Quantity of v1 is written even
//! when zero ("0"), and read back as a set value.

use serde_json::{json, Map, Value};

use super::{canonical, field, object, present, quantity_or_zero, sub, text};

/// A v1 MetricSpec (from the annotation) as the v2 one kube converts it to.
pub(super) fn metric_spec_from_v1(m: &Map<String, Value>) -> Value {
    let identifier = |s: &Map<String, Value>, name: &str, selector: &str| {
        object(vec![
            ("name", Some(text(s, name))),
            ("selector", field(s, selector).cloned()),
        ])
    };
    let resource_target = |s: &Map<String, Value>| {
        let utilization = field(s, "targetAverageUtilization").cloned();
        let kind = if utilization.is_some() {
            "Utilization"
        } else {
            "AverageValue"
        };
        object(vec![
            ("type", Some(json!(kind))),
            (
                "averageValue",
                field(s, "targetAverageValue").map(canonical),
            ),
            ("averageUtilization", utilization),
        ])
    };
    let mut out = vec![("type", Some(text(m, "type")))];
    if let Some(s) = sub(m, "object") {
        let average = field(s, "averageValue").map(canonical);
        let kind = if average.is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        out.push((
            "object",
            Some(object(vec![
                ("describedObject", Some(reference(sub(s, "target")))),
                (
                    "target",
                    Some(object(vec![
                        ("type", Some(json!(kind))),
                        ("value", Some(quantity_or_zero(field(s, "targetValue")))),
                        ("averageValue", average),
                    ])),
                ),
                ("metric", Some(identifier(s, "metricName", "selector"))),
            ])),
        ));
    }
    if let Some(s) = sub(m, "pods") {
        out.push((
            "pods",
            Some(object(vec![
                ("metric", Some(identifier(s, "metricName", "selector"))),
                (
                    "target",
                    Some(json!({"type": "AverageValue",
                        "averageValue": quantity_or_zero(field(s, "targetAverageValue"))})),
                ),
            ])),
        ));
    }
    if let Some(s) = sub(m, "resource") {
        out.push((
            "resource",
            Some(object(vec![
                ("name", Some(text(s, "name"))),
                ("target", Some(resource_target(s))),
            ])),
        ));
    }
    if let Some(s) = sub(m, "containerResource") {
        out.push((
            "containerResource",
            Some(object(vec![
                ("name", Some(text(s, "name"))),
                ("target", Some(resource_target(s))),
                ("container", Some(text(s, "container"))),
            ])),
        ));
    }
    if let Some(s) = sub(m, "external") {
        let value = field(s, "targetValue").map(canonical);
        let kind = if value.is_some() {
            "Value"
        } else {
            "AverageValue"
        };
        out.push((
            "external",
            Some(object(vec![
                (
                    "metric",
                    Some(identifier(s, "metricName", "metricSelector")),
                ),
                (
                    "target",
                    Some(object(vec![
                        ("type", Some(json!(kind))),
                        ("value", value),
                        (
                            "averageValue",
                            field(s, "targetAverageValue").map(canonical),
                        ),
                    ])),
                ),
            ])),
        ));
    }
    object(out)
}

/// A v2 MetricSpec as the v1 one the annotation holds (fields in the v1 types' order).
pub(super) fn metric_spec_to_v1(m: &Value) -> Value {
    let get = |v: &Value, p: &str| present(v.pointer(p)).cloned();
    let mut out = vec![("type", Some(json!(m["type"].as_str().unwrap_or(""))))];
    if let Some(s) = present(m.get("object")) {
        out.push((
            "object",
            Some(object(vec![
                ("target", Some(reference(s["describedObject"].as_object()))),
                (
                    "metricName",
                    Some(json!(s["metric"]["name"].as_str().unwrap_or(""))),
                ),
                (
                    "targetValue",
                    Some(quantity_or_zero(get(s, "/target/value").as_ref())),
                ),
                ("selector", get(s, "/metric/selector")),
                ("averageValue", get(s, "/target/averageValue")),
            ])),
        ));
    }
    if let Some(s) = present(m.get("pods")) {
        out.push((
            "pods",
            Some(object(vec![
                (
                    "metricName",
                    Some(json!(s["metric"]["name"].as_str().unwrap_or(""))),
                ),
                (
                    "targetAverageValue",
                    Some(quantity_or_zero(get(s, "/target/averageValue").as_ref())),
                ),
                ("selector", get(s, "/metric/selector")),
            ])),
        ));
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(s) = present(m.get(key)) {
            let mut fields = vec![
                ("name", Some(json!(s["name"].as_str().unwrap_or("")))),
                (
                    "targetAverageUtilization",
                    get(s, "/target/averageUtilization"),
                ),
                ("targetAverageValue", get(s, "/target/averageValue")),
            ];
            if container {
                fields.push((
                    "container",
                    Some(json!(s["container"].as_str().unwrap_or(""))),
                ));
            }
            out.push((key, Some(object(fields))));
        }
    }
    if let Some(s) = present(m.get("external")) {
        out.push((
            "external",
            Some(object(vec![
                (
                    "metricName",
                    Some(json!(s["metric"]["name"].as_str().unwrap_or(""))),
                ),
                ("metricSelector", get(s, "/metric/selector")),
                ("targetValue", get(s, "/target/value")),
                ("targetAverageValue", get(s, "/target/averageValue")),
            ])),
        ));
    }
    object(out)
}

/// A CrossVersionObjectReference (one shape in both versions): kind, name, apiVersion.
fn reference(r: Option<&Map<String, Value>>) -> Value {
    let empty = Map::new();
    let r = r.unwrap_or(&empty);
    object(vec![
        ("kind", Some(text(r, "kind"))),
        ("name", Some(text(r, "name"))),
        (
            "apiVersion",
            field(r, "apiVersion")
                .filter(|v| v.as_str() != Some(""))
                .cloned(),
        ),
    ])
}

/// A v1 MetricStatus (from the annotation) as the v2 one kube converts it to.
pub(super) fn metric_status_from_v1(m: &Map<String, Value>) -> Value {
    let identifier = |s: &Map<String, Value>, selector: &str| {
        object(vec![
            ("name", Some(text(s, "metricName"))),
            ("selector", field(s, selector).cloned()),
        ])
    };
    let resource_current = |s: &Map<String, Value>| {
        object(vec![
            (
                "averageValue",
                Some(quantity_or_zero(field(s, "currentAverageValue"))),
            ),
            (
                "averageUtilization",
                field(s, "currentAverageUtilization").cloned(),
            ),
        ])
    };
    let mut out = vec![("type", Some(text(m, "type")))];
    if let Some(s) = sub(m, "object") {
        out.push((
            "object",
            Some(object(vec![
                ("metric", Some(identifier(s, "selector"))),
                (
                    "current",
                    Some(object(vec![
                        ("value", Some(quantity_or_zero(field(s, "currentValue")))),
                        ("averageValue", field(s, "averageValue").map(canonical)),
                    ])),
                ),
                ("describedObject", Some(reference(sub(s, "target")))),
            ])),
        ));
    }
    if let Some(s) = sub(m, "pods") {
        out.push((
            "pods",
            Some(json!({
                "metric": identifier(s, "selector"),
                "current": {"averageValue": quantity_or_zero(field(s, "currentAverageValue"))},
            })),
        ));
    }
    if let Some(s) = sub(m, "resource") {
        out.push((
            "resource",
            Some(json!({"name": text(s, "name"), "current": resource_current(s)})),
        ));
    }
    if let Some(s) = sub(m, "containerResource") {
        out.push((
            "containerResource",
            Some(
                json!({"name": text(s, "name"), "current": resource_current(s),
                "container": text(s, "container")}),
            ),
        ));
    }
    if let Some(s) = sub(m, "external") {
        out.push((
            "external",
            Some(object(vec![
                ("metric", Some(identifier(s, "metricSelector"))),
                (
                    "current",
                    Some(object(vec![
                        ("value", Some(quantity_or_zero(field(s, "currentValue")))),
                        (
                            "averageValue",
                            field(s, "currentAverageValue").map(canonical),
                        ),
                    ])),
                ),
            ])),
        ));
    }
    object(out)
}

/// A v2 MetricStatus as the v1 one the annotation holds (fields in the v1 types' order).
pub(super) fn metric_status_to_v1(m: &Value) -> Value {
    let get = |v: &Value, p: &str| present(v.pointer(p)).cloned();
    let name = |s: &Value| json!(s["metric"]["name"].as_str().unwrap_or(""));
    let mut out = vec![("type", Some(json!(m["type"].as_str().unwrap_or(""))))];
    if let Some(s) = present(m.get("object")) {
        out.push((
            "object",
            Some(object(vec![
                ("target", Some(reference(s["describedObject"].as_object()))),
                ("metricName", Some(name(s))),
                (
                    "currentValue",
                    Some(quantity_or_zero(get(s, "/current/value").as_ref())),
                ),
                ("selector", get(s, "/metric/selector")),
                ("averageValue", get(s, "/current/averageValue")),
            ])),
        ));
    }
    if let Some(s) = present(m.get("pods")) {
        out.push((
            "pods",
            Some(object(vec![
                ("metricName", Some(name(s))),
                (
                    "currentAverageValue",
                    Some(quantity_or_zero(get(s, "/current/averageValue").as_ref())),
                ),
                ("selector", get(s, "/metric/selector")),
            ])),
        ));
    }
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(s) = present(m.get(key)) {
            let mut fields = vec![
                ("name", Some(json!(s["name"].as_str().unwrap_or("")))),
                (
                    "currentAverageUtilization",
                    get(s, "/current/averageUtilization"),
                ),
                (
                    "currentAverageValue",
                    Some(quantity_or_zero(get(s, "/current/averageValue").as_ref())),
                ),
            ];
            if container {
                fields.push((
                    "container",
                    Some(json!(s["container"].as_str().unwrap_or(""))),
                ));
            }
            out.push((key, Some(object(fields))));
        }
    }
    if let Some(s) = present(m.get("external")) {
        out.push((
            "external",
            Some(object(vec![
                ("metricName", Some(name(s))),
                ("metricSelector", get(s, "/metric/selector")),
                (
                    "currentValue",
                    Some(quantity_or_zero(get(s, "/current/value").as_ref())),
                ),
                ("currentAverageValue", get(s, "/current/averageValue")),
            ])),
        ));
    }
    object(out)
}
