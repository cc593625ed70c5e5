//! What kube-apiserver refuses on create, with its own words: the request body must decode
//! into the kind's Go type (a `400 BadRequest` otherwise) and pass the kind's validation
//! (a `422 Invalid` otherwise). `driftd commit`/`check` refuse the same objects before
//! anything is stored, and the simulator answers with the same errors, from these functions.
//!
//! Ported: `ValidateObjectMeta` (name or generateName per kind, namespace, labels,
//! annotations and their 256 KiB total, finalizers, generation), field types and integer
//! ranges of every built-in kind (by decoding into k8s-openapi's types), quantities, `[]byte`
//! fields such as a Secret's `data` (Go's base64), and ConfigMap/Secret keys and sizes. Not
//! ported: the rest of each kind's semantic validation (ports, selectors, probes...).
//!
//! Secret values never reach an error: bad values are shown only for names, namespaces and
//! labels, as kube shows them; a type error names the JSON type, not the value.

mod go;
mod meta;
mod names;
mod typed;

pub use go::{base64_decode, quote};
pub use meta::{validate_object_meta, TOTAL_ANNOTATION_SIZE_LIMIT};
pub use names::{
    generated_name, is_config_map_key, is_dns1035_label, is_dns1123_label, is_dns1123_subdomain,
    is_path_segment_name, is_qualified_name, is_valid_label_value, NameRule,
};
pub use typed::{decode, DecodeError};

use serde_json::Value;

/// Which rule a field broke (apimachinery `field.ErrorType`), shown as kube shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    Forbidden,
    TooLong,
}

impl ErrorType {
    fn text(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
        }
    }

    /// The `reason` of a Status cause (`metav1.CauseType`).
    pub fn cause_type(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
        }
    }
}

/// The value an [`ErrorType::Invalid`] error shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    Str(String),
    Int(i64),
}

/// One field error (apimachinery `field.Error`); displays as its `Error()`:
/// `metadata.name: Invalid value: "X": a lowercase RFC 1123 subdomain must consist of ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub error_type: ErrorType,
    /// Field path in kube's notation (`metadata.labels`, `data[key]`).
    pub field: String,
    pub value: Option<BadValue>,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(field: &str, value: &str, detail: impl Into<String>) -> FieldError {
        FieldError {
            error_type: ErrorType::Invalid,
            field: field.to_string(),
            value: Some(BadValue::Str(value.to_string())),
            detail: detail.into(),
        }
    }

    pub fn required(field: &str, detail: impl Into<String>) -> FieldError {
        FieldError {
            error_type: ErrorType::Required,
            field: field.to_string(),
            value: None,
            detail: detail.into(),
        }
    }

    /// `field.TooLong`: the value is omitted.
    pub fn too_long(field: &str, max_bytes: usize) -> FieldError {
        FieldError {
            error_type: ErrorType::TooLong,
            field: field.to_string(),
            value: None,
            detail: format!("may not be more than {max_bytes} bytes"),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.error_type.text())?;
        match &self.value {
            Some(BadValue::Str(s)) if self.error_type == ErrorType::Invalid => {
                write!(f, ": {}", quote(s))?
            }
            Some(BadValue::Int(i)) if self.error_type == ErrorType::Invalid => write!(f, ": {i}")?,
            _ => {}
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// A `422 Invalid` answer: `Deployment.apps "web" is invalid: <errors>`, one error as it is,
/// several as `[e1, e2]` (apimachinery's aggregate, duplicates dropped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {} is invalid: {}", group_kind(.group, .kind), quote(.name), aggregate(.errors))]
pub struct Invalid {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub errors: Vec<FieldError>,
}

/// `schema.GroupKind.String()`: `Deployment.apps`, `ConfigMap`.
pub fn group_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

fn aggregate(errors: &[FieldError]) -> String {
    let mut seen = std::collections::HashSet::new();
    let texts: Vec<String> = errors
        .iter()
        .map(ToString::to_string)
        .filter(|t| seen.insert(t.clone()))
        .collect();
    match texts.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", texts.join(", ")),
    }
}

/// Why kube-apiserver refuses to create an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// `400 BadRequest`: the body does not decode into the kind's type.
    #[error(transparent)]
    BadRequest(#[from] DecodeError),
    /// `422 Invalid`: the decoded object fails validation.
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

impl Rejection {
    /// The field the first error names (`spec.replicas`), if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            Rejection::BadRequest(e) => e.field.as_deref(),
            Rejection::Invalid(e) => e.errors.first().map(|e| e.field.as_str()),
        }
    }
}

/// Validates `object` as kube-apiserver validates a create: decoding first, then the
/// kind's validation. `namespaced` is the kind's scope; the object must already carry the
/// namespace of the request (a cluster-scoped object none, as kube-apiserver clears it) and
/// its name (see [`generated_name`] for an object created with `generateName` only).
/// Custom resources are checked for their metadata (name, namespace, labels...); their
/// schema is the CRD's business.
pub fn validate_create(object: &Value, namespaced: bool) -> Result<(), Rejection> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    typed::decode(object)?;
    let (group, _) = crate::kinds::split_api_version(api_version);
    let rule = NameRule::of(group, kind, object);
    let mut errors = validate_object_meta(object.get("metadata"), namespaced, &rule);
    errors.extend(meta::validate_kind_fields(group, kind, object));
    if errors.is_empty() {
        return Ok(());
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(Rejection::Invalid(Invalid {
        group: group.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        errors,
    }))
}

#[cfg(test)]
mod tests;
