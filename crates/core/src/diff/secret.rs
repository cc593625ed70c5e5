//! Secret values never leave the differ: they are replaced by a keyed hash, so two reports
//! can still tell "same value" from "different value" without revealing either.
//!
//! They are not kept at rest either: the store keeps a committed Secret with every value
//! replaced by its keyed hash ([`hash_values`], `{"hmac-sha256": "<64 hex>"}`), and the differ
//! compares such a desired Secret by hashing the live values with the same key
//! ([`comparable_live`]). The hash is over the bytes a value stands for, so `data` (base64)
//! and `stringData` spellings of one value hash the same, and a report shows the first 16
//! hex digits of it whether the desired side was hashed at rest or in the report.

use super::normalize::decode_secret_value;
use super::pointer::{escape, Seg};
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::Sha256;
use std::collections::BTreeMap;

/// The one key of the object that stands for a Secret value in stored desired state.
pub const STORED_HASH: &str = "hmac-sha256";

/// How a hashed value is spelled inside a prepared desired object (and in the live object it
/// is compared with): a string that is never valid base64 (`:`), so it can never equal a
/// real `data` value.
const TOKEN_PREFIX: &str = "hmac-sha256:";

/// The annotation `kubectl apply` writes: on a Secret it embeds the whole manifest, values
/// included.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// HMAC-SHA256 of `bytes` under `key`, as hex.
fn keyed_hash(key: &[u8], bytes: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC accepts any key length");
    mac.update(bytes);
    hex::encode(mac.finalize().into_bytes())
}

/// The bytes a `data` value stands for: base64-decoded (the raw text if it is not base64).
fn data_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => decode_secret_value(value).unwrap_or_else(|| s.as_bytes().to_vec()),
        other => other.to_string().into_bytes(),
    }
}

/// The bytes a `stringData` value or an annotation stands for: its text.
fn text_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.as_bytes().to_vec(),
        other => other.to_string().into_bytes(),
    }
}

/// The full hex hash a value holds: a stored hash (`{"hmac-sha256": hex}`) or a token.
fn hash_of(value: &Value) -> Option<&str> {
    match value {
        Value::Object(m) if m.len() == 1 => m.get(STORED_HASH)?.as_str(),
        Value::String(s) => s.strip_prefix(TOKEN_PREFIX),
        _ => None,
    }
}

/// Whether `value` is a stored hash (`{"hmac-sha256": hex}`).
pub fn is_stored_hash(value: &Value) -> bool {
    matches!(value, Value::Object(_)) && hash_of(value).is_some()
}

/// `{"hmac": "<16 hex chars>"}` for one secret value: HMAC-SHA256 under the installation key
/// of the decoded bytes (so `stringData` and `data` spellings of a value hash the same). A
/// value that is already a keyed hash (stored desired state) shows its first 16 digits.
pub fn redact_value(key: &[u8], value: &Value) -> Value {
    if let Some(hex) = hash_of(value) {
        return json!({ "hmac": hex.get(..16).unwrap_or(hex) });
    }
    let hex = keyed_hash(key, &data_bytes(value));
    json!({ "hmac": &hex[..16] })
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

/// Replaces every secret value of a Secret by its stored hash (`{"hmac-sha256": hex}`): each
/// `data` and `stringData` value, and the last-applied annotation (it embeds the manifest,
/// values included). Returns what it replaced, by JSON pointer, for whoever keeps the values
/// encrypted ([`restore_values`] puts them back). `null`s (they leave a field to the server)
/// and values already hashed stay; objects of other kinds are left untouched.
pub fn hash_values(key: &[u8], object: &mut Value) -> BTreeMap<String, Value> {
    let mut taken = BTreeMap::new();
    if object.get("kind").and_then(Value::as_str) != Some("Secret") {
        return taken;
    }
    let mut replace = |pointer: String, value: &mut Value, bytes: Vec<u8>| {
        let hashed = json!({ STORED_HASH: keyed_hash(key, &bytes) });
        taken.insert(pointer, std::mem::replace(value, hashed));
    };
    for (field, by_field) in [("data", true), ("stringData", false)] {
        if let Some(Value::Object(map)) = object.get_mut(field) {
            for (k, v) in map.iter_mut().filter(|(_, v)| needs_hash(v)) {
                let bytes = if by_field {
                    data_bytes(v)
                } else {
                    text_bytes(v)
                };
                replace(format!("/{field}/{}", escape(k)), v, bytes);
            }
        }
    }
    let annotation = format!("/metadata/annotations/{}", escape(LAST_APPLIED));
    if let Some(v) = object.pointer_mut(&annotation).filter(|v| needs_hash(v)) {
        let bytes = text_bytes(v);
        replace(annotation, v, bytes);
    }
    taken
}

fn needs_hash(value: &Value) -> bool {
    !value.is_null() && !is_stored_hash(value)
}

/// Puts values [`hash_values`] took back in place; `false` if a pointer no longer leads to a
/// stored hash (the values belong to another version of the object).
pub fn restore_values(object: &mut Value, values: &BTreeMap<String, Value>) -> bool {
    for (pointer, value) in values {
        match object.pointer_mut(pointer) {
            Some(slot) if is_stored_hash(slot) => *slot = value.clone(),
            _ => return false,
        }
    }
    true
}

/// Whether a desired object holds stored hashes in place of Secret values.
pub fn holds_hashes(object: &Value) -> bool {
    ["data", "stringData"].iter().any(|field| {
        object
            .get(field)
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(is_stored_hash))
    }) || object
        .pointer(&format!("/metadata/annotations/{}", escape(LAST_APPLIED)))
        .is_some_and(is_stored_hash)
}

/// Folds a Secret's `stringData` into `data` as kube-apiserver does
/// ([`driftd_k8s::secret::fold_string_data`]), with stored hashes folded as they are (a hash
/// of a `stringData` value is the hash of the bytes it stands for, as in `data`). Hashes end
/// up as tokens: strings the walk compares like any other value.
pub fn fold_string_data(secret: &mut Value) {
    let mut hashed = Map::new();
    if let Some(Value::Object(string_data)) = secret.get_mut("stringData") {
        let keys: Vec<String> = string_data
            .iter()
            .filter(|(_, v)| is_stored_hash(v))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            hashed.extend(string_data.remove_entry(&k));
        }
    }
    driftd_k8s::secret::fold_string_data(secret);
    let Some(obj) = secret.as_object_mut() else {
        return;
    };
    if !hashed.is_empty() && !obj.get("data").is_some_and(Value::is_object) {
        obj.insert("data".into(), Value::Object(Map::new()));
    }
    if let Some(Value::Object(data)) = obj.get_mut("data") {
        data.extend(hashed);
        for v in data.values_mut() {
            if let Some(hex) = hash_of(v).filter(|_| v.is_object()).map(str::to_string) {
                *v = Value::String(format!("{TOKEN_PREFIX}{hex}"));
            }
        }
    }
}

/// The live object as a desired Secret holding hashes is compared with: every `data` value
/// replaced by the token of its keyed hash. `None` when the comparison needs no hashing
/// (another kind, or desired and previous state in clear).
pub fn comparable_live(
    key: &[u8],
    kind: &str,
    desired: &Value,
    previous: Option<&Value>,
    live: &Value,
) -> Option<Value> {
    let tokens = |v: &Value| {
        v.get("data")
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(|v| v.is_string() && hash_of(v).is_some()))
    };
    if kind != "Secret" || !(tokens(desired) || previous.is_some_and(tokens)) {
        return None;
    }
    let mut live = live.clone();
    if let Some(Value::Object(data)) = live.get_mut("data") {
        for v in data.values_mut().filter(|v| !v.is_null()) {
            *v = Value::String(format!("{TOKEN_PREFIX}{}", keyed_hash(key, &data_bytes(v))));
        }
    }
    Some(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::diff::{ClusterFacts, CompareInput, Comparison, Differ};

    const KEY: &[u8] = b"an installation key of 32 bytes!";

    fn secret(data: Value, string_data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "db", "namespace": "default"},
            "data": data, "stringData": string_data})
    }

    fn compare(desired: &Value, live: &Value, previous: Option<&Value>) -> Comparison {
        Differ::new(KEY).compare(&CompareInput {
            desired,
            live: Some(live),
            previous,
            facts: &ClusterFacts::default(),
        })
    }

    fn hashed(object: &Value) -> Value {
        let mut object = object.clone();
        hash_values(KEY, &mut object);
        object
    }

    #[test]
    fn hashing_keeps_no_value_and_restores_every_one() {
        let mut s = secret(
            json!({"token": "c2VjcmV0LXRva2Vu", "unset": null}),
            json!({"password": "hunter2"}),
        );
        s["metadata"]["annotations"] = json!({LAST_APPLIED: "{\"stringData\":{\"password\":\"hunter2\"}}",
            "team": "payments"});
        let original = s.clone();
        let taken = hash_values(KEY, &mut s);
        let text = s.to_string();
        for plain in ["hunter2", "c2VjcmV0LXRva2Vu", "secret-token"] {
            assert!(!text.contains(plain), "{plain} kept in {text}");
        }
        assert!(holds_hashes(&s));
        assert_eq!(s["metadata"]["annotations"]["team"], "payments");
        assert_eq!(s["data"]["unset"], Value::Null);
        assert_eq!(
            taken.keys().collect::<Vec<_>>(),
            [
                "/data/token",
                "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
                "/stringData/password"
            ]
        );
        // Hashing twice changes nothing; the hash is of the bytes, whatever the spelling.
        assert!(hash_values(KEY, &mut s.clone()).is_empty());
        let as_data = hashed(&secret(json!({"password": "aHVudGVyMg=="}), json!({})));
        assert_eq!(as_data["data"]["password"], s["stringData"]["password"]);
        assert!(restore_values(&mut s, &taken));
        assert_eq!(s, original);
        let mut other = hashed(&secret(json!({}), json!({})));
        assert!(
            !restore_values(&mut other, &taken),
            "not this object's values"
        );
        let mut cm = json!({"kind": "ConfigMap", "data": {"a": "b"}});
        assert!(hash_values(KEY, &mut cm).is_empty());
        assert!(!holds_hashes(&cm));
    }

    #[test]
    fn hashed_desired_state_compares_exactly_as_the_values_would() {
        let desired = secret(
            json!({"token": "c2VjcmV0LXRva2Vu", "shared": "ZGF0YQ=="}),
            json!({"password": "hunter2", "shared": "string wins"}),
        );
        let mut previous = desired.clone();
        previous["data"]["extra"] = json!("ZXh0cmE=");
        let live = |data: Value| {
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": "db", "namespace": "default"}, "data": data})
        };
        let in_sync = json!({"token": "c2VjcmV0LXRva2Vu", "password": "aHVudGVyMg==",
            "shared": "c3RyaW5nIHdpbnM="});
        let lives = [
            live(in_sync.clone()),
            // A key nobody committed is not compared.
            live(
                json!({"token": "c2VjcmV0LXRva2Vu", "password": "aHVudGVyMg==",
                "shared": "c3RyaW5nIHdpbnM=", "more": "bW9yZQ=="}),
            ),
            live(
                json!({"token": "b3RoZXI=", "password": "aHVudGVyMw==", "shared": "ZGF0YQ==",
                "extra": "ZXh0cmE=", "more": "bW9yZQ=="}),
            ),
            live(json!({"password": "aHVudGVyMg=="})),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db",
                "namespace": "default"}, "type": "Opaque"}),
        ];
        for (i, l) in lives.iter().enumerate() {
            for prev in [None, Some(&previous)] {
                let plain = compare(&desired, l, prev);
                let hashed_prev = prev.map(hashed);
                let from_hashes = compare(&hashed(&desired), l, hashed_prev.as_ref());
                assert_eq!(from_hashes, plain, "live #{i}, previous {}", prev.is_some());
                assert_eq!(plain.class == crate::diff::DriftClass::InSync, i < 2);
            }
        }
        // A hashed previous revision with desired values in clear (a commit by an older
        // driftd over a migrated one) still prunes by hash.
        let c = compare(&desired, &lives[2], Some(&hashed(&previous)));
        assert!(c.changes.iter().any(|c| c.path == "/data/extra"), "{c:?}");
    }

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
