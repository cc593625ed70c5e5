//! Go's notion of an unset field, over JSON: a missing key, `null`, or the zero value of a
//! non-pointer field. The defaulting functions compare with these, so a manifest that spells
//! a zero value (`replicas: 0` on a pointer field) keeps it, as kube-apiserver does.

use serde_json::{json, Map, Value};

use crate::quantity;

/// The object `v` as a map, if it is one.
pub fn map(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

/// The object at `key`, created as `{}` if missing or null (a non-pointer struct field,
/// which always exists once decoded).
pub fn child<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Value {
    let slot = m.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = json!({});
    }
    slot
}

/// Sets `key` if it is missing or null (a Go pointer field).
pub fn default_ptr(m: &mut Map<String, Value>, key: &str, value: Value) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.to_string(), value);
        }
        _ => {}
    }
}

/// Sets `key` if missing, null or "" (a Go string field compared with "").
pub fn default_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    let unset = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    if unset {
        m.insert(key.to_string(), json!(value));
    }
}

/// Sets `key` if missing, null or 0 (a Go int field compared with 0).
pub fn default_int(m: &mut Map<String, Value>, key: &str, value: i64) {
    let unset = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(v) => v.as_i64() == Some(0),
    };
    if unset {
        m.insert(key.to_string(), json!(value));
    }
}

/// Sets `key` if missing, null or an empty list (a Go slice compared with `len(...) == 0`).
pub fn default_list(m: &mut Map<String, Value>, key: &str, value: Value) {
    let unset = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if unset {
        m.insert(key.to_string(), value);
    }
}

/// Calls `f` on every item of the list `v`, if it is a list.
pub fn for_each_item(v: Option<&mut Value>, mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = v {
        items.iter_mut().for_each(&mut f);
    }
}

/// Whether the `labels` at `metadata` are missing or empty (Go's `len(obj.Labels) == 0`).
pub fn no_labels(object: &Value) -> bool {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
}

/// SetDefaults_ResourceList: every quantity rounded up to milli and stored canonically.
pub(super) fn resource_list(v: Option<&mut Value>) {
    if let Some(Value::Object(list)) = v {
        for q in list.values_mut() {
            if let Some(parsed) = quantity::parse_value(q) {
                *q = json!(parsed.rounded_up_to_milli().canonical());
            }
        }
    }
}

/// A single Quantity field: decoded and re-encoded, so stored canonically.
pub(super) fn quantity_field(m: &mut Map<String, Value>, key: &str) {
    if let Some(q) = m.get_mut(key) {
        if let Some(parsed) = quantity::parse_value(q) {
            *q = json!(parsed.canonical());
        }
    }
}

/// A ResourceRequirements: both lists through SetDefaults_ResourceList.
pub(super) fn resource_requirements(v: Option<&mut Value>) {
    if let Some(r) = v.and_then(map) {
        resource_list(r.get_mut("limits"));
        resource_list(r.get_mut("requests"));
    }
}

/// A `status` the object already carries, for the defaults that sit inside it; `None`
/// when there is none, since defaulting never creates one for a declared object.
pub(super) fn declared_status(m: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    if m.contains_key("status") {
        map(child(m, "status"))
    } else {
        None
    }
}
