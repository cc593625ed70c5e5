//! Lists: keyed lists (strategic-merge `patchMergeKey`, a CRD's `x-kubernetes-list-type:
//! map`) are matched item by item by key; sets by value; atomic lists of built-in kinds and
//! of custom resources with a schema compare whole and exactly, those of custom resources
//! without one position by position. Items the default admission chain appends to a Pod's
//! lists are not drift (`driftd_k8s::admission`).

use super::pointer::{field_names, Seg};
use super::walk::Walker;
use super::ChangeOp;
use driftd_k8s::admission::appended_by_admission;
use driftd_k8s::crd::ListType;
use driftd_k8s::merge_keys::merge_key;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// The text of one merge key field's value, as keyed items are matched by (here and in
/// `managedFields`' `k:` keys): a string as it is, anything else as its JSON.
pub(crate) fn merge_key_value_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// The key of an item as text (`containerPort: 8080` -> "8080"; several key fields joined
/// by `,`); borrowed for the usual single string key, so indexing a long list does not copy
/// every key. `None` when the item has none of the key fields.
fn key_text<'v>(item: &'v Value, keys: &[&str]) -> Option<Cow<'v, str>> {
    let one = |key: &str| -> Option<Cow<'v, str>> {
        match item.get(key)? {
            Value::Null => None,
            value => Some(merge_key_value_text(value)),
        }
    };
    match keys {
        [key] => one(key),
        _ => {
            let parts: Vec<Option<Cow<str>>> = keys.iter().map(|k| one(k)).collect();
            if parts.iter().all(Option::is_none) {
                return None;
            }
            let text: Vec<String> = parts
                .into_iter()
                .map(|p| p.map(Cow::into_owned).unwrap_or_default())
                .collect();
            Some(Cow::Owned(text.join(",")))
        }
    }
}

/// Whether two list items have the same `protocol`, defaulting to TCP as kube-apiserver
/// does for container and Service ports (items without the field compare equal).
fn same_protocol(d: &Value, l: &Value) -> bool {
    fn protocol(v: &Value) -> &str {
        v.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
    }
    protocol(d) == protocol(l)
}

/// Compares desired list `d` with live list `l` (and the previous revision's `p`).
pub(crate) fn compare(
    w: &mut Walker,
    segs: &mut Vec<Seg>,
    d: &[Value],
    l: &[Value],
    p: Option<&[Value]>,
) {
    let names = field_names(segs);
    if let Some(node) = w.schema_at(segs) {
        // A custom resource compared by its CRD's schema.
        return match node.list_type() {
            ListType::Map(keys) => {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                if d.iter().all(|i| key_text(i, &keys).is_some()) {
                    keyed(w, segs, &keys, d, l, p)
                } else {
                    atomic(w, segs, d, l)
                }
            }
            ListType::Set => set(w, segs, d, l, p, true),
            ListType::Atomic => atomic(w, segs, d, l),
        };
    }
    if is_set_list(&names) && segs.len() == 2 {
        return set(w, segs, d, l, p, false);
    }
    let key = merge_key(w.kind, &names);
    match key {
        Some(key) if d.iter().all(|i| key_text(i, &[key]).is_some()) => {
            keyed(w, segs, &[key], d, l, p)
        }
        _ => positional(w, segs, d, l, p),
    }
}

/// Lists of scalars that strategic merge treats as sets (`patchStrategy: merge`,
/// `listType: set`): `metadata.finalizers`. Controllers add their own finalizers; only the
/// ones desired must be present.
pub(crate) fn is_set_list(names: &[&str]) -> bool {
    names == ["metadata", "finalizers"]
}

/// A set: each desired item must be live, in any order. Extra live items are drift when
/// `extras_drift` (a CRD's `x-kubernetes-list-type: set`, whose items apply owns), else only
/// when the previous revision had them (three-way prune; finalizers controllers add).
pub(crate) fn set(
    w: &mut Walker,
    segs: &mut Vec<Seg>,
    d: &[Value],
    l: &[Value],
    p: Option<&[Value]>,
    extras_drift: bool,
) {
    for (di, item) in d.iter().enumerate() {
        if !l.contains(item) {
            segs.push(Seg::Item {
                desired: Some(di),
                live: None,
                key: None,
            });
            w.push(segs, ChangeOp::Add, Some(item), None);
            segs.pop();
        }
    }
    for (li, item) in l.iter().enumerate() {
        if !d.contains(item) && (extras_drift || p.is_some_and(|p| p.contains(item))) {
            segs.push(Seg::Item {
                desired: None,
                live: Some(li),
                key: None,
            });
            w.push(segs, ChangeOp::Remove, None, Some(item));
            segs.pop();
        }
    }
}

fn keyed(
    w: &mut Walker,
    segs: &mut Vec<Seg>,
    keys: &[&str],
    d: &[Value],
    l: &[Value],
    p: Option<&[Value]>,
) {
    let key_name = keys.join(",");
    let live_keys: Vec<Option<Cow<str>>> = l.iter().map(|i| key_text(i, keys)).collect();
    // Key -> live positions in list order, built once so each desired item finds its match
    // without scanning the list (a key may repeat: 53/TCP and 53/UDP share `containerPort`).
    let mut live_at: HashMap<&str, Vec<usize>> = HashMap::with_capacity(l.len());
    for (li, lk) in live_keys.iter().enumerate() {
        if let Some(lk) = lk {
            live_at.entry(lk.as_ref()).or_default().push(li);
        }
    }
    // Key -> the previous revision's first item with it.
    let mut prev_at: HashMap<Cow<str>, &Value> = HashMap::new();
    for item in p.unwrap_or_default() {
        if let Some(pk) = key_text(item, keys) {
            prev_at.entry(pk).or_insert(item);
        }
    }
    let mut matched = vec![false; l.len()];
    for (di, ditem) in d.iter().enumerate() {
        let kv = key_text(ditem, keys).unwrap_or_default().into_owned();
        // Ports are identified by number *and* protocol (server-side apply's list-map keys
        // for container and Service ports); prefer the item with the same protocol so DNS's
        // 53/TCP and 53/UDP pair up right whatever their order live. Otherwise the first
        // unmatched live item with the key.
        let found = live_at.get(kv.as_str()).and_then(|at| {
            let mut unmatched = at.iter().copied().filter(|&li| !matched[li]);
            let first = unmatched.next()?;
            Some(if same_protocol(ditem, &l[first]) {
                first
            } else {
                unmatched
                    .find(|&li| same_protocol(ditem, &l[li]))
                    .unwrap_or(first)
            })
        });
        let prev = prev_at.get(kv.as_str()).copied();
        match found {
            Some(li) => {
                matched[li] = true;
                segs.push(Seg::Item {
                    desired: Some(di),
                    live: Some(li),
                    key: Some((key_name.clone(), kv)),
                });
                w.value(segs, ditem, Some(&l[li]), prev);
                segs.pop();
            }
            None => {
                segs.push(Seg::Item {
                    desired: Some(di),
                    live: None,
                    key: Some((key_name.clone(), kv)),
                });
                w.push(segs, ChangeOp::Add, Some(ditem), None);
                segs.pop();
            }
        }
    }
    let owned: Vec<String> = field_names(segs).into_iter().map(str::to_string).collect();
    let names: Vec<&str> = owned.iter().map(String::as_str).collect();
    for (li, litem) in l.iter().enumerate() {
        if matched[li] || appended_by_admission(w.kind, &names, w.ctx.desired, litem) {
            continue;
        }
        segs.push(Seg::Item {
            desired: None,
            live: Some(li),
            key: live_keys[li]
                .as_ref()
                .map(|v| (key_name.clone(), v.to_string())),
        });
        w.push(segs, ChangeOp::Remove, None, Some(litem));
        segs.pop();
    }
}

/// The live items of an atomic list without those an admission plugin appended to the
/// desired Pod (DefaultTolerationSeconds' tolerations): admission, not a person.
fn without_admitted<'l>(w: &Walker, segs: &[Seg], d: &[Value], l: &'l [Value]) -> Cow<'l, [Value]> {
    let names = field_names(segs);
    let admitted = |item: &Value| {
        !d.contains(item) && appended_by_admission(w.kind, &names, w.ctx.desired, item)
    };
    if l.iter().any(admitted) {
        Cow::Owned(l.iter().filter(|i| !admitted(i)).cloned().collect())
    } else {
        Cow::Borrowed(l)
    }
}

/// One value, replaced whole by apply: it must equal the (defaulted) desired list exactly,
/// and any difference is one `replace` of the whole list, as it is live.
fn atomic(w: &mut Walker, segs: &mut Vec<Seg>, d: &[Value], l: &[Value]) {
    let compared = without_admitted(w, segs, d, l);
    if d.len() != compared.len() || !w.lists_exactly_equal(segs, d, &compared) {
        w.push(
            segs,
            ChangeOp::Replace,
            Some(&Value::Array(d.to_vec())),
            Some(&Value::Array(l.to_vec())),
        );
    }
}

/// A list without a merge key. `kubectl apply` replaces it whole, so for a built-in kind it
/// is atomic; custom resources without a schema compare position by position, each item by
/// the fields the manifest sets (no schema tells which lists are atomic there).
fn positional(w: &mut Walker, segs: &mut Vec<Seg>, d: &[Value], l: &[Value], p: Option<&[Value]>) {
    if w.builtin {
        return atomic(w, segs, d, l);
    }
    if d.len() != l.len() {
        w.push(
            segs,
            ChangeOp::Replace,
            Some(&Value::Array(d.to_vec())),
            Some(&Value::Array(l.to_vec())),
        );
        return;
    }
    let p = p.filter(|p| p.len() == d.len());
    for (i, (ditem, litem)) in d.iter().zip(l).enumerate() {
        segs.push(Seg::Item {
            desired: Some(i),
            live: Some(i),
            key: None,
        });
        if ditem.is_null() && !litem.is_null() {
            w.push(segs, ChangeOp::Replace, Some(ditem), Some(litem));
        } else {
            w.value(segs, ditem, Some(litem), p.map(|p| &p[i]));
        }
        segs.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One change to a port: op, desired and live position, `field=value` key.
    type PortChange = (ChangeOp, Option<usize>, Option<usize>, Option<String>);

    /// The changes `compare` reports for Service `spec.ports`.
    fn port_changes(d: Value, l: Value, p: Option<Value>) -> Vec<PortChange> {
        let desired = Value::Null;
        let mut w = Walker::new(super::super::walk::Context {
            api_version: "v1",
            kind: "Service",
            builtin: true,
            schema: None,
            desired: &desired,
        });
        let mut segs = vec![Seg::Field("spec".into()), Seg::Field("ports".into())];
        let (d, l) = (d.as_array().unwrap(), l.as_array().unwrap());
        let p = p.as_ref().and_then(Value::as_array).map(Vec::as_slice);
        compare(&mut w, &mut segs, d, l, p);
        assert_eq!(segs.len(), 2, "segments are restored");
        w.changes
            .iter()
            .map(|c| match c.segs.get(2) {
                Some(Seg::Item { desired, live, key }) => (
                    c.op,
                    *desired,
                    *live,
                    key.as_ref().map(|(f, v)| format!("{f}={v}")),
                ),
                other => panic!("change outside a port: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn repeated_keys_pair_by_protocol_then_in_order() {
        // Three live items share port 53; the UDP one pairs with the UDP desired item and
        // the first remaining one with the TCP item, so only the last TCP one is extra.
        let d = json!([{"port": 53, "protocol": "UDP"}, {"port": 53}]);
        let l = json!([{"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"},
                       {"port": 53, "protocol": "TCP", "name": "extra"}]);
        assert_eq!(
            port_changes(d, l, None),
            vec![(ChangeOp::Remove, None, Some(2), Some("port=53".into()))]
        );
    }

    #[test]
    fn items_pair_by_key_whatever_their_order() {
        let d = json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https"},
                       {"port": 8080, "name": "admin"}]);
        let l = json!([{"port": 9090, "name": "metrics"}, {"port": 443, "name": "https"},
                       {"port": 80, "name": "web"}]);
        let mut changes = port_changes(d, l, None);
        changes.sort();
        assert_eq!(
            changes,
            vec![
                (ChangeOp::Add, Some(2), None, Some("port=8080".into())),
                (ChangeOp::Remove, None, Some(0), Some("port=9090".into())),
                (ChangeOp::Replace, Some(0), Some(2), Some("port=80".into())),
            ]
        );
    }

    #[test]
    fn previous_item_is_found_by_key() {
        // The previous revision set `nodePort` on port 80 (listed second there); the new
        // one dropped it while live still has it: a prune of that item's field only.
        let d = json!([{"port": 443}, {"port": 80}]);
        let l = json!([{"port": 80, "nodePort": 30080}, {"port": 443, "nodePort": 30443}]);
        let p = json!([{"port": 443}, {"port": 80, "nodePort": 30080}]);
        assert_eq!(
            port_changes(d, l, Some(p)),
            vec![(ChangeOp::Remove, Some(1), Some(0), Some("port=80".into()))]
        );
    }
}
