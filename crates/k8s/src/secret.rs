//! A Secret's `stringData`: write-only, folded into `data` when kube-apiserver decodes the
//! object (`Convert_v1_Secret_To_core_Secret`), so it is never stored nor returned.

use base64::Engine as _;
use serde_json::{Map, Value};

/// Moves `stringData` into `data` (base64), `stringData` winning where both name a key, as
/// the conversion does; an empty `stringData` leaves `data` as it is (`len(in.StringData) > 0`).
/// The differ and the simulator both fold with this, so they agree on what is stored.
pub fn fold_string_data(secret: &mut Value) {
    let Some(obj) = secret.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = obj.remove("stringData") else {
        return;
    };
    if string_data.is_empty() {
        return;
    }
    let data = obj
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    let engine = base64::engine::general_purpose::STANDARD;
    if let Some(data) = data.as_object_mut() {
        for (k, v) in string_data {
            let text = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            data.insert(k, Value::String(engine.encode(text.as_bytes())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_data_wins_over_data_and_disappears() {
        let mut s = json!({"kind": "Secret", "data": {"a": "b2xk", "keep": "eA=="},
            "stringData": {"a": "new", "user": "admin"}});
        fold_string_data(&mut s);
        assert!(s.get("stringData").is_none());
        assert_eq!(
            s["data"],
            json!({"a": "bmV3", "keep": "eA==", "user": "YWRtaW4="})
        );
    }

    #[test]
    fn empty_string_data_adds_no_data() {
        let mut s = json!({"kind": "Secret", "stringData": {}});
        fold_string_data(&mut s);
        assert_eq!(s, json!({"kind": "Secret"}));
    }
}
