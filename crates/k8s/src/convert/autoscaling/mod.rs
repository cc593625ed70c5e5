//! HorizontalPodAutoscaler between autoscaling/v1 and autoscaling/v2, kube-apiserver's
//! storage version, as `pkg/apis/autoscaling/v1/conversion.go` converts through the
//! internal type (v2 converts to and from the internal type field for field, dropping the
//! round-trip annotations: `pkg/apis/autoscaling/v2/conversion.go`).
//!
//! autoscaling/v1 has one field for what v2 says with metrics: `targetCPUUtilizationPercentage`,
//! a CPU `Utilization` Resource metric. Everything else v2 holds (other metrics, `behavior`,
//! current metrics, conditions) travels in v1 as JSON in `autoscaling.alpha.kubernetes.io/*`
//! annotations, written when v1 is read and taken back (then dropped) when v1 is written.
//! A v1 object with no metric at all gets the CPU 80% metric the v1 controller used to
//! apply implicitly (`autoscaling.DefaultCPUUtilization`).
//!
//! Annotation values are written as Go's `encoding/json` writes them: fields in the Go
//! struct's declaration order (the v1 API types for metrics, statuses and conditions; the
//! internal type, which has no JSON tags, for `behavior`), `<`, `>` and `&` escaped. They
//! are read as Go reads them (field names matched case-insensitively) and, as in v1.32, an
//! annotation that does not decode is ignored rather than failing the request.

use serde_json::{json, Map, Value};

use crate::quantity;

mod metrics;

use metrics::{metric_spec_from_v1, metric_spec_to_v1, metric_status_from_v1, metric_status_to_v1};

const METRIC_SPECS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const METRIC_STATUSES: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// `autoscaling.DropRoundTripHorizontalPodAutoscalerAnnotations` removes these.
const ROUND_TRIP: [&str; 4] = [METRIC_SPECS, METRIC_STATUSES, CONDITIONS, BEHAVIOR];

/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// An autoscaling/v1 HorizontalPodAutoscaler as kube-apiserver stores it in autoscaling/v2
/// (v1 -> internal -> v2). Defaults are not applied: kube applies v1's before and v2's
/// when it reads the stored object.
pub fn hpa_v1_to_v2(v1: &Value) -> Value {
    let annotations = annotations_of(v1);
    let decoded = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
    };
    let mut out = without(v1, &["spec", "status"]);
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    drop_round_trip(&mut out);

    let spec_in = v1.get("spec").unwrap_or(&Value::Null);
    let mut spec = Map::new();
    copy(
        spec_in,
        &mut spec,
        &["scaleTargetRef", "minReplicas", "maxReplicas"],
    );
    let mut metrics: Vec<Value> = Vec::new();
    if let Some(target) = present(spec_in.get("targetCPUUtilizationPercentage")) {
        metrics.push(cpu_utilization(target.clone()));
    }
    // The annotation's metrics come first, the CPU target (if any) after them.
    if let Some(other) = decoded(METRIC_SPECS).and_then(list_of_objects) {
        let mut all: Vec<Value> = other.iter().map(metric_spec_from_v1).collect();
        all.append(&mut metrics);
        metrics = all;
    }
    if let Some(behavior) = decoded(BEHAVIOR).and_then(|v| behavior_from_internal(&v)) {
        spec.insert("behavior".into(), behavior);
    }
    if metrics.is_empty() {
        metrics.push(cpu_utilization(json!(DEFAULT_CPU_UTILIZATION)));
    }
    spec.insert("metrics".into(), Value::Array(metrics));
    // The spec's fields in the v2 type's order, as the encoder writes them.
    out.insert("spec".into(), Value::Object(reorder(spec, SPEC_V2_ORDER)));

    let status_in = v1.get("status").unwrap_or(&Value::Null);
    let mut status = Map::new();
    copy(
        status_in,
        &mut status,
        &["observedGeneration", "lastScaleTime"],
    );
    let current_replicas = int_or_zero(status_in.get("currentReplicas"));
    if current_replicas != 0 {
        // omitempty in v2.
        status.insert("currentReplicas".into(), json!(current_replicas));
    }
    status.insert(
        "desiredReplicas".into(),
        json!(int_or_zero(status_in.get("desiredReplicas"))),
    );
    let mut current = present(status_in.get("currentCPUUtilizationPercentage")).map(|u| {
        vec![json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}})]
    });
    // The annotation's statuses carry more than the CPU percentage: they replace it.
    if let Some(statuses) = decoded(METRIC_STATUSES).and_then(list_of_objects) {
        current = Some(statuses.iter().map(metric_status_from_v1).collect());
    }
    // `currentMetrics` has no omitempty in v2: a nil list is written as null.
    status.insert(
        "currentMetrics".into(),
        current.map_or(Value::Null, Value::Array),
    );
    if let Some(conditions) = decoded(CONDITIONS).and_then(list_of_objects) {
        if !conditions.is_empty() {
            status.insert(
                "conditions".into(),
                Value::Array(conditions.iter().map(condition).collect()),
            );
        }
    }
    out.insert("status".into(), Value::Object(status));
    Value::Object(out)
}

/// An autoscaling/v2 HorizontalPodAutoscaler as kube-apiserver serves it in autoscaling/v1
/// (v2 -> internal -> v1).
pub fn hpa_v2_to_v1(v2: &Value) -> Value {
    let mut out = without(v2, &["spec", "status"]);
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    drop_round_trip(&mut out);

    let spec_in = v2.get("spec").unwrap_or(&Value::Null);
    let metrics: &[Value] = spec_in
        .get("metrics")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut spec = Map::new();
    copy(
        spec_in,
        &mut spec,
        &["scaleTargetRef", "minReplicas", "maxReplicas"],
    );
    // The first CPU Resource metric with a utilization target is v1's field.
    if let Some(u) = metrics.iter().find_map(cpu_target_utilization) {
        spec.insert("targetCPUUtilizationPercentage".into(), u.clone());
    }
    out.insert("spec".into(), Value::Object(spec));
    let other: Vec<Value> = metrics
        .iter()
        .filter(|m| cpu_target_utilization(m).is_none())
        .map(metric_spec_to_v1)
        .collect();

    let status_in = v2.get("status").unwrap_or(&Value::Null);
    let current: &[Value] = status_in
        .get("currentMetrics")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let conditions: &[Value] = status_in
        .get("conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut status = Map::new();
    copy(
        status_in,
        &mut status,
        &["observedGeneration", "lastScaleTime"],
    );
    // Neither is omitempty in v1.
    status.insert(
        "currentReplicas".into(),
        json!(int_or_zero(status_in.get("currentReplicas"))),
    );
    status.insert(
        "desiredReplicas".into(),
        json!(int_or_zero(status_in.get("desiredReplicas"))),
    );
    // The last CPU Resource status with a utilization wins.
    if let Some(u) = current.iter().rev().find_map(|m| {
        (m.get("type").and_then(Value::as_str) == Some("Resource"))
            .then(|| m.get("resource"))
            .flatten()
            .filter(|r| r.get("name").and_then(Value::as_str) == Some("cpu"))
            .and_then(|r| present(r.pointer("/current/averageUtilization")))
    }) {
        status.insert("currentCPUUtilizationPercentage".into(), u.clone());
    }
    out.insert("status".into(), Value::Object(status));

    let mut produced: Vec<(&str, String)> = Vec::new();
    if !other.is_empty() {
        produced.push((METRIC_SPECS, go_json(&Value::Array(other))));
    }
    if !current.is_empty() {
        let statuses: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        produced.push((METRIC_STATUSES, go_json(&Value::Array(statuses))));
    }
    if let Some(behavior) = present(spec_in.get("behavior")) {
        produced.push((BEHAVIOR, go_json(&behavior_to_internal(behavior))));
    }
    if !conditions.is_empty() {
        let conditions: Vec<Value> = conditions
            .iter()
            .filter_map(Value::as_object)
            .map(condition)
            .collect();
        produced.push((CONDITIONS, go_json(&Value::Array(conditions))));
    }
    if !produced.is_empty() {
        let meta = out
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(meta) = meta {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if !annotations.is_object() {
                *annotations = json!({});
            }
            let a = annotations.as_object_mut().expect("made an object above");
            for (k, v) in produced {
                a.insert(k.into(), json!(v));
            }
            // Go writes a map's keys sorted.
            a.sort_keys();
        }
    }
    Value::Object(out)
}

/// The v2 spec's fields in the Go type's order.
const SPEC_V2_ORDER: &[&str] = &[
    "scaleTargetRef",
    "minReplicas",
    "maxReplicas",
    "metrics",
    "behavior",
];

fn reorder(mut m: Map<String, Value>, order: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for k in order {
        if let Some(v) = m.remove(*k) {
            out.insert((*k).into(), v);
        }
    }
    out.extend(m);
    out
}

fn annotations_of(object: &Value) -> Option<&Map<String, Value>> {
    object.pointer("/metadata/annotations")?.as_object()
}

/// `object`'s fields but `keys`.
fn without(object: &Value, keys: &[&str]) -> Map<String, Value> {
    object
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Removes the round-trip annotations, and `annotations` with them when nothing is left
/// (an empty map is omitted by the encoder).
fn drop_round_trip(out: &mut Map<String, Value>) {
    let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return;
    };
    for k in ROUND_TRIP {
        a.remove(k);
    }
    if a.is_empty() {
        meta.remove("annotations");
    }
}

/// `v` unless missing or null (a Go pointer that is set).
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn copy(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = present(from.get(*k)) {
            to.insert((*k).into(), v.clone());
        }
    }
}

fn int_or_zero(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

fn cpu_utilization(utilization: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// The utilization target of a v2 CPU Resource metric, if it has one.
fn cpu_target_utilization(m: &Value) -> Option<&Value> {
    if m.get("type").and_then(Value::as_str) != Some("Resource") {
        return None;
    }
    let r = present(m.get("resource"))?;
    if r.get("name").and_then(Value::as_str) != Some("cpu") {
        return None;
    }
    present(r.pointer("/target/averageUtilization"))
}

/// A decoded annotation that is a list of JSON objects (what the Go decoder accepts for a
/// list of structs; null decodes to an empty list).
fn list_of_objects(v: Value) -> Option<Vec<Map<String, Value>>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// A field of a decoded Go struct: JSON names match case-insensitively (an exact match
/// first), and null is a zero value.
fn field<'a>(m: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    let v = m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    });
    present(v)
}

fn sub<'a>(m: &'a Map<String, Value>, name: &str) -> Option<&'a Map<String, Value>> {
    field(m, name).and_then(Value::as_object)
}

fn text(m: &Map<String, Value>, name: &str) -> Value {
    json!(field(m, name).and_then(Value::as_str).unwrap_or(""))
}

/// A quantity as the encoder writes it: canonical, "0" for an unset non-pointer field.
fn quantity_or_zero(v: Option<&Value>) -> Value {
    v.map_or(json!("0"), canonical)
}

fn canonical(v: &Value) -> Value {
    quantity::canonicalize_value(v).map_or_else(|| v.clone(), Value::String)
}

/// Builds a JSON object from `(name, value)` pairs, leaving out the `None`s (omitempty).
fn object(fields: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect(),
    )
}

/// A HorizontalPodAutoscalerCondition (one shape in both versions), in the Go type's
/// field order; `lastTransitionTime` is a struct the encoder writes even when zero (null).
fn condition(c: &Map<String, Value>) -> Value {
    let non_empty = |k: &str| field(c, k).filter(|v| v.as_str() != Some("")).cloned();
    object(vec![
        ("type", Some(text(c, "type"))),
        ("status", Some(text(c, "status"))),
        (
            "lastTransitionTime",
            Some(
                field(c, "lastTransitionTime")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
        ),
        ("reason", non_empty("reason")),
        ("message", non_empty("message")),
    ])
}

// ---------------------------------------------------------------------------------------
// Behavior, which the annotation holds as the internal type (Go field names)

/// v2 `behavior` as Go encodes the internal HorizontalPodAutoscalerBehavior: no JSON tags,
/// so Go field names, and nil pointers and slices written as null.
fn behavior_to_internal(b: &Value) -> Value {
    let rules = |r: Option<&Value>| match present(r) {
        None => Value::Null,
        Some(r) => {
            let policies = match present(r.get("policies")).and_then(Value::as_array) {
                None => Value::Null,
                Some(ps) => Value::Array(
                    ps.iter()
                        .map(|p| {
                            json!({
                                "Type": p["type"].as_str().unwrap_or(""),
                                "Value": p["value"].as_i64().unwrap_or(0),
                                "PeriodSeconds": p["periodSeconds"].as_i64().unwrap_or(0),
                            })
                        })
                        .collect(),
                ),
            };
            json!({
                "StabilizationWindowSeconds": present(r.get("stabilizationWindowSeconds")).cloned().unwrap_or(Value::Null),
                "SelectPolicy": present(r.get("selectPolicy")).cloned().unwrap_or(Value::Null),
                "Policies": policies,
            })
        }
    };
    json!({"ScaleUp": rules(b.get("scaleUp")), "ScaleDown": rules(b.get("scaleDown"))})
}

/// The behavior annotation decoded as Go decodes it into the internal type; `None` when it
/// does not decode (a value of the wrong JSON type) or holds neither direction.
fn behavior_from_internal(v: &Value) -> Option<Value> {
    fn int(v: Option<&Value>) -> Result<Option<Value>, ()> {
        match v {
            None => Ok(None),
            Some(n) if n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => Ok(Some(n.clone())),
            Some(_) => Err(()),
        }
    }
    fn string(v: Option<&Value>) -> Result<Option<Value>, ()> {
        match v {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(json!(s))),
            Some(_) => Err(()),
        }
    }
    fn rules(v: Option<&Value>) -> Result<Option<Value>, ()> {
        let Some(v) = v else { return Ok(None) };
        let r = v.as_object().ok_or(())?;
        let policies = match field(r, "Policies") {
            None => None,
            Some(Value::Array(ps)) => {
                let mut out = Vec::new();
                for p in ps {
                    let p = p.as_object().ok_or(())?;
                    out.push(json!({
                        "type": string(field(p, "Type"))?.unwrap_or(json!("")),
                        "value": int(field(p, "Value"))?.unwrap_or(json!(0)),
                        "periodSeconds": int(field(p, "PeriodSeconds"))?.unwrap_or(json!(0)),
                    }));
                }
                // omitempty in v2: an empty list is not written.
                (!out.is_empty()).then_some(Value::Array(out))
            }
            Some(_) => return Err(()),
        };
        Ok(Some(object(vec![
            (
                "stabilizationWindowSeconds",
                int(field(r, "StabilizationWindowSeconds"))?,
            ),
            ("selectPolicy", string(field(r, "SelectPolicy"))?),
            ("policies", policies),
        ])))
    }
    let b = v.as_object()?;
    let up = rules(field(b, "ScaleUp")).ok()?;
    let down = rules(field(b, "ScaleDown")).ok()?;
    if up.is_none() && down.is_none() {
        return None;
    }
    Some(object(vec![("scaleUp", up), ("scaleDown", down)]))
}

/// JSON as Go's `json.Marshal` writes it: compact, with `<`, `>`, `&`, U+2028 and U+2029
/// escaped (they can only occur inside strings, so replacing them in the output is exact).
fn go_json(v: &Value) -> String {
    serde_json::to_string(v)
        .expect("JSON values serialize")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests;
