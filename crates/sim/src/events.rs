//! Core `v1` Events and `events.k8s.io/v1` Events are one storage in kube-apiserver, served
//! in two shapes; these conversions mirror `pkg/apis/events/v1` conversion functions so an
//! Event posted by kube-runtime's Recorder shows in `kubectl get events` and vice versa.

use serde_json::{Map, Value};

/// (events.k8s.io/v1 field, core/v1 field) pairs.
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &Value, from_new: bool) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let renamed = RENAMES.iter().find_map(|(new, core)| {
            if from_new && k == new {
                Some(*core)
            } else if !from_new && k == core {
                Some(*new)
            } else {
                None
            }
        });
        out.insert(renamed.unwrap_or(k).to_string(), v.clone());
    }
    Value::Object(out)
}

/// events.k8s.io/v1 shape -> core/v1 shape (the storage form).
pub fn to_core(obj: &Value) -> Value {
    rename(obj, true)
}

/// core/v1 shape -> events.k8s.io/v1 shape.
pub fn from_core(obj: &Value) -> Value {
    rename(obj, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_between_shapes() {
        let new = json!({"metadata": {"name": "e"}, "regarding": {"name": "web"}, "note": "n",
            "reportingController": "driftd", "series": {"count": 2}});
        let core = to_core(&new);
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "n");
        assert_eq!(core["reportingComponent"], "driftd");
        assert_eq!(from_core(&core), new);
    }
}
