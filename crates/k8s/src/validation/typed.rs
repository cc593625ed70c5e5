//! The decoding step of a create: kube-apiserver decodes the body into the kind's Go type
//! before validating anything, and answers `400 BadRequest` with the decoder's error when a
//! field has the wrong JSON type or an integer out of its Go type's range
//! (`Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal
//! string into Go struct field DeploymentSpec.spec.replicas of type int32`).
//!
//! The Go types are k8s-openapi's (the same OpenAPI documents), decoded through
//! `serde_path_to_error` for the field path. Where Go's decoder differs from serde's, the Go
//! behaviour wins: `[]byte` fields decode with Go's base64 (newlines allowed), quantities
//! must parse as `resource.Quantity`, and a custom resource's `metadata` must decode as
//! ObjectMeta (its body is the CRD's schema's business).

use base64::Engine as _;
use serde_json::Value;
use serde_path_to_error::Segment;

use super::{go, FieldError, Invalid, Rejection};
use crate::kinds::for_each_openapi_resource;

/// A body kube-apiserver cannot decode (`400 BadRequest`); never quotes a field's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    pub message: String,
    /// The field the decoder stopped at (`spec.template.spec.containers[0].ports[0].containerPort`).
    pub field: Option<String>,
}

type Decoder = fn(&Value) -> Result<(), serde_path_to_error::Error<serde_json::Error>>;

macro_rules! find_decoder {
    ($($ty:path),* $(,)?) => {
        /// The typed decoder of `api_version`/`kind`, if k8s-openapi has the type.
        fn decoder(api_version: &str, kind: &str) -> Option<Decoder> {
            $(
                if <$ty as k8s_openapi::Resource>::API_VERSION == api_version
                    && <$ty as k8s_openapi::Resource>::KIND == kind
                {
                    return Some(|v| serde_path_to_error::deserialize::<_, $ty>(v).map(drop));
                }
            )*
            None
        }
    };
}

for_each_openapi_resource!(find_decoder);

fn decode_object_meta(
    metadata: &Value,
) -> Result<(), serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize::<_, k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(
        metadata,
    )
    .map(drop)
}

/// How many `[]byte` strings in Go's but not serde's base64 form (line-wrapped, non-zero
/// trailing bits) are rewritten before decoding gives up on an object: each costs one more
/// decoding of the whole object.
const MAX_BYTES_REWRITES: usize = 64;

/// Decodes `object` (a built-in kind into its type; any kind's `metadata` into ObjectMeta)
/// as kube-apiserver would, and checks its quantities. A required field that is missing or
/// null is not a decoding error in Go (it stays at its zero value): it is reported as kube's
/// validation reports it, `Required value` in a `422 Invalid`.
pub fn decode(object: &Value) -> Result<(), Rejection> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let version = crate::kinds::split_api_version(api_version).1;
    let cannot = |detail: String| {
        format!("{kind} in version {version:?} cannot be handled as a {kind}: {detail}")
    };

    let Some(decoder) = decoder(api_version, kind) else {
        // A custom resource: only its metadata has a Go type.
        if let Some(metadata) = object.get("metadata") {
            if let Err(e) = decode_object_meta(metadata) {
                let mut segs = vec!["metadata".to_string()];
                segs.extend(segments(e.path()));
                return Err(type_error(object, &segs, &e.inner().to_string(), &cannot));
            }
        }
        return Ok(());
    };

    let mut working: Option<Value> = None;
    for _ in 0..=MAX_BYTES_REWRITES {
        let current = working.as_ref().unwrap_or(object);
        let Err(e) = decoder(current) else {
            return check_quantities(object, &cannot).map_err(Rejection::from);
        };
        let segs = segments(e.path());
        let inner = e.inner().to_string();
        // A `[]byte` field: serde's base64 is stricter than Go's; let Go's decide.
        let mut rewrite = None;
        if is_base64_error(&inner) {
            if let Some(Value::String(s)) = value_at(current, &segs) {
                match go::base64_decode(s) {
                    Ok(bytes) => {
                        rewrite = Some(base64::engine::general_purpose::STANDARD.encode(bytes))
                    }
                    Err(offset) => {
                        return Err(Rejection::BadRequest(DecodeError {
                            message: cannot(format!("illegal base64 data at input byte {offset}")),
                            field: Some(field_path(&segs)),
                        }))
                    }
                }
            }
        }
        if let Some(canonical) = rewrite {
            let copy = working.get_or_insert_with(|| object.clone());
            if let Some(slot) = value_at_mut(copy, &segs) {
                *slot = Value::String(canonical);
                continue;
            }
        }
        let current = working.as_ref().unwrap_or(object);
        return Err(type_error(current, &segs, &inner, &cannot));
    }
    Err(Rejection::BadRequest(DecodeError {
        message: cannot("too many base64 fields in a form the decoder must rewrite".into()),
        field: None,
    }))
}

/// The path segments as strings (map keys and struct fields alike, list indexes as digits).
fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    path.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(format!("[{index}]")),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect()
}

/// `spec.containers[0].image` from segments.
fn field_path(segs: &[String]) -> String {
    let mut out = String::new();
    for s in segs {
        if !s.starts_with('[') && !out.is_empty() {
            out.push('.');
        }
        out.push_str(s);
    }
    out
}

fn index_of(seg: &str) -> Option<usize> {
    seg.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

fn value_at<'a>(v: &'a Value, segs: &[String]) -> Option<&'a Value> {
    segs.iter().try_fold(v, |v, s| match index_of(s) {
        Some(i) => v.get(i),
        None => v.get(s.as_str()),
    })
}

fn value_at_mut<'a>(v: &'a mut Value, segs: &[String]) -> Option<&'a mut Value> {
    segs.iter().try_fold(v, |v, s| match index_of(s) {
        Some(i) => v.get_mut(i),
        None => v.get_mut(s.as_str()),
    })
}

/// The messages of the `base64` crate's `DecodeError`, which k8s-openapi's `ByteString`
/// passes through.
fn is_base64_error(message: &str) -> bool {
    [
        "Invalid symbol",
        "Invalid input length",
        "Invalid last symbol",
        "Invalid padding",
    ]
    .iter()
    .any(|p| message.starts_with(p))
}

/// Go's JSON decoder's words for the value at `segs` (`UnmarshalTypeError.Value`): its JSON
/// type, and for a number decoded into an integer field the number itself (never a string).
fn value_word(v: Option<&Value>, go_type: &str) -> String {
    match v {
        Some(Value::String(_)) => "string".into(),
        Some(Value::Bool(_)) => "bool".into(),
        Some(Value::Array(_)) => "array".into(),
        Some(Value::Object(_)) => "object".into(),
        Some(Value::Null) | None => "null".into(),
        Some(Value::Number(n)) if go_type.starts_with("int") || go_type.starts_with("uint") => {
            format!("number {n}")
        }
        Some(Value::Number(_)) => "number".into(),
    }
}

/// The Go type serde's `expected ...` names.
fn go_type(expected: &str) -> String {
    match expected {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" => {
            let signed = expected.starts_with('i');
            format!("{}int{}", if signed { "" } else { "u" }, &expected[1..])
        }
        "f32" | "f64" => format!("float{}", &expected[1..]),
        "a boolean" => "bool".into(),
        "a string" | "a borrowed string" => "string".into(),
        "a sequence" => "array".into(),
        "a map" => "map".into(),
        "a base64-encoded string" => "[]uint8".into(),
        other => other.to_string(),
    }
}

/// Go's answer to a decode failure at `segs` whose serde message is `inner`.
fn type_error(
    object: &Value,
    segs: &[String],
    inner: &str,
    cannot: &dyn Fn(String) -> String,
) -> Rejection {
    let field = field_path(segs);
    let at = value_at(object, segs);
    let missing = inner
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    if missing.is_some() || (at == Some(&Value::Null) && inner.starts_with("invalid type: null")) {
        // Go leaves a missing or null field at its zero value, and kube's validation then
        // reports it as required. The field name comes from the type, not from the input.
        let path = match missing {
            Some(name) if field.is_empty() => name.to_string(),
            Some(name) => format!("{field}.{name}"),
            None => field,
        };
        let (group, _) = crate::kinds::split_api_version(text(object, "apiVersion"));
        return Rejection::Invalid(Invalid {
            group: group.to_string(),
            kind: text(object, "kind").to_string(),
            name: object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            errors: vec![FieldError::required(&path, "")],
        });
    }
    if let Some((_, expected)) = inner.rsplit_once(", expected ") {
        let go = go_type(expected);
        let value = value_word(at, &go);
        let names: Vec<&str> = segs
            .iter()
            .filter(|s| index_of(s).is_none())
            .map(String::as_str)
            .collect();
        let struct_name = crate::api_types::struct_of_field(
            text(object, "apiVersion"),
            text(object, "kind"),
            &names,
        );
        let target = match struct_name {
            Some(st) => format!("Go struct field {st}.{field}"),
            None if field.is_empty() => "Go value".to_string(),
            None => format!("Go struct field {field}"),
        };
        return Rejection::BadRequest(DecodeError {
            message: cannot(format!(
                "json: cannot unmarshal {value} into {target} of type {go}"
            )),
            field: Some(field),
        });
    }
    // Anything else: serde's words without any quoted input.
    Rejection::BadRequest(DecodeError {
        message: cannot(format!("{field}: {}", scrub(inner))),
        field: Some(field),
    })
}

fn text<'a>(object: &'a Value, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `inner` with quoted input (`"..."`, `` `...` ``) replaced by `…`.
fn scrub(inner: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match quote {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                quote = None;
            }
            Some(_) => {}
            None if c == '"' || c == '`' => {
                out.push(c);
                quote = Some(c);
            }
            None => out.push(c),
        }
    }
    out
}

/// apimachinery `resource.ErrFormatWrong`.
const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

fn check_quantities(object: &Value, cannot: &dyn Fn(String) -> String) -> Result<(), DecodeError> {
    let mut bad = None;
    crate::api_types::for_each_quantity(object, |path, v| {
        if bad.is_none() && !v.is_null() && crate::quantity::parse_value(v).is_none() {
            bad = Some(path.to_string());
        }
    });
    match bad {
        None => Ok(()),
        Some(field) => Err(DecodeError {
            message: cannot(QUANTITY_FORMAT.to_string()),
            field: Some(field),
        }),
    }
}
