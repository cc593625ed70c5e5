//! Field ownership from live `metadata.managedFields` (FieldsV1): who last wrote a field and
//! when, and whether a controller owns it by design.
//!
//! FieldsV1 mirrors sigs.k8s.io/structured-merge-diff: `f:<field>` for a field,
//! `k:<json>` for a keyed list item, `v:<json>` for a set item, `i:<n>` for a position, and
//! `.` for the item itself. An empty object `{}` marks a leaf owned whole (scalars, atomic
//! lists and maps).
//!
//! A `fieldsV1` may be held as its JSON text (a string where the API has an object): the
//! daemon's watchers keep it so, because its keys were most of a typical object's (123 of
//! 198 in a Deployment) and building their tree most of parsing a watch event, while
//! attribution reads one path per change. A path is then looked up by scanning the text
//! ([`Fields::Text`]); past a few lookups the text is parsed once ([`parse_texts`]).

use super::list_items::merge_key_value_text;
use super::pointer::Seg;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

/// Owner lookups due on one object up to which `fieldsV1` texts are scanned per lookup rather
/// than parsed: a scan costs about a fifth of a parse.
const TEXT_LOOKUPS: usize = 4;

/// A `fieldsV1` document as the live object holds it.
#[derive(Debug, Clone, Copy)]
enum Fields<'a> {
    Tree(&'a Value),
    /// Its JSON text, scanned for each lookup.
    Text(&'a str),
}

/// One `managedFields` entry reduced to what attribution needs.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub manager: &'a str,
    pub subresource: &'a str,
    pub time: Option<&'a str>,
    fields: Fields<'a>,
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
            let text = merge_key_value_text(&value).into_owned();
            index.entry(field).or_default().entry(text).or_insert(child);
        }
    }
    index
}

/// The `managedFields` entries of a live object.
fn managed_fields(live: &Value) -> &[Value] {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The `fieldsV1` texts of `live`, parsed in entry order, when `lookups` owner lookups are due
/// on it: past [`TEXT_LOOKUPS`], one parse costs less than a scan per lookup. Empty
/// otherwise, or when no entry holds text. Pass the answer to [`entries`].
pub fn parse_texts(live: &Value, lookups: usize) -> Vec<Value> {
    if lookups <= TEXT_LOOKUPS {
        return Vec::new();
    }
    managed_fields(live)
        .iter()
        .filter_map(|e| e.get("fieldsV1")?.as_str())
        .map(|text| serde_json::from_str(text).unwrap_or(Value::Null))
        .collect()
}

/// The entries of a live object's `metadata.managedFields` (FieldsV1 only). `parsed` is
/// [`parse_texts`] of the same object: the trees of its `fieldsV1` texts, if parsed.
pub fn entries<'a>(live: &'a Value, parsed: &'a [Value]) -> Vec<Entry<'a>> {
    let mut parsed = parsed.iter();
    managed_fields(live)
        .iter()
        .filter_map(|e| {
            let fields = e.get("fieldsV1")?;
            let fields = match fields {
                Value::String(text) => match parsed.next() {
                    Some(tree) => Fields::Tree(tree),
                    None => Fields::Text(text),
                },
                tree => Fields::Tree(tree),
            };
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

/// Whether `fields_v1` (a `fieldsV1`, tree or text) sets top-level field `name`.
pub fn sets_top_level(fields_v1: &Value, name: &str) -> bool {
    let path = [Seg::Field(name.to_string())];
    match fields_v1 {
        Value::String(text) => text_depth(text, &path) == Some(1),
        tree => tree
            .as_object()
            .is_some_and(|m| m.contains_key(&format!("f:{name}"))),
    }
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
    let mut node = match entry.fields {
        Fields::Tree(tree) => tree,
        Fields::Text(text) => return text_depth(text, segs),
    };
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

/// [`ownership_depth`] over a `fieldsV1` text: one scan that descends only into the keys
/// on `segs` and skips the rest without building anything. Text that does not parse owns
/// nothing.
fn text_depth(text: &str, segs: &[Seg]) -> Option<usize> {
    let mut de = serde_json::Deserializer::from_str(text);
    Descend { segs, depth: 0 }
        .deserialize(&mut de)
        .ok()
        .flatten()
}

/// Looks for the node at `segs[depth..]` below the node being read (which is at `depth`).
struct Descend<'s> {
    segs: &'s [Seg],
    depth: usize,
}

impl Descend<'_> {
    /// A node that is not an object has no children: owned only if the path ends here.
    fn no_children(self) -> Option<usize> {
        (self.depth == self.segs.len()).then_some(self.depth)
    }
}

impl<'de> DeserializeSeed<'de> for Descend<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Descend<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a FieldsV1 document")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(self.no_children())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(self.no_children())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(self.no_children())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(self.no_children())
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(self.no_children())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.no_children())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.no_children())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(seg) = self.segs.get(self.depth) else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Some(self.depth));
        };
        let mut found = None;
        let mut empty = true;
        while let Some(matches) = map.next_key_seed(KeyMatch {
            seg,
            // The first matching child in document order wins, as in the tree.
            done: found.is_some(),
        })? {
            empty = false;
            if matches {
                found = Some(map.next_value_seed(Descend {
                    segs: self.segs,
                    depth: self.depth + 1,
                })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        // As `ownership_depth` does when a child is missing.
        Ok(found.unwrap_or_else(|| {
            let keyed_item = matches!(seg, Seg::Item { key: Some(_), .. });
            (self.depth > 0 && empty && !keyed_item).then_some(self.depth)
        }))
    }
}

/// Whether a FieldsV1 key is the child `seg` leads to (as [`Entry::child`] finds it).
struct KeyMatch<'s> {
    seg: &'s Seg,
    done: bool,
}

impl<'de> DeserializeSeed<'de> for KeyMatch<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyMatch<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a FieldsV1 key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(!self.done && key_leads_to(key, self.seg))
    }
}

/// Whether FieldsV1 key `key` names the child `seg` leads to.
fn key_leads_to(key: &str, seg: &Seg) -> bool {
    match seg {
        Seg::Field(name) => key.strip_prefix("f:") == Some(name.as_str()),
        Seg::Item {
            key: Some((field, value)),
            ..
        } => key.strip_prefix("k:").is_some_and(|json| {
            let Ok(Value::Object(item_key)) = serde_json::from_str::<Value>(json) else {
                return false;
            };
            item_key
                .iter()
                .any(|(f, v)| f == field && merge_key_value_text(v) == value.as_str())
        }),
        Seg::Item { live: Some(i), .. } => key.strip_prefix("i:") == Some(i.to_string().as_str()),
        Seg::Item { .. } => false,
    }
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
        let es = entries(&live, &[]);
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
        let es = entries(&live, &[]);
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
        let es = entries(&live, &[]);
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
        let es = entries(&live, &[]);
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

    /// Every path into a FieldsV1 document (and beyond its leaves, and off its keys).
    fn paths_into(node: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
        out.push(prefix.clone());
        let mut off = prefix.clone();
        off.push(Seg::Field("absent".into()));
        out.push(off);
        let Some(map) = node.as_object() else { return };
        if map.is_empty() {
            // Below a leaf: a field, a position and a keyed item.
            for seg in [
                Seg::Field("below".into()),
                Seg::Item {
                    desired: None,
                    live: Some(1),
                    key: None,
                },
                Seg::Item {
                    desired: None,
                    live: Some(0),
                    key: Some(("name".into(), "x".into())),
                },
            ] {
                let mut below = prefix.clone();
                below.push(seg);
                out.push(below);
            }
        }
        for (key, child) in map {
            let mut segs = Vec::new();
            if let Some(name) = key.strip_prefix("f:") {
                segs.push(Seg::Field(name.into()));
            } else if let Some(json) = key.strip_prefix("k:") {
                let item: Map<String, Value> = serde_json::from_str(json).unwrap();
                for (field, value) in item {
                    let text = match value {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    segs.push(Seg::Item {
                        desired: None,
                        live: Some(0),
                        key: Some((field.clone(), text)),
                    });
                    segs.push(Seg::Item {
                        desired: None,
                        live: Some(0),
                        key: Some((field, "other".into())),
                    });
                }
            } else if let Some(n) = key.strip_prefix("i:") {
                segs.push(Seg::Item {
                    desired: None,
                    live: Some(n.parse().unwrap()),
                    key: None,
                });
            }
            for seg in segs {
                prefix.push(seg);
                paths_into(child, prefix, out);
                prefix.pop();
            }
        }
    }

    /// Ownership read from a `fieldsV1` text, scanned or parsed, is ownership read from its
    /// tree, on every path into it and off it.
    #[test]
    fn a_fields_text_owns_what_its_tree_owns() {
        let fields = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:annotations": {}},
            "f:spec": {
                "f:replicas": {},
                "f:ports": {
                    "k:{\"port\":53,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}},
                    "k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:name": {}},
                    "k:{\"port\":8080}": {}
                },
                "f:args": {"i:0": {}, "i:2": {".": {}}},
                "f:finalizers": {"v:\"a\"": {}},
                "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:env": {
                        "k:{\"name\":\"A\"}": {".": {}, "f:value": {}}
                    }},
                    "k:{\"name\":\"app\"} ": {"f:image": {}}
                }}}
            }
        });
        let text = Value::String(fields.to_string());
        let of = |fields: Value| {
            json!({"metadata": {"managedFields": [
                {"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": fields}
            ]}})
        };
        let (tree_live, text_live) = (of(fields.clone()), of(text));
        let mut paths = Vec::new();
        paths_into(&fields, &mut Vec::new(), &mut paths);
        assert!(paths.len() > 100, "{} paths", paths.len());
        let parsed = parse_texts(&text_live, TEXT_LOOKUPS + 1);
        assert_eq!(parsed, std::slice::from_ref(&fields));
        let from_tree = entries(&tree_live, &[]);
        let from_text = entries(&text_live, &[]);
        let from_parsed = entries(&text_live, &parsed);
        assert!(matches!(from_text[0].fields, Fields::Text(_)));
        assert!(matches!(from_parsed[0].fields, Fields::Tree(_)));
        let mut owned = 0;
        for segs in &paths {
            let want = ownership_depth(&from_tree[0], segs);
            owned += usize::from(want == Some(segs.len()));
            assert_eq!(ownership_depth(&from_text[0], segs), want, "text, {segs:?}");
            assert_eq!(
                ownership_depth(&from_parsed[0], segs),
                want,
                "parsed, {segs:?}"
            );
        }
        assert!(
            owned > 20 && owned < paths.len(),
            "{owned} of {} owned",
            paths.len()
        );
        for (field, set) in [("metadata", true), ("spec", true), ("status", false)] {
            assert_eq!(sets_top_level(&fields, field), set, "{field}");
            assert_eq!(
                sets_top_level(&Value::String(fields.to_string()), field),
                set
            );
        }
    }

    #[test]
    fn a_fields_text_that_does_not_parse_owns_nothing() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": "{\"f:spec\": {"}
        ]}});
        let es = entries(&live, &[]);
        assert!(owner(&es, &path(&["spec"])).is_none());
        assert!(!sets_top_level(
            &live["metadata"]["managedFields"][0]["fieldsV1"],
            "spec"
        ));
    }
}
