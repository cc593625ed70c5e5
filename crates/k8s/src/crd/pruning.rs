//! Pruning: kube-apiserver drops every field a CRD's structural schema does not specify, on
//! every write and every read (`pkg/apiserver/schema/pruning/algorithm.go`), so such a field
//! never exists live. `x-kubernetes-preserve-unknown-fields` keeps a subtree's unknown fields
//! (its specified children are still pruned by their own schema). `apiVersion`, `kind` and
//! `metadata` are kept at the root and in `x-kubernetes-embedded-resource` objects, where
//! `metadata` is decoded into an ObjectMeta instead, losing the keys ObjectMeta has not
//! (`pkg/apiserver/schema/objectmeta/coerce.go`, `GetObjectMeta`/`SetObjectMeta`).

use serde_json::{Map, Value};

use super::schema::Structural;

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// Prunes `obj` by `schema` as `PruneWithOptions` does and returns the paths it removed,
/// sorted (`spec.foo`, `spec.list[1].bar`). With `is_root` the object is a resource root: its
/// `apiVersion`, `kind` and `metadata` stay, as for an embedded resource. `None` as schema
/// removes every field (as upstream's nil schema). ObjectMeta coercion is not part of this
/// (see [`coerce_object_meta`]).
pub fn prune(obj: &mut Value, schema: Option<&Structural>, is_root: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = String::new();
    if is_root {
        let mut root = schema.cloned().unwrap_or_default();
        root.embedded_resource = true;
        walk(obj, Some(&root), &mut path, &mut out);
    } else {
        walk(obj, schema, &mut path, &mut out);
    }
    out.sort();
    out
}

fn key_path(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// The schema of key `k`: its property; else, when `additionalProperties` is set, its
/// schema or `None` (prune everything below) for a bare boolean; else not allowed (`None`).
fn child_of<'s>(s: &'s Structural, k: &str) -> Option<Option<&'s Structural>> {
    match s.properties.get(k) {
        Some(p) => Some(Some(p)),
        None => s
            .additional_properties
            .as_ref()
            .map(|a| a.schema.as_deref()),
    }
}

/// The keys of `m` pruning looks at: all but an embedded resource's type and object meta.
fn pruned_keys(m: &Map<String, Value>, s: &Structural) -> Vec<String> {
    m.keys()
        .filter(|k| !(s.embedded_resource && META_FIELDS.contains(&k.as_str())))
        .cloned()
        .collect()
}

fn walk(x: &mut Value, s: Option<&Structural>, path: &mut String, out: &mut Vec<String>) {
    if let Some(s) = s.filter(|s| s.preserve_unknown_fields) {
        return skip(x, s, path, out);
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                out.extend(m.keys().map(|k| key_path(path, k)));
                m.clear();
                return;
            };
            let at_root = path.is_empty();
            for k in pruned_keys(m, s) {
                match child_of(s, &k) {
                    Some(child) => descend(m, &k, child, path, out, walk),
                    None => {
                        if !META_FIELDS.contains(&k.as_str()) || !at_root {
                            out.push(key_path(path, &k));
                        }
                        m.remove(&k);
                    }
                }
            }
        }
        Value::Array(items) => {
            let items_schema = s.and_then(|s| s.items.as_deref());
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, items_schema, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// `skipPrune`: a preserve-unknown-fields node keeps its unknown keys; specified children
/// are pruned by their own schema.
fn skip(x: &mut Value, s: &Structural, path: &mut String, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            for k in pruned_keys(m, s) {
                if let Some(child) = child_of(s, &k) {
                    descend(m, &k, child, path, out, walk);
                }
            }
        }
        Value::Array(items) => {
            let Some(items_schema) = s.items.as_deref() else {
                return;
            };
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                skip(item, items_schema, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

type Walk = fn(&mut Value, Option<&Structural>, &mut String, &mut Vec<String>);

fn descend(
    m: &mut Map<String, Value>,
    k: &str,
    child: Option<&Structural>,
    path: &mut String,
    out: &mut Vec<String>,
    f: Walk,
) {
    let len = path.len();
    *path = key_path(path, k);
    if let Some(v) = m.get_mut(k) {
        f(v, child, path, out);
    }
    path.truncate(len);
}

/// Decodes the `metadata` of the root (and of every `x-kubernetes-embedded-resource`
/// object) into an ObjectMeta, as kube-apiserver does on every write: keys ObjectMeta does
/// not have are dropped and returned as paths (`metadata.foo`, `spec.template.metadata.foo`).
pub fn coerce_object_meta(obj: &mut Value, schema: Option<&Structural>) -> Vec<String> {
    let mut root = schema.cloned().unwrap_or_default();
    root.embedded_resource = true;
    coerce_embedded(obj, &root)
}

/// [`coerce_object_meta`] for a value that is not a resource root (a default): only its
/// embedded resources' `metadata` is decoded.
pub(super) fn coerce_embedded(obj: &mut Value, schema: &Structural) -> Vec<String> {
    let mut out = Vec::new();
    coerce(obj, Some(schema), &mut String::new(), &mut out);
    out.sort();
    out
}

fn coerce(x: &mut Value, s: Option<&Structural>, path: &mut String, out: &mut Vec<String>) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => {
            if s.embedded_resource {
                if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                    let known: Vec<&str> = crate::api_types::object_meta_fields().collect();
                    let unknown: Vec<String> = meta
                        .keys()
                        .filter(|k| !known.contains(&k.as_str()))
                        .cloned()
                        .collect();
                    for k in unknown {
                        out.push(key_path(&key_path(path, "metadata"), &k));
                        meta.remove(&k);
                    }
                }
            }
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let child = s.properties.get(&k).or_else(|| {
                    s.additional_properties
                        .as_ref()
                        .and_then(|a| a.schema.as_deref())
                });
                descend(m, &k, child, path, out, coerce);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                coerce(item, s.items.as_deref(), path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}
