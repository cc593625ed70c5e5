//! Secret values never leave the differ: they are replaced by a keyed hash, so two reports
//! can still tell "same value" from "different value" without revealing either.

use super::normalize::decode_secret_value;
use super::pointer::Seg;
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::Sha256;

/// `{"hmac": "<16 hex chars>"}` for one secret value: HMAC-SHA256 under the installation key
/// of the decoded bytes (so `stringData` and `data` spellings of a value hash the same).
pub fn redact_value(key: &[u8], value: &Value) -> Value {
    let bytes = match value {
        Value::String(s) => decode_secret_value(value).unwrap_or_else(|| s.as_bytes().to_vec()),
        other => other.to_string().into_bytes(),
    };
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(&bytes);
    let digest = mac.finalize().into_bytes();
    json!({ "hmac": hex::encode(&digest[..8]) })
}

/// Redacts a value found at a Secret path: a single value, or a whole `data` map (each
/// entry redacted) when the change is at `/data` itself.
pub fn redact(key: &[u8], value: &Value, whole_map: bool) -> Value {
    match value {
        Value::Object(m) if whole_map => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), redact_value(key, v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Null => Value::Null,
        other => redact_value(key, other),
    }
}

/// Whether the field at `names` of an object of `kind` holds secret material.
/// Secret `data`/`stringData`, and the last-applied annotation of a Secret (it embeds the
/// plaintext manifest).
pub fn is_secret_path(kind: &str, names: &[&str]) -> bool {
    kind == "Secret"
        && (matches!(names.first(), Some(&"data") | Some(&"stringData"))
            || names.starts_with(&["metadata", "annotations"]) && names.len() <= 3)
}

/// Where a finding about a Secret's (folded) `data` sits in the desired object: a key the
/// manifest gives in `stringData` (which wins over `data`, as on the server) is reported at
/// `/stringData/<key>`, and a whole missing `data` map at `/stringData` when the manifest
/// only has `stringData`. Other paths are returned unchanged.
pub fn desired_segs(kind: &str, desired: &Value, segs: &[Seg]) -> Vec<Seg> {
    let mut out = segs.to_vec();
    if kind != "Secret" || !matches!(segs.first(), Some(Seg::Field(f)) if f == "data") {
        return out;
    }
    let string_data = desired.get("stringData").and_then(Value::as_object);
    let has_data = desired
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    let moved = match segs.get(1) {
        Some(Seg::Field(key)) => string_data.is_some_and(|m| m.contains_key(key)),
        Some(_) => false,
        None => string_data.is_some_and(|m| !m.is_empty()) && !has_data,
    };
    if moved {
        out[0] = Seg::Field("stringData".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_keyed_and_spelling_independent() {
        let a = redact_value(b"k1", &json!("cGFzc3dvcmQ=")); // "password"
        let b = redact_value(b"k1", &json!("cGFzc3dvcmQ="));
        let c = redact_value(b"k2", &json!("cGFzc3dvcmQ="));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a["hmac"].as_str().unwrap().len(), 16);
        assert!(!a.to_string().contains("cGFzc3dvcmQ"));
    }
}
