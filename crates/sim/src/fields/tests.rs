use super::*;

fn w(manager: &str) -> Write<'_> {
    Write {
        manager,
        subresource: None,
        api_version: "apps/v1",
        time: "2026-01-01T00:00:00Z",
    }
}

/// The create path renders straight from the object; it must agree with the general
/// path (a diff against nothing).
#[test]
fn create_path_agrees_with_the_diff_path() {
    let objects = [
        (
            "Deployment",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81}],
                 "resources": {}, "args": ["a", "b"]},
                {"name": "side", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]}},
                "strategy": {}},
            "status": {"replicas": 1}}),
        ),
        (
            "Service",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"a": "b"}}}),
        ),
        (
            "ConfigMap",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {}}),
        ),
        (
            "Event",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}}),
        ),
    ];
    for (kind, obj) in objects {
        for sub in [None, Some("status")] {
            let w = Write {
                subresource: sub,
                ..w("kubectl-create")
            };
            let (mut fast, mut slow) = (obj.clone(), obj.clone());
            record(kind, None, &mut fast, &w);
            record_diff(kind, None, &mut slow, &w);
            assert_eq!(fast.to_string(), slow.to_string(), "{kind} {sub:?}");
        }
    }
}

#[test]
fn create_owns_keyed_containers_and_labels() {
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [
            {"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}});
    record("Deployment", None, &mut d, &w("kubectl-create"));
    let mf = &d["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "kubectl-create");
    let f = &mf["fieldsV1"];
    assert_eq!(f["f:metadata"]["f:labels"], json!({".": {}, "f:app": {}}));
    assert!(f["f:spec"].get(".").is_none());
    let c = &f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"];
    assert_eq!(c["."], json!({}));
    assert_eq!(c["f:image"], json!({}));
    assert!(
        c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"]["f:containerPort"]
            .is_object()
    );
    assert!(f["f:metadata"].get("f:name").is_none());
}

#[test]
fn update_moves_ownership_of_changed_fields_only() {
    let mut old = json!({"metadata": {"name": "web"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}});
    record("Deployment", None, &mut old, &w("kubectl-create"));
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    record("Deployment", Some(&old), &mut new, &w("kubectl-set"));
    let mfs = new["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(mfs.len(), 2);
    let create = &mfs[0]["fieldsV1"]["f:spec"];
    let set = &mfs[1]["fieldsV1"]["f:spec"];
    let key = "k:{\"name\":\"app\"}";
    assert!(create["f:template"]["f:spec"]["f:containers"][key]
        .get("f:image")
        .is_none());
    assert!(create["f:replicas"].is_object());
    assert_eq!(
        set["f:template"]["f:spec"]["f:containers"][key]["f:image"],
        json!({})
    );
    assert!(set.get("f:replicas").is_none());
}

#[test]
fn status_writes_own_only_status() {
    let old = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
    let mut new = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1},
        "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}});
    let wr = Write {
        subresource: Some("status"),
        ..w("kube-controller-manager")
    };
    record("Deployment", Some(&old), &mut new, &wr);
    let mf = &new["metadata"]["managedFields"][0];
    assert_eq!(mf["subresource"], "status");
    assert!(mf["fieldsV1"].get("f:spec").is_none());
    assert!(
        mf["fieldsV1"]["f:status"]["f:conditions"]["k:{\"type\":\"Available\"}"]["f:status"]
            .is_object()
    );
}

#[test]
fn fields_v1_round_trips() {
    let v =
        json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}}});
    assert_eq!(to_fields_v1(&parse_fields_v1(&v)), v);
}

#[test]
fn apply_sets_paths_and_removal() {
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}]}]}}}});
    let set = applied_set("Deployment", &config);
    let item = |rest: &[&str]| -> Vec<String> {
        [
            "f:spec",
            "f:template",
            "f:spec",
            "f:containers",
            "k:{\"name\":\"app\"}",
        ]
        .iter()
        .chain(rest)
        .map(|s| s.to_string())
        .collect()
    };
    assert!(set.contains(&item(&[])), "keyed list items are members");
    assert!(set.contains(&item(&["f:image"])));
    assert!(
        !set.contains(&vec!["f:spec".to_string()]),
        "structs are not members"
    );
    assert!(
        !set.iter()
            .any(|p| p.iter().any(|e| e == "f:name" && p.len() == 2)),
        "metadata.name is not owned"
    );
    assert_eq!(
        describe(&item(&["f:image"])),
        ".spec.template.spec.containers[name=\"app\"].image"
    );

    let env_item = item(&["f:env", "k:{\"name\":\"A\"}"]);
    assert_eq!(value_at(&config, &env_item).unwrap()["value"], "1");
    let mut obj = config.clone();
    remove_at(&mut obj, &env_item);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([])
    );
}
