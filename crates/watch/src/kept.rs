//! What of a live object the engine keeps, packed by the watcher that parsed it.

use super::packed::{Packed, Packing};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// The annotation `kubectl apply` keeps the whole applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What of a live object the engine keeps: everything the comparison reads. `status` (the
/// controllers') and kubectl's last-applied copy of the object are never compared, and are
/// often half of what the API server sends; keeping them would hold each object twice over.
/// The other keys keep their order.
pub fn as_compared(mut object: Value) -> Value {
    for path in NOT_KEPT {
        let (last, parents) = path.split_last().expect("paths are not empty");
        let parent = parents
            .iter()
            .try_fold(&mut object, |value, segment| value.get_mut(*segment));
        if let Some(map) = parent.and_then(Value::as_object_mut) {
            map.shift_remove(*last);
        }
    }
    object
}

/// Where what the engine does not keep is (see [`as_compared`]).
const NOT_KEPT: &[&[&str]] = &[&["status"], &["metadata", "annotations", LAST_APPLIED]];

/// [`as_compared`] of `object`, packed, written from `object` as it is: no tree is copied or
/// changed. Watchers pack it on their tasks, beside the engine's thread, which is the
/// bottleneck of a busy cluster.
pub fn kept_copy(object: &Value, packing: &Packing) -> Packed {
    packing.pack(&Pruned {
        value: object,
        paths: NOT_KEPT,
    })
}

/// Serializes `value` as it would be with the keys at `paths` removed.
struct Pruned<'a> {
    value: &'a Value,
    paths: &'a [&'a [&'a str]],
}

impl Serialize for Pruned<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.value else {
            return self.value.serialize(serializer);
        };
        let mut out = serializer.serialize_map(None)?;
        for (key, value) in map {
            match self
                .paths
                .iter()
                .find(|path| path.first() == Some(&key.as_str()))
            {
                Some([_]) => {}
                Some([_, rest @ ..]) => out.serialize_entry(
                    key,
                    &Pruned {
                        value,
                        paths: &[rest],
                    },
                )?,
                _ => out.serialize_entry(key, value)?,
            }
        }
        out.end()
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
            // Only those paths: a `status` or last-applied annotation elsewhere stays.
            json!({"spec": {"status": "kept"}, "annotations": {LAST_APPLIED: "kept"},
                "metadata": {"labels": {LAST_APPLIED: "kept"}, "annotations": {LAST_APPLIED: "{}"}}}),
            json!(["not", "an", "object"]),
        ];
        let packing = Packing::new();
        let kept_copy = |object: &Value| kept_copy(object, &packing);
        for object in &objects {
            let compared = as_compared(object.clone());
            assert!(
                !compared.to_string().contains("\"{}\""),
                "removed: {compared}"
            );
            assert_eq!(
                packing.text(&kept_copy(object)),
                serde_json::to_vec(&compared).unwrap()
            );
            assert!(packing.same(&kept_copy(object), &packing.pack(&compared)));
        }
        let elsewhere = packing.unpack(&kept_copy(&objects[4])).to_string();
        assert_eq!(elsewhere.matches("kept").count(), 3, "{elsewhere}");
        let kept = packing.unpack(&kept_copy(&objects_with_status()));
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
