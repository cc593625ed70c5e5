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
