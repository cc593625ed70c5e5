//! Stale locks end to end: an intent held by a pod that is deleted is listed at `/locks`
//! from the one watch event of the deletion (latency measured), with a `StaleLock` Event on
//! the pod; Pulumi lock files in Pulumi's own formats (tests/fixtures/pulumi) are reported
//! with the exact `pulumi cancel` command, stale by age or by their holder pod's deletion.

use crate::scaffold::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

fn locks(daemon: &Daemon) -> Value {
    let (status, body) = daemon.get("/locks");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The locks listed, once `/locks` says it is complete.
fn ready_locks(daemon: &Daemon) -> Vec<Value> {
    wait_for("/locks ready", T, || {
        let body = locks(daemon);
        (body["ready"] == true).then(|| body["locks"].as_array().unwrap().clone())
    })
}

fn pod(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\n\
         spec: {{containers: [{{name: deploy, image: bitnami/kubectl}}]}}\n"
    )
}

fn apply(sim: &Sim, yaml: &str) {
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(yaml));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_pod_held_intent_is_a_stale_lock_from_the_watch_event_of_the_pod_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "ci"]);
    apply(&sim, &pod("ci", "deploy-x"));
    let db = dir.path().join("driftd.db");
    let app = dir.path().join("app.yaml");
    std::fs::write(
        &app,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: ci}\ndata: {image: v2}\n",
    )
    .unwrap();
    let begin = driftd(&[
        "intent",
        "begin",
        "--db",
        db.to_str().unwrap(),
        "--source",
        "web",
        "--holder",
        "pod:ci/deploy-x",
        "-f",
        app.to_str().unwrap(),
    ]);
    assert!(
        begin.status.success(),
        "{}",
        String::from_utf8_lossy(&begin.stderr)
    );
    // Off: stale_config's watch of every Pod would count the deletion too.
    let config = write_config(dir.path(), "[stale_config]\nenabled = false\n");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    assert_eq!(ready_locks(&daemon), Vec::<Value>::new(), "its pod runs");
    let pod_events = || daemon.sample(r#"driftd_watch_events_total{kind="Pod"}"#);
    let listed = pod_events().expect("the holder pod was listed");

    let started = Instant::now();
    sim.kubectl(&["-n", "ci", "delete", "pod", "deploy-x", "--wait=false"]);
    let deleted = Instant::now();
    let lock = wait_for("the lock at /locks", Duration::from_secs(3), || {
        locks(&daemon)["locks"].as_array().unwrap().first().cloned()
    });
    eprintln!(
        "pod deletion -> /locks: {:?} after kubectl delete returned ({:?} including kubectl)",
        deleted.elapsed(),
        started.elapsed()
    );
    assert_eq!(
        pod_events(),
        Some(listed + 1.0),
        "one watch event (the deletion), no re-list"
    );
    assert_eq!(lock["kind"], "intent");
    assert_eq!(lock["source"], "web");
    assert_eq!(lock["id"], "1");
    assert_eq!(lock["holder"], "pod:ci/deploy-x");
    assert_eq!(lock["state"], "pending", "the TTL has not passed");
    assert_eq!(lock["reason"], "holder pod ci/deploy-x no longer exists");
    assert_eq!(lock["release"], "driftd intent release 1");
    assert!(lock["age_seconds"].as_i64().unwrap() >= 0);
    assert!(lock["since"].is_string() && lock["created_at"].is_string());

    let event = wait_for("StaleLock Event on the pod", T, || {
        sim.events("ci", "StaleLock").pop()
    });
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["regarding"]["kind"], "Pod");
    assert_eq!(event["regarding"]["name"], "deploy-x");
    assert!(
        event["note"]
            .as_str()
            .unwrap()
            .contains("driftd intent release 1"),
        "{event:#}"
    );
    assert_eq!(
        daemon.sample(r#"driftd_stale_locks{kind="intent",source="web"}"#),
        Some(1.0)
    );
    let table = Command::new(DRIFTD)
        .args(["locks", "--server", &daemon.url])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("holder pod ci/deploy-x no longer exists")
            && table.contains("intent 1:  driftd intent release 1"),
        "{table}"
    );

    let release = driftd(&["intent", "release", "1", "--db", db.to_str().unwrap()]);
    assert!(
        release.status.success(),
        "{}",
        String::from_utf8_lossy(&release.stderr)
    );
    wait_for("no stale lock", T, || {
        locks(&daemon)["locks"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(())
    });
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pulumi")
}

#[test]
fn pulumi_lock_files_are_stale_by_age_or_by_their_holder_pod() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    // A copy of the project-layout backend whose lock was taken just now, by a pod that
    // exists; the fixtures as they are (taken in 2024 and 2023) are stale by age.
    let fresh = dir.path().join("fresh");
    let lock_dir = fresh.join(".pulumi/locks/organization/shop/prod");
    std::fs::create_dir_all(&lock_dir).unwrap();
    let original = std::fs::read_to_string(fixtures().join(
        "backend/.pulumi/locks/organization/shop/dev/0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a.json",
    ))
    .unwrap();
    let now = jiff::Timestamp::now().to_string();
    let content = original
        .replace("2024-05-14T07:12:44.918273645Z", &now)
        .replace("shop-dev-workspace-0", "shop-prod-workspace-0");
    assert_ne!(content, original);
    std::fs::write(
        lock_dir.join("5d1b7f1c-0000-4c1b-9a8e-3d6f1e2b4c5a.json"),
        content,
    )
    .unwrap();
    sim.kubectl(&["create", "namespace", "pulumi"]);
    apply(&sim, &pod("pulumi", "shop-prod-workspace-0"));

    let config = write_config(
        dir.path(),
        &format!(
            "[pulumi]\nlock_dirs = [{:?}, {:?}, {:?}]\nscan_seconds = 1\n",
            fixtures().join("backend"),
            fixtures().join("legacy-backend"),
            fresh
        ),
    );
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    let found = ready_locks(&daemon);
    let stacks: Vec<&str> = found
        .iter()
        .map(|l| l["source"].as_str().unwrap())
        .collect();
    assert_eq!(stacks, ["dev", "organization/shop/dev"], "{found:#?}");
    let dev = &found[1];
    assert_eq!(dev["kind"], "pulumi");
    assert_eq!(dev["id"], "0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a");
    assert_eq!(
        dev["holder"],
        "pulumi-kubernetes-operator@shop-dev-workspace-0 (pid 30553)"
    );
    assert!(
        dev["reason"]
            .as_str()
            .unwrap()
            .contains("longer than the allowed 1h"),
        "{dev:#}"
    );
    let backend = fixtures().join("backend");
    assert_eq!(
        dev["release"],
        format!(
            "PULUMI_BACKEND_URL=file://{} pulumi cancel --yes --stack organization/shop/dev",
            backend.display()
        ),
        "the exact command"
    );
    assert!(dev["path"].as_str().unwrap().ends_with(".json"));
    assert!(dev.get("state").is_none());
    // No holder pod: the Event is about driftd's Lease (in its namespace, `default` here).
    let event = wait_for("StaleLock Event on driftd's Lease", T, || {
        sim.events("default", "StaleLock").into_iter().find(|e| {
            e["note"]
                .as_str()
                .unwrap_or("")
                .contains("organization/shop/dev")
        })
    });
    assert_eq!(event["regarding"]["kind"], "Lease");
    assert_eq!(event["regarding"]["name"], "driftd");

    // The fresh lock's pod is deleted: stale from that watch event on.
    let started = Instant::now();
    sim.kubectl(&[
        "-n",
        "pulumi",
        "delete",
        "pod",
        "shop-prod-workspace-0",
        "--wait=false",
    ]);
    let prod = wait_for("the prod lock at /locks", Duration::from_secs(3), || {
        locks(&daemon)["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["source"] == "organization/shop/prod")
            .cloned()
    });
    eprintln!(
        "holder pod deletion -> /locks (pulumi): {:?}",
        started.elapsed()
    );
    assert_eq!(
        prod["reason"],
        "holder pod pulumi/shop-prod-workspace-0 no longer exists"
    );
    assert!(prod["release"]
        .as_str()
        .unwrap()
        .ends_with("pulumi cancel --yes --stack organization/shop/prod"));
    wait_for("StaleLock Event on the pod", T, || {
        sim.events("pulumi", "StaleLock").pop()
    });
    assert_eq!(
        daemon.sample(r#"driftd_stale_locks{kind="pulumi",source="organization/shop/dev"}"#),
        Some(1.0)
    );
}
