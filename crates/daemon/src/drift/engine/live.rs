//! Which live object a judgement compares with, and what of a live object is kept.

use super::super::packed::Packed;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// Which live object a judgement compares with.
#[derive(Clone, Copy)]
pub(super) enum Live<'a> {
    /// The copy the engine keeps (a re-evaluation: a commit, an intent, a CRD...).
    Kept,
    /// The object a watch event just brought (`None`: deleted), already kept.
    Fresh(Option<&'a Value>),
}

impl<'a> Live<'a> {
    /// The object to compare with: the one the event brought, or the kept copy, unpacked
    /// into `kept` (which the answer borrows).
    pub(super) fn resolve(
        self,
        kept: &'a mut Option<Value>,
        copy: impl FnOnce() -> Option<Value>,
    ) -> Option<&'a Value> {
        match self {
            Live::Fresh(live) => live,
            Live::Kept => {
                *kept = copy();
                kept.as_ref()
            }
        }
    }
}

/// The annotation `kubectl apply` keeps the whole applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What of a live object the engine keeps: everything the comparison reads. `status` (the
/// controllers') and kubectl's last-applied copy of the object are never compared, and are
/// often half of what the API server sends; keeping them would hold each object twice over.
/// The other keys keep their order.
pub(super) fn as_compared(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.shift_remove("status");
        if let Some(annotations) = map
            .get_mut("metadata")
            .and_then(|m| m.get_mut("annotations"))
            .and_then(Value::as_object_mut)
        {
            annotations.shift_remove(LAST_APPLIED);
        }
    }
    object
}

/// [`as_compared`] of `object`, packed, written from `object` as it is: no tree is copied or
/// changed. Watchers pack it on their tasks, beside the engine's thread (issue #11: packing
/// the kept copy was a fifth of the engine's time per watch event).
pub(crate) fn kept_copy(object: &Value) -> Packed {
    Packed::new(&Compared(object))
}

/// Serializes as [`as_compared`] of the value would.
struct Compared<'a>(&'a Value);

impl Serialize for Compared<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(map) = self.0.as_object() else {
            return self.0.serialize(serializer);
        };
        let mut out = serializer.serialize_map(None)?;
        for (key, value) in map {
            match (key.as_str(), value) {
                ("status", _) => {}
                ("metadata", Value::Object(metadata)) => {
                    out.serialize_entry(key, &Metadata(metadata))?
                }
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

/// Metadata without the last-applied annotation.
struct Metadata<'a>(&'a Map<String, Value>);

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(None)?;
        for (key, value) in self.0 {
            match (key.as_str(), value) {
                ("annotations", Value::Object(annotations)) => {
                    out.serialize_entry(key, &Annotations(annotations))?
                }
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
    }
}

/// Annotations without the last-applied one.
struct Annotations<'a>(&'a Map<String, Value>);

impl Serialize for Annotations<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().filter(|(k, _)| *k != LAST_APPLIED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_kept_copy_is_the_compared_object_packed() {
        let objects = [
            // A list item: apiVersion and kind come after status.
            json!({"metadata": {"name": "web", "annotations": {"a": "1", LAST_APPLIED: "{}", "z": "2"}},
                "spec": {"replicas": 2}, "status": {"replicas": 1}, "apiVersion": "apps/v1", "kind": "Deployment"}),
            json!({"kind": "ConfigMap", "metadata": {"annotations": {LAST_APPLIED: "{}"}}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "x", "annotations": null}, "status": 1}),
            json!({"kind": "ConfigMap", "metadata": "not an object"}),
            json!(["not", "an", "object"]),
        ];
        for object in objects {
            let compared = as_compared(object.clone());
            assert_eq!(
                kept_copy(&object).text(),
                serde_json::to_vec(&compared).unwrap()
            );
            assert!(kept_copy(&object) == Packed::new(&compared));
        }
        let kept = kept_copy(&objects_with_status()).unpack();
        let keys: Vec<&String> = kept.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["metadata", "spec", "apiVersion", "kind"],
            "order kept"
        );
        assert_eq!(kept["metadata"]["annotations"], json!({"a": "1"}));
    }

    fn objects_with_status() -> Value {
        json!({"metadata": {"annotations": {"a": "1", LAST_APPLIED: "{}"}}, "spec": {},
            "status": {}, "apiVersion": "v1", "kind": "Service"})
    }
}
