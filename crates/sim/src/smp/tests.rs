use super::*;
use serde_json::json;

fn patched(kind: &str, original: Value, patch: Value) -> Value {
    apply(kind, &original, &patch).unwrap_or_else(|e| panic!("patch failed: {e}"))
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "fe"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}
    })
}

#[test]
fn maps_merge_and_null_deletes() {
    let out = patched(
        "Deployment",
        deployment(json!([{"name": "web", "image": "nginx:1.26"}])),
        json!({"metadata": {"labels": {"tier": null, "team": "a"}}, "spec": {"replicas": 3}}),
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "team": "a"})
    );
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
}

#[test]
fn kubectl_set_image_patch_merges_by_container_name() {
    // `kubectl set image deployment/web web=nginx:1.27` sends exactly this.
    let original = deployment(json!([
        {"name": "web", "image": "nginx:1.26", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        {"name": "sidecar", "image": "envoy:1"}
    ]));
    let out = patched(
        "Deployment",
        original,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}),
    );
    let cs = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs.as_array().unwrap().len(), 2);
    assert_eq!(cs[0]["name"], "web");
    assert_eq!(cs[0]["image"], "nginx:1.27");
    assert_eq!(
        cs[0]["ports"][0]["containerPort"], 80,
        "untouched fields stay"
    );
    assert_eq!(cs[1]["name"], "sidecar");
}

#[test]
fn kubectl_apply_three_way_patch_with_set_element_order_and_delete() {
    // What `kubectl apply` (client-side) sends after removing container "old", adding
    // env var B and container "new" after "web", with last-applied updated.
    let original = deployment(json!([
        {"name": "old", "image": "old:1"},
        {"name": "web", "image": "nginx:1.26", "env": [{"name": "A", "value": "1"}]},
        {"name": "injected", "image": "mesh:1"}
    ]));
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "new"}],
            "containers": [
                {"name": "web", "$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                 "env": [{"name": "B", "value": "2"}]},
                {"name": "new", "image": "new:1"},
                {"$patch": "delete", "name": "old"}
            ]
        }}}
    });
    let out = patched("Deployment", original, patch);
    let cs = &out["spec"]["template"]["spec"]["containers"];
    let names: Vec<&str> = cs
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "new", "injected"]);
    assert_eq!(
        cs[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert!(
        out.to_string().find('$').is_none(),
        "no directive is stored: {out}"
    );
    assert_eq!(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{...}"
    );
}

#[test]
fn new_items_without_order_directive_go_first() {
    // normalizeElementOrder/mergeSortedSlice: unknown items precede remaining live ones.
    let out = patched(
        "Deployment",
        deployment(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "c"}]}}}}),
    );
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "a", "b"]);
    // A patched item keeps its live position.
    let out = patched(
        "Deployment",
        deployment(
            json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}]),
        ),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b2"}]}}}}),
    );
    let cs = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs[1], json!({"name": "b", "image": "b2"}));
}

#[test]
fn atomic_lists_are_replaced() {
    let original = deployment(json!([{"name": "web", "image": "x", "args": ["--a", "--b"]}]));
    let out = patched(
        "Deployment",
        original,
        json!({"spec": {"template": {"spec": {
            "containers": [{"name": "web", "args": ["--c"]}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}}}}),
    );
    let pod = &out["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["args"], json!(["--c"]));
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "k", "operator": "Exists"}])
    );
    // ConfigMap data is a map; a list of anything in an unknown kind is atomic.
    let out = patched(
        "Widget",
        json!({"spec": {"items": [{"name": "a"}, {"name": "b"}]}}),
        json!({"spec": {"items": [{"name": "c"}]}}),
    );
    assert_eq!(out["spec"]["items"], json!([{"name": "c"}]));
}

#[test]
fn patch_replace_directive_in_map_and_list() {
    let out = patched(
        "Deployment",
        deployment(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])),
        json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}},
               "spec": {"template": {"spec": {"containers": [
                   {"name": "z", "image": "z"}, {"$patch": "replace"}]}}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "z", "image": "z"}])
    );
}

#[test]
fn patch_delete_directive_in_map_empties_it() {
    let out = patched(
        "Deployment",
        deployment(json!([])),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({}));
}

#[test]
fn retain_keys_clears_other_union_members() {
    // kubectl apply switching strategy to Recreate (DeploymentStrategy is retainKeys).
    let out = patched(
        "Deployment",
        deployment(json!([])),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    // Volume sources: switching a volume from emptyDir to configMap.
    let original = json!({"spec": {"template": {"spec": {"volumes": [
        {"name": "v", "emptyDir": {}}]}}}});
    let out = patched(
        "Deployment",
        original,
        json!({"spec": {"template": {"spec": {"volumes": [
            {"name": "v", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cfg"}}]}}}}),
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "v", "configMap": {"name": "cfg"}}])
    );
    let err = apply(
        "Deployment",
        &deployment(json!([])),
        &json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
    )
    .unwrap_err();
    assert!(err.0.contains("spec.strategy"), "{err}");
}

#[test]
fn finalizers_merge_as_a_set_and_delete_from_primitive_list() {
    let original = json!({"metadata": {"name": "x", "finalizers": ["a", "b"]}});
    let out = patched(
        "ConfigMap",
        original.clone(),
        json!({"metadata": {"finalizers": ["b", "c"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
    // kubectl apply removing finalizer "a" that it had applied before.
    let out = patched(
        "ConfigMap",
        original,
        json!({"metadata": {"$setElementOrder/finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["a"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    // Deleting from a list that does not exist creates nothing.
    let out = patched(
        "ConfigMap",
        json!({"metadata": {"name": "x"}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    );
    assert!(out["metadata"].get("finalizers").is_none());
}

#[test]
fn service_ports_merge_by_port() {
    let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"},
                                        {"port": 443, "targetPort": 8443, "protocol": "TCP"}]}});
    let out = patched(
        "Service",
        svc,
        json!({"spec": {"$setElementOrder/ports": [{"port": 80}, {"port": 443}],
                        "ports": [{"port": 443, "targetPort": 9443}]}}),
    );
    assert_eq!(out["spec"]["ports"][1]["targetPort"], 9443);
    assert_eq!(out["spec"]["ports"][0]["targetPort"], 8080);
}

#[test]
fn kubectl_edit_style_patch_of_env_value_and_removed_item() {
    // kubectl edit computes a two-way patch: changed env value, env var "OLD" removed.
    let original = deployment(json!([{"name": "web", "image": "x",
        "env": [{"name": "OLD", "value": "1"}, {"name": "KEEP", "value": "2"}]}]));
    let out = patched(
        "Deployment",
        original,
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}],
            "containers": [{"name": "web",
                "$setElementOrder/env": [{"name": "KEEP"}],
                "env": [{"$patch": "delete", "name": "OLD"}, {"name": "KEEP", "value": "3"}]}]}}}}),
    );
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([{"name": "KEEP", "value": "3"}])
    );
}

#[test]
fn status_conditions_merge_by_type() {
    let out = patched(
        "Deployment",
        json!({"status": {"conditions": [{"type": "Available", "status": "False"},
                                         {"type": "Progressing", "status": "True"}]}}),
        json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}}),
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}])
    );
}

#[test]
fn new_subtrees_carry_no_nulls_or_directives() {
    let out = patched(
        "Deployment",
        json!({"metadata": {"name": "x"}}),
        json!({"metadata": {"annotations": {"a": "1", "b": null}},
               "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "c"}],
                   "containers": [{"name": "c", "image": "i"}]}}}}),
    );
    assert_eq!(out["metadata"]["annotations"], json!({"a": "1"}));
    assert_eq!(
        out["spec"]["template"]["spec"],
        json!({"containers": [{"name": "c", "image": "i"}]})
    );
}

#[test]
fn errors_name_the_field() {
    let err = apply(
        "Deployment",
        &deployment(json!([{"name": "a"}])),
        &json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
    )
    .unwrap_err();
    assert!(
        err.0.contains("spec.template.spec.containers") && err.0.contains("\"name\""),
        "{err}"
    );
    let err = apply("Deployment", &json!({}), &json!([1])).unwrap_err();
    assert!(err.0.contains("JSON object"));
    let err = apply(
        "Deployment",
        &deployment(json!([{"name": "a"}])),
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}}}),
    )
    .unwrap_err();
    assert!(err.0.contains("cannot yet be specified"), "{err}");
    let err = apply(
        "Deployment",
        &deployment(json!([])),
        &json!({"metadata": {"$patch": "bogus"}}),
    )
    .unwrap_err();
    assert!(err.0.contains("metadata"), "{err}");
}

#[test]
fn type_change_replaces() {
    let out = patched(
        "Deployment",
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": "50%"}}}}),
    );
    assert_eq!(out["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "50%");
    let out = patched(
        "Deployment",
        json!({"spec": {"x": [1, 2]}}),
        json!({"spec": {"x": {"a": 1}}}),
    );
    assert_eq!(out["spec"]["x"], json!({"a": 1}));
}

#[test]
fn supported_only_for_builtin_kinds() {
    assert!(supported("apps/v1", "Deployment"));
    assert!(supported("v1", "ConfigMap"));
    assert!(!supported("example.com/v1", "Widget"));
}
