use super::*;
use serde_json::json;

fn deployments(store: &Store) -> ResourceType {
    store.resolve("apps", "v1", "deployments").unwrap()
}

fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
}

#[test]
fn a_created_jobs_generated_selector_names_its_own_uid() {
    let store = Store::new(100);
    let jobs = store.resolve("batch", "v1", "jobs").unwrap();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    let created = store
        .create(&jobs, Some("default"), job, &WriteCtx::new("test"))
        .unwrap();
    let uid = &created["metadata"]["uid"];
    assert_eq!(
        created["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        *uid
    );
    assert_eq!(created["metadata"]["labels"]["controller-uid"], *uid);
}

#[test]
fn generation_moves_with_spec_not_metadata_or_status() {
    let store = Store::new(100);
    let d = deployments(&store);
    let ctx = WriteCtx::new("test");
    let created = store
        .create(&d, Some("default"), deployment(1), &ctx)
        .unwrap();
    assert_eq!(created["metadata"]["generation"], 1);
    let rv = created["metadata"]["resourceVersion"].clone();

    // Same object again: a no-op keeps the resourceVersion.
    let same = store
        .update(&d, Some("default"), "web", created.clone(), None, &ctx)
        .unwrap();
    assert_eq!(same["metadata"]["resourceVersion"], rv);

    let mut labelled = created.clone();
    labelled["metadata"]["labels"] = json!({"team": "a"});
    let labelled = store
        .update(&d, Some("default"), "web", labelled, None, &ctx)
        .unwrap();
    assert_eq!(labelled["metadata"]["generation"], 1);

    let mut with_status = labelled.clone();
    with_status["status"] = json!({"replicas": 1});
    let ignored = store
        .update(&d, Some("default"), "web", with_status.clone(), None, &ctx)
        .unwrap();
    assert!(
        ignored
            .get("status")
            .is_none_or(|s| s.get("replicas").is_none()),
        "main resource PUT ignores status"
    );
    let status = store
        .update(
            &d,
            Some("default"),
            "web",
            with_status,
            Some("status"),
            &ctx,
        )
        .unwrap();
    assert_eq!(status["status"]["replicas"], 1);
    assert_eq!(status["metadata"]["generation"], 1);

    let mut scaled = status.clone();
    scaled["spec"]["replicas"] = json!(3);
    let scaled = store
        .update(&d, Some("default"), "web", scaled, None, &ctx)
        .unwrap();
    assert_eq!(scaled["metadata"]["generation"], 2);
    assert_eq!(scaled["status"]["replicas"], 1, "status kept from storage");
}

#[test]
fn stale_resource_version_conflicts_and_lists_rebuild_history() {
    let store = Store::new(100);
    let d = deployments(&store);
    let ctx = WriteCtx::new("test");
    let v1 = store
        .create(&d, Some("default"), deployment(1), &ctx)
        .unwrap();
    let rv1 = v1["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut v2 = v1.clone();
    v2["spec"]["replicas"] = json!(2);
    store
        .update(&d, Some("default"), "web", v2.clone(), None, &ctx)
        .unwrap();
    let err = store
        .update(&d, Some("default"), "web", v2, None, &ctx)
        .unwrap_err();
    assert_eq!((err.code, err.reason), (409, "Conflict"));

    let then = store
        .list(
            &d,
            &ListParams {
                resource_version: Some(rv1.clone()),
                resource_version_match: Some("Exact".into()),
                ..ListParams::default()
            },
        )
        .unwrap();
    assert_eq!(then["items"][0]["spec"]["replicas"], 1);
    store.compact();
    let err = store
        .list(
            &d,
            &ListParams {
                resource_version: Some(rv1),
                resource_version_match: Some("Exact".into()),
                ..ListParams::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code, 410);
}

#[test]
fn bounded_history_expires_old_watch_positions() {
    let store = Store::new(2);
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    let ctx = WriteCtx::new("test");
    let start = store.current_rv();
    for i in 0..3 {
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
        store.create(&cms, Some("default"), cm, &ctx).unwrap();
    }
    let err = store
        .watch(&cms, None, Some(&start.to_string()))
        .err()
        .unwrap();
    assert_eq!((err.code, err.reason), (410, "Expired"));
    let recent = store
        .watch(&cms, None, Some(&(store.current_rv() - 1).to_string()))
        .ok()
        .unwrap();
    assert!(recent.initial.is_empty());
    let replayed = store.changes_after(recent.from, 100).unwrap();
    assert_eq!(replayed.len(), 1);
    assert!(replayed[0].concerns(&cms));
    let err = store.changes_after(start, 100).unwrap_err();
    assert_eq!((err.code, err.reason), (410, "Expired"));
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"k": value}})
}

#[test]
fn list_pages_show_one_resourceversion_while_objects_change_between_them() {
    let store = Store::new(100);
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    let ctx = WriteCtx::new("test");
    for name in ["a", "b", "c", "d"] {
        store
            .create(&cms, Some("default"), configmap(name, "1"), &ctx)
            .unwrap();
    }
    let first = store
        .list_page(
            &cms,
            &ListParams {
                limit: Some(2),
                ..ListParams::default()
            },
        )
        .unwrap();
    let names = |p: &Page| -> Vec<String> { p.items.iter().map(|s| s.key.1.clone()).collect() };
    assert_eq!(names(&first), ["a", "b"]);
    // Between the pages: one object changes, one goes, one comes.
    store
        .update(&cms, Some("default"), "c", configmap("c", "2"), None, &ctx)
        .unwrap();
    store
        .delete(&cms, Some("default"), "d", None, false)
        .unwrap();
    store
        .create(&cms, Some("default"), configmap("bb", "1"), &ctx)
        .unwrap();
    let second = store
        .list_page(
            &cms,
            &ListParams {
                limit: Some(2),
                continue_token: first.continue_token.clone(),
                ..ListParams::default()
            },
        )
        .unwrap();
    assert_eq!(second.rv, first.rv);
    assert_eq!(names(&second), ["c", "d"], "the list as it was");
    assert_eq!(second.items[0].value()["data"]["k"], "1");
    assert!(second.continue_token.is_none());
    let now = store.list(&cms, &ListParams::default()).unwrap();
    let now: Vec<&str> = now["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(now, ["a", "b", "bb", "c"]);
}

#[test]
fn dependents_are_found_by_owner_and_go_with_it_or_are_orphaned() {
    let store = Store::new(100);
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    let ctx = WriteCtx::new("test");
    let owner = store
        .create(&cms, Some("default"), configmap("owner", "1"), &ctx)
        .unwrap();
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_string();
    for name in ["dep1", "dep2"] {
        let mut dep = configmap(name, "1");
        dep["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]);
        store.create(&cms, Some("default"), dep, &ctx).unwrap();
    }
    assert_eq!(store.owned(&cms, "default", &uid).len(), 2);
    assert!(store.owned(&cms, "kube-system", &uid).is_empty());

    let opts = DeleteOpts {
        propagation: Some("Orphan".into()),
        ..DeleteOpts::default()
    };
    store
        .delete_with(&cms, Some("default"), "owner", &opts)
        .unwrap();
    let dep = store.get(&cms, Some("default"), "dep1").unwrap();
    assert!(dep["metadata"].get("ownerReferences").is_none());
    assert!(store.owned(&cms, "default", &uid).is_empty());

    let owner = store
        .create(&cms, Some("default"), configmap("owner2", "1"), &ctx)
        .unwrap();
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_string();
    let mut dep = configmap("dep3", "1");
    dep["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": uid}]);
    store.create(&cms, Some("default"), dep, &ctx).unwrap();
    store
        .delete(&cms, Some("default"), "owner2", None, false)
        .unwrap();
    assert_eq!(
        store.get(&cms, Some("default"), "dep3").unwrap_err().code,
        404
    );
}

#[test]
fn bulk_load_creates_in_order_with_defaults_and_counts_failures() {
    let store = Store::new(100);
    let before = store.current_rv();
    let report = store.bulk_load([
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team"},
            "spec": {"ports": [{"port": 80}]}}),
        configmap("no-namespace-given", "1"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "missing"}}),
        json!({"apiVersion": "example.com/v1", "kind": "Unknown", "metadata": {"name": "u"}}),
    ]);
    assert_eq!((report.created, report.failed), (3, 2), "{report:?}");
    assert_eq!(report.errors.len(), 2);
    assert!(
        report.errors[0].starts_with("#3 ConfigMap missing/x"),
        "{report:?}"
    );
    assert_eq!(report.resource_version, (before + 3).to_string());
    let svcs = store.resolve("", "v1", "services").unwrap();
    let svc = store.get(&svcs, Some("team"), "web").unwrap();
    assert!(
        svc["spec"]["clusterIP"].is_string(),
        "server defaults applied"
    );
    assert_eq!(
        svc["metadata"]["managedFields"][0]["manager"],
        bulk::LOAD_MANAGER
    );
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    assert!(store
        .get(&cms, Some("default"), "no-namespace-given")
        .is_ok());
}

#[test]
fn bulk_edit_cycles_through_objects_changing_a_value_each_time() {
    let store = Store::new(100);
    let ctx = WriteCtx::new("test");
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    let deploys = deployments(&store);
    for name in ["a", "b"] {
        store
            .create(&cms, Some("default"), configmap(name, "1"), &ctx)
            .unwrap();
    }
    store
        .create(&deploys, Some("default"), deployment(1), &ctx)
        .unwrap();
    let before = store.current_rv();
    let report = store
        .bulk_edit(&bulk::BulkEdit {
            count: 6,
            kinds: vec!["configmaps".into(), "deployments".into()],
            rate: None,
        })
        .unwrap();
    assert_eq!((report.made, report.failed), (6, 0));
    assert_eq!(
        store.current_rv(),
        before + 6,
        "one resourceVersion per edit"
    );
    let a = store.get(&cms, Some("default"), "a").unwrap();
    assert!(a["data"]["k"].as_str().unwrap().starts_with("bulk-edit-"));
    let d = store.get(&deploys, Some("default"), "web").unwrap();
    let image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap();
    assert!(image.starts_with("nginx:bulk-edit-"), "{image}");
    // Prepared ahead, each edit still starts from the previous one of the same object:
    // three image changes of `web` are three generations, the last image wins.
    assert_eq!(d["metadata"]["generation"], 4, "{d}");
    assert_eq!(
        image,
        format!("nginx:bulk-edit-{}", before + 5),
        "the last of the three edits"
    );
    let err = store
        .bulk_edit(&bulk::BulkEdit {
            count: 1,
            kinds: vec!["nosuchkind".into()],
            rate: None,
        })
        .unwrap_err();
    assert_eq!(err.code, 400);
}

#[test]
fn bulk_edits_are_stored_as_a_write_stores_them() {
    let store = Store::new(100);
    let ctx = WriteCtx::new("test");
    let crds = store
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    store.create(&crds, None, widget_crd(), &ctx).unwrap();
    let widgets = store.resolve("example.com", "v1", "widgets").unwrap();
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    store.create(&widgets, Some("default"), w, &ctx).unwrap();
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    store
        .create(&cms, Some("default"), configmap("a", "1"), &ctx)
        .unwrap();
    let svcs = store.resolve("", "v1", "services").unwrap();
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}});
    let ip = store.create(&svcs, Some("default"), svc, &ctx).unwrap()["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .to_string();
    let before = store.current_rv();
    let report = store
        .bulk_edit(&bulk::BulkEdit {
            count: 6,
            kinds: vec!["configmaps".into(), "services".into(), "widgets".into()],
            rate: None,
        })
        .unwrap();
    assert_eq!((report.made, report.failed), (6, 0));
    for (info, name) in [(&cms, "a"), (&svcs, "web"), (&widgets, "w")] {
        let stored = store.get_stored(info, Some("default"), name).unwrap();
        let tree = stored.value();
        assert_eq!(
            tree["metadata"]["resourceVersion"],
            json!(stored.rv.to_string()),
            "{name}: the resourceVersion it was stored at"
        );
        assert!(stored.rv > before + 3, "{name}: stored by the second round");
        assert_eq!(tree["apiVersion"], json!(info.api_version()));
        assert_eq!(tree["kind"], json!(info.kind));
        assert_eq!(
            *stored.json(),
            serde_json::to_vec(&tree).unwrap(),
            "{name}: compact JSON, as a write stores it"
        );
        assert!(tree.to_string().contains("bulk-edit-"), "{name}: edited");
    }
    let g = store.lock();
    assert!(
        g.services.holds_ip(&ip),
        "the edited Service still holds its clusterIP"
    );
    drop(g);
    let history = store.changes_after(before, 100).unwrap();
    assert_eq!(history.len(), 6, "one change per edit");
    assert!(history.iter().all(|c| c.kind == "MODIFIED"));
    assert!(history
        .iter()
        .zip(before + 1..)
        .all(|(c, rv)| c.rv == rv && c.object.rv == rv));
}

/// A Widget CRD: `spec.size` defaults to `small`, `spec.ports` is a map-list keyed by
/// `name`.
fn widget_crd() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "string", "default": "small"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema}]}})
}

#[test]
fn custom_resources_are_pruned_defaulted_and_their_map_lists_validated() {
    let store = Store::new(100);
    let crds = store
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    let ctx = WriteCtx::new("test");
    store.create(&crds, None, widget_crd(), &ctx).unwrap();
    let widgets = store.resolve("example.com", "v1", "widgets").unwrap();
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"typo": 1, "ports": [{"name": "a", "port": 1}]}});
    let created = store.create(&widgets, Some("default"), w, &ctx).unwrap();
    assert_eq!(created["spec"]["size"], "small", "defaulted");
    assert!(created["spec"].get("typo").is_none(), "pruned");
    assert_eq!(
        store.get(&widgets, Some("default"), "w").unwrap()["spec"]["size"],
        "small"
    );

    let mut dup = created.clone();
    dup["spec"]["ports"] = json!([{"name": "a", "port": 1}, {"name": "a", "port": 2}]);
    let err = store
        .update(&widgets, Some("default"), "w", dup, None, &ctx)
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Widget.example.com \"w\" is invalid: spec.ports[1]: Duplicate value"
    );
}

#[test]
fn a_created_pod_goes_through_the_default_admission_chain() {
    let store = Store::new(100);
    let pods = store.resolve("", "v1", "pods").unwrap();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug"},
        "spec": {"containers": [{"name": "sh", "image": "busybox"}],
            "volumes": [{"name": "scratch", "emptyDir": {}}]}});
    let created = store
        .create(&pods, Some("default"), pod, &WriteCtx::new("test"))
        .unwrap();
    let spec = &created["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    let token = spec["volumes"][1]["name"].as_str().unwrap();
    assert!(token.starts_with("kube-api-access-"), "{spec:#}");
    assert_eq!(
        spec["volumes"][0]["name"], "scratch",
        "appended, not inserted"
    );
    assert_eq!(spec["containers"][0]["volumeMounts"][0]["name"], token);
    assert_eq!(spec["priority"], 0);
    let tolerations = spec["tolerations"].as_array().unwrap();
    assert_eq!(tolerations.len(), 2, "{spec:#}");

    // A PVC gets the default StorageClass, once there is one.
    let classes = store
        .resolve("storage.k8s.io", "v1", "storageclasses")
        .unwrap();
    let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "example.com/disk"});
    store
        .create(&classes, None, class, &WriteCtx::new("test"))
        .unwrap();
    let pvcs = store.resolve("", "v1", "persistentvolumeclaims").unwrap();
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let created = store
        .create(&pvcs, Some("default"), pvc, &WriteCtx::new("test"))
        .unwrap();
    assert_eq!(created["spec"]["storageClassName"], "fast");
}

/// A sidecar injector: adds a `log-shipper` container and a label to Deployments.
fn sidecar_webhook() -> webhook::MutatingWebhook {
    serde_json::from_value(json!({"name": "inject.example.com", "group": "apps",
        "kind": "Deployment", "patch": {"metadata": {"labels": {"injected": "true"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "log-shipper", "image": "example.com/log-shipper:1"}]}}}}}))
    .unwrap()
}

/// The container names, sorted (a strategic merge puts items new to a keyed list first).
fn container_names(obj: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn webhooks_mutate_writes_and_a_dry_run_apply_answers_without_storing() {
    let store = Store::new(100);
    store.add_webhook(sidecar_webhook()).unwrap();
    let d = deployments(&store);
    let dry = WriteCtx {
        dry_run: true,
        ..WriteCtx::new("driftd")
    };
    let rv = store.current_rv();
    let (answer, created) = store
        .apply(&d, Some("default"), "web", deployment(1), &dry, true)
        .unwrap();
    assert!(created);
    assert_eq!(container_names(&answer), ["app", "log-shipper"]);
    assert_eq!(answer["metadata"]["labels"]["injected"], "true");
    assert_eq!(
        answer["spec"]["strategy"]["type"], "RollingUpdate",
        "defaulted"
    );
    assert_eq!(store.current_rv(), rv, "nothing stored");
    assert_eq!(store.get(&d, Some("default"), "web").unwrap_err().code, 404);

    let ctx = WriteCtx::new("kubectl");
    let (stored, _) = store
        .apply(&d, Some("default"), "web", deployment(1), &ctx, false)
        .unwrap();
    assert_eq!(container_names(&stored), ["app", "log-shipper"]);
    let rv = store.current_rv();
    let history = store.history_len();

    // A dry run of a changed manifest: the server's answer for the stored version, with the
    // webhook's change kept (merged by name, not appended twice), nothing written.
    let (answer, created) = store
        .apply(&d, Some("default"), "web", deployment(3), &dry, true)
        .unwrap();
    assert!(!created);
    assert_eq!(answer["spec"]["replicas"], 3);
    assert_eq!(container_names(&answer), ["app", "log-shipper"]);
    assert_eq!(
        answer["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"],
        "the answer names the version it was made against"
    );
    assert_eq!(answer["metadata"]["generation"], 2);
    assert!(answer["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["manager"] == "driftd" && m["operation"] == "Apply"));
    assert_eq!((store.current_rv(), store.history_len()), (rv, history));
    assert_eq!(
        store.get(&d, Some("default"), "web").unwrap()["spec"]["replicas"],
        1
    );

    // Subresources are not the webhook's: a status write does not run it.
    store.clear_webhooks();
    store
        .add_webhook(
            serde_json::from_value(json!({"name": "n", "group": "apps",
        "kind": "Deployment", "patch": {"metadata": {"labels": {"again": "yes"}}}}))
            .unwrap(),
        )
        .unwrap();
    let mut status = stored.clone();
    status["status"] = json!({"replicas": 1});
    let after = store
        .update(&d, Some("default"), "web", status, Some("status"), &ctx)
        .unwrap();
    assert!(after["metadata"]["labels"].get("again").is_none());
}

#[test]
fn a_default_a_crd_gains_shows_on_reads_of_stored_objects() {
    let store = Store::new(100);
    let crds = store
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    let ctx = WriteCtx::new("test");
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["size"]
        .as_object_mut()
        .unwrap()
        .remove("default");
    let crd = store.create(&crds, None, crd, &ctx).unwrap();
    let widgets = store.resolve("example.com", "v1", "widgets").unwrap();
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"ports": [{"name": "a", "port": 1}]}});
    let created = store.create(&widgets, Some("default"), w, &ctx).unwrap();
    assert!(created["spec"].get("size").is_none());
    let rv = created["metadata"]["resourceVersion"].clone();

    // The CRD gains `size: small` as a default; the widget is not written again.
    let mut gained = crd.clone();
    gained["spec"] = widget_crd()["spec"].clone();
    store
        .update(&crds, None, "widgets.example.com", gained, None, &ctx)
        .unwrap();
    let read = store.get(&widgets, Some("default"), "w").unwrap();
    assert_eq!(read["spec"]["size"], "small", "defaulted on read");
    assert_eq!(
        read["metadata"]["resourceVersion"], rv,
        "storage not written"
    );
    let listed = store.list(&widgets, &ListParams::default()).unwrap();
    assert_eq!(listed["items"][0]["spec"]["size"], "small");
}

#[test]
fn a_custom_resource_read_at_another_served_version_is_pruned_by_its_schema() {
    let store = Store::new(100);
    let crds = store
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .unwrap();
    let ctx = WriteCtx::new("test");
    // v1 (storage) knows `spec.color`; v1beta1, still served, does not.
    let mut crd = widget_crd();
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["color"] = json!({"type": "string"});
    crd["spec"]["versions"].as_array_mut().unwrap().push(beta);
    store.create(&crds, None, crd, &ctx).unwrap();
    let v1 = store.resolve("example.com", "v1", "widgets").unwrap();
    let beta = store.resolve("example.com", "v1beta1", "widgets").unwrap();
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"color": "red"}});
    store.create(&v1, Some("default"), w, &ctx).unwrap();

    let read = store.get(&beta, Some("default"), "w").unwrap();
    assert_eq!(read["apiVersion"], "example.com/v1beta1");
    assert!(read["spec"].get("color").is_none(), "pruned: {read:#}");
    assert_eq!(read["spec"]["size"], "small");
    let listed = store.list(&beta, &ListParams::default()).unwrap();
    assert!(listed["items"][0]["spec"].get("color").is_none());
    let stored = store.get(&v1, Some("default"), "w").unwrap();
    assert_eq!(
        stored["spec"]["color"], "red",
        "kept where the version has it"
    );
}

#[test]
fn the_kinds_issue_10_listed_are_served_in_their_scope() {
    let store = Store::new(100);
    let ctx = WriteCtx::new("test");
    let cases = [
        (
            "networking.k8s.io",
            "networkpolicies",
            json!({"spec": {"podSelector": {}}}),
        ),
        (
            "",
            "replicationcontrollers",
            json!({"spec": {"selector": {"app": "a"}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        ),
        (
            "storage.k8s.io",
            "storageclasses",
            json!({"provisioner": "example.com/disk"}),
        ),
        (
            "",
            "persistentvolumes",
            json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp"}}}),
        ),
        (
            "policy",
            "poddisruptionbudgets",
            json!({"spec": {"minAvailable": 1}}),
        ),
        (
            "",
            "endpoints",
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
        ),
        (
            "networking.k8s.io",
            "ingressclasses",
            json!({"spec": {"controller": "k8s.io/ingress-nginx"}}),
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            json!({"webhooks": []}),
        ),
        (
            "apiregistration.k8s.io",
            "apiservices",
            json!({"spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100}}),
        ),
    ];
    for (group, plural, mut body) in cases {
        let info = store
            .resolve(group, "v1", plural)
            .unwrap_or_else(|| panic!("{plural} not served"));
        let name = if plural == "apiservices" {
            "v1beta1.metrics.k8s.io"
        } else {
            "x"
        };
        body["metadata"] = json!({"name": name, "namespace": "default"});
        let ns = info.namespaced.then_some("default");
        let created = store
            .create(&info, ns, body, &ctx)
            .unwrap_or_else(|e| panic!("{plural}: {e}"));
        assert_eq!(
            created["metadata"].get("namespace").is_some(),
            info.namespaced,
            "{plural}: {created}"
        );
        assert!(store.get(&info, ns, name).is_ok(), "{plural}");
    }
}

#[test]
fn writes_are_validated_as_commit_validates_them_in_kube_apiservers_words() {
    let store = Store::new(100);
    let ctx = WriteCtx::new("test");
    let roles = store
        .resolve("rbac.authorization.k8s.io", "v1", "clusterroles")
        .unwrap();
    // RBAC names need only be path segments.
    store
        .create(
            &roles,
            None,
            json!({"metadata": {"name": "system:aggregated-metrics-reader"}, "rules": []}),
            &ctx,
        )
        .unwrap();
    let err = store
        .create(
            &roles,
            None,
            json!({"metadata": {"name": "a/b"}, "rules": []}),
            &ctx,
        )
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "ClusterRole.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid value: \"a/b\": may not contain '/'"
    );

    // Annotations over 256 KiB together: refused on create and on update alike.
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    let big = "x".repeat(256 * 1024);
    let err = store
        .create(
            &cms,
            Some("default"),
            json!({"metadata": {"name": "big", "annotations": {"a": big}}}),
            &ctx,
        )
        .unwrap_err();
    assert_eq!(
        (err.code, err.reason, err.message.as_str()),
        (422, "Invalid", "ConfigMap \"big\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes")
    );
    let details = err.details.unwrap();
    assert_eq!(details["kind"], "ConfigMap");
    assert_eq!(details["name"], "big");
    assert_eq!(
        details["causes"],
        json!([{"reason": "FieldValueTooLong", "message": "Too long: may not be more than 262144 bytes", "field": "metadata.annotations"}])
    );
    store
        .create(
            &cms,
            Some("default"),
            json!({"metadata": {"name": "small"}}),
            &ctx,
        )
        .unwrap();
    let err = store
        .write(&cms, Some("default"), "small", None, &ctx, |old| {
            let mut new = old.clone();
            new["metadata"]["annotations"] = json!({"a": big});
            Ok(new)
        })
        .unwrap_err();
    assert_eq!(err.code, 422, "{err}");

    // A body that does not decode is a 400 with the decoder's words, never the value.
    let secrets = store.resolve("", "v1", "secrets").unwrap();
    let err = store
        .create(
            &secrets,
            Some("default"),
            json!({"metadata": {"name": "s"}, "data": {"password": "hunter2!"}}),
            &ctx,
        )
        .unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 7")
    );
    assert!(store.get(&secrets, Some("default"), "s").is_err());
}

#[test]
fn a_stored_objects_labels_are_read_without_the_rest() {
    let key: Key = ("default".into(), "x".into());
    let stored = |object: Value| Stored::new(1, key.clone(), &object, Arc::from("v1"));
    let labelled = json!({"kind": "ConfigMap", "data": {"labels": "not these"},
        "metadata": {"name": "x", "labels": {"team": "a"}, "annotations": {"b": "c"}}});
    assert_eq!(stored(labelled).labels(), Some(json!({"team": "a"})));
    assert_eq!(stored(json!({"metadata": {"name": "x"}})).labels(), None);
    assert_eq!(stored(json!({"kind": "ConfigMap"})).labels(), None);
}
