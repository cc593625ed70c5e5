//! Validation of `x-kubernetes-list-type` `set` and `map` lists: kube-apiserver rejects a
//! write whose set holds an item twice or whose map-list holds two items with the same keys
//! (`pkg/apiserver/schema/listtype/validation.go`). The simulator refuses such writes with
//! these errors; the differ relies on the uniqueness when it matches items by key.

use serde_json::{Map, Value};

use super::schema::Structural;

/// What is wrong with one list item (`path` as kube's field paths print:
/// `root.array[1]`, `root[key][2]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListTypeError {
    /// `field.Duplicate`: the item (or its key) appears earlier in the list.
    Duplicate { path: String },
    /// `field.Invalid`: a map-list item that is neither an object nor null.
    Invalid { path: String },
}

impl std::fmt::Display for ListTypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListTypeError::Duplicate { path } => write!(f, "{path}: Duplicate value"),
            ListTypeError::Invalid { path } => write!(
                f,
                "{path}: Invalid value: must be an object for an array of list-type map"
            ),
        }
    }
}

/// `ValidateListSetsAndMaps`: every set and map-list in object `obj` (at field path `path`).
pub fn validate(
    path: &str,
    s: Option<&Structural>,
    obj: &Map<String, Value>,
) -> Vec<ListTypeError> {
    let Some(s) = s else { return Vec::new() };
    let mut errs = Vec::new();
    if let Some(extra) = s
        .additional_properties
        .as_ref()
        .and_then(|a| a.schema.as_deref())
    {
        for (k, v) in obj {
            errs.extend(value(&format!("{path}[{k}]"), extra, v));
        }
    }
    for (k, v) in obj {
        if let Some(sub) = s.properties.get(k) {
            errs.extend(value(&format!("{path}.{k}"), sub, v));
        }
    }
    errs
}

fn value(path: &str, s: &Structural, v: &Value) -> Vec<ListTypeError> {
    match v {
        Value::Array(items) => array(path, s, items),
        Value::Object(m) => validate(path, Some(s), m),
        _ => Vec::new(),
    }
}

fn array(path: &str, s: &Structural, items: &[Value]) -> Vec<ListTypeError> {
    let mut errs = Vec::new();
    let dup = |i: usize| ListTypeError::Duplicate {
        path: format!("{path}[{i}]"),
    };
    match s.list_type.as_deref() {
        Some("set") => errs.extend(non_unique(items).into_iter().map(dup)),
        Some("map") => {
            if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
                return vec![ListTypeError::Invalid {
                    path: format!("{path}[{i}]"),
                }];
            }
            let keys: Vec<Value> = items.iter().map(|x| key_of(x, &s.list_map_keys)).collect();
            errs.extend(non_unique(&keys).into_iter().map(dup));
        }
        _ => {}
    }
    if let Some(item_schema) = s.items.as_deref() {
        for (i, item) in items.iter().enumerate() {
            errs.extend(value(&format!("{path}[{i}]"), item_schema, item));
        }
    }
    errs
}

/// The key of a map-list item: the key fields it has (an absent field is not a `null` one).
/// One key field compares by its value alone; a missing one is "unspecified", distinct from
/// every value.
fn key_of(item: &Value, keys: &[String]) -> Value {
    let mut key = Map::new();
    if let Value::Object(m) = item {
        for k in keys {
            if let Some(v) = m.get(k) {
                key.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(key)
}

/// Positions of the second occurrence of each repeated value (`validateListSet`); values
/// compare as Go compares decoded JSON (1 and 1.0 differ: int64 vs float64).
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut seen: Vec<(&Value, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        match seen.iter_mut().find(|(v, _)| *v == x) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((x, 1)),
        }
    }
    out
}
