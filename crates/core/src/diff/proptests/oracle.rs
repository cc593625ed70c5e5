//! What the differ must report, worked out without the differ: the generator knows what it
//! changed and where (`Mutation`), list semantics come from `k8s-openapi` (its `DeepMerge`
//! impls are generated from the OpenAPI spec's `x-kubernetes-patch-merge-key` and list
//! types, so merging two objects tells whether a list is keyed and by which field), and
//! quantities are read by a small parser of the spellings the generator writes.

use k8s_openapi::DeepMerge;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// Desired list pointer -> (desired index -> live index), for keyed lists the live form
/// reordered.
pub type Perms = BTreeMap<String, Vec<usize>>;

fn tokens(ptr: &str) -> Vec<String> {
    ptr.split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn escape(t: &str) -> String {
    t.replace('~', "~0").replace('/', "~1")
}

/// The field names along `ptr` (list positions left out): a list's place in the schema.
fn schema_path(ptr: &str) -> String {
    tokens(ptr)
        .iter()
        .filter(|t| t.parse::<usize>().is_err())
        .map(|t| escape(t))
        .collect::<Vec<_>>()
        .join("/")
}

/// Where the node at desired pointer `ptr` is in the live object.
pub fn live_pointer(perms: &Perms, ptr: &str) -> String {
    let mut desired = String::new();
    let mut live = String::new();
    for t in tokens(ptr) {
        let seg = match (perms.get(&desired), t.parse::<usize>()) {
            (Some(p), Ok(i)) if i < p.len() => p[i].to_string(),
            _ => escape(&t),
        };
        desired = format!("{desired}/{}", escape(&t));
        live = format!("{live}/{seg}");
    }
    live
}

/// `typed(a)` merged with `typed(b)` by `k8s-openapi`'s `DeepMerge`, back as JSON.
fn merge<T>(a: &Value, b: &Value) -> Option<Value>
where
    T: DeepMerge + serde::de::DeserializeOwned + serde::Serialize,
{
    let mut x: T = serde_json::from_value(a.clone()).ok()?;
    let y: T = serde_json::from_value(b.clone()).ok()?;
    x.merge_from(y);
    serde_json::to_value(x).ok()
}

fn merge_kind(kind: &str, a: &Value, b: &Value) -> Option<Value> {
    use k8s_openapi::api::{apps::v1 as apps, core::v1 as core};
    match kind {
        "Deployment" => merge::<apps::Deployment>(a, b),
        "Service" => merge::<core::Service>(a, b),
        "ConfigMap" => merge::<core::ConfigMap>(a, b),
        "Pod" => merge::<core::Pod>(a, b),
        _ => None,
    }
}

thread_local! {
    static KEYS: RefCell<HashMap<(String, String), Option<String>>> = RefCell::default();
}

/// The merge key of the list at `ptr` in `root` (an object of `kind`), or `None` for an
/// atomic list. Found by merging `root` holding `[item]` with `root` holding `[item with
/// field f changed]`: a list keyed by `f` then holds both items, an atomic list or one
/// keyed by another field holds one. Cached by the list's place in the schema.
pub fn keyed_by(kind: &str, root: &Value, ptr: &str) -> Option<String> {
    let cache_key = (kind.to_string(), schema_path(ptr));
    if let Some(hit) = KEYS.with(|k| k.borrow().get(&cache_key).cloned()) {
        return hit;
    }
    // Only a list with a first item can be probed; a list of scalars is atomic.
    let first = root.pointer(ptr)?.as_array()?.first()?;
    let found = if first.is_object() {
        probe_key(kind, root, ptr)
    } else {
        None
    };
    KEYS.with(|k| k.borrow_mut().insert(cache_key, found.clone()));
    found
}

fn probe_key(kind: &str, root: &Value, ptr: &str) -> Option<String> {
    let item = root.pointer(ptr)?.as_array()?.first()?.as_object()?.clone();
    probe_fields(kind, root, ptr, item)
}

fn probe_fields(
    kind: &str,
    root: &Value,
    ptr: &str,
    item: serde_json::Map<String, Value>,
) -> Option<String> {
    for (field, value) in &item {
        let changed = match value {
            Value::String(s) => json!(format!("{s}-probe")),
            Value::Number(n) => json!(n.as_i64()? + 1000),
            _ => continue,
        };
        let mut other = item.clone();
        other.insert(field.clone(), changed);
        let with = |list: Value| {
            let mut r = root.clone();
            *r.pointer_mut(ptr).unwrap() = list;
            r
        };
        let a = with(json!([item]));
        let b = with(json!([other]));
        let merged = merge_kind(kind, &a, &b)?;
        if merged.pointer(ptr).and_then(Value::as_array).map(Vec::len) == Some(2) {
            return Some(field.clone());
        }
    }
    None
}

/// The outermost list strictly above `ptr` that has no merge key: a change anywhere in it
/// is reported as one `replace` of that list.
pub fn atomic_ancestor(kind: &str, root: &Value, ptr: &str) -> Option<String> {
    let toks = tokens(ptr);
    let mut prefix = String::new();
    for t in &toks[..toks.len().saturating_sub(1)] {
        prefix = format!("{prefix}/{}", escape(t));
        if root.pointer(&prefix).is_some_and(Value::is_array)
            && keyed_by(kind, root, &prefix).is_none()
        {
            return Some(prefix);
        }
    }
    None
}

/// Whether `ptr` is the merge key field of an item of a keyed list.
pub fn is_merge_key(kind: &str, root: &Value, ptr: &str) -> bool {
    let toks = tokens(ptr);
    if toks.len() < 3 || toks[toks.len() - 2].parse::<usize>().is_err() {
        return false;
    }
    let list: String = toks[..toks.len() - 2]
        .iter()
        .map(|t| format!("/{}", escape(t)))
        .collect();
    keyed_by(kind, root, &list).as_deref() == Some(toks[toks.len() - 1].as_str())
}

// ------------------------------------------------------------------------------------
// Quantities

/// An amount in thousandths of the unit, and whether it was written with a binary suffix
/// (kube-apiserver keeps the format when it prints the canonical form).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    milli: i128,
    binary: bool,
}

impl Quantity {
    pub fn decimal_milli(milli: i64) -> Quantity {
        Quantity {
            milli: milli as i128,
            binary: false,
        }
    }

    pub fn binary_bytes(bytes: i64) -> Quantity {
        Quantity {
            milli: bytes as i128 * 1000,
            binary: true,
        }
    }

    /// `0.25`, `1.5`, `2`: the amount as a plain decimal number.
    pub fn decimal_text(&self) -> String {
        let (int, frac) = (self.milli / 1000, self.milli % 1000);
        if frac == 0 {
            int.to_string()
        } else {
            format!("{int}.{}", format!("{frac:03}").trim_end_matches('0'))
        }
    }

    /// The canonical form (`staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go`
    /// `CanonicalizeBytes`): the largest suffix that keeps an integer, milli units for a
    /// fraction, binary suffixes for binary quantities of whole bytes.
    pub fn canonical(&self) -> String {
        if self.milli % 1000 != 0 {
            return format!("{}m", self.milli);
        }
        let v = self.milli / 1000;
        let (base, suffixes): (i128, &[&str]) = if self.binary {
            (1024, &["", "Ki", "Mi", "Gi", "Ti"])
        } else {
            (1000, &["", "k", "M", "G", "T"])
        };
        let mut n = 0;
        while n + 1 < suffixes.len() && v != 0 && v % base.pow(n as u32 + 1) == 0 {
            n += 1;
        }
        format!("{}{}", v / base.pow(n as u32), suffixes[n])
    }

    /// Reads the spellings the generator writes (and canonical forms).
    pub fn parse(v: &Value) -> Option<Quantity> {
        let s = match v {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return None,
        };
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, suffix) = s.split_at(split);
        let (mult, binary): (i128, bool) = match suffix {
            "" => (1000, false),
            "m" => (1, false),
            "k" => (1_000_000, false),
            "M" => (1_000_000_000, false),
            "G" => (1_000_000_000_000, false),
            "Ki" => (1024 * 1000, true),
            "Mi" => (1024 * 1024 * 1000, true),
            "Gi" => (1024 * 1024 * 1024 * 1000, true),
            _ => return None,
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let scale = 10i128.pow(frac.len() as u32);
        let mantissa: i128 = format!("{int}{frac}").parse().ok()?;
        let milli = mantissa * mult / scale;
        (milli * scale == mantissa * mult).then_some(Quantity { milli, binary })
    }

    /// A different amount of the same kind: one milli-unit more, or one MiB more.
    pub fn bumped(&self) -> Quantity {
        let step = if self.binary { 1024 * 1024 * 1000 } else { 1 };
        Quantity {
            milli: self.milli + step,
            ..*self
        }
    }
}

/// Whether the leaf at `ptr` is a resource quantity (a value of `requests` or `limits`).
pub fn is_quantity(ptr: &str) -> bool {
    let toks = tokens(ptr);
    toks.len() >= 2 && matches!(toks[toks.len() - 2].as_str(), "requests" | "limits")
}

// ------------------------------------------------------------------------------------
// Values the way Kubernetes compares them, for checking a restored object

/// Absent for Kubernetes: nothing, `null`, an empty list or map, `false` (what the server
/// prints for an `omitempty` bool it was sent as `false`, e.g. `readOnly`).
fn vacuous(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

/// The two tolerations DefaultTolerationSeconds admission adds to every Pod.
fn admission_toleration(t: &Value) -> bool {
    t["tolerationSeconds"] == 300
        && matches!(
            t["key"].as_str(),
            Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable")
        )
}

/// `a` and `b` hold the same object for Kubernetes: keyed lists in any order, empty values
/// as absent, quantities by amount; allocated node ports and admission tolerations (which
/// the server adds again) left out.
pub fn equivalent(kind: &str, root: &Value, a: &Value, b: &Value, ptr: &str) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.keys().chain(y.keys()).all(|k| {
            if k == "nodePort" {
                return true;
            }
            let (u, v) = (x.get(k), y.get(k));
            if vacuous(u) && vacuous(v) {
                return true;
            }
            let p = format!("{ptr}/{}", escape(k));
            match (u, v) {
                (Some(u), Some(v)) => equivalent(kind, root, u, v, &p),
                _ => false,
            }
        }),
        (Value::Array(x), Value::Array(y)) => {
            let keep = |l: &[Value]| -> Vec<Value> {
                l.iter()
                    .filter(|t| {
                        !(kind == "Pod" && ptr.ends_with("/tolerations") && admission_toleration(t))
                    })
                    .cloned()
                    .collect()
            };
            let (mut x, mut y) = (keep(x), keep(y));
            if x.len() != y.len() {
                return false;
            }
            if let Some(key) = keyed_by(kind, root, ptr) {
                let by_key = |v: &Value| v.get(&key).map(Value::to_string);
                x.sort_by_key(by_key);
                y.sort_by_key(by_key);
            }
            x.iter()
                .zip(&y)
                .enumerate()
                .all(|(i, (u, v))| equivalent(kind, root, u, v, &format!("{ptr}/{i}")))
        }
        _ if is_quantity(ptr) => {
            a == b || Quantity::parse(a).is_some_and(|q| Some(q) == Quantity::parse(b))
        }
        _ => a == b,
    }
}

#[test]
fn quantities_parse_and_print_canonically() {
    let q = |s: &str| Quantity::parse(&json!(s)).unwrap().canonical();
    assert_eq!(q("0.5"), "500m");
    assert_eq!(q("1000m"), "1");
    assert_eq!(q("1536Mi"), "1536Mi");
    assert_eq!(q("1.5Gi"), "1536Mi");
    assert_eq!(q("2048Mi"), "2Gi");
    assert_eq!(q("2000"), "2k");
    assert_eq!(q("134217728"), "134217728");
    assert_eq!(Quantity::parse(&json!(2)).unwrap().canonical(), "2");
    assert_eq!(Quantity::decimal_milli(250).decimal_text(), "0.25");
}

#[test]
fn merge_keys_come_from_k8s_openapi() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "x", "args": ["-v"],
            "env": [{"name": "A", "value": "1"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
          "volumes": [{"name": "v", "emptyDir": {}}],
          "tolerations": [{"operator": "Exists"}]}});
    let key = |p: &str| keyed_by("Pod", &pod, p);
    assert_eq!(key("/spec/containers").as_deref(), Some("name"));
    assert_eq!(key("/spec/containers/0/env").as_deref(), Some("name"));
    assert_eq!(
        key("/spec/containers/0/ports").as_deref(),
        Some("containerPort")
    );
    assert_eq!(
        key("/spec/containers/0/volumeMounts").as_deref(),
        Some("mountPath")
    );
    assert_eq!(key("/spec/volumes").as_deref(), Some("name"));
    assert_eq!(key("/spec/containers/0/args"), None);
    assert_eq!(key("/spec/tolerations"), None);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "name": "http", "protocol": "TCP"}]}});
    assert_eq!(
        keyed_by("Service", &svc, "/spec/ports").as_deref(),
        Some("port")
    );
}
