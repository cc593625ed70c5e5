//! Property tests: an object compared with its own live form (server metadata, defaults and
//! reordered keyed lists added) is in sync; changing any scalar it sets is drift at exactly
//! that path (or at the atomic list holding it, replaced whole), and the patch restores it.

use super::*;
use proptest::prelude::*;
use serde_json::{json, Map};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z0-9]{0,8}".prop_map(Value::String),
        (-1000i64..1000).prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
    ]
}

/// Nested maps of user-chosen fields (names start with `f` so they never collide with the
/// fields the differ treats specially).
fn tree() -> impl Strategy<Value = Value> {
    let leaf = scalar();
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::btree_map("f[a-z]{0,5}", inner.clone(), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            prop::collection::vec("[a-z]{1,5}".prop_map(Value::String), 0..4)
                .prop_map(Value::Array),
        ]
    })
}

fn container() -> impl Strategy<Value = Map<String, Value>> {
    (
        "[a-z]{1,6}:[0-9]",
        prop::collection::btree_map("[A-Z]{1,4}", "[a-z0-9]{0,6}", 0..4),
        prop::collection::vec("--[a-z]{1,5}", 0..3),
        prop::collection::btree_map("f[a-z]{0,5}", tree(), 0..3),
    )
        .prop_map(|(image, env, args, extra)| {
            let mut c = Map::new();
            c.insert("image".into(), json!(image));
            c.insert(
                "env".into(),
                Value::Array(
                    env.into_iter()
                        .map(|(k, v)| json!({"name": k, "value": v}))
                        .collect(),
                ),
            );
            c.insert("args".into(), json!(args));
            c.extend(extra);
            c
        })
}

fn deployment() -> impl Strategy<Value = Value> {
    (
        "[a-z]{1,8}",
        "[a-z]{1,8}",
        prop::collection::btree_map("[a-z.]{1,6}", "[a-z0-9]{0,5}", 0..4),
        prop::collection::btree_map("[a-z]{1,6}", container(), 1..4),
        prop::collection::btree_map("f[a-z]{0,5}", tree(), 0..4),
    )
        .prop_map(|(name, ns, labels, containers, extra)| {
            let containers: Vec<Value> = containers
                .into_iter()
                .map(|(n, mut c)| {
                    c.insert("name".into(), json!(n));
                    Value::Object(c)
                })
                .collect();
            let mut spec = Map::new();
            spec.insert(
                "template".into(),
                json!({"spec": {"containers": containers}}),
            );
            spec.extend(extra);
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": name, "namespace": ns, "labels": labels},
                   "spec": spec})
        })
}

/// Adds a defaults-like field to every object in the tree.
fn add_defaults(v: &mut Value, salt: u64) {
    match v {
        Value::Object(m) => {
            for child in m.values_mut() {
                add_defaults(child, salt);
            }
            m.insert("zzDefaulted".into(), json!(salt));
        }
        Value::Array(a) => a.iter_mut().for_each(|c| add_defaults(c, salt)),
        _ => {}
    }
}

fn rotate(list: &mut Value, by: usize) {
    if let Some(a) = list.as_array_mut() {
        if !a.is_empty() {
            let n = by % a.len();
            a.rotate_left(n);
        }
    }
}

/// `desired` as kube-apiserver would return it: its real defaults, plus a field no rule
/// knows in every object (what a newer server or a controller may add).
fn as_live(desired: &Value, salt: u64) -> Value {
    let mut live = desired.clone();
    driftd_sim::server_defaults::as_created("apps/v1", "Deployment", &mut live);
    add_defaults(&mut live, salt);
    let containers = &mut live["spec"]["template"]["spec"]["containers"];
    if let Some(cs) = containers.as_array_mut() {
        for c in cs.iter_mut() {
            rotate(&mut c["env"], salt as usize);
        }
    }
    rotate(containers, salt as usize + 1);
    let m = live["metadata"].as_object_mut().unwrap();
    m.insert("uid".into(), json!("6a1c"));
    m.insert("resourceVersion".into(), json!(salt.to_string()));
    m.insert("generation".into(), json!(salt));
    m.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    m.insert(
        "annotations".into(),
        json!({"kubectl.kubernetes.io/last-applied-configuration": "{}",
               "deployment.kubernetes.io/revision": "1"}),
    );
    m.insert(
        "managedFields".into(),
        json!([{"manager": "kubectl", "operation": "Update", "time": "2026-01-01T00:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]),
    );
    live["status"] = json!({"replicas": 1, "observedGeneration": salt});
    live
}

/// Pointers of scalar leaves a person could change (merge keys excluded: changing one makes
/// a different item, tested separately).
fn leaves(v: &Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                if k == "name" && path.contains("/containers/") {
                    continue;
                }
                leaves(c, format!("{path}/{}", pointer::escape(k)), out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                leaves(c, format!("{path}/{i}"), out);
            }
        }
        _ => out.push(path),
    }
}

fn mutate(v: &Value) -> Value {
    match v {
        Value::String(s) => json!(format!("{s}x")),
        Value::Number(n) => json!(n.as_i64().unwrap_or(0) + 1),
        Value::Bool(b) => json!(!b),
        other => other.clone(),
    }
}

/// Where a change of the leaf at `path` is reported: at the outermost list without a merge
/// key holding it (replaced whole), else at the leaf.
fn reported_at(desired: &Value, path: &str) -> String {
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    for i in 1..parts.len() {
        let prefix = format!("/{}", parts[..i].join("/"));
        if desired.pointer(&prefix).is_some_and(Value::is_array) {
            let names: Vec<&str> = parts[..i]
                .iter()
                .filter(|p| p.parse::<usize>().is_err())
                .copied()
                .collect();
            if driftd_k8s::merge_keys::merge_key("Deployment", &names).is_none() {
                return prefix;
            }
        }
    }
    path.to_string()
}

fn compare(desired: &Value, live: &Value) -> Comparison {
    Differ::new(b"k").compare(&CompareInput {
        desired,
        live: Some(live),
        previous: None,
        facts: &ClusterFacts::default(),
    })
}

/// Where `as_live(desired, salt)` put the field at desired pointer `path` (keyed lists
/// were rotated, so positions move).
fn live_pointer(desired: &Value, path: &str, salt: u64) -> String {
    let containers = desired["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map_or(0, Vec::len);
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let prefix = parts[..i].join("/");
        let moved = |len: usize, by: usize| {
            let idx: usize = part.parse().unwrap();
            ((idx + len - by % len) % len).to_string()
        };
        if prefix == "spec/template/spec/containers" {
            out.push(moved(containers, salt as usize + 1));
        } else if i >= 2
            && parts[i - 1] == "env"
            && parts[..i - 2].join("/") == "spec/template/spec/containers"
        {
            let c: usize = parts[i - 2].parse().unwrap();
            let env_len = desired["spec"]["template"]["spec"]["containers"][c]["env"]
                .as_array()
                .map_or(0, Vec::len);
            out.push(moved(env_len, salt as usize));
        } else {
            out.push(part.to_string());
        }
    }
    format!("/{}", out.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn object_is_in_sync_with_its_live_form(desired in deployment(), salt in 0u64..50) {
        let live = as_live(&desired, salt);
        let c = compare(&desired, &live);
        prop_assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
        prop_assert!(c.patch.0.is_empty());
    }

    #[test]
    fn changing_a_set_scalar_is_drift_at_that_path_or_its_atomic_list(
        desired in deployment(), salt in 0u64..50, pick in any::<prop::sample::Index>()
    ) {
        let live = as_live(&desired, salt);
        let mut paths = Vec::new();
        leaves(&desired, String::new(), &mut paths);
        paths.retain(|p| !p.starts_with("/apiVersion") && !p.starts_with("/kind"));
        prop_assume!(!paths.is_empty());
        let path = pick.get(&paths).clone();
        let mut changed = desired.clone();
        let leaf = changed.pointer_mut(&path).unwrap();
        *leaf = mutate(leaf);
        let c = compare(&changed, &live);
        prop_assert_eq!(c.class, DriftClass::Modified);
        prop_assert_eq!(c.changes.len(), 1, "{:?}", c.changes);
        let reported = reported_at(&desired, &path);
        prop_assert_eq!(&c.changes[0].path, &reported);
        prop_assert_eq!(c.changes[0].op, ChangeOp::Replace);
        prop_assert_eq!(c.changes[0].desired.as_ref(), changed.pointer(&reported));
        let mut patched = live.clone();
        json_patch::patch(&mut patched, &c.patch).unwrap();
        prop_assert_eq!(compare(&changed, &patched).class, DriftClass::InSync);
    }

    #[test]
    fn changing_a_live_scalar_is_drift_at_the_desired_path(
        desired in deployment(), salt in 0u64..50, pick in any::<prop::sample::Index>()
    ) {
        let mut live = as_live(&desired, salt);
        let mut paths = Vec::new();
        leaves(&desired, String::new(), &mut paths);
        paths.retain(|p| !p.starts_with("/apiVersion") && !p.starts_with("/kind"));
        prop_assume!(!paths.is_empty());
        let path = pick.get(&paths).clone();
        let at = live_pointer(&desired, &path, salt);
        prop_assert_eq!(live.pointer(&at), desired.pointer(&path), "mapping {} -> {}", path, at);
        let leaf = live.pointer_mut(&at).unwrap();
        *leaf = mutate(leaf);
        let c = compare(&desired, &live);
        prop_assert_eq!(c.changes.len(), 1, "{:?}", c.changes);
        let reported = reported_at(&desired, &path);
        let live_at = live_pointer(&desired, &reported, salt);
        prop_assert_eq!(&c.changes[0].path, &reported);
        prop_assert_eq!(c.changes[0].live.as_ref(), live.pointer(&live_at));
        let ops = serde_json::to_value(&c.patch).unwrap();
        prop_assert_eq!(&ops[0]["path"], &json!(live_at));
        let mut patched = live.clone();
        json_patch::patch(&mut patched, &c.patch).unwrap();
        prop_assert_eq!(compare(&desired, &patched).class, DriftClass::InSync);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the Secret values and however they differ, no output carries them.
    #[test]
    fn secret_values_never_leak(
        values in prop::collection::btree_map("[a-z]{1,6}", "[A-Za-z0-9]{10,16}", 1..5),
        live_values in prop::collection::btree_map("[a-z]{1,6}", "[A-Za-z0-9]{10,16}", 0..5),
        as_string_data in any::<bool>(),
    ) {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let field = if as_string_data { "stringData" } else { "data" };
        let desired_map: Map<String, Value> = values
            .iter()
            .map(|(k, v)| (k.clone(), json!(if as_string_data { v.clone() } else { b64(v) })))
            .collect();
        let desired = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"}, field: desired_map});
        let live_map: Map<String, Value> =
            live_values.iter().map(|(k, v)| (k.clone(), json!(b64(v)))).collect();
        let live = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"}, "data": live_map});
        let previous = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"}, "data": live_map.clone()});
        for prev in [None, Some(&previous)] {
            let c = Differ::new(b"k").compare(&CompareInput {
                desired: &desired,
                live: Some(&live),
                previous: prev,
                facts: &ClusterFacts::default(),
            });
            let outputs = [format!("{c:?}"), serde_json::to_string(&c).unwrap()];
            for v in values.values().chain(live_values.values()) {
                for out in &outputs {
                    prop_assert!(!out.contains(v.as_str()), "{} leaked", v);
                    prop_assert!(!out.contains(b64(v).trim_end_matches('=')), "{} leaked", v);
                }
            }
        }
    }
}
