//! Strategic merge patch for built-in kinds, keyed by the API's patch merge keys.
//!
//! Mirrors `StrategicMergeMapPatch` in
//! `staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go` as kube-apiserver runs
//! it (`MergeParallelList` and `IgnoreUnmatchedNulls` on): maps merge key by key, `null`
//! deletes, lists with a `patchMergeKey` merge item by item, `patchStrategy:merge` lists of
//! scalars (`metadata.finalizers`) merge as sets, every other list is replaced. The
//! directives `kubectl apply`, `kubectl edit` and `kubectl set` send are honoured:
//! `$patch: replace|delete` (in maps and list items), `$retainKeys`,
//! `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`.
//!
//! The merge-key table is [`driftd_k8s::merge_keys`]; this module adds the two
//! `patchStrategy:merge` lists the differ treats differently: `metadata.finalizers` (a set
//! of strings) and `status.conditions` (keyed by `type`).
//!
//! Ordering follows apimachinery's `normalizeElementOrder`: `$setElementOrder` wins, then
//! the patch's order, then the live order; items the live list does not know yet are placed
//! before the remaining live items (so `kubectl patch` without an order directive
//! prepends new containers, exactly like a real cluster).

use serde_json::{Map, Value};

use driftd_k8s::{kinds, merge_keys};

/// Why a patch could not be applied (becomes a 400/422 Status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(pub String);

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";

/// Whether kube-apiserver accepts a strategic merge patch for this type: only built-in
/// kinds, whose Go structs carry the patch metadata. Custom resources answer 415
/// Unsupported Media Type and need a JSON merge patch instead.
pub fn supported(api_version: &str, kind: &str) -> bool {
    kinds::builtin(api_version, kind).is_some()
}

/// Applies a strategic merge patch to `original` for an object of `kind`.
pub fn apply(kind: &str, original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError(
            "strategic merge patch must be a JSON object".into(),
        ));
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let mut path = Vec::new();
    merge_map(kind, &mut path, original, patch.clone()).map(Value::Object)
}

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// No patchStrategy: the patch's list replaces the live one.
    Replace,
    /// patchStrategy merge with patchMergeKey: items matched by this field.
    Keyed(&'static str),
    /// patchStrategy merge on scalars: a set union.
    Set,
}

fn list_strategy(kind: &str, path: &[String]) -> ListStrategy {
    let names: Vec<&str> = path.iter().map(String::as_str).collect();
    if let Some(key) = merge_keys::merge_key(kind, &names) {
        return ListStrategy::Keyed(key);
    }
    match names.as_slice() {
        ["metadata", "finalizers"] => ListStrategy::Set,
        // Pod, Deployment, Job, HPA, Node... status conditions are
        // `patchStrategy:"merge" patchMergeKey:"type"`; CRD conditions carry no tag.
        ["status", "conditions"] if kind != "CustomResourceDefinition" => {
            ListStrategy::Keyed("type")
        }
        _ => ListStrategy::Replace,
    }
}

fn dotted(path: &[String]) -> String {
    if path.is_empty() {
        "<root>".into()
    } else {
        path.join(".")
    }
}

fn merge_map(
    kind: &str,
    path: &mut Vec<String>,
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.remove(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => strip_directives_map(patch),
            // handleDirectiveInMergeMap: a deleted map becomes empty, it is not removed.
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError(format!(
                "{}: unknown patch type {directive} in map (only replace and delete are allowed)",
                dotted(path)
            ))),
        };
    }

    if let Some(retain) = patch.remove(RETAIN_KEYS) {
        let Value::Array(keys) = retain else {
            return Err(PatchError(format!(
                "{}: $retainKeys must be a list of field names",
                dotted(path)
            )));
        };
        let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        for (k, v) in &patch {
            let directive = k.starts_with(SET_ORDER) || k.starts_with(DELETE_FROM);
            if !v.is_null() && !directive && !keep.contains(&k.as_str()) {
                return Err(PatchError(format!(
                    "{}: field {k:?} is patched but missing from $retainKeys",
                    dotted(path)
                )));
            }
        }
        original.retain(|k, _| keep.contains(&k.as_str()));
    }

    // $setElementOrder lists, merged together with their list (mergePatchIntoOriginal).
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ORDER))
        .cloned()
        .collect();
    for order_key in order_keys {
        let order = patch.remove(&order_key).unwrap_or(Value::Null);
        let field = order_key[SET_ORDER.len()..].to_string();
        let Value::Array(order) = order else {
            return Err(PatchError(format!(
                "{}: {order_key} must be a list",
                dotted(path)
            )));
        };
        path.push(field.clone());
        let strategy = list_strategy(kind, path);
        let original_list = match original.get(&field) {
            Some(Value::Array(a)) => Some(a.clone()),
            _ => None,
        };
        let patch_list = match patch.remove(&field) {
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                // Not a list: leave it to the plain merge below.
                patch.insert(field.clone(), other);
                path.pop();
                continue;
            }
            None => None,
        };
        let merged = match (&original_list, patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => strip_directives_list(p)?,
            (Some(o), Some(p)) => merge_list(kind, path, strategy, o.clone(), p)?,
            (None, None) => {
                path.pop();
                continue;
            }
        };
        let key = match strategy {
            ListStrategy::Keyed(k) => Some(k),
            _ => None,
        };
        let server_order = original_list.unwrap_or_default();
        let ordered = order_items(path, merged, &order, &server_order, key)?;
        original.insert(field, Value::Array(ordered));
        path.pop();
    }

    // Plain keys first, then deletion lists, so "finalizers" and
    // "$deleteFromPrimitiveList/finalizers" in one patch compose predictably.
    let (deletions, plain): (Vec<_>, Vec<_>) = patch
        .into_iter()
        .partition(|(k, _)| k.starts_with(DELETE_FROM));
    for (key, patch_value) in plain {
        path.push(key.clone());
        if patch_value.is_null() {
            original.remove(&key);
            path.pop();
            continue;
        }
        let merged = match original.remove(&key) {
            None | Some(Value::Null) => strip_directives(patch_value)?,
            Some(Value::Object(o)) => match patch_value {
                Value::Object(p) => Value::Object(merge_map(kind, path, o, p)?),
                other => other,
            },
            Some(Value::Array(o)) => match patch_value {
                Value::Array(p) => {
                    let strategy = list_strategy(kind, path);
                    Value::Array(merge_list(kind, path, strategy, o, p)?)
                }
                other => other,
            },
            Some(_) => patch_value,
        };
        original.insert(key, merged);
        path.pop();
    }
    for (key, patch_value) in deletions {
        let field = key[DELETE_FROM.len()..].to_string();
        let Value::Array(to_delete) = patch_value else {
            return Err(PatchError(format!(
                "{}: {key} must be a list",
                dotted(path)
            )));
        };
        if let Some(Value::Array(items)) = original.get_mut(&field) {
            items.retain(|v| !to_delete.contains(v));
        }
    }
    Ok(original)
}

fn merge_list(
    kind: &str,
    path: &mut Vec<String>,
    strategy: ListStrategy,
    original: Vec<Value>,
    patch: Vec<Value>,
) -> Result<Vec<Value>, PatchError> {
    match strategy {
        ListStrategy::Replace => strip_directives_list(patch),
        ListStrategy::Set => {
            if original.is_empty() && patch.is_empty() {
                return Ok(original);
            }
            same_element_type(path, &original, &patch)?;
            let mut merged = original.clone();
            for v in &patch {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            order_items(path, merged, &patch, &original, None)
        }
        ListStrategy::Keyed(key) => {
            if original.is_empty() && patch.is_empty() {
                return Ok(original);
            }
            same_element_type(path, &original, &patch)?;
            let scalars = original.iter().chain(&patch).any(|v| !v.is_object());
            if scalars {
                // A keyed list holding scalars: apimachinery merges them as a set.
                return merge_list(kind, path, ListStrategy::Set, original, patch);
            }
            // mergeSliceWithSpecialElements
            let mut server = original;
            let mut items = Vec::with_capacity(patch.len());
            let mut replace = false;
            for item in patch {
                let Value::Object(mut m) = item else {
                    unreachable!("checked above")
                };
                match m.remove(DIRECTIVE) {
                    None => items.push(m),
                    Some(d) => match d.as_str() {
                        Some("delete") => {
                            let Some(kv) = m.get(key) else {
                                return Err(no_merge_key(path, key));
                            };
                            server.retain(|o| o.get(key) != Some(kv));
                        }
                        Some("replace") => replace = true,
                        Some("merge") => {
                            return Err(PatchError(format!(
                                "{}: merging lists cannot yet be specified in the patch",
                                dotted(path)
                            )))
                        }
                        _ => {
                            return Err(PatchError(format!(
                                "{}: unknown patch type {d} in list item",
                                dotted(path)
                            )))
                        }
                    },
                }
            }
            if replace {
                let items: Vec<Value> = items.into_iter().map(Value::Object).collect();
                return strip_directives_list(items);
            }
            // mergeSliceWithoutSpecialElements
            let mut merged = server.clone();
            for item in &items {
                let Some(kv) = item.get(key) else {
                    return Err(no_merge_key(path, key));
                };
                match merged.iter().position(|o| o.get(key) == Some(kv)) {
                    Some(i) => {
                        let Value::Object(o) = std::mem::take(&mut merged[i]) else {
                            return Err(PatchError(format!(
                                "{}: live list item is not an object",
                                dotted(path)
                            )));
                        };
                        merged[i] = Value::Object(merge_map(kind, path, o, item.clone())?);
                    }
                    None => merged.push(strip_directives(Value::Object(item.clone()))?),
                }
            }
            let patch_order: Vec<Value> = items.into_iter().map(Value::Object).collect();
            order_items(path, merged, &patch_order, &server, Some(key))
        }
    }
}

fn no_merge_key(path: &[String], key: &str) -> PatchError {
    PatchError(format!(
        "{}: list item does not contain declared merge key {key:?}",
        dotted(path)
    ))
}

/// sliceElementType: every item of both lists must have the same JSON type, and lists of
/// lists are not supported.
fn same_element_type(path: &[String], a: &[Value], b: &[Value]) -> Result<(), PatchError> {
    let type_of = |v: &Value| match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    };
    let mut seen = None;
    for v in a.iter().chain(b) {
        let t = type_of(v);
        if t == 4 {
            return Err(PatchError(format!(
                "{}: lists of lists are not supported",
                dotted(path)
            )));
        }
        match seen {
            None => seen = Some(t),
            Some(s) if s != t => {
                return Err(PatchError(format!(
                    "{}: list element types are not identical",
                    dotted(path)
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// normalizeElementOrder: items named in `order` sorted by it, the others kept in live
/// order, then interleaved by their live positions (mergeSortedSlice).
fn order_items(
    path: &[String],
    merged: Vec<Value>,
    order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let ident = |v: &Value| -> Result<Value, PatchError> {
        match key {
            None => Ok(v.clone()),
            Some(k) => v.get(k).cloned().ok_or_else(|| no_merge_key(path, k)),
        }
    };
    let order_ids: Vec<Value> = order
        .iter()
        .filter(|v| key.is_none() || v.get(DIRECTIVE).is_none())
        .map(ident)
        .collect::<Result<_, _>>()?;
    let server_ids: Vec<Value> = server_order
        .iter()
        .map(|v| match key {
            None => v.clone(),
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
        })
        .collect();
    let pos = |ids: &[Value], id: &Value| ids.iter().position(|x| x == id);

    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        let id = ident(&item)?;
        if pos(&order_ids, &id).is_some() {
            in_patch.push((id, item));
        } else {
            server_only.push((id, item));
        }
    }
    in_patch.sort_by_key(|(id, _)| pos(&order_ids, id));
    server_only.sort_by_key(|(id, _)| pos(&server_ids, id).unwrap_or(usize::MAX));

    let mut out = Vec::with_capacity(in_patch.len() + server_only.len());
    let (mut left, mut right) = (
        server_only.into_iter().peekable(),
        in_patch.into_iter().peekable(),
    );
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => out.push(left.next().expect("peeked").1),
            (None, Some(_)) => out.push(right.next().expect("peeked").1),
            (Some((l, _)), Some((r, _))) => {
                let less = match (pos(&server_ids, l), pos(&server_ids, r)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                };
                if less {
                    out.push(left.next().expect("peeked").1);
                } else {
                    out.push(right.next().expect("peeked").1);
                }
            }
        }
    }
    Ok(out)
}

/// A patch value placed where the live object has nothing: merged into an empty value so
/// nested directives are honoured and never stored.
fn strip_directives(v: Value) -> Result<Value, PatchError> {
    match v {
        Value::Object(m) => {
            if m.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                return Ok(Value::Object(Map::new()));
            }
            strip_directives_map(m).map(Value::Object)
        }
        Value::Array(a) => strip_directives_list(a).map(Value::Array),
        other => Ok(other),
    }
}

fn strip_directives_map(m: Map<String, Value>) -> Result<Map<String, Value>, PatchError> {
    let mut out = Map::new();
    for (k, v) in m {
        if k == DIRECTIVE
            || k == RETAIN_KEYS
            || k.starts_with(SET_ORDER)
            || k.starts_with(DELETE_FROM)
            || v.is_null()
        {
            continue;
        }
        out.insert(k, strip_directives(v)?);
    }
    Ok(out)
}

fn strip_directives_list(a: Vec<Value>) -> Result<Vec<Value>, PatchError> {
    a.into_iter()
        .filter(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
        .map(strip_directives)
        .collect()
}

#[cfg(test)]
mod tests;
