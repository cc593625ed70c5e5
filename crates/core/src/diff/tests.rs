//! One test pair (in sync / drift) per comparison rule.

use super::*;
use serde_json::json;

const KEY: &[u8] = b"test-installation-key";

fn cmp(desired: &Value, live: &Value) -> Comparison {
    cmp_full(desired, Some(live), None, &ClusterFacts::default())
}

fn cmp_full(
    desired: &Value,
    live: Option<&Value>,
    previous: Option<&Value>,
    facts: &ClusterFacts,
) -> Comparison {
    Differ::new(KEY).compare(&CompareInput {
        desired,
        live,
        previous,
        facts,
    })
}

fn paths(c: &Comparison) -> Vec<(String, ChangeOp)> {
    c.changes.iter().map(|c| (c.path.clone(), c.op)).collect()
}

/// Applies the comparison's patch to live and checks the result is in sync with desired.
fn assert_patch_restores(desired: &Value, live: &Value, c: &Comparison) {
    let mut patched = live.clone();
    json_patch::patch(&mut patched, &c.patch).expect("patch applies to live");
    let again = cmp(desired, &patched);
    assert_eq!(
        again.class,
        DriftClass::InSync,
        "after patch: {:?}",
        again.changes
    );
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app.kubernetes.io/name": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "web:1", "args": ["--port", "8080"],
                     "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "log", "image": "busybox"}
                ]}
            }
        }
    })
}

/// `desired` as kube-apiserver returns it after create: the simulator's defaults (declared
/// defaults, allocations, status) plus server metadata.
fn served(desired: &Value) -> Value {
    let mut l = desired.clone();
    let api_version = l["apiVersion"].as_str().unwrap_or("").to_string();
    let kind = l["kind"].as_str().unwrap_or("").to_string();
    driftd_sim::server_defaults::as_created(&api_version, &kind, &mut l);
    let m = l["metadata"].as_object_mut().unwrap();
    m.insert("uid".into(), json!("0b8d-11"));
    m.insert("resourceVersion".into(), json!("812"));
    m.insert("generation".into(), json!(3));
    m.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    l
}

/// `deployment()` as kube-apiserver returns it: server metadata, status and defaults added.
fn live_deployment() -> Value {
    let mut l = served(&deployment());
    l["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "3",
               "kubectl.kubernetes.io/last-applied-configuration": "{}"});
    l["status"] = json!({"replicas": 2, "readyReplicas": 2});
    l
}

#[test]
fn rule1_server_filled_fields_are_not_drift() {
    let c = cmp(&deployment(), &live_deployment());
    assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
    assert!(c.patch.0.is_empty());
}

#[test]
fn rule1_a_changed_set_field_is_drift() {
    let mut live = live_deployment();
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:2");
    let c = cmp(&deployment(), &live);
    assert_eq!(c.class, DriftClass::Modified);
    assert_eq!(c.changes.len(), 1);
    let ch = &c.changes[0];
    assert_eq!(ch.path, "/spec/template/spec/containers/0/image");
    assert_eq!(ch.op, ChangeOp::Replace);
    assert_eq!(ch.field, "spec.template.spec.containers[name=app].image");
    assert_eq!(
        (ch.desired.clone(), ch.live.clone()),
        (Some(json!("web:1")), Some(json!("web:2")))
    );
    assert_patch_restores(&deployment(), &live, &c);
}

#[test]
fn a_restoring_patch_fails_on_an_object_whose_list_moved_since() {
    let mut live = live_deployment();
    live["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] = json!("9");
    let c = cmp(&deployment(), &live);
    // The env item `B` is reached through container 0 and env item 1: both guarded.
    let tests: Vec<(&str, &Value)> = c
        .patch
        .0
        .iter()
        .filter_map(|op| match op {
            json_patch::PatchOperation::Test(t) => Some((t.path.as_str(), &t.value)),
            _ => None,
        })
        .collect();
    assert_eq!(
        tests,
        [
            ("/spec/template/spec/containers/0/name", &json!("app")),
            ("/spec/template/spec/containers/0/env/1/name", &json!("B")),
        ]
    );
    assert_patch_restores(&deployment(), &live, &c);
    // Someone reorders the containers after the comparison: the patch no longer applies,
    // rather than setting `log`'s env.
    let mut moved = live.clone();
    moved["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert!(json_patch::patch(&mut moved, &c.patch).is_err());
}

#[test]
fn rule1_maps_compare_per_desired_key() {
    let desired = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"template": {"metadata": {"labels": {"team": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    // The server adds the generated selector and job-name/controller-uid labels.
    let mut live = served(&desired);
    assert!(live["spec"]["template"]["metadata"]["labels"]["controller-uid"].is_string());
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["spec"]["template"]["metadata"]["labels"]["team"] = json!("b");
    let c = cmp(&desired, &live);
    assert_eq!(c.changes[0].field, "spec.template.metadata.labels.team");
    assert_eq!(c.changes[0].path, "/spec/template/metadata/labels/team");
}

#[test]
fn rule1_owner_references_only_when_desired_sets_them() {
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}});
    let mut live = desired.clone();
    live["metadata"]["ownerReferences"] =
        json!([{"uid": "u1", "kind": "X", "name": "x", "apiVersion": "v1"}]);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    let mut d2 = desired.clone();
    d2["metadata"]["ownerReferences"] =
        json!([{"uid": "u2", "kind": "X", "name": "x", "apiVersion": "v1"}]);
    assert_eq!(
        paths(&cmp(&d2, &live)),
        vec![
            ("/metadata/ownerReferences/0".to_string(), ChangeOp::Add),
            ("/metadata/ownerReferences/0".to_string(), ChangeOp::Remove)
        ]
    );
}

#[test]
fn rule2_quantities_and_numbers_in_other_spellings_are_equal() {
    let mut live = live_deployment();
    live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] =
        json!({"cpu": 0.5, "memory": "1024Mi"});
    let mut desired = deployment();
    desired["spec"]["replicas"] = json!(2.0);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("2");
    let c = cmp(&desired, &live);
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/template/spec/containers/0/resources/limits/cpu".to_string(),
            ChangeOp::Replace
        )]
    );
}

#[test]
fn rule2_quantity_number_vs_string() {
    let desired = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "default"},
        "spec": {"hard": {"pods": 10, "cpu": "4"}}});
    let live = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "default"},
        "spec": {"hard": {"pods": "10", "cpu": "4"}}});
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    let mut live2 = live.clone();
    live2["spec"]["hard"]["pods"] = json!("11");
    assert_eq!(cmp(&desired, &live2).class, DriftClass::Modified);
}

#[test]
fn rule2_int_or_string_keeps_its_type() {
    let desired = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
    let mut live = served(&desired);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["spec"]["ports"][0]["targetPort"] = json!("8080");
    let c = cmp(&desired, &live);
    assert_eq!(c.changes[0].field, "spec.ports[port=80].targetPort");
}

#[test]
fn rule2_empty_values_and_default_namespace() {
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "", "labels": {}, "annotations": null},
        "data": {"a": "1"}, "binaryData": {}, "immutable": null});
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "uid": "u"}, "data": {"a": "1"}});
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    // The namespace is the object's identity, never a field that drifts: a manifest may
    // name one on a cluster-scoped object, which kube-apiserver clears
    // (`rest.EnsureObjectNamespaceMatchesRequestNamespace`).
    let cluster_role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "r", "namespace": "prod"}, "rules": []});
    let live = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "r", "uid": "u"}});
    assert_eq!(cmp(&cluster_role, &live).class, DriftClass::InSync);
}

fn secret(data: Value, string_data: Option<Value>) -> Value {
    let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "default"},
        "type": "Opaque", "data": data});
    if let Some(sd) = string_data {
        s["stringData"] = sd;
    }
    s
}

#[test]
fn rule2_secret_string_data_equals_base64_data() {
    let desired = secret(json!({}), Some(json!({"password": "hunter2"})));
    let live = secret(json!({"password": "aHVudGVyMg=="}), None);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    let live2 = secret(json!({"password": "aHVudGVyMw=="}), None); // hunter3
    let c = cmp(&desired, &live2);
    // Reported where the manifest has it; the patch restores the stored `data` key.
    assert_eq!(
        paths(&c),
        vec![("/stringData/password".to_string(), ChangeOp::Replace)]
    );
    assert_eq!(c.changes[0].field, "stringData.password");
    assert_eq!(c.patch.0.len(), 1);
    let op = serde_json::to_value(&c.patch).unwrap();
    assert_eq!(op[0]["path"], "/data/password");
    assert!(op[0]["value"]["hmac"].is_string());
}

#[test]
fn secret_values_never_appear_in_any_output() {
    let desired = secret(
        json!({"token": "c2VjcmV0LXRva2Vu"}),
        Some(json!({"password": "hunter2"})),
    );
    let mut live = secret(
        json!({"password": "aHVudGVyMw==", "extra": "ZXh0cmE="}),
        None,
    );
    live["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/last-applied-configuration":
        "{\"stringData\":{\"password\":\"hunter2\"}}"});
    let mut previous = desired.clone();
    previous["data"]["extra"] = json!("ZXh0cmE=");
    let c = cmp_full(
        &desired,
        Some(&live),
        Some(&previous),
        &ClusterFacts::default(),
    );
    assert_eq!(c.class, DriftClass::Modified);
    // token missing live (add), password differs (replace), extra pruned (remove).
    let mut got = paths(&c);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        vec![
            ("/data/extra".to_string(), ChangeOp::Remove),
            ("/data/token".to_string(), ChangeOp::Add),
            ("/stringData/password".to_string(), ChangeOp::Replace)
        ]
    );
    let outputs = [
        format!("{c:?}"),
        serde_json::to_string(&c).unwrap(),
        serde_json::to_string(&c.patch).unwrap(),
    ];
    let plaintexts = [
        "hunter2",
        "hunter3",
        "aHVudGVyMg",
        "aHVudGVyMw",
        "c2VjcmV0LXRva2Vu",
        "secret-token",
        "ZXh0cmE=",
    ];
    for out in &outputs {
        for plain in plaintexts {
            assert!(!out.contains(plain), "{plain} leaked in {out}");
        }
    }
    let pw = c
        .changes
        .iter()
        .find(|c| c.path == "/stringData/password")
        .unwrap();
    let d = pw.desired.as_ref().unwrap()["hmac"].as_str().unwrap();
    let l = pw.live.as_ref().unwrap()["hmac"].as_str().unwrap();
    assert_eq!((d.len(), l.len()), (16, 16));
    assert_ne!(d, l);
    assert!(d.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn rule3_keyed_lists_match_by_key_not_position() {
    let mut live = live_deployment();
    let cs = live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap();
    cs.reverse();
    let env = cs[1]["env"].as_array_mut().unwrap();
    env.reverse();
    let c = cmp(&deployment(), &live);
    assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
    // A change inside the reordered item: desired path uses desired positions, patch live ones.
    live["spec"]["template"]["spec"]["containers"][1]["env"][0]["value"] = json!("9");
    let c = cmp(&deployment(), &live);
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/template/spec/containers/0/env/1/value".to_string(),
            ChangeOp::Replace
        )]
    );
    assert_eq!(
        c.changes[0].field,
        "spec.template.spec.containers[name=app].env[name=B].value"
    );
    assert_eq!(
        serde_json::to_value(&c.patch).unwrap(),
        json!([
            {"op": "test", "path": "/spec/template/spec/containers/1/name", "value": "app"},
            {"op": "test", "path": "/spec/template/spec/containers/1/env/0/name", "value": "B"},
            {"op": "replace", "path": "/spec/template/spec/containers/1/env/0/value", "value": "2"}
        ])
    );
    assert_patch_restores(&deployment(), &live, &c);
}

#[test]
fn rule3_extra_and_missing_keyed_items_are_drift() {
    let mut live = live_deployment();
    let cs = live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap();
    cs.remove(1); // "log" missing live
    cs.push(json!({"name": "debug", "image": "busybox"}));
    cs.push(json!({"name": "shell", "image": "busybox"}));
    let c = cmp(&deployment(), &live);
    assert_eq!(
        paths(&c),
        vec![
            (
                "/spec/template/spec/containers/1".to_string(),
                ChangeOp::Add
            ),
            (
                "/spec/template/spec/containers/1".to_string(),
                ChangeOp::Remove
            ),
            (
                "/spec/template/spec/containers/2".to_string(),
                ChangeOp::Remove
            ),
        ]
    );
    assert_eq!(
        c.changes[1].field,
        "spec.template.spec.containers[name=debug]"
    );
    assert_eq!(c.changes[1].live.as_ref().unwrap()["name"], "debug");
    assert_patch_restores(&deployment(), &live, &c);
}

#[test]
fn rule3_atomic_lists_of_built_in_kinds_compare_whole() {
    let mut live = live_deployment();
    let c = cmp(&deployment(), &live);
    assert_eq!(c.class, DriftClass::InSync);
    live["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--port", "9090"]);
    let c = cmp(&deployment(), &live);
    // `kubectl apply` replaces an atomic list whole: one finding with both lists.
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/template/spec/containers/0/args".to_string(),
            ChangeOp::Replace
        )]
    );
    assert_eq!(
        c.changes[0].field,
        "spec.template.spec.containers[name=app].args"
    );
    assert_eq!(c.changes[0].desired, Some(json!(["--port", "8080"])));
    assert_eq!(c.changes[0].live, Some(json!(["--port", "9090"])));
    assert_patch_restores(&deployment(), &live, &c);
    live["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--port", "8080", "-v"]);
    let c = cmp(&deployment(), &live);
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/template/spec/containers/0/args".to_string(),
            ChangeOp::Replace
        )]
    );
    assert_patch_restores(&deployment(), &live, &c);
}

#[test]
fn rule3_extra_keys_inside_atomic_list_items_are_drift() {
    let mut desired = deployment();
    desired["spec"]["template"]["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    let mut live = served(&desired);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    // Narrowed live: the toleration now only matches one taint.
    live["spec"]["template"]["spec"]["tolerations"][0]["key"] = json!("dedicated");
    live["spec"]["template"]["spec"]["tolerations"][0]["effect"] = json!("NoSchedule");
    let c = cmp(&desired, &live);
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/template/spec/tolerations".to_string(),
            ChangeOp::Replace
        )]
    );
    assert_patch_restores(&desired, &live, &c);
    // Spellings still are not drift inside atomic lists, nor omitted zero values.
    desired["spec"]["template"]["spec"]["tolerations"] =
        json!([{"operator": "Exists", "key": "dedicated", "effect": "NoSchedule", "value": null}]);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
}

#[test]
fn custom_resources_keep_per_position_list_semantics() {
    let desired = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": 1, "items": [{"name": "a"}, {"name": "b"}]}});
    let mut live = desired.clone();
    // No defaults are modelled for custom resources, and items compare by the keys set.
    live["spec"]["items"][0]["extra"] = json!(true);
    live["spec"]["mode"] = json!("fast");
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["spec"]["items"][1]["name"] = json!("c");
    assert_eq!(
        paths(&cmp(&desired, &live)),
        vec![("/spec/items/1/name".to_string(), ChangeOp::Replace)]
    );
}

#[test]
fn rule3_defaults_inside_atomic_list_objects_are_not_drift() {
    let desired = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
        "spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}});
    let mut live = served(&desired);
    live["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] =
        json!("1024Mi");
    assert_eq!(
        cmp(&desired, &live).class,
        DriftClass::InSync,
        "{:?}",
        cmp(&desired, &live).changes
    );
    live["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    assert_eq!(
        paths(&cmp(&desired, &live)),
        vec![("/spec/volumeClaimTemplates".to_string(), ChangeOp::Replace)]
    );
}

#[test]
fn rule4_hpa_target_replicas_are_not_drift() {
    let mut live = live_deployment();
    live["spec"]["replicas"] = json!(7);
    let c = cmp(&deployment(), &live);
    assert_eq!(
        paths(&c),
        vec![("/spec/replicas".to_string(), ChangeOp::Replace)]
    );
    let mut facts = ClusterFacts::default();
    facts.hpa_targets.insert(deployment_key("web"));
    assert_eq!(
        cmp_full(&deployment(), Some(&live), None, &facts).class,
        DriftClass::InSync
    );
    // Another deployment's HPA does not hide this one's replicas.
    let mut other = ClusterFacts::default();
    other.hpa_targets.insert(deployment_key("api"));
    assert_eq!(
        cmp_full(&deployment(), Some(&live), None, &other).class,
        DriftClass::Modified
    );
}

#[test]
fn rule4_aggregated_cluster_role_rules_are_not_drift() {
    let desired = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "view-all"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}, "rules": []});
    let mut live = desired.clone();
    live["rules"] = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    let mut plain = desired.clone();
    plain.as_object_mut().unwrap().remove("aggregationRule");
    let mut live2 = live.clone();
    live2.as_object_mut().unwrap().remove("aggregationRule");
    assert_eq!(cmp(&plain, &live2).class, DriftClass::Modified);
}

fn managed_fields(entries: Value) -> Value {
    let mut live = live_deployment();
    live["metadata"]["managedFields"] = entries;
    live
}

#[test]
fn rule4_fields_owned_by_scale_controller_are_not_drift() {
    let scaled = json!([{"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
        "time": "2026-02-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    let mut live = managed_fields(scaled);
    live["spec"]["replicas"] = json!(5);
    assert_eq!(cmp(&deployment(), &live).class, DriftClass::InSync);
    // The same field written by a person through the scale subresource is drift.
    let by_hand = json!([{"manager": "kubectl", "operation": "Update", "subresource": "scale",
        "time": "2026-02-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    let mut live = managed_fields(by_hand);
    live["spec"]["replicas"] = json!(5);
    let c = cmp(&deployment(), &live);
    assert_eq!(c.changes[0].manager.as_deref(), Some("kubectl"));
}

#[test]
fn rule5_fields_dropped_from_desired_but_still_live_are_drift() {
    let mut previous = deployment();
    previous["metadata"]["labels"]["tier"] = json!("front");
    previous["spec"]["paused"] = json!(true);
    previous["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "C", "value": "3"}));
    let mut live = live_deployment();
    live["metadata"]["labels"]["tier"] = json!("front");
    live["metadata"]["labels"]["added-by-someone"] = json!("x");
    live["spec"]["paused"] = json!(true);
    let c = cmp_full(
        &deployment(),
        Some(&live),
        Some(&previous),
        &ClusterFacts::default(),
    );
    let mut got = paths(&c);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("/metadata/labels/tier".to_string(), ChangeOp::Remove),
            ("/spec/paused".to_string(), ChangeOp::Remove)
        ]
    );
    assert_patch_restores(&deployment(), &live, &c);
    // Once pruned (or re-defaulted by the server to another value) it is in sync.
    live["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("tier");
    live["spec"]["paused"] = json!(false);
    let c = cmp_full(
        &deployment(),
        Some(&live),
        Some(&previous),
        &ClusterFacts::default(),
    );
    assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
}

#[test]
fn rule6_pointers_escape_and_fields_quote() {
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "annotations": {"example.com/a~b": "1"}}});
    let mut live = desired.clone();
    live["metadata"]["annotations"]["example.com/a~b"] = json!("2");
    let c = cmp(&desired, &live);
    assert_eq!(c.changes[0].path, "/metadata/annotations/example.com~1a~0b");
    assert_eq!(
        c.changes[0].field,
        "metadata.annotations[\"example.com/a~b\"]"
    );
    assert_patch_restores(&desired, &live, &c);
}

#[test]
fn rule6_add_op_for_field_absent_live() {
    let mut desired = deployment();
    desired["spec"]["minReadySeconds"] = json!(5);
    let c = cmp(&desired, &live_deployment());
    assert_eq!(
        paths(&c),
        vec![("/spec/minReadySeconds".to_string(), ChangeOp::Add)]
    );
    assert_eq!(c.changes[0].desired, Some(json!(5)));
    assert_eq!(c.changes[0].live, None);
    assert_patch_restores(&desired, &live_deployment(), &c);
}

#[test]
fn rule7_changes_name_the_last_writer_and_time() {
    let entries = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-01-01T00:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:args": {}}}}}}}},
        {"manager": "kubectl-edit", "operation": "Update", "time": "2026-03-04T05:06:07Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"app\"}": {"f:image": {}}}}}}}}
    ]);
    let mut live = managed_fields(entries);
    assert_eq!(cmp(&deployment(), &live).class, DriftClass::InSync);
    live["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:hacked");
    live["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--port", "1"]);
    let c = cmp(&deployment(), &live);
    let image = c
        .changes
        .iter()
        .find(|c| c.path.ends_with("/image"))
        .unwrap();
    assert_eq!(image.manager.as_deref(), Some("kubectl-edit"));
    assert_eq!(image.changed_at.as_deref(), Some("2026-03-04T05:06:07Z"));
    let arg = c
        .changes
        .iter()
        .find(|c| c.path.ends_with("/args"))
        .unwrap();
    assert_eq!(arg.manager.as_deref(), Some("kubectl-client-side-apply"));
}

#[test]
fn rule8_class_missing_modified_in_sync() {
    let facts = ClusterFacts::default();
    assert_eq!(
        cmp_full(&deployment(), None, None, &facts).class,
        DriftClass::Missing
    );
    assert_eq!(
        cmp(&deployment(), &live_deployment()).class,
        DriftClass::InSync
    );
    let mut live = live_deployment();
    live["spec"]["replicas"] = json!(3);
    assert_eq!(cmp(&deployment(), &live).class, DriftClass::Modified);
}

fn deployment_key(name: &str) -> driftd_k8s::ObjectKey {
    driftd_k8s::ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some("shop".into()),
        name: name.into(),
    }
}

mod ignore_rules;
mod kube_semantics;
