//! `ValidateObjectMeta` on create (apimachinery `pkg/api/validation/objectmeta.go`,
//! `ValidateObjectMetaAccessor` and `validateObjectMetaAccessorWithOptsCommon`; labels from
//! `pkg/apis/meta/v1/validation`), and the ConfigMap and Secret checks of kube's
//! `pkg/apis/core/validation/validation.go` (`ValidateConfigMap`, `ValidateSecret`).
//!
//! Works on the JSON after it decoded into the Go types, so values have their types.

use serde_json::{Map, Value};

use super::names::{is_config_map_key, is_dns1123_label, is_qualified_name, is_valid_label_value};
use super::{BadValue, ErrorType, FieldError, NameRule};

/// `TotalAnnotationSizeLimitB`: keys and values of all annotations together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `core.MaxSecretSize` and `core.MaxConfigMapSize`.
const MAX_DATA_SIZE: usize = 1024 * 1024;

fn strings(v: Option<&Value>) -> impl Iterator<Item = (&String, &str)> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
}

/// The errors of `metadata` (absent: empty) of an object whose name follows `rule`.
/// A `generateName` is checked as a prefix; with a `generateName` and no name the name is
/// not required (kube-apiserver generates it before validating).
pub fn validate_object_meta(
    metadata: Option<&Value>,
    namespaced: bool,
    rule: &NameRule,
) -> Vec<FieldError> {
    let empty = Value::Object(Map::new());
    let meta = metadata.unwrap_or(&empty);
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();

    let generate_name = text("generateName");
    if !generate_name.is_empty() {
        for msg in rule.check(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                msg,
            ));
        }
    }
    let name = text("name");
    if name.is_empty() {
        if generate_name.is_empty() {
            errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for msg in rule.check(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }

    let namespace = text("namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in is_dns1123_label(namespace) {
                errs.push(FieldError::invalid("metadata.namespace", namespace, msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError {
            error_type: ErrorType::Forbidden,
            field: "metadata.namespace".into(),
            value: None,
            detail: "not allowed on this type".into(),
        });
    }

    if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
        if generation < 0 {
            errs.push(FieldError {
                error_type: ErrorType::Invalid,
                field: "metadata.generation".into(),
                value: Some(BadValue::Int(generation)),
                detail: "must be greater than or equal to 0".into(),
            });
        }
    }

    for (key, value) in strings(meta.get("labels")) {
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid("metadata.labels", key, msg));
        }
        for msg in is_valid_label_value(value) {
            errs.push(FieldError::invalid("metadata.labels", value, msg));
        }
    }

    let mut annotations_size = 0;
    for (key, value) in strings(meta.get("annotations")) {
        // A qualified name, except that case does not matter.
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(FieldError::invalid("metadata.annotations", key, msg));
        }
        annotations_size += key.len() + value.len();
    }
    if annotations_size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }

    for finalizer in meta
        .get("finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        for msg in is_qualified_name(finalizer) {
            errs.push(FieldError::invalid("metadata.finalizers", finalizer, msg));
        }
    }
    errs
}

/// Decoded size of a `[]byte` value (base64 text); 0 if it does not decode.
fn bytes_len(v: &str) -> usize {
    super::go::base64_decode(v).map_or(0, |b| b.len())
}

/// The kind-specific checks ported besides metadata: keys and total size of a ConfigMap's
/// `data`/`binaryData` and of a Secret's `data` (with `stringData` folded in, as the
/// conversion does before validation).
pub fn validate_kind_fields(group: &str, kind: &str, object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match (group, kind) {
        ("", "ConfigMap") => {
            let data = object.get("data").and_then(Value::as_object);
            let binary = object.get("binaryData").and_then(Value::as_object);
            let mut total = 0;
            for (key, value) in data.into_iter().flatten() {
                let path = format!("data[{key}]");
                for msg in is_config_map_key(key) {
                    errs.push(FieldError::invalid(&path, key, msg));
                }
                if binary.is_some_and(|b| b.contains_key(key)) {
                    errs.push(FieldError::invalid(
                        &path,
                        key,
                        "duplicate of key present in binaryData",
                    ));
                }
                total += value.as_str().map_or(0, str::len);
            }
            for (key, value) in binary.into_iter().flatten() {
                for msg in is_config_map_key(key) {
                    errs.push(FieldError::invalid(&format!("binaryData[{key}]"), key, msg));
                }
                total += value.as_str().map_or(0, bytes_len);
            }
            if total > MAX_DATA_SIZE {
                errs.push(FieldError::too_long("", MAX_DATA_SIZE));
            }
        }
        ("", "Secret") => {
            let mut sizes: Vec<(&String, usize)> = Vec::new();
            for (key, value) in strings(object.get("data")) {
                sizes.push((key, bytes_len(value)));
            }
            for (key, value) in strings(object.get("stringData")) {
                match sizes.iter_mut().find(|(k, _)| *k == key) {
                    Some(entry) => entry.1 = value.len(),
                    None => sizes.push((key, value.len())),
                }
            }
            for (key, _) in &sizes {
                for msg in is_config_map_key(key) {
                    errs.push(FieldError::invalid(&format!("data[{key}]"), key, msg));
                }
            }
            if sizes.iter().map(|(_, n)| n).sum::<usize>() > MAX_DATA_SIZE {
                errs.push(FieldError::too_long("data", MAX_DATA_SIZE));
            }
        }
        _ => {}
    }
    errs
}
