//! A live object as the API server sends it, parsed once, straight into the JSON tree the
//! engine compares.
//!
//! kube's `DynamicObject` parses `metadata` into a typed `ObjectMeta` and the rest into a
//! `Value`, which the engine then turned back into one `Value`: two conversions of every
//! listed and watched object (issue #11's profile put them at 29% and 19% of a cold start).
//! This type is what `Api` lists and watches instead; only the resourceVersion, which the
//! watch resumes from, is read into its `ObjectMeta`.

use kube::api::{ApiResource, ObjectMeta};
use kube::core::DynamicResourceScope;
use kube::Resource;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;

/// A listed or watched object; [`LiveObject::into_json`] gives it to the engine.
#[derive(Clone, Debug)]
pub struct LiveObject {
    metadata: ObjectMeta,
    object: Value,
}

impl LiveObject {
    /// The object as JSON. List items come without apiVersion/kind (as kube-apiserver sends
    /// them); they are put back so every live object carries its type like a
    /// `kubectl get -o json` object does.
    pub fn into_json(self, resource: &ApiResource) -> Value {
        let mut object = self.object;
        if let Some(map) = object.as_object_mut() {
            map.entry("apiVersion")
                .or_insert_with(|| Value::String(resource.api_version.clone()));
            map.entry("kind")
                .or_insert_with(|| Value::String(resource.kind.clone()));
        }
        object
    }
}

impl<'de> Deserialize<'de> for LiveObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Value::deserialize(deserializer)?;
        let resource_version = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(LiveObject {
            metadata: ObjectMeta {
                resource_version,
                ..ObjectMeta::default()
            },
            object,
        })
    }
}

impl Resource for LiveObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_item_gets_its_type_and_keeps_everything_else() {
        let item = json!({"metadata": {"name": "web", "namespace": "shop",
            "resourceVersion": "42", "labels": {"z": "1", "a": "2"}},
            "data": {"k": "v"}});
        let live: LiveObject = serde_json::from_value(item.clone()).unwrap();
        assert_eq!(live.meta().resource_version.as_deref(), Some("42"));
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let json = live.into_json(&resource);
        assert_eq!(json["apiVersion"], "v1");
        assert_eq!(json["kind"], "ConfigMap");
        assert_eq!(json["metadata"], item["metadata"]);
        assert_eq!(json["data"], item["data"]);
        let keys: Vec<&String> = json["metadata"]["labels"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["z", "a"], "key order as sent");
    }

    #[test]
    fn a_watch_event_parses_with_its_resource_version() {
        let line = r#"{"type":"MODIFIED","object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","resourceVersion":"7"}}}"#;
        let event: kube::api::WatchEvent<LiveObject> = serde_json::from_str(line).unwrap();
        let kube::api::WatchEvent::Modified(live) = event else {
            panic!("a modification");
        };
        assert_eq!(live.meta().resource_version.as_deref(), Some("7"));
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        assert_eq!(
            live.into_json(&resource)["kind"],
            "Deployment",
            "its own type wins"
        );
    }
}
