//! Field ownership from live `metadata.managedFields` (FieldsV1): who last wrote a field and
//! when, and whether a controller owns it by design.
//!
//! FieldsV1 mirrors sigs.k8s.io/structured-merge-diff: `f:<field>` for a field,
//! `k:<json>` for a keyed list item, `v:<json>` for a set item, `i:<n>` for a position, and
//! `.` for the item itself. An empty object `{}` marks a leaf owned whole (scalars, atomic
//! lists and maps).

use super::pointer::Seg;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;

/// One `managedFields` entry reduced to what attribution needs.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub manager: &'a str,
    pub subresource: &'a str,
    pub time: Option<&'a str>,
    fields: &'a Value,
    /// The `k:` children of the FieldsV1 nodes looked up so far, by node address: each
    /// node's keys are parsed once per comparison instead of once per lookup, so attributing
    /// every change inside a long keyed list stays linear in its length. The nodes are
    /// borrowed for `'a`, so an address cannot be reused by another node while this lives.
    keyed: RefCell<HashMap<usize, KeyIndex<'a>>>,
}

/// The `k:{...}` children of one FieldsV1 node: key field -> key value as text -> child.
/// The first child in document order wins, as a scan over the node would find it.
type KeyIndex<'a> = HashMap<String, HashMap<String, &'a Value>>;

/// Indexes the `k:` children of `map` by every field of their key, parsing each key once.
fn key_index(map: &Map<String, Value>) -> KeyIndex<'_> {
    let mut index = KeyIndex::new();
    for (k, child) in map {
        let Some(json) = k.strip_prefix("k:") else {
            continue;
        };
        let Ok(Value::Object(key)) = serde_json::from_str::<Value>(json) else {
            continue;
        };
        for (field, value) in key {
            // The same text `lists` gives a merge key value: a string as is, else its JSON.
            let text = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            index.entry(field).or_default().entry(text).or_insert(child);
        }
    }
    index
}

/// The entries of a live object's `metadata.managedFields` (FieldsV1 only).
pub fn entries(live: &Value) -> Vec<Entry<'_>> {
    let Some(list) = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|e| {
            let fields = e.get("fieldsV1")?;
            if e.get("fieldsType")
                .and_then(Value::as_str)
                .unwrap_or("FieldsV1")
                != "FieldsV1"
            {
                return None;
            }
            Some(Entry {
                manager: e.get("manager").and_then(Value::as_str).unwrap_or(""),
                subresource: e.get("subresource").and_then(Value::as_str).unwrap_or(""),
                time: e.get("time").and_then(Value::as_str),
                fields,
                keyed: RefCell::default(),
            })
        })
        .collect()
}

impl<'a> Entry<'a> {
    /// The child of FieldsV1 `node` (a node of this entry) that `seg` leads to.
    fn child(&self, node: &'a Value, seg: &Seg) -> Option<&'a Value> {
        let map = node.as_object()?;
        match seg {
            Seg::Field(name) => map.get(&format!("f:{name}")),
            Seg::Item {
                key: Some((field, value)),
                ..
            } => self
                .keyed
                .borrow_mut()
                .entry(map as *const Map<String, Value> as usize)
                .or_insert_with(|| key_index(map))
                .get(field.as_str())?
                .get(value.as_str())
                .copied(),
            Seg::Item { live: Some(i), .. } => map.get(&format!("i:{i}")),
            Seg::Item { .. } => None,
        }
    }
}

/// How far `entry` owns along `segs`: `Some(depth)` if it owns the field itself (depth =
/// `segs.len()`) or a whole ancestor leaf (an atomic list or map it wrote as one value).
/// Items of a keyed list are tracked one by one (`k:` elements), so an empty node for the
/// list owns the list field, not an item it does not name: a removed item has no owner.
fn ownership_depth(entry: &Entry, segs: &[Seg]) -> Option<usize> {
    let mut node = entry.fields;
    for (depth, seg) in segs.iter().enumerate() {
        match entry.child(node, seg) {
            Some(next) => node = next,
            None => {
                let keyed_item = matches!(seg, Seg::Item { key: Some(_), .. });
                let leaf = node.as_object().is_some_and(|m| m.is_empty());
                return (depth > 0 && leaf && !keyed_item).then_some(depth);
            }
        }
    }
    Some(segs.len())
}

/// The manager that owns the field at `segs` most specifically (latest write on ties).
pub fn owner<'e, 'a>(entries: &'e [Entry<'a>], segs: &[Seg]) -> Option<&'e Entry<'a>> {
    entries
        .iter()
        .filter_map(|e| ownership_depth(e, segs).map(|d| (d, e)))
        .max_by(|(da, a), (db, b)| da.cmp(db).then_with(|| a.time.cmp(&b.time)))
        .map(|(_, e)| e)
}

/// Whether any entry whose manager (and subresource, if given) is in `managers` owns the
/// field at `segs`.
pub fn owned_by_any(entries: &[Entry], segs: &[Seg], managers: &[ManagerMatch]) -> bool {
    entries
        .iter()
        .any(|e| managers.iter().any(|m| m.matches(e)) && ownership_depth(e, segs).is_some())
}

/// A field manager whose fields are never drift (a controller acting by design).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ManagerMatch {
    pub manager: String,
    /// Only entries written through this subresource (e.g. `scale`); any if `None`.
    #[serde(default)]
    pub subresource: Option<String>,
}

impl ManagerMatch {
    fn matches(&self, e: &Entry) -> bool {
        self.manager == e.manager
            && self
                .subresource
                .as_deref()
                .is_none_or(|s| s == e.subresource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live() -> Value {
        json!({"metadata": {"managedFields": [
            {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}},
            {"manager": "kubectl-edit", "operation": "Update", "time": "2026-01-02T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"app\"}": {"f:args": {}}}}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
             "time": "2026-01-03T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ]}})
    }

    fn path(parts: &[&str]) -> Vec<Seg> {
        parts
            .iter()
            .map(|p| match p.split_once('=') {
                Some((k, v)) => Seg::Item {
                    desired: Some(0),
                    live: Some(0),
                    key: Some((k.into(), v.into())),
                },
                None => Seg::Field(p.to_string()),
            })
            .collect()
    }

    #[test]
    fn most_specific_owner_wins() {
        let live = live();
        let es = entries(&live);
        let img = path(&[
            "spec",
            "template",
            "spec",
            "containers",
            "name=app",
            "image",
        ]);
        assert_eq!(
            owner(&es, &img).unwrap().manager,
            "kubectl-client-side-apply"
        );
        // args is an atomic list owned whole: positions inside belong to its owner too.
        let mut arg = path(&["spec", "template", "spec", "containers", "name=app", "args"]);
        arg.push(Seg::Item {
            desired: Some(1),
            live: Some(1),
            key: None,
        });
        let o = owner(&es, &arg).unwrap();
        assert_eq!(
            (o.manager, o.time),
            ("kubectl-edit", Some("2026-01-02T00:00:00Z"))
        );
        assert!(owner(&es, &path(&["spec", "paused"])).is_none());
    }

    #[test]
    fn keyed_items_are_found_by_any_key_field_and_first_match_wins() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "helm", "operation": "Update", "time": "2026-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:ports": {
                "k:{\"port\":53,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}},
                "k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:name": {}, "f:appProtocol": {}},
                "k:not json": {"f:name": {}},
                "k:{\"port\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:targetPort": {}}}}}}
        ]}});
        let es = entries(&live);
        let port = |key: &str, field: &str| {
            let (k, v) = key.split_once('=').unwrap();
            vec![
                Seg::Field("spec".into()),
                Seg::Field("ports".into()),
                Seg::Item {
                    desired: Some(0),
                    live: Some(0),
                    key: Some((k.into(), v.into())),
                },
                Seg::Field(field.into()),
            ]
        };
        // Asked twice: the second lookup goes through the node's index built by the first.
        for _ in 0..2 {
            assert!(owner(&es, &port("port=8080", "targetPort")).is_some());
            assert!(owner(&es, &port("port=8080", "name")).is_none());
            // A number key matches its JSON text; port 53 is the first `k:` with it (TCP).
            assert!(owner(&es, &port("port=53", "name")).is_some());
            assert!(owner(&es, &port("port=53", "appProtocol")).is_none());
            // Any field of the key identifies the item; the first in document order wins.
            assert!(owner(&es, &port("protocol=UDP", "appProtocol")).is_some());
            assert!(owner(&es, &port("protocol=TCP", "name")).is_some());
            assert!(owner(&es, &port("port=54", "name")).is_none());
            assert!(owner(&es, &port("name=53", "name")).is_none());
        }
    }

    #[test]
    fn a_keyed_item_is_not_owned_through_its_lists_empty_node() {
        // `kubectl edit` replaced port 8080 with 8081: the creator keeps the `ports` field
        // (`{}`, all its items gone), the 8080 item belongs to nobody.
        let live = json!({"metadata": {"managedFields": [
            {"manager": "kubectl-client-side-apply", "operation": "Update",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:ports": {}, "f:args": {}}}},
            {"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:ports": {"k:{\"port\":8081}": {".": {}, "f:port": {}}}}}}
        ]}});
        let es = entries(&live);
        let mut port = path(&["spec", "ports", "port=8080"]);
        assert!(owner(&es, &port).is_none());
        port.push(Seg::Field("name".into()));
        assert!(owner(&es, &port).is_none());
        let other = path(&["spec", "ports", "port=8081"]);
        assert_eq!(owner(&es, &other).unwrap().manager, "kubectl-edit");
        // An atomic list (no key) is still owned whole through its leaf.
        let mut arg = path(&["spec", "args"]);
        arg.push(Seg::Item {
            desired: Some(0),
            live: Some(0),
            key: None,
        });
        assert_eq!(
            owner(&es, &arg).unwrap().manager,
            "kubectl-client-side-apply"
        );
    }

    #[test]
    fn controller_managers_match_by_subresource() {
        let live = live();
        let es = entries(&live);
        let scale = vec![ManagerMatch {
            manager: "kube-controller-manager".into(),
            subresource: Some("scale".into()),
        }];
        assert!(owned_by_any(&es, &path(&["spec", "replicas"]), &scale));
        let img = path(&[
            "spec",
            "template",
            "spec",
            "containers",
            "name=app",
            "image",
        ]);
        assert!(!owned_by_any(&es, &img, &scale));
    }
}
