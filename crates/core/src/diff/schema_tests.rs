//! The differ with what kube-apiserver does beyond defaulting: zero values its encoder
//! leaves out, custom resources by their CRD's structural schema, and the admission chain's
//! additions to Pods.

use super::*;
use serde_json::json;

fn compare(desired: &Value, live: &Value, facts: &ClusterFacts) -> Comparison {
    Differ::new(b"k").compare(&CompareInput {
        desired,
        live: Some(live),
        previous: None,
        facts,
    })
}

fn paths(c: &Comparison) -> Vec<(String, ChangeOp)> {
    c.changes.iter().map(|c| (c.path.clone(), c.op)).collect()
}

fn route_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Route", "plural": "routes"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "properties": {
                        "timeout": {"type": "string", "default": "30s"},
                        "backends": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name", "port"],
                            "items": {"type": "object", "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "default": 80},
                                "weight": {"type": "integer", "default": 1}}}},
                        "hosts": {"type": "array", "x-kubernetes-list-type": "set",
                            "items": {"type": "string"}},
                        "filters": {"type": "array", "items": {"type": "object",
                            "properties": {"type": {"type": "string"}}}},
                        "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                            "additionalProperties": {"type": "string"}},
                        "extra": {"type": "object",
                            "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}})
}

fn route() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Route",
        "metadata": {"name": "r", "namespace": "shop"},
        "spec": {"backends": [{"name": "a"}, {"name": "b", "port": 8080}],
            "hosts": ["a.example", "b.example"], "filters": [{"type": "x"}],
            "selector": {"app": "web"}}})
}

/// `route()` as kube-apiserver returns it: pruned and defaulted by the CRD.
fn route_live() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Route",
        "metadata": {"name": "r", "namespace": "shop", "uid": "u", "resourceVersion": "1"},
        "spec": {"backends": [{"name": "a", "port": 80, "weight": 1},
                              {"name": "b", "port": 8080, "weight": 1}],
            "hosts": ["a.example", "b.example"], "filters": [{"type": "x"}],
            "selector": {"app": "web"}, "timeout": "30s"}})
}

fn facts() -> ClusterFacts {
    let mut f = ClusterFacts::default();
    assert!(f.add_crds([&route_crd()]).is_empty());
    f
}

#[test]
fn a_defaulted_custom_resource_field_edited_by_hand_is_drift() {
    let f = facts();
    let c = compare(&route(), &route_live(), &f);
    assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
    assert_eq!(c.schema, Some(SchemaUse::Crd));
    let mut live = route_live();
    live["spec"]["timeout"] = json!("5s");
    live["spec"]["backends"][0]["weight"] = json!(3);
    let c = compare(&route(), &live, &f);
    assert_eq!(
        paths(&c),
        [
            ("/spec/backends/0/weight".to_string(), ChangeOp::Replace),
            ("/spec/timeout".to_string(), ChangeOp::Replace)
        ]
    );
    assert_eq!(c.changes[1].desired, Some(json!("30s")));
    // Without the CRD the defaults are unknown: the same live object is in sync, and the
    // comparison says it had no schema.
    let plain = compare(&route(), &live, &ClusterFacts::default());
    assert_eq!(plain.class, DriftClass::InSync);
    assert_eq!(plain.schema, Some(SchemaUse::None));
}

#[test]
fn map_lists_match_by_key_sets_by_value_and_atomic_lists_whole() {
    let f = facts();
    let mut live = route_live();
    // A controller reorders the map-list and the set: not drift.
    live["spec"]["backends"].as_array_mut().unwrap().reverse();
    live["spec"]["hosts"].as_array_mut().unwrap().reverse();
    assert_eq!(compare(&route(), &live, &f).class, DriftClass::InSync);
    // An item added live to the map-list, a host added to the set: drift, by key.
    live["spec"]["backends"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "a", "port": 9090, "weight": 1}));
    live["spec"]["hosts"]
        .as_array_mut()
        .unwrap()
        .push(json!("c.example"));
    let c = compare(&route(), &live, &f);
    assert_eq!(
        paths(&c),
        [
            ("/spec/backends/2".to_string(), ChangeOp::Remove),
            ("/spec/hosts/2".to_string(), ChangeOp::Remove)
        ]
    );
    assert_eq!(c.changes[0].field, "spec.backends[name,port=a,9090]");
    // An untyped list is atomic: an extra field in an item is a change of the whole list,
    // and so is an extra key in an atomic map.
    let mut live = route_live();
    live["spec"]["filters"][0]["extra"] = json!(true);
    live["spec"]["selector"]["tier"] = json!("front");
    assert_eq!(
        paths(&compare(&route(), &live, &f)),
        [
            ("/spec/filters".to_string(), ChangeOp::Replace),
            ("/spec/selector".to_string(), ChangeOp::Replace)
        ]
    );
}

#[test]
fn fields_the_schema_prunes_are_not_drift_but_preserved_ones_are_compared() {
    let f = facts();
    let mut desired = route();
    desired["spec"]["timout"] = json!("10s"); // a typo the server prunes
    desired["spec"]["extra"] = json!({"free": {"form": 1}});
    let mut live = route_live();
    live["spec"]["extra"] = json!({"free": {"form": 1}});
    let prepared = Differ::prepare_with(&desired, None, &f);
    assert_eq!(prepared.pruned(), ["spec.timout"]);
    assert_eq!(compare(&desired, &live, &f).class, DriftClass::InSync);
    live["spec"]["extra"]["free"]["form"] = json!(2);
    assert_eq!(
        paths(&compare(&desired, &live, &f)),
        [("/spec/extra/free/form".to_string(), ChangeOp::Replace)]
    );
}

#[test]
fn built_in_kinds_say_nothing_about_a_schema() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}});
    let c = compare(&cm, &cm, &facts());
    assert_eq!(c.schema, None);
    assert!(!serde_json::to_value(&c)
        .unwrap()
        .as_object()
        .unwrap()
        .contains_key("schema"));
}

fn pod_with_probe(delay: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"hostNetwork": false, "containers": [{"name": "c", "image": "c:1", "args": [],
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": false}],
            "readinessProbe": {"httpGet": {"port": 8080}, "initialDelaySeconds": delay}}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "gpu", "operator": "Exists"}]}})
}

/// The Pod as kube-apiserver stores a create: defaults, zero values left out, and the
/// admission chain's additions appended to the lists the manifest has.
fn admitted(desired: &Value) -> Value {
    let mut live = desired.clone();
    driftd_k8s::defaults::apply("v1", "Pod", &mut live);
    let spec = live["spec"].as_object_mut().unwrap();
    spec.remove("hostNetwork");
    let c = &mut spec["containers"][0];
    c.as_object_mut().unwrap().remove("args");
    c["volumeMounts"][0]
        .as_object_mut()
        .unwrap()
        .remove("readOnly");
    if c["readinessProbe"]["initialDelaySeconds"] == 0 {
        c["readinessProbe"]
            .as_object_mut()
            .unwrap()
            .remove("initialDelaySeconds");
    }
    driftd_k8s::admission::admit(
        "Pod",
        &mut live,
        &driftd_k8s::admission::AdmissionFacts::default(),
        "kube-api-access-7mz4q",
    );
    live
}

#[test]
fn zero_values_and_admission_additions_of_a_bare_pod_are_not_drift() {
    let desired = pod_with_probe(json!(0));
    let live = admitted(&desired);
    assert_eq!(live["spec"]["volumes"].as_array().unwrap().len(), 2);
    let c = compare(&desired, &live, &ClusterFacts::default());
    assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
    // A pointer zero is printed: a probe delay of 5 missing live is drift.
    let desired = pod_with_probe(json!(5));
    let mut live = admitted(&desired);
    live["spec"]["containers"][0]["readinessProbe"]
        .as_object_mut()
        .unwrap()
        .remove("initialDelaySeconds");
    assert_eq!(
        paths(&compare(&desired, &live, &ClusterFacts::default())),
        [(
            "/spec/containers/0/readinessProbe/initialDelaySeconds".to_string(),
            ChangeOp::Add
        )]
    );
}

#[test]
fn the_same_volume_appended_to_a_workload_template_is_drift() {
    let pod = pod_with_probe(json!(1));
    let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod["spec"]}}});
    let admitted_pod = admitted(&pod);
    let mut live = desired.clone();
    driftd_k8s::defaults::apply("apps/v1", "Deployment", &mut live);
    let spec = &mut live["spec"]["template"]["spec"];
    spec["volumes"] = admitted_pod["spec"]["volumes"].clone();
    let c = compare(&desired, &live, &ClusterFacts::default());
    assert_eq!(
        paths(&c),
        [(
            "/spec/template/spec/volumes/1".to_string(),
            ChangeOp::Remove
        )]
    );
}
