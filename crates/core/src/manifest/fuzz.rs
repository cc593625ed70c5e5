//! Fuzzing the manifest reader on stable Rust: arbitrary bytes, and structure-aware
//! near-valid manifests (valid objects of several kinds, then mutated: values of the wrong
//! type, odd names, keys dropped or repeated, YAML tags, anchors, list wrappers, bytes
//! flipped). The reader must never panic; what it accepts kube-apiserver accepts; what it
//! refuses it refuses naming the file and document; a Secret's value never shows.
//!
//! A short run by default; `DRIFTD_FUZZ_CASES=100000 cargo test --release -p driftd-core
//! fuzz_` for a long one. Failures are kept in `proptest-regressions/` and replayed first.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{read_text, LoadOptions};
use driftd_k8s::testing::fuzz_config;

/// In a Secret's data of every generated input; must never appear in a message.
const SECRET: &str = "c2VjcmV0LW1hcmtlcg==";
const SECRET_PLAIN: &str = "secret-marker-value";

/// Valid objects of the kinds the reader treats differently.
pub(crate) fn valid_objects() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config",
            "labels": {"app": "web"}}, "data": {"k": "v", "port": "8080"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
            "type": "Opaque", "data": {"password": SECRET}, "stringData": {"token": SECRET_PLAIN}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "name": "http"}],
                     "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}]}}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "migrate-"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "m", "image": "busybox"}]}}}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}}),
    ]
}

/// A value to put somewhere it may not belong.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!(1e23)),
        Just(json!(2147483648i64)),
        Just(json!(3.5)),
        odd_string().prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        Just(json!(["a", 1])),
        Just(json!({"nested": {"deeper": [1, "x"]}})),
    ]
}

/// Strings names and keys are made of, odd ones included.
fn odd_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?",
        "[A-Za-z0-9_./:%~-]{0,30}",
        ".{0,20}",
        Just("a".repeat(254)),
        Just("..".to_string()),
        Just("a\u{1}b".to_string()),
    ]
}

/// One change to a valid object.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replaces the value at the n-th node (depth-first) with another.
    Replace(usize, Value),
    /// Removes the n-th field.
    Remove(usize),
    /// Sets `metadata.name` (or namespace, generateName) to an odd string.
    Meta(&'static str, String),
    /// Changes the apiVersion.
    ApiVersion(&'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..64, odd_value()).prop_map(|(n, v)| Mutation::Replace(n, v)),
        (0usize..64).prop_map(Mutation::Remove),
        (
            prop::sample::select(vec!["name", "namespace", "generateName"]),
            odd_string()
        )
            .prop_map(|(f, s)| Mutation::Meta(f, s)),
        prop::sample::select(vec![
            "v1",
            "apps/v1",
            "apps/v1beta1",
            "example.com/v2",
            "batch/v1",
            "x/y/z",
            ""
        ])
        .prop_map(Mutation::ApiVersion),
    ]
}

/// The n-th object or array slot below `v` (depth-first), as a mutable reference.
fn nth_slot<'a>(v: &'a mut Value, n: &mut usize) -> Option<&'a mut Value> {
    if *n == 0 {
        return Some(v);
    }
    *n -= 1;
    match v {
        Value::Object(m) => m.values_mut().find_map(|c| nth_slot(c, n)),
        Value::Array(a) => a.iter_mut().find_map(|c| nth_slot(c, n)),
        _ => None,
    }
}

fn remove_nth(v: &mut Value, n: &mut usize) -> bool {
    match v {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if *n == 0 {
                    m.remove(&k);
                    return true;
                }
                *n -= 1;
                if remove_nth(m.get_mut(&k).unwrap(), n) {
                    return true;
                }
            }
            false
        }
        Value::Array(a) => a.iter_mut().any(|c| remove_nth(c, n)),
        _ => false,
    }
}

fn apply(object: &mut Value, m: &Mutation) {
    match m {
        Mutation::Replace(n, value) => {
            // Never the root, and never by copying a Secret's value elsewhere.
            let mut n = n + 1;
            if let Some(slot) = nth_slot(object, &mut n) {
                *slot = value.clone();
            }
        }
        Mutation::Remove(n) => {
            remove_nth(object, &mut n.clone());
        }
        Mutation::Meta(field, s) => {
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert(field.to_string(), Value::from(s.clone()));
            }
        }
        Mutation::ApiVersion(v) => object["apiVersion"] = Value::from(*v),
    }
}

/// How the mutated objects become text.
#[derive(Debug, Clone)]
enum Render {
    Yaml,
    Json,
    /// A `kind: List` of them.
    List,
    /// YAML with a text edit: a line repeated (a duplicate key), a tag, an anchor and
    /// alias, a byte replaced.
    Edited(usize, &'static str),
}

fn render() -> impl Strategy<Value = Render> {
    prop_oneof![
        Just(Render::Yaml),
        Just(Render::Json),
        Just(Render::List),
        (
            0usize..400,
            prop::sample::select(vec![
                "dup",
                "!!python/object/apply:os.system ",
                "!!binary ",
                "&a ",
                "*a",
                "\t",
                "{",
                "- ",
                "---\n",
                "\u{0}",
                "#"
            ])
        )
            .prop_map(|(at, e)| Render::Edited(at, e)),
    ]
}

fn to_text(objects: &[Value], how: &Render) -> String {
    let yaml = |objects: &[Value]| {
        objects
            .iter()
            .map(|o| serde_saphyr::to_string(o).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("---\n")
    };
    match how {
        Render::Yaml => yaml(objects),
        Render::Json => objects
            .iter()
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        Render::List => {
            serde_saphyr::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": objects}))
                .unwrap_or_default()
        }
        Render::Edited(at, edit) => {
            let text = yaml(objects);
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return text;
            }
            let i = at % lines.len();
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            if *edit == "dup" {
                out.insert(i, lines[i].to_string());
            } else {
                let line = &out[i];
                let col = line.find(": ").map_or(0, |c| c + 2);
                out[i] = format!("{}{edit}{}", &line[..col], &line[col..]);
            }
            out.join("\n") + "\n"
        }
    }
}

/// The reader's promises for any input.
fn check(text: &str) -> Result<(), TestCaseError> {
    match read_text(text, "fuzz.yaml", &LoadOptions::default()) {
        Ok(loaded) => {
            for o in &loaded.objects {
                // What was accepted is what kube-apiserver accepts, and is keyed as stored.
                let namespaced = o.key.namespace.is_some();
                prop_assert_eq!(
                    driftd_k8s::validation::validate_create(&o.object, namespaced),
                    Ok(()),
                    "{}",
                    o.key
                );
                prop_assert_eq!(
                    o.object
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str),
                    o.key.namespace.as_deref()
                );
                prop_assert_eq!(
                    o.object.pointer("/metadata/name").and_then(Value::as_str),
                    Some(o.key.name.as_str())
                );
            }
            for w in &loaded.warnings {
                let w = w.to_string();
                prop_assert!(!w.contains(SECRET) && !w.contains(SECRET_PLAIN), "{w}");
            }
        }
        Err(e) => {
            let message = e.to_string();
            prop_assert!(
                message.starts_with(&format!("fuzz.yaml: document {}: ", e.document)),
                "{message}"
            );
            prop_assert!(
                !message.contains(SECRET) && !message.contains(SECRET_PLAIN),
                "a Secret value in: {message}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(fuzz_config(256))]

    #[test]
    fn fuzz_reader_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn fuzz_reader_near_valid_manifests(
        picks in prop::collection::vec(0usize..9, 1..4),
        mutations in prop::collection::vec((0usize..4, mutation()), 0..4),
        how in render(),
    ) {
        let all = valid_objects();
        let mut objects: Vec<Value> = picks.iter().map(|&i| all[i].clone()).collect();
        for (target, m) in &mutations {
            let n = objects.len();
            apply(&mut objects[target % n], m);
        }
        check(&to_text(&objects, &how))?;
    }
}

/// Each valid object, alone and rendered each way, is accepted (or, with only a
/// `generateName`, skipped): the generator starts from input kube-apiserver accepts.
#[test]
fn the_valid_objects_are_accepted() {
    let all = valid_objects();
    for how in [Render::Yaml, Render::Json, Render::List] {
        let text = to_text(&all, &how);
        let loaded = read_text(&text, "fuzz.yaml", &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{how:?}: {e}"));
        assert_eq!(loaded.objects.len(), all.len() - 1, "{how:?}");
        assert_eq!(loaded.skipped.len(), 1, "{how:?}");
    }
}
