//! `metadata.managedFields` bookkeeping for Update operations, mirroring kube-apiserver's
//! field manager: the fields a request added or changed (compared with the stored object,
//! both after defaulting) are owned by the request's manager and taken from every other
//! manager; removed fields are owned by nobody. Serialized as FieldsV1 (`f:`, `k:`, `.`).
//!
//! Known simplification: set-lists (`v:` elements, e.g. finalizers) are treated as atomic.

use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

type Path = Vec<String>;
type Set = BTreeSet<Path>;

/// One write to record: who, and through which endpoint.
pub struct Write<'a> {
    pub manager: &'a str,
    /// `None` for the main resource, `Some("status")`/`Some("scale")` for subresources.
    pub subresource: Option<&'a str>,
    pub api_version: &'a str,
    pub time: &'a str,
}

/// Fields the Go types always serialize (non-pointer structs, lists without `omitempty`),
/// so they never count as "added" themselves and get no `.` entry, as in real managedFields
/// (e.g. `f:containers` has none while `f:ports` has one).
const ALWAYS_PRESENT: &[&str] = &[
    "spec",
    "template",
    "metadata",
    "strategy",
    "status",
    "containers",
    "resources",
];

/// The keys an associative list is keyed by (`x-kubernetes-list-map-keys`), if any.
fn list_keys(kind: &str, names: &[&str]) -> Option<Vec<&'static str>> {
    let last = *names.last()?;
    if last == "conditions" {
        return Some(vec!["type"]);
    }
    let key = driftd_k8s::merge_keys::merge_key(kind, names)?;
    Some(match key {
        // Ports are keyed by number *and* protocol in the OpenAPI list-map-keys.
        "port" | "containerPort" => vec![key, "protocol"],
        _ => vec![key],
    })
}

fn item_key(item: &Value, keys: &[&str]) -> Option<String> {
    let mut m = Map::new();
    for k in keys {
        match item.get(*k) {
            Some(v) => {
                m.insert((*k).to_string(), v.clone());
            }
            None if *k == "protocol" => {}
            None => return None,
        }
    }
    Some(format!("k:{}", Value::Object(m)))
}

struct Walker<'a> {
    kind: &'a str,
    changed: Set,
    removed: Set,
}

impl Walker<'_> {
    fn added(&mut self, names: &mut Vec<String>, path: &mut Path, new: &Value) {
        // Only a field itself (not an item of a list held in that field) can be always-present.
        let is_field = path.last().is_some_and(|e| e.starts_with("f:"));
        if self.member_when_added(names, is_field, new) {
            self.changed.insert(path.clone());
        }
        self.children(names, path, None, new);
    }

    /// Whether an added node is itself a member: not a Go field that is always serialized
    /// and has children of its own (those own it).
    fn member_when_added(&self, names: &[String], is_field: bool, new: &Value) -> bool {
        let always = is_field
            && names
                .last()
                .is_some_and(|n| ALWAYS_PRESENT.contains(&n.as_str()));
        let has_children = match new {
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty() && self.keys(names).is_some(),
            _ => false,
        };
        !(always && has_children)
    }

    fn keys(&self, names: &[String]) -> Option<Vec<&'static str>> {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        list_keys(self.kind, &refs)
    }

    /// Walks `new` against `old` (both the value at `path`).
    fn walk(&mut self, names: &mut Vec<String>, path: &mut Path, old: Option<&Value>, new: &Value) {
        match (old, new) {
            (None, _) => self.added(names, path, new),
            (Some(o), n) if o == n => {}
            (Some(Value::Object(_)), Value::Object(_)) => self.children(names, path, old, new),
            (Some(Value::Array(_)), Value::Array(_)) if self.keys(names).is_some() => {
                self.children(names, path, old, new)
            }
            (Some(o), n) => {
                // Type change or atomic value change: the node itself changed.
                if o.is_object() != n.is_object() {
                    self.removed.insert(path.clone());
                }
                self.added(names, path, n)
            }
        }
    }

    fn children(
        &mut self,
        names: &mut Vec<String>,
        path: &mut Path,
        old: Option<&Value>,
        new: &Value,
    ) {
        match new {
            Value::Object(m) => {
                for (k, v) in m {
                    names.push(k.clone());
                    path.push(format!("f:{k}"));
                    self.walk(names, path, old.and_then(|o| o.get(k)), v);
                    path.pop();
                    names.pop();
                }
                if let Some(Value::Object(om)) = old {
                    for k in om.keys().filter(|k| !m.contains_key(*k)) {
                        let mut p = path.clone();
                        p.push(format!("f:{k}"));
                        self.removed.insert(p);
                    }
                }
            }
            Value::Array(items) => {
                let Some(keys) = self.keys(names) else { return };
                let old_items: Vec<(String, &Value)> = old
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|i| Some((item_key(i, &keys)?, i)))
                            .collect()
                    })
                    .unwrap_or_default();
                let mut seen = BTreeSet::new();
                for item in items {
                    let Some(k) = item_key(item, &keys) else {
                        continue;
                    };
                    let o = old_items.iter().find(|(ok, _)| *ok == k).map(|(_, v)| *v);
                    path.push(k.clone());
                    self.walk(names, path, o, item);
                    path.pop();
                    seen.insert(k);
                }
                for (k, _) in old_items.iter().filter(|(k, _)| !seen.contains(k)) {
                    let mut p = path.clone();
                    p.push(k.clone());
                    self.removed.insert(p);
                }
            }
            _ => {}
        }
    }
}

/// The part of an object a write through `subresource` may own.
fn ownable(obj: &Value, subresource: Option<&str>) -> Value {
    let mut out = Map::new();
    let Some(m) = obj.as_object() else {
        return Value::Object(out);
    };
    for (k, v) in m {
        match (k.as_str(), subresource) {
            ("apiVersion" | "kind", _) => {}
            ("metadata", _) => {
                // Server-set identity fields are never owned (the field manager strips them).
                let mut md = Map::new();
                for f in ["labels", "annotations", "ownerReferences", "finalizers"] {
                    if let Some(x) = v.get(f) {
                        md.insert(f.to_string(), x.clone());
                    }
                }
                if !md.is_empty() {
                    out.insert(k.clone(), Value::Object(md));
                }
            }
            ("status", Some("status")) => {
                out.insert(k.clone(), v.clone());
            }
            ("status", _) | (_, Some("status")) => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Parses FieldsV1 into the set of member paths.
pub fn parse_fields_v1(v: &Value) -> BTreeSet<Vec<String>> {
    fn go(v: &Value, path: &mut Path, out: &mut Set) {
        let Some(m) = v.as_object() else { return };
        if m.is_empty() && !path.is_empty() {
            out.insert(path.clone());
        }
        for (k, child) in m {
            if k == "." {
                out.insert(path.clone());
            } else {
                path.push(k.clone());
                go(child, path, out);
                path.pop();
            }
        }
    }
    let mut out = Set::new();
    go(v, &mut Vec::new(), &mut out);
    out
}

/// Renders a set of paths as FieldsV1 (keys sorted: `.` first, then `f:`, `k:`).
pub fn to_fields_v1(set: &BTreeSet<Vec<String>>) -> Value {
    #[derive(Default)]
    struct Node {
        member: bool,
        children: BTreeMap<String, Node>,
    }
    let mut root = Node::default();
    for p in set {
        let mut n = &mut root;
        for e in p {
            n = n.children.entry(e.clone()).or_default();
        }
        n.member = true;
    }
    fn render(n: &Node) -> Value {
        let mut m = Map::new();
        if n.member && !n.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (k, c) in &n.children {
            m.insert(k.clone(), render(c));
        }
        Value::Object(m)
    }
    render(&root)
}

/// A FieldsV1 tree under construction: whether the node itself is a member, and its
/// children by `f:`/`k:` element (sorted, as [`to_fields_v1`] renders them).
#[derive(Default)]
struct Tree {
    member: bool,
    children: BTreeMap<String, Tree>,
}

impl Tree {
    fn render(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (k, c) in &self.children {
            m.insert(k.clone(), c.render());
        }
        Value::Object(m)
    }

    fn is_empty(&self) -> bool {
        !self.member && self.children.iter().all(|(_, c)| c.is_empty())
    }
}

impl Walker<'_> {
    /// What [`Walker::added`] marks for a whole new value, built as a tree directly (the
    /// create path: every field is new, so no paths need comparing).
    fn added_tree(&self, names: &mut Vec<String>, is_field: bool, new: &Value, into: &mut Tree) {
        if self.member_when_added(names, is_field, new) {
            into.member = true;
        }
        self.children_tree(names, new, into);
    }

    fn children_tree(&self, names: &mut Vec<String>, new: &Value, into: &mut Tree) {
        match new {
            Value::Object(m) => {
                for (k, v) in m {
                    names.push(k.clone());
                    let child = into.children.entry(format!("f:{k}")).or_default();
                    self.added_tree(names, true, v, child);
                    names.pop();
                }
            }
            Value::Array(items) => {
                let Some(keys) = self.keys(names) else { return };
                for item in items {
                    if let Some(k) = item_key(item, &keys) {
                        let child = into.children.entry(k).or_default();
                        self.added_tree(names, false, item, child);
                    }
                }
            }
            _ => {}
        }
    }
}

/// [`record`] for a create by an Update (no earlier version, no earlier entries): the new
/// manager owns every field, rendered straight from the object.
fn record_created(kind: &str, new: &mut Value, w: &Write) {
    let walker = Walker {
        kind,
        changed: Set::new(),
        removed: Set::new(),
    };
    let mut tree = Tree::default();
    walker.children_tree(&mut Vec::new(), &ownable(new, w.subresource), &mut tree);
    tree.member = false;
    let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if tree.is_empty() {
        md.remove("managedFields");
        return;
    }
    let mut entry = Map::new();
    if !w.manager.is_empty() {
        entry.insert("manager".into(), json!(w.manager));
    }
    entry.insert("operation".into(), json!("Update"));
    entry.insert("apiVersion".into(), json!(w.api_version));
    entry.insert("time".into(), json!(w.time));
    entry.insert("fieldsType".into(), json!("FieldsV1"));
    entry.insert("fieldsV1".into(), tree.render());
    if let Some(s) = w.subresource {
        entry.insert("subresource".into(), json!(s));
    }
    md.insert("managedFields".into(), json!([entry]));
}

/// Updates `new.metadata.managedFields` for a write that turned `old` into `new`.
/// `old` is `None` on create. Entries already on `new` are taken as the prior state.
pub fn record(kind: &str, old: Option<&Value>, new: &mut Value, w: &Write) {
    let no_prior = new
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if old.is_none() && no_prior {
        return record_created(kind, new, w);
    }
    record_diff(kind, old, new, w)
}

fn record_diff(kind: &str, old: Option<&Value>, new: &mut Value, w: &Write) {
    let empty = json!({});
    let old_own = ownable(old.unwrap_or(&empty), w.subresource);
    let new_own = ownable(new, w.subresource);
    let mut walker = Walker {
        kind,
        changed: Set::new(),
        removed: Set::new(),
    };
    walker.children(&mut Vec::new(), &mut Vec::new(), Some(&old_own), &new_own);
    let (changed, removed) = (walker.changed, walker.removed);

    let prior = new
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let sub = w.subresource.unwrap_or("");
    let mut entries: Vec<Value> = Vec::new();
    let mut mine: Option<(Value, Set)> = None;
    for e in prior {
        let fields = e.get("fieldsV1").map(parse_fields_v1).unwrap_or_default();
        let is_mine = e.get("manager").and_then(Value::as_str).unwrap_or("") == w.manager
            && e.get("operation").and_then(Value::as_str) == Some("Update")
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == sub;
        let before = fields.len();
        let kept: Set = fields
            .into_iter()
            .filter(|p| !removed.iter().any(|r| p.starts_with(r)))
            .filter(|p| is_mine || !changed.contains(p))
            .collect();
        if is_mine {
            mine = Some((e, kept));
        } else if kept.len() == before && !kept.is_empty() {
            // Another manager's entry this write does not touch stays as it is.
            entries.push(e);
        } else if !kept.is_empty() {
            let mut e = e;
            e["fieldsV1"] = to_fields_v1(&kept);
            entries.push(e);
        }
    }
    let (mut entry, mut set) = mine.unwrap_or_else(|| {
        // An empty manager is omitted (`omitempty`), as kube-apiserver serializes it.
        let mut e = json!({"operation": "Update"});
        if !w.manager.is_empty() {
            e["manager"] = json!(w.manager);
        }
        if let Some(s) = w.subresource {
            e["subresource"] = json!(s);
        }
        (e, Set::new())
    });
    set.extend(changed.iter().cloned());
    if !changed.is_empty() || !set.is_empty() {
        if !changed.is_empty() {
            entry["time"] = json!(w.time);
            entry["apiVersion"] = json!(w.api_version);
        }
        entry["fieldsType"] = json!("FieldsV1");
        entry["fieldsV1"] = to_fields_v1(&set);
        // Keep kube-apiserver's key order: manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource.
        let mut ordered = Map::new();
        for k in [
            "manager",
            "operation",
            "apiVersion",
            "time",
            "fieldsType",
            "fieldsV1",
            "subresource",
        ] {
            if let Some(v) = entry.get(k) {
                ordered.insert(k.to_string(), v.clone());
            }
        }
        if !set.is_empty() {
            entries.push(Value::Object(ordered));
        }
    }
    if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            md.remove("managedFields");
        } else {
            md.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

/// The field set an Apply owns: every leaf of the applied configuration and every item of a
/// keyed list (the item itself is a member, `.`), as structured-merge-diff computes it from
/// the applied object. Maps and structs are members only through their children.
pub fn applied_set(kind: &str, config: &Value) -> BTreeSet<Vec<String>> {
    fn go(kind: &str, names: &mut Vec<String>, path: &mut Path, v: &Value, out: &mut Set) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, child) in m {
                    names.push(k.clone());
                    path.push(format!("f:{k}"));
                    go(kind, names, path, child, out);
                    path.pop();
                    names.pop();
                }
            }
            Value::Array(items) => {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                match list_keys(kind, &refs) {
                    Some(keys) => {
                        for item in items {
                            let Some(k) = item_key(item, &keys) else {
                                continue;
                            };
                            path.push(k);
                            out.insert(path.clone());
                            go(kind, names, path, item, out);
                            path.pop();
                        }
                    }
                    None => {
                        out.insert(path.clone());
                    }
                }
            }
            _ => {
                out.insert(path.clone());
            }
        }
    }
    let mut out = Set::new();
    go(
        kind,
        &mut Vec::new(),
        &mut Vec::new(),
        &ownable(config, None),
        &mut out,
    );
    out
}

fn key_matches(item: &Value, key_elem: &str) -> bool {
    let Some(json) = key_elem.strip_prefix("k:") else {
        return false;
    };
    let Ok(Value::Object(key)) = serde_json::from_str::<Value>(json) else {
        return false;
    };
    key.iter().all(|(k, v)| match (item.get(k), k.as_str()) {
        (Some(x), _) => x == v,
        // Ports keyed by protocol default to TCP when the item leaves it out.
        (None, "protocol") => v == "TCP",
        (None, _) => false,
    })
}

/// The value at a managedFields path (`f:` fields, `k:` keyed list items) in `obj`.
pub fn value_at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for e in path {
        cur = match e.strip_prefix("f:") {
            Some(f) => cur.get(f)?,
            None => cur.as_array()?.iter().find(|i| key_matches(i, e))?,
        };
    }
    Some(cur)
}

/// Removes the node at a managedFields path from `obj`, if present.
pub fn remove_at(obj: &mut Value, path: &[String]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut cur = obj;
    for e in parent {
        let next = match e.strip_prefix("f:") {
            Some(f) => cur.get_mut(f),
            None => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|i| key_matches(i, e))),
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match last.strip_prefix("f:") {
        Some(f) => {
            cur.as_object_mut().map(|m| m.remove(f));
        }
        None => {
            if let Some(a) = cur.as_array_mut() {
                a.retain(|i| !key_matches(i, last));
            }
        }
    }
}

/// A path as kube-apiserver prints it in conflict messages: `.spec.containers[name="app"].image`.
pub fn describe(path: &[String]) -> String {
    let mut s = String::new();
    for e in path {
        match e.strip_prefix("f:") {
            Some(f) => {
                s.push('.');
                s.push_str(f);
            }
            None => {
                let key = e.strip_prefix("k:").unwrap_or(e);
                let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(key)
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_else(|_| vec![key.to_string()]);
                s.push_str(&format!("[{}]", parts.join(",")));
            }
        }
    }
    s
}

/// One managedFields entry, parsed.
pub struct Owner {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub subresource: String,
    pub fields: BTreeSet<Vec<String>>,
}

/// The managedFields of `obj`, parsed.
pub fn owners(obj: &Value) -> Vec<Owner> {
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| Owner {
                    manager: s(e, "manager"),
                    operation: s(e, "operation"),
                    api_version: s(e, "apiVersion"),
                    subresource: s(e, "subresource"),
                    fields: e.get("fieldsV1").map(parse_fields_v1).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Records a server-side Apply: the manager's Apply entry becomes exactly `applied`;
/// `taken` (conflicts overridden with `force`) and removed fields leave the other managers.
pub fn record_apply(
    kind: &str,
    old: Option<&Value>,
    new: &mut Value,
    w: &Write,
    applied: &BTreeSet<Vec<String>>,
    taken: &BTreeSet<Vec<String>>,
) {
    let empty = json!({});
    let mut walker = Walker {
        kind,
        changed: Set::new(),
        removed: Set::new(),
    };
    walker.children(
        &mut Vec::new(),
        &mut Vec::new(),
        Some(&ownable(old.unwrap_or(&empty), None)),
        &ownable(new, None),
    );
    let removed = walker.removed;
    let prior = new
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut entries = Vec::new();
    for e in prior {
        let is_mine = e.get("manager").and_then(Value::as_str).unwrap_or("") == w.manager
            && e.get("operation").and_then(Value::as_str) == Some("Apply");
        if is_mine {
            continue;
        }
        let fields = e.get("fieldsV1").map(parse_fields_v1).unwrap_or_default();
        let kept: Set = fields
            .into_iter()
            .filter(|p| !removed.iter().any(|r| p.starts_with(r)) && !taken.contains(p))
            .collect();
        if !kept.is_empty() {
            let mut e = e;
            e["fieldsV1"] = to_fields_v1(&kept);
            entries.push(e);
        }
    }
    if !applied.is_empty() {
        entries.push(json!({
            "manager": w.manager,
            "operation": "Apply",
            "apiVersion": w.api_version,
            "time": w.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(applied),
        }));
    }
    if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert("managedFields".into(), Value::Array(entries));
    }
}

#[cfg(test)]
mod tests;
