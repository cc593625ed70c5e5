//! How one object is kept: a stored version is its compact JSON text, packed (see
//! [`super::packed`]), shared by the store and the watch history, and unpacked straight
//! into the list, get and watch responses that carry it (as kube-state-metrics keeps bytes
//! rather than trees); a tree is parsed only when a write, a selector or a Table needs one.

use super::super::events;
use super::packed::Packed;
use axum::body::Bytes;
use driftd_k8s::convert;
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::sync::Arc;

/// `(namespace, name)`; the namespace is empty for cluster-scoped types.
pub type Key = (String, String);

/// `(group, plural)` of the storage an object lives in.
pub type StorageKey = (String, String);

/// One version of an object.
#[derive(Debug)]
pub struct Stored {
    /// The resourceVersion written into `json`.
    pub rv: u64,
    pub key: Key,
    /// The object's JSON in storage form (its `apiVersion`, `kind` and `resourceVersion`
    /// set), packed; read with [`Stored::json`] or [`Stored::write_json`].
    text: Packed,
    /// The `apiVersion` in `json`: a read through another version must re-render.
    pub api_version: Arc<str>,
    /// uids named by `metadata.ownerReferences`, for the dependents index.
    pub owners: Box<[Box<str>]>,
    /// For a custom resource whose CRD serves several versions: the object as a read at
    /// each other served version returns it (pruned by that version's schema:
    /// `CrdSchemas::as_read`), by version name. Empty otherwise.
    pub renditions: Box<[(Box<str>, Bytes)]>,
}

impl Stored {
    /// Serializes `object` (storage form, resourceVersion already set).
    pub fn new(rv: u64, key: Key, object: &Value, api_version: Arc<str>) -> Stored {
        let json = serde_json::to_vec(object).expect("JSON values serialize");
        Stored {
            rv,
            key,
            text: Packed::new(&json, rv_digits(&json, rv)),
            api_version,
            owners: owner_uids(object),
            renditions: Box::default(),
        }
    }

    /// The same version stamped with resourceVersion `rv` (its text's, packed without
    /// them, put back when it is read); `None` when its text's resourceVersion could not be
    /// told apart from the rest of it.
    pub fn restamped(&self, rv: u64) -> Option<Stored> {
        self.text.has_digits().then(|| Stored {
            rv,
            key: self.key.clone(),
            text: self.text.clone(),
            api_version: self.api_version.clone(),
            owners: self.owners.clone(),
            renditions: self.renditions.clone(),
        })
    }

    /// The same version packed with the trained dictionary, if it was kept before one
    /// existed (see [`super::packed`]).
    pub fn repacked(&self) -> Option<Stored> {
        let text = self.text.repacked()?;
        Some(Stored {
            rv: self.rv,
            key: self.key.clone(),
            text,
            api_version: self.api_version.clone(),
            owners: self.owners.clone(),
            renditions: self.renditions.clone(),
        })
    }

    /// The object's JSON in storage form.
    pub fn json(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.json_len());
        self.write_json(&mut out);
        Bytes::from(out)
    }

    /// Appends the object's JSON in storage form to `out` (a response or a watch event
    /// being written): unpacked straight into it.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.text.write(self.rv.to_string().as_bytes(), out);
    }

    /// Bytes of the object's JSON.
    pub fn json_len(&self) -> usize {
        self.text.len(self.rv.to_string().as_bytes())
    }

    /// Whether the JSON is packed with the trained dictionary.
    pub fn is_trained(&self) -> bool {
        self.text.is_trained()
    }

    /// The same version with its reads at other served versions.
    pub fn with_renditions(mut self, renditions: Box<[(Box<str>, Bytes)]>) -> Stored {
        self.renditions = renditions;
        self
    }

    /// A read at `info`'s version prepared for a custom resource.
    fn rendition(&self, info: &ResourceType) -> Option<&Bytes> {
        self.renditions
            .iter()
            .find(|(v, _)| **v == *info.version)
            .filter(|_| info.custom)
            .map(|(_, b)| b)
    }

    /// The object as a tree.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json()).expect("stored objects are JSON")
    }

    /// `metadata.labels` (a JSON object, or `None`), read without building the rest of the
    /// tree: every labelled watch checks every change of its type (parsing
    /// whole objects for it was a fifth of the simulator's watch work). kube-apiserver's
    /// cacher filters on the stored object too, before converting it for the watcher.
    pub fn labels(&self) -> Option<Value> {
        #[derive(serde::Deserialize)]
        struct Object {
            metadata: Option<Metadata>,
        }
        #[derive(serde::Deserialize)]
        struct Metadata {
            labels: Option<Value>,
        }
        let object: Object = serde_json::from_slice(&self.json()).expect("stored objects are JSON");
        object.metadata?.labels
    }

    /// Whether `json` is already what a read through `info` serves.
    pub fn serves_as(&self, info: &ResourceType) -> bool {
        !is_new_event(info) && api_version_is(&self.api_version, info)
    }

    /// The object as served through `info`, sharing the stored bytes when they fit.
    pub fn json_as(&self, info: &ResourceType) -> Bytes {
        if self.serves_as(info) {
            self.json()
        } else if let Some(bytes) = self.rendition(info) {
            bytes.clone()
        } else {
            to_bytes(&render(info, &self.value()))
        }
    }

    /// Appends the object as served through `info` to `out`, unpacked straight into it
    /// when the stored text fits.
    pub fn write_json_as(&self, info: &ResourceType, out: &mut Vec<u8>) {
        if self.serves_as(info) {
            self.write_json(out);
        } else {
            out.extend_from_slice(&self.json_as(info));
        }
    }

    /// The object as served through `info`, as a tree.
    pub fn value_as(&self, info: &ResourceType) -> Value {
        if let Some(bytes) = self.rendition(info) {
            return serde_json::from_slice(bytes).expect("renditions are JSON");
        }
        let v = self.value();
        if self.serves_as(info) {
            v
        } else {
            render(info, &v)
        }
    }
}

/// Whether `av` is `info`'s apiVersion (`v1`, or `group/version`), without building it.
fn api_version_is(av: &str, info: &ResourceType) -> bool {
    if info.group.is_empty() {
        return av == info.version;
    }
    av.strip_prefix(info.group.as_str())
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|v| v == info.version)
}

/// Where the digits of `"resourceVersion":"<rv>"` are in `json`, if that occurs exactly
/// once (a label or annotation could hold the same text: the digits are then left in).
fn rv_digits(json: &[u8], rv: u64) -> Option<std::ops::Range<usize>> {
    let digits = rv.to_string();
    let needle = format!("\"resourceVersion\":\"{digits}\"");
    let needle = needle.as_bytes();
    let mut found = json
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(at, _)| at);
    let at = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let start = at + needle.len() - 1 - digits.len();
    Some(start..start + digits.len())
}

pub fn to_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).expect("JSON values serialize"))
}

fn owner_uids(object: &Value) -> Box<[Box<str>]> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(Box::from)
                .collect()
        })
        .unwrap_or_default()
}

/// A stored object as served through `info` (its apiVersion, and the events.k8s.io shape
/// for Events read through that group).
pub fn render(info: &ResourceType, obj: &Value) -> Value {
    let mut obj = if is_new_event(info) {
        events::from_core(obj)
    } else if let Some(storage) = convert::storage_type(info) {
        // Stored in another version of the kind: served through kube's conversion.
        let mut stored = obj.clone();
        stored["apiVersion"] = json!(storage.api_version());
        stored["kind"] = json!(storage.kind);
        convert::convert(&stored, &info.api_version()).unwrap_or(stored)
    } else {
        obj.clone()
    };
    obj["apiVersion"] = json!(info.api_version());
    obj["kind"] = json!(info.kind);
    obj
}

/// Where objects of a type live: events.k8s.io Events share core Events' storage, as in
/// kube-apiserver.
pub fn storage_of(info: &ResourceType) -> (&str, &str) {
    if is_new_event(info) {
        ("", "events")
    } else {
        (&info.group, &info.plural)
    }
}

pub fn is_new_event(info: &ResourceType) -> bool {
    info.group == "events.k8s.io" && info.plural == "events"
}

/// Converts a request body to the storage shape. A body in a version of the kind other
/// than the storage one is defaulted in its own version first, as kube-apiserver's decoder
/// does, then converted.
pub fn to_storage(info: &ResourceType, obj: Value) -> Value {
    if is_new_event(info) {
        return events::to_core(&obj);
    }
    let Some(storage) = convert::storage_type(info) else {
        return obj;
    };
    let mut obj = obj;
    obj["apiVersion"] = json!(info.api_version());
    obj["kind"] = json!(info.kind);
    driftd_k8s::defaults::apply(&info.api_version(), &info.kind, &mut obj);
    convert::convert(&obj, &storage.api_version()).unwrap_or(obj)
}

/// The type whose version objects of `info` are stored in: `info` itself, or for a
/// built-in served in several versions, its storage version (autoscaling/v2 for
/// autoscaling/v1 HorizontalPodAutoscalers). Defaults, validation and admission run on the
/// stored shape, as kube-apiserver runs them on the internal one.
pub fn stored_type(info: &ResourceType) -> &ResourceType {
    convert::storage_type(info).unwrap_or(info)
}

/// Storage key of an object: the namespace empty for cluster-scoped types whatever the
/// request path said.
pub fn object_key(info: &ResourceType, ns: Option<&str>, name: &str) -> Key {
    let ns = if info.namespaced {
        ns.unwrap_or("")
    } else {
        ""
    };
    (ns.to_string(), name.to_string())
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// What storing adds to every version: its type as it is stored (see [`stored_type`]),
/// and its resourceVersion.
pub fn storage_form(info: &ResourceType, object: &mut Value, rv: u64) {
    let stored = stored_type(info);
    object["apiVersion"] = json!(stored.api_version());
    object["kind"] = json!(stored.kind);
    set_meta(object, "resourceVersion", json!(rv.to_string()));
}

pub fn set_meta(obj: &mut Value, field: &str, v: Value) {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"][field] = v;
}
