//! A live object as the API server sends it, parsed once, straight into the JSON tree the
//! engine compares.
//!
//! kube's `DynamicObject` parses `metadata` into a typed `ObjectMeta` and the rest into a
//! `Value`, which the engine then turned back into one `Value`: two conversions of every
//! listed and watched object (a profile put them at 29% and 19% of a cold start).
//! This type is what `Api` lists and watches instead; only the resourceVersion, which the
//! watch resumes from, is read into its `ObjectMeta`.
//!
//! Each `metadata.managedFields[].fieldsV1` is kept as its JSON text (as the API server
//! wrote it, compact; transcoded when serde buffered the object) rather than a tree
//! (`driftd_core::diff::managed` reads either): in a typical Deployment it holds 123 of the
//! object's 198 keys, each a `String` and a map entry to build, pack and free, for an
//! attribution that reads one path per change.

use driftd_core::diff::pointer;
use kube::api::{ApiResource, ObjectMeta};
use kube::core::DynamicResourceScope;
use kube::Resource;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

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
        let object = Shaped(Level::Object).deserialize(deserializer)?;
        let resource_version = pointer::at(&object, &["metadata", "resourceVersion"])
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

/// Where in a live object a value sits, on the way to `fieldsV1`.
#[derive(Clone, Copy)]
enum Level {
    Object,
    Metadata,
    ManagedFields,
    ManagedEntry,
}

/// A value at `Level`, built as `serde_json::Value` but for `fieldsV1`, kept as text.
struct Shaped(Level);

impl Shaped {
    /// The level of the value under `key` of a map at this level; `None`: a plain value.
    fn child(&self, key: &str) -> Option<Level> {
        match (self.0, key) {
            (Level::Object, "metadata") => Some(Level::Metadata),
            (Level::Metadata, "managedFields") => Some(Level::ManagedFields),
            _ => None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Shaped {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shaped {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        match self.0 {
            Level::ManagedFields => {
                while let Some(item) = seq.next_element_seed(Shaped(Level::ManagedEntry))? {
                    items.push(item);
                }
            }
            _ => {
                while let Some(item) = seq.next_element::<Value>()? {
                    items.push(item);
                }
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match self.child(&key) {
                Some(level) => map.next_value_seed(Shaped(level))?,
                None if matches!(self.0, Level::ManagedEntry) && key == "fieldsV1" => {
                    let mut text = Vec::new();
                    map.next_value_seed(FieldsText(&mut text))?;
                    Value::String(String::from_utf8(text).expect("JSON text is UTF-8"))
                }
                None => map.next_value::<Value>()?,
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// The name serde_json's `RawValue` asks a deserializer for: serde_json's own deserializers
/// (of text and of a `Value`) answer with the value's text as one map entry under this key;
/// others (serde's buffering) answer with the plain value.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Writes the value read as JSON text: straight from serde_json's input when the
/// deserializer is serde_json's (a watch event with `type` first, a list page; the
/// API server writes compact JSON), or else through [`Transcode`]. Copying the text is a
/// fraction of transcoding it (`serde_json`'s string escaping is a visible share of
/// `serve`'s CPU with many objects).
struct FieldsText<'b>(&'b mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for FieldsText<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, self)
    }
}

impl<'de> Visitor<'de> for FieldsText<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    /// A deserializer without raw values: the value, transcoded.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        Transcode(self.0).deserialize(deserializer)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let first = map.next_key::<String>()?;
        if first.as_deref() == Some(RAW_VALUE_TOKEN) {
            return map.next_value_seed(TextInto(self.0));
        }
        // A deserializer that answers a newtype with its content: this map is the value.
        transcode_map(self.0, first, map)
    }
}

/// Appends a string as it is (not as a JSON string): a raw value's text.
struct TextInto<'b>(&'b mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for TextInto<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for TextInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a raw value's text")
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.extend_from_slice(v.as_bytes());
        Ok(())
    }
}

/// Writes the value read as compact JSON text, building no tree (whatever the deserializer:
/// unlike `RawValue`, this works through serde's buffering too).
struct Transcode<'b>(&'b mut Vec<u8>);

impl Transcode<'_> {
    fn write(&mut self, value: &impl serde::Serialize) {
        serde_json::to_writer(&mut *self.0, value).expect("writing to a Vec cannot fail");
    }
}

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(mut self, v: bool) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_i64<E>(mut self, v: i64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_u64<E>(mut self, v: u64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_f64<E>(mut self, v: f64) -> Result<(), E> {
        self.write(&Value::from(v));
        Ok(())
    }

    fn visit_str<E>(mut self, v: &str) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_unit<E>(mut self) -> Result<(), E> {
        self.write(&());
        Ok(())
    }

    fn visit_none<E>(mut self) -> Result<(), E> {
        self.write(&());
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        separated(self.0, b'[', b']', |out| {
            Ok(seq.next_element_seed(Transcode(out))?.is_some())
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        transcode_map(self.0, None, map)
    }
}

/// Writes the entries of `map` as a JSON object; `first` is a key already read from it.
fn transcode_map<'de, A: MapAccess<'de>>(
    out: &mut Vec<u8>,
    mut first: Option<String>,
    mut map: A,
) -> Result<(), A::Error> {
    separated(out, b'{', b'}', |out| {
        match first.take() {
            Some(key) => Transcode(out).visit_str::<A::Error>(&key)?,
            // A key is a string: written as one.
            None if map.next_key_seed(Transcode(out))?.is_none() => return Ok(false),
            None => {}
        }
        out.push(b':');
        map.next_value_seed(Transcode(out))?;
        Ok(true)
    })
}

/// Writes `open`, the items `item` writes (it answers false when there are no more) with a
/// comma between them, then `close`.
fn separated<E>(
    out: &mut Vec<u8>,
    open: u8,
    close: u8,
    mut item: impl FnMut(&mut Vec<u8>) -> Result<bool, E>,
) -> Result<(), E> {
    out.push(open);
    let mut first = true;
    loop {
        let at = out.len();
        if !first {
            out.push(b',');
        }
        if !item(out)? {
            out.truncate(at);
            break;
        }
        first = false;
    }
    out.push(close);
    Ok(())
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

    /// A watch event's `fieldsV1` arrives as compact text of the same JSON, whatever the
    /// deserializer (straight from the line, through serde's buffering when `object` comes
    /// before `type`, or from a tree); everything else is the tree a plain parse makes.
    #[test]
    fn fields_v1_is_kept_as_its_text_and_the_rest_as_a_tree() {
        let fields = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:ports": {
                    "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {}}}}}},
                "f:weird": [1, -2, 2.5, true, null, "é \" \\ \u{0001}", [], {}]}});
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "resourceVersion": "9", "labels": {"app": "web"},
                "managedFields": [
                    {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": fields, "time": "2026-01-01T00:00:00Z"},
                    {"manager": "other", "fieldsType": "FieldsV1", "fieldsV1": {}}]},
            "spec": {"replicas": 2, "fieldsV1": {"f:x": {}}}});
        let type_first = format!(r#"{{"type":"MODIFIED","object":{object}}}"#);
        let object_first = format!(r#"{{"object":{object},"type":"MODIFIED"}}"#);
        let resource = ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&());
        let mut parsed = Vec::new();
        for line in [type_first, object_first] {
            let event: kube::api::WatchEvent<LiveObject> = serde_json::from_str(&line).unwrap();
            let kube::api::WatchEvent::Modified(live) = event else {
                panic!("a modification");
            };
            parsed.push(live.into_json(&resource));
        }
        let listed: LiveObject = serde_json::from_value(object.clone()).unwrap();
        parsed.push(listed.into_json(&resource));
        for live in parsed {
            let text = live["metadata"]["managedFields"][0]["fieldsV1"]
                .as_str()
                .expect("kept as text");
            assert_eq!(serde_json::from_str::<Value>(text).unwrap(), fields);
            assert_eq!(text, fields.to_string(), "compact, keys in their order");
            assert_eq!(live["metadata"]["managedFields"][1]["fieldsV1"], "{}");
            let mut as_tree = live.clone();
            for entry in as_tree["metadata"]["managedFields"].as_array_mut().unwrap() {
                entry["fieldsV1"] =
                    serde_json::from_str(entry["fieldsV1"].as_str().unwrap()).unwrap();
            }
            assert_eq!(as_tree, object, "the rest as sent");
            assert!(
                live["spec"]["fieldsV1"].is_object(),
                "only under managedFields"
            );
        }
    }

    /// A deserializer that answers a request for a raw value with the plain value (serde's
    /// own map deserializer does) gets it transcoded.
    #[test]
    fn fields_v1_from_a_deserializer_without_raw_values_is_transcoded() {
        let entries = vec![
            ("f:a", json!({})),
            ("k:{\"x\":1}", json!({".": {}, "f:b": {}})),
        ];
        let deserializer = serde::de::value::MapDeserializer::<_, serde_json::Error>::new(
            entries.clone().into_iter(),
        );
        let mut text = Vec::new();
        FieldsText(&mut text).deserialize(deserializer).unwrap();
        let expected: Map<String, Value> = entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            Value::Object(expected).to_string()
        );
    }

    /// Straight from the line (`type` first, as the API server writes events), `fieldsV1` is
    /// the text as sent, copied rather than transcoded: its spaces stay.
    #[test]
    fn fields_v1_straight_from_the_line_is_the_text_as_sent() {
        let sent = r#"{ "f:data" : { "f:a" : { } , "k:{\"x\":1}": {} } }"#;
        let line = format!(
            r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c","resourceVersion":"3","managedFields":[{{"manager":"m","fieldsV1":{sent}}}]}}}}}}"#
        );
        let event: kube::api::WatchEvent<LiveObject> = serde_json::from_str(&line).unwrap();
        let kube::api::WatchEvent::Added(live) = event else {
            panic!("an addition");
        };
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let live = live.into_json(&resource);
        assert_eq!(live["metadata"]["managedFields"][0]["fieldsV1"], sent);
        let list = format!(
            r#"{{"metadata":{{"resourceVersion":"3","managedFields":[{{"fieldsV1":{sent}}}]}}}}"#
        );
        let listed: LiveObject = serde_json::from_str(&list).unwrap();
        assert_eq!(
            listed.into_json(&resource)["metadata"]["managedFields"][0]["fieldsV1"],
            sent,
            "a list item too"
        );
    }
}
