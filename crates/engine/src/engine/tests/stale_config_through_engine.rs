//! `stale_config` through the engine: the watched kinds feed the judgement, a committed
//! workload's entry shows it (winning over `in_sync`, losing to `modified` but carrying the
//! pods), Events and episodes follow it, and the content records reach the store.

use super::*;

fn stale_config_on() -> Config {
    let mut c = config();
    c.stale_config.enabled = true;
    c.stale_config.kubelet_sync_seconds = 90.0;
    c
}

/// Deployment `web` reading Secret `db` through env, as committed.
fn web(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - name: app\n        image: {image}\n        env:\n        - name: PASSWORD\n          valueFrom: {{secretKeyRef: {{name: db, key: password}}}}\n---\n"
    )
}

fn secret(value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "db", "namespace": "shop", "creationTimestamp": "2026-11-30T08:00:00Z"},
           "data": {"password": value}})
}

fn replica_set(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": name, "namespace": "shop", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": true}]}})
}

fn pod(name: &str, rs: &str, start: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "controller": true}]},
           "spec": {"containers": [{"name": "app", "image": "nginx", "env": [
               {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]}]},
           "status": {"phase": "Running", "startTime": start}})
}

/// `web` committed and live as committed, its pod started at 09:00, Secret `db` created
/// at 08:00; every kind listed.
fn started() -> Harness {
    let mut h = Harness::start_with(&stale_config_on(), &web("nginx"));
    let running = &h.engine.watching.watches.running;
    for kind in ["Pod", "ReplicaSet", "Secret", "ConfigMap", "Deployment"] {
        assert!(running.keys().any(|k| k.kind == kind), "{kind} watched");
    }
    h.list(&kind("apps/v1", "Deployment"), live(&web("nginx")));
    h.list(&kind("apps/v1", "ReplicaSet"), vec![replica_set("web-1")]);
    h.list(
        &kind("v1", "Pod"),
        vec![pod("web-1-a", "web-1", "2026-11-30T09:00:00Z")],
    );
    h.list(&kind("v1", "Secret"), vec![secret("b2xk")]);
    h.list(&configmaps(), vec![]);
    h.list(&kind("autoscaling/v2", "HorizontalPodAutoscaler"), vec![]);
    assert!(h.ready());
    h
}

#[test]
fn a_changed_secret_makes_its_consumer_stale_config_until_a_rollout_replaces_the_pods() {
    let mut h = started();
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::InSync
    );

    h.apply(secret("bmV3"));
    let entry = h.entry("Deployment", "web").unwrap();
    assert_eq!(entry.class, DriftClass::StaleConfig);
    let note = entry.stale_config.unwrap();
    assert_eq!(note.fix, "kubectl rollout restart deployment/web -n shop");
    assert_eq!(note.configs[0].config, "Secret/db");
    assert_eq!(note.configs[0].changed_at, h.clock.wall());
    assert_eq!(note.configs[0].pods[0].name, "web-1-a");
    assert_eq!(note.configs[0].pods[0].reads, ["env"]);
    let records = h.engine.store.config_contents().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].first_seen, h.clock.wall());
    h.advance(SETTLE);
    assert_eq!(h.announced(), ["Detected Deployment/web"]);
    assert_eq!(
        h.open_episodes(),
        [("web".to_string(), "stale_config".to_string())]
    );

    // The rollout: a new pod after the change, the old one gone.
    h.clock.advance(Duration::from_secs(30));
    h.apply(replica_set("web-2"));
    h.apply(pod("web-2-a", "web-2", &h.clock.wall().to_string()));
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::StaleConfig
    );
    h.delete(pod("web-1-a", "web-1", "2026-11-30T09:00:00Z"));
    let entry = h.entry("Deployment", "web").unwrap();
    assert_eq!(
        (entry.class, entry.stale_config),
        (DriftClass::InSync, None)
    );
    h.advance(SETTLE);
    assert_eq!(
        h.announced(),
        ["Detected Deployment/web", "Resolved Deployment/web"]
    );
    assert!(h.open_episodes().is_empty());
}

#[test]
fn modified_wins_over_stale_config_and_still_carries_the_pods() {
    let mut h = started();
    h.apply(secret("bmV3"));
    h.apply(one(&web("nginx:edited")));
    let entry = h.entry("Deployment", "web").unwrap();
    assert_eq!(entry.class, DriftClass::Modified);
    assert_eq!(entry.stale_config.unwrap().pod_count(), 1);
}

#[test]
fn a_workload_in_no_source_carries_its_stale_pods_on_its_unmanaged_entry_when_covered() {
    let mut c = stale_config_on();
    c.unmanaged.kinds = vec!["apps/v1/Deployment".into()];
    let mut h = Harness::start(&c);
    for kind in [
        kind("apps/v1", "Deployment"),
        kind("apps/v1", "ReplicaSet"),
        kind("v1", "Pod"),
        kind("v1", "Secret"),
        configmaps(),
    ] {
        h.list(&kind, vec![]);
    }
    assert!(h.ready());
    h.apply(one(&web("nginx")));
    h.apply(replica_set("web-1"));
    h.apply(pod("web-1-a", "web-1", "2026-11-30T09:00:00Z"));
    h.apply(secret("b2xk"));
    let entry = h.entry("Deployment", "web").unwrap();
    assert_eq!(
        (entry.class, entry.stale_config),
        (DriftClass::Unmanaged, None)
    );

    h.apply(secret("bmV3"));
    let entry = h.entry("Deployment", "web").unwrap();
    assert_eq!(
        entry.class,
        DriftClass::Unmanaged,
        "no source: stays unmanaged"
    );
    assert_eq!(entry.stale_config.unwrap().configs[0].config, "Secret/db");
    assert_eq!(h.announced(), ["Detected Deployment/web"]);

    h.delete(pod("web-1-a", "web-1", "2026-11-30T09:00:00Z"));
    let entry = h.entry("Deployment", "web").unwrap();
    assert_eq!(
        (entry.class, entry.stale_config),
        (DriftClass::Unmanaged, None)
    );
    assert_eq!(h.announced(), ["Detected Deployment/web"], "announced once");
}

#[test]
fn only_the_tracked_kinds_watchers_pack_copies() {
    let h = started();
    let copies: Vec<&str> = h
        .engine
        .watching
        .watches
        .copies
        .iter()
        .map(|k| k.kind.as_str())
        .collect();
    // Pods, ReplicaSets and Secrets are watched for stale config, and dropped on arrival.
    assert_eq!(copies, ["Deployment"]);
}

/// On a database file the content records are written on a thread of their own: they are
/// in the file once the engine is gone (the next start reads them), and a write that fails
/// there is reported as the engine's own failed writes are.
#[test]
fn content_records_reach_a_database_file_from_their_own_thread_and_failures_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("driftd.db");
    let mut store = Store::open(&path).unwrap();
    commit(&mut store, "shop", &web("nginx"));
    let mut h = Harness::new(store, &stale_config_on(), "2026-11-30T10:00:00Z");
    h.load();
    h.list(&kind("v1", "Secret"), vec![secret("b2xk")]);
    h.clock.advance(Duration::from_secs(60));
    h.apply(secret("bmV3"));
    let changed_at = h.clock.wall();
    drop(h);
    let records = Store::open(&path).unwrap().config_contents().unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].name, "db");
    assert_eq!(records[0].first_seen, changed_at);
    assert_eq!(records[0].earlier.len(), 1, "the content before the change");

    let mut h = Harness::new(
        Store::open(&path).unwrap(),
        &stale_config_on(),
        "2026-11-30T11:00:00Z",
    );
    h.load();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE config_contents")
        .unwrap();
    h.list(&kind("v1", "Secret"), vec![secret("YWdhaW4=")]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while h.engine.outputs.store_errors.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        h.engine.stale_config_flush();
    }
    assert_eq!(
        h.engine.outputs.store_errors,
        ["cannot record Secret/ConfigMap content hashes: database: no such table: config_contents"]
    );
}
