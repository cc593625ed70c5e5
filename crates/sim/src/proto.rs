//! Decoding of the Kubernetes protobuf envelope for the few kinds kubectl's generators send
//! that way (`kubectl create namespace|configmap|secret generic|serviceaccount` and
//! `kubectl create token` use the typed client, which speaks protobuf to built-in types).
//! Everything else is answered with 415, asking for JSON.
//!
//! Wire layout (k8s.io/apimachinery `runtime.Unknown`): magic `k8s\0`, then
//! `{1: TypeMeta{1: apiVersion, 2: kind}, 2: raw object bytes, ...}`; field numbers of the
//! objects follow `k8s.io/api/core/v1/generated.proto` and, for TokenRequest,
//! `k8s.io/api/authentication/v1/generated.proto`.

use base64::Engine;
use serde_json::{json, Map, Value};

pub const MAGIC: &[u8] = b"k8s\x00";

#[derive(Debug)]
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn fields(buf: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let field = match key & 7 {
            0 => Field::Varint(varint(buf, &mut pos)?),
            1 => {
                pos += 8;
                Field::Fixed
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len).filter(|e| *e <= buf.len())?;
                let b = &buf[pos..end];
                pos = end;
                Field::Bytes(b)
            }
            5 => {
                pos += 4;
                Field::Fixed
            }
            _ => return None,
        };
        out.push((key >> 3, field));
    }
    (pos == buf.len()).then_some(out)
}

fn string(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

/// A `map<string, V>` entry; `base64` encodes byte values as JSON does.
fn map_entry(b: &[u8], base64_values: bool) -> Option<(String, Value)> {
    let (mut k, mut v) = (String::new(), Value::String(String::new()));
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Bytes(x)) => k = string(x)?,
            (2, Field::Bytes(x)) if base64_values => {
                v = json!(base64::engine::general_purpose::STANDARD.encode(x))
            }
            (2, Field::Bytes(x)) => v = json!(string(x)?),
            _ => {}
        }
    }
    Some((k, v))
}

fn object_meta(b: &[u8]) -> Option<Value> {
    let mut m = Map::new();
    let (mut labels, mut annotations, mut finalizers) = (Map::new(), Map::new(), Vec::new());
    for (n, f) in fields(b)? {
        if let Field::Bytes(x) = f {
            match n {
                // proto2 sends empty strings for unset fields; JSON omits them.
                1..=3 if x.is_empty() => {}
                1 => drop(m.insert("name".into(), json!(string(x)?))),
                2 => drop(m.insert("generateName".into(), json!(string(x)?))),
                3 => drop(m.insert("namespace".into(), json!(string(x)?))),
                11 => drop(map_entry(x, false).map(|(k, v)| labels.insert(k, v))),
                12 => drop(map_entry(x, false).map(|(k, v)| annotations.insert(k, v))),
                14 => finalizers.push(json!(string(x)?)),
                _ => {}
            }
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Some(Value::Object(m))
}

/// TokenRequestSpec: `audiences` 1, `boundObjectRef` 3 (kind, apiVersion, name, uid),
/// `expirationSeconds` 4.
fn token_request_spec(b: &[u8]) -> Option<Value> {
    let mut spec = json!({});
    let mut audiences = Vec::new();
    for (n, f) in fields(b)? {
        match (n, f) {
            (1, Field::Bytes(x)) => audiences.push(json!(string(x)?)),
            (3, Field::Bytes(x)) => {
                let mut reference = Map::new();
                for (n, f) in fields(x)? {
                    let key = match n {
                        1 => "kind",
                        2 => "apiVersion",
                        3 => "name",
                        4 => "uid",
                        _ => continue,
                    };
                    if let Field::Bytes(v) = f {
                        reference.insert(key.into(), json!(string(v)?));
                    }
                }
                spec["boundObjectRef"] = Value::Object(reference);
            }
            // int64 on the wire: two's complement in a varint.
            (4, Field::Varint(v)) => spec["expirationSeconds"] = json!(v as i64),
            _ => {}
        }
    }
    if !audiences.is_empty() {
        spec["audiences"] = Value::Array(audiences);
    }
    Some(spec)
}

fn decode_kind(api_version: &str, kind: &str, raw: &[u8]) -> Option<Value> {
    let mut obj = json!({"kind": kind, "apiVersion": api_version});
    let (mut data, mut binary, mut string_data) = (Map::new(), Map::new(), Map::new());
    for (n, f) in fields(raw)? {
        match (kind, n, f) {
            (_, 1, Field::Bytes(x)) => obj["metadata"] = object_meta(x)?,
            ("ConfigMap", 2, Field::Bytes(x)) => {
                drop(map_entry(x, false).map(|(k, v)| data.insert(k, v)))
            }
            ("ConfigMap", 3, Field::Bytes(x)) => {
                drop(map_entry(x, true).map(|(k, v)| binary.insert(k, v)))
            }
            ("ConfigMap", 4, Field::Varint(v)) | ("Secret", 5, Field::Varint(v)) => {
                obj["immutable"] = json!(v != 0)
            }
            ("Secret", 2, Field::Bytes(x)) => {
                drop(map_entry(x, true).map(|(k, v)| data.insert(k, v)))
            }
            ("Secret", 3, Field::Bytes(x)) if !x.is_empty() => obj["type"] = json!(string(x)?),
            ("Secret", 4, Field::Bytes(x)) => {
                drop(map_entry(x, false).map(|(k, v)| string_data.insert(k, v)))
            }
            ("ServiceAccount", 4, Field::Varint(v)) => {
                obj["automountServiceAccountToken"] = json!(v != 0)
            }
            ("TokenRequest", 2, Field::Bytes(x)) => obj["spec"] = token_request_spec(x)?,
            ("Namespace", 2, Field::Bytes(x)) => {
                let fins: Option<Vec<Value>> = fields(x)?
                    .into_iter()
                    .filter_map(|(n, f)| match (n, f) {
                        (1, Field::Bytes(s)) => Some(string(s).map(Value::String)),
                        _ => None,
                    })
                    .collect();
                obj["spec"] = json!({"finalizers": fins?});
            }
            _ => {}
        }
    }
    for (k, m) in [
        ("data", data),
        ("binaryData", binary),
        ("stringData", string_data),
    ] {
        if !m.is_empty() {
            obj[k] = Value::Object(m);
        }
    }
    Some(obj)
}

/// Decodes a protobuf-enveloped body into JSON, or explains why it cannot.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let bad = || "malformed protobuf body".to_string();
    let rest = body.strip_prefix(MAGIC).ok_or_else(bad)?;
    let (mut kind, mut api_version, mut raw) = (String::new(), String::new(), None);
    for (n, f) in fields(rest).ok_or_else(bad)? {
        match (n, f) {
            (1, Field::Bytes(tm)) => {
                for (n, f) in fields(tm).ok_or_else(bad)? {
                    match (n, f) {
                        (1, Field::Bytes(x)) => api_version = string(x).ok_or_else(bad)?,
                        (2, Field::Bytes(x)) => kind = string(x).ok_or_else(bad)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(x)) => raw = Some(x),
            _ => {}
        }
    }
    let raw = raw.ok_or_else(bad)?;
    match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount")
        | ("authentication.k8s.io/v1", "TokenRequest") => {
            decode_kind(&api_version, &kind, raw).ok_or_else(bad)
        }
        _ => Err(format!(
            "protobuf bodies are only understood for v1 Namespace, ConfigMap, Secret and ServiceAccount and authentication.k8s.io/v1 TokenRequest, not {api_version} {kind}; send JSON (e.g. kubectl create -f)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(n: u8, b: &[u8]) -> Vec<u8> {
        let mut v = vec![(n << 3) | 2, b.len() as u8];
        v.extend_from_slice(b);
        v
    }

    #[test]
    fn decodes_a_configmap_envelope() {
        let meta = [
            ld(1, b"cfg"),
            ld(11, &[ld(1, b"app"), ld(2, b"web")].concat()),
        ]
        .concat();
        let cm = [ld(1, &meta), ld(2, &[ld(1, b"k"), ld(2, b"v")].concat())].concat();
        let tm = [ld(1, b"v1"), ld(2, b"ConfigMap")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &cm)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(v["metadata"]["name"], "cfg");
        assert_eq!(v["metadata"]["labels"]["app"], "web");
        assert_eq!(v["data"]["k"], "v");
        // TokenRequest (authentication/v1 generated.proto): audiences 1, expirationSeconds 4.
        let spec = [ld(1, b"driftd"), vec![4 << 3, 0x90, 0x1c]].concat();
        let tr = [ld(1, b""), ld(2, &spec)].concat();
        let tm = [ld(1, b"authentication.k8s.io/v1"), ld(2, b"TokenRequest")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, &tr)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(v["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(
            v["spec"],
            json!({"audiences": ["driftd"], "expirationSeconds": 3600})
        );
        let tm = [ld(1, b"apps/v1"), ld(2, b"Deployment")].concat();
        let body = [MAGIC.to_vec(), ld(1, &tm), ld(2, b"")].concat();
        assert!(decode(&body).unwrap_err().contains("send JSON"));
    }
}
