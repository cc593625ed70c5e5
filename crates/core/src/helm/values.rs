//! The values a Helm release was rendered with, read only for `driftd adopt` to say which
//! value to change: the chart's defaults (`chart.values`) with the user's values (`config`)
//! coalesced over them, as Helm does before rendering (`pkg/chartutil/coalesce.go`,
//! `CoalesceValues`: a user's map merges into the chart's key by key, a user's scalar or list
//! replaces the chart's, a user's `null` deletes the key). Values are never stored, logged or
//! printed: only the keys that hold a given value are returned.

use super::{parse_release, HelmError};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct RawValues {
    #[serde(default)]
    config: Value,
    #[serde(default)]
    chart: Option<RawChart>,
}

#[derive(Deserialize)]
struct RawChart {
    #[serde(default)]
    values: Value,
}

/// The coalesced values of the release in a release Secret's `data` (as
/// [`super::decode_release`] takes it).
pub fn release_values(secret: &str, data: &[u8]) -> Result<Value, HelmError> {
    let raw: RawValues = parse_release(secret, data)?;
    let mut values = raw.chart.map(|c| c.values).unwrap_or(Value::Null);
    coalesce(&mut values, raw.config);
    Ok(values)
}

/// [`release_values`] of a release Secret as the API server returns it (JSON, `data`
/// base64-encoded on the wire).
pub fn release_values_in(secret: &str, object: &Value) -> Result<Value, HelmError> {
    use base64::Engine as _;
    let fail = |reason: &str| HelmError {
        secret: secret.to_string(),
        reason: reason.to_string(),
    };
    let wire = object["data"][super::DATA_KEY]
        .as_str()
        .ok_or_else(|| fail("no release data"))?;
    let data = base64::engine::general_purpose::STANDARD
        .decode(wire)
        .map_err(|_| fail("the Secret's data is not base64"))?;
    release_values(secret, &data)
}

/// `user` over `chart`, as Helm coalesces them.
fn coalesce(chart: &mut Value, user: Value) {
    match (chart, user) {
        (Value::Object(c), Value::Object(u)) => {
            for (k, v) in u {
                if v.is_null() {
                    c.remove(&k);
                } else if let Some(existing) = c.get_mut(&k) {
                    coalesce(existing, v);
                } else {
                    c.insert(k, v);
                }
            }
        }
        (_, Value::Null) => {}
        (chart, user) => *chart = user,
    }
}

/// The `--set` keys (`image.tag`, `hosts[0]`, a dot in a key escaped as `\.`) whose value
/// is `value`, a scalar; numbers compare by value (`1` and `1.0` alike).
pub fn keys_holding(values: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if value.is_object() || value.is_array() || value.is_null() {
        return out;
    }
    walk(values, value, &mut String::new(), &mut out);
    out.sort();
    out
}

fn walk(node: &Value, want: &Value, key: &mut String, out: &mut Vec<String>) {
    let len = key.len();
    match node {
        Value::Object(map) => {
            for (k, v) in map {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(&k.replace('.', "\\."));
                walk(v, want, key, out);
                key.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                key.push_str(&format!("[{i}]"));
                walk(v, want, key, out);
                key.truncate(len);
            }
        }
        leaf if same(leaf, want) => out.push(key.clone()),
        _ => {}
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_values_coalesce_over_the_charts_as_helm_does() {
        // Helm's pkg/chartutil/coalesce.go (`coalesceValues`, `CoalesceTables`): a user map
        // merges into the chart's, a user scalar replaces, a user null deletes the key.
        let mut chart = json!({"image": {"repository": "nginx", "tag": ""}, "replicaCount": 1,
                               "service": {"type": "ClusterIP", "port": 80}});
        coalesce(
            &mut chart,
            json!({"image": {"tag": "1.27"}, "service": {"port": null}, "extra": [1]}),
        );
        assert_eq!(
            chart,
            json!({"image": {"repository": "nginx", "tag": "1.27"}, "replicaCount": 1,
                   "service": {"type": "ClusterIP"}, "extra": [1]})
        );
    }

    #[test]
    fn the_keys_holding_a_value_are_set_keys() {
        let values = json!({"replicaCount": 1, "autoscaling": {"minReplicas": 1.0},
                            "image": {"tag": "1.27"}, "hosts": ["a.example"],
                            "annotations": {"example.com/team": "shop"}});
        assert_eq!(
            keys_holding(&values, &json!(1)),
            ["autoscaling.minReplicas", "replicaCount"]
        );
        assert_eq!(keys_holding(&values, &json!("1.27")), ["image.tag"]);
        assert_eq!(keys_holding(&values, &json!("a.example")), ["hosts[0]"]);
        assert_eq!(
            keys_holding(&values, &json!("shop")),
            ["annotations.example\\.com/team"]
        );
        assert!(keys_holding(&values, &json!({"tag": "1.27"})).is_empty());
    }
}
