//! `meta.k8s.io/v1` Table responses for `kubectl get`'s default output, with the columns
//! kube-apiserver's printers use for the common kinds and NAME/AGE otherwise.

use serde_json::{json, Value};

mod pod;

/// kubectl's `HumanDuration`-style age (`45s`, `3m20s`, `2h`, `5d`).
pub fn human_age(created: Option<&str>) -> String {
    let Some(ts) = created.and_then(|c| c.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - ts.as_second()).max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        format!("{m}m{}s", secs % 60)
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        format!("{h}h{}m", m % 60)
    } else if h < 48 {
        format!("{h}h")
    } else {
        format!("{d}d")
    }
}

fn col(name: &str, ty: &str, format: &str) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": "", "priority": 0})
}

fn i(obj: &Value, ptr: &str) -> i64 {
    obj.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn s<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    obj.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn len(obj: &Value, ptr: &str) -> usize {
    match obj.pointer(ptr) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn columns_and_cells(kind: &str, obj: &Value) -> (Vec<Value>, Vec<Value>) {
    let name = json!(s(obj, "/metadata/name"));
    let age = json!(human_age(
        obj.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
    ));
    match kind {
        "Deployment" => (
            vec![
                col("Name", "string", "name"),
                col("Ready", "string", ""),
                col("Up-to-date", "string", ""),
                col("Available", "string", ""),
                col("Age", "string", ""),
            ],
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    i(obj, "/status/readyReplicas"),
                    i(obj, "/spec/replicas")
                )),
                json!(i(obj, "/status/updatedReplicas")),
                json!(i(obj, "/status/availableReplicas")),
                age,
            ],
        ),
        "ReplicaSet" => (
            vec![
                col("Name", "string", "name"),
                col("Desired", "integer", ""),
                col("Current", "integer", ""),
                col("Ready", "integer", ""),
                col("Age", "string", ""),
            ],
            vec![
                name,
                json!(i(obj, "/spec/replicas")),
                json!(i(obj, "/status/replicas")),
                json!(i(obj, "/status/readyReplicas")),
                age,
            ],
        ),
        "Pod" => {
            let (ready, total, status, restarts) = pod::summary(obj);
            (
                vec![
                    col("Name", "string", "name"),
                    col("Ready", "string", ""),
                    col("Status", "string", ""),
                    col("Restarts", "string", ""),
                    col("Age", "string", ""),
                ],
                vec![
                    name,
                    json!(format!("{ready}/{total}")),
                    json!(status),
                    json!(restarts),
                    age,
                ],
            )
        }
        "Service" => {
            let ports: Vec<String> = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|p| {
                            format!(
                                "{}/{}",
                                i(p, "/port"),
                                p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let ports = if ports.is_empty() {
                "<none>".to_string()
            } else {
                ports.join(",")
            };
            (
                vec![
                    col("Name", "string", "name"),
                    col("Type", "string", ""),
                    col("Cluster-IP", "string", ""),
                    col("External-IP", "string", ""),
                    col("Port(s)", "string", ""),
                    col("Age", "string", ""),
                ],
                vec![
                    name,
                    json!(s(obj, "/spec/type")),
                    json!(s(obj, "/spec/clusterIP")),
                    json!("<none>"),
                    json!(ports),
                    age,
                ],
            )
        }
        "ConfigMap" => (
            vec![
                col("Name", "string", "name"),
                col("Data", "integer", ""),
                col("Age", "string", ""),
            ],
            vec![
                name,
                json!(len(obj, "/data") + len(obj, "/binaryData")),
                age,
            ],
        ),
        "Secret" => (
            vec![
                col("Name", "string", "name"),
                col("Type", "string", ""),
                col("Data", "integer", ""),
                col("Age", "string", ""),
            ],
            vec![name, json!(s(obj, "/type")), json!(len(obj, "/data")), age],
        ),
        "Namespace" => (
            vec![
                col("Name", "string", "name"),
                col("Status", "string", ""),
                col("Age", "string", ""),
            ],
            vec![name, json!(s(obj, "/status/phase")), age],
        ),
        "Event" => {
            // Both shapes: core v1 (involvedObject/message) and events.k8s.io (regarding/note).
            let about = obj
                .get("involvedObject")
                .or_else(|| obj.get("regarding"))
                .cloned()
                .unwrap_or(json!({}));
            let text = obj
                .get("message")
                .or_else(|| obj.get("note"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let last = [
                "/series/lastObservedTime",
                "/lastTimestamp",
                "/deprecatedLastTimestamp",
                "/eventTime",
            ]
            .iter()
            .find_map(|p| obj.pointer(p).and_then(Value::as_str))
            .or_else(|| {
                obj.pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
            });
            let object = format!(
                "{}/{}",
                s(&about, "/kind").to_lowercase(),
                s(&about, "/name")
            );
            (
                vec![
                    col("Last Seen", "string", ""),
                    col("Type", "string", ""),
                    col("Reason", "string", ""),
                    col("Object", "string", ""),
                    col("Message", "string", ""),
                ],
                vec![
                    json!(human_age(last)),
                    json!(s(obj, "/type")),
                    json!(s(obj, "/reason")),
                    json!(object),
                    json!(text),
                ],
            )
        }
        _ => (
            vec![col("Name", "string", "name"), col("Age", "string", "")],
            vec![name, age],
        ),
    }
}

/// Evaluates the simple JSONPaths CRDs use in printer columns (`.spec.size`,
/// `.status.items[0].name`); anything fancier prints as empty.
fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path.trim_start_matches('.').split('.') {
        let (field, index) = match seg.split_once('[') {
            Some((f, rest)) => (f, Some(rest.trim_end_matches(']').parse::<usize>().ok()?)),
            None => (seg, None),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// Columns from a CRD version's `additionalPrinterColumns` (Name first, as kube-apiserver
/// builds them; Age only when listed, or when no columns are given at all).
fn custom_columns_and_cells(defs: &[Value], obj: &Value) -> (Vec<Value>, Vec<Value>) {
    let mut cols = vec![col("Name", "string", "name")];
    let mut cells = vec![json!(s(obj, "/metadata/name"))];
    for d in defs {
        let ty = d.get("type").and_then(Value::as_str).unwrap_or("string");
        let mut c = col(
            d.get("name").and_then(Value::as_str).unwrap_or(""),
            ty,
            d.get("format").and_then(Value::as_str).unwrap_or(""),
        );
        c["priority"] = d.get("priority").cloned().unwrap_or(json!(0));
        c["description"] = d.get("description").cloned().unwrap_or(json!(""));
        cols.push(c);
        let v = d
            .get("jsonPath")
            .and_then(Value::as_str)
            .and_then(|p| json_path(obj, p));
        cells.push(match (ty, v) {
            ("date", Some(Value::String(ts))) => json!(human_age(Some(ts))),
            (_, Some(v)) => v.clone(),
            (_, None) => Value::Null,
        });
    }
    (cols, cells)
}

/// Wraps objects (from a list or a single get) in a Table. `printer_columns` are a CRD's
/// `additionalPrinterColumns` (None for built-in kinds, which get kube-apiserver's own
/// columns). `include` is the `includeObject` query parameter: `None`, `Object` or
/// (default) `Metadata`.
pub fn table_with(
    kind: &str,
    printer_columns: Option<&[Value]>,
    items: &[Value],
    list_meta: Value,
    include: &str,
) -> Value {
    let layout = |o: &Value| match printer_columns {
        Some(defs) if !defs.is_empty() => custom_columns_and_cells(defs, o),
        _ => columns_and_cells(kind, o),
    };
    let mut columns = layout(&json!({})).0;
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let (cols, cells) = layout(o);
            columns = cols;
            let object = match include {
                "None" => Value::Null,
                "Object" => o.clone(),
                _ => json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"].clone()}),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}
