//! Stale locks end to end: an intent held by a pod that is deleted is listed at `/locks`
//! from the one watch event of the deletion (latency measured), with a `StaleLock` Event on
//! the pod; Pulumi lock files in Pulumi's own formats (tests/fixtures/pulumi) are reported
//! with the exact `pulumi cancel` command, stale by age or by their holder pod's deletion.
//! A `--holder pod:` that names no pod is refused before anything is written; a lock of the
//! cluster log auto-released by the leader is released in the cluster log, so the next
//! `driftd run --cluster` goes through; `intent list --cluster` and `locks --cluster` read
//! the log with the columns of their `--db` forms, a dead holder process of this host stale
//! at once. The rules themselves are unit-tested in `crates/engine/src/holders.rs`,
//! `drift/locks/local_tests.rs` and `drift/engine/tests/locks.rs`.

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

/// `driftd ARGS` against the simulator, driftd's namespace `driftd`, outside any pod.
fn in_cluster(sim: &Sim, args: &[&str]) -> std::process::Output {
    Command::new(DRIFTD)
        .args(args)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("DRIFTD_NAMESPACE", "driftd")
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .output()
        .unwrap()
}

#[track_caller]
fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn configmap(dir: &Path) -> PathBuf {
    let app = dir.join("app.yaml");
    std::fs::write(
        &app,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: ci}\ndata: {image: v2}\n",
    )
    .unwrap();
    app
}

#[test]
fn a_pod_holder_that_does_not_exist_is_refused_at_begin() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    sim.kubectl(&["create", "namespace", "ci"]);
    apply(&sim, &pod("ci", "deploy-x"));
    let app = configmap(dir.path());
    let app = app.to_str().unwrap();
    let db = dir.path().join("d.db");
    let db = db.to_str().unwrap();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    for args in [
        vec!["intent", "begin", "--db", db],
        vec!["intent", "begin", "--cluster"],
        vec!["run", "--db", db],
    ] {
        let mut args = args.clone();
        args.extend(["--source", "web", "-f", app, "--holder", "pod:ci/deploy-y"]);
        if args[0] == "run" {
            args.extend(["--", "sh", "-c", &touch]);
        }
        let out = in_cluster(&sim, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("holder pod ci/deploy-y does not exist") && err.contains("check --holder"),
            "{err}"
        );
    }
    assert!(!Path::new(db).exists(), "nothing written");
    assert!(!marker.exists(), "the deploy did not run");
    assert_eq!(
        sim.kubectl(&["get", "secrets", "-n", "driftd", "-o", "name"]),
        "",
        "nothing in the cluster log"
    );
    // The pod that deploys: accepted, silently.
    let out = in_cluster(
        &sim,
        &[
            "intent",
            "begin",
            "--db",
            db,
            "--source",
            "web",
            "-f",
            app,
            "--holder",
            "pod:ci/deploy-x",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn an_auto_released_cluster_lock_lets_the_next_run_through() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    sim.kubectl(&["create", "namespace", "ci"]);
    apply(&sim, &pod("ci", "deploy-x"));
    let app = configmap(dir.path());
    let app = app.to_str().unwrap();
    let begun = ok(in_cluster(
        &sim,
        &[
            "intent",
            "begin",
            "--cluster",
            "--source",
            "web",
            "-f",
            app,
            "--holder",
            "pod:ci/deploy-x",
        ],
    ));
    assert_eq!(begun.trim(), "1");
    let next_deploy = [
        "run",
        "--cluster",
        "--source",
        "web",
        "-f",
        app,
        "--",
        "true",
    ];
    let refused = in_cluster(&sim, &next_deploy);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("locked by intent 1"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let config = write_config(
        dir.path(),
        "[stale_config]\nenabled = false\n[locks]\nauto_release_after = \"1s\"\n",
    );
    let env = [("DRIFTD_NAMESPACE", "driftd"), ("POD_NAME", "replica-a")];
    let daemon = Daemon::start(&config, &sim.kubeconfig, &env);
    daemon.wait_ready();
    let db = dir.path().join("driftd.db");
    let db = db.to_str().unwrap();
    // Imported, and its holder seen running.
    wait_for("intent 1 imported and its pod listed", T, || {
        let pods = daemon.sample(r#"driftd_watch_events_total{kind="Pod"}"#)?;
        let body = locks(&daemon);
        (pods >= 1.0 && body["ready"] == true && body["locks"] == serde_json::json!([]))
            .then_some(())
    });
    // Released in this replica's database alone, it would stay held in the cluster.
    let local = driftd(&["intent", "release", "1", "--db", db]);
    assert_eq!(local.status.code(), Some(2));
    let err = String::from_utf8_lossy(&local.stderr);
    assert!(
        err.contains("came from the cluster log")
            && err.contains("`driftd intent release 1 --cluster`"),
        "{err}"
    );

    sim.kubectl(&["-n", "ci", "delete", "pod", "deploy-x", "--wait=false"]);
    let started = Instant::now();
    let secret = wait_for("intent 1 released in the cluster log", T, || {
        let s = sim.kubectl_json(&["get", "secret", "driftd.intent.1", "-n", "driftd"]);
        (s["metadata"]["labels"]["driftd.io/state"] == "released").then_some(s)
    });
    eprintln!(
        "pod deletion -> released in the cluster log: {:?}",
        started.elapsed()
    );
    let annotations = &secret["metadata"]["annotations"];
    assert_eq!(annotations["driftd.io/end-action"], "auto-release");
    assert_eq!(annotations["driftd.io/ended-by"], "driftd/replica-a");
    assert!(
        annotations["driftd.io/end-reason"]
            .as_str()
            .unwrap()
            .starts_with("holder pod ci/deploy-x no longer exists; released automatically"),
        "{annotations:#}"
    );
    wait_for("no stale lock at /locks", T, || {
        locks(&daemon)["locks"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(())
    });
    assert_eq!(
        daemon.sample(r#"driftd_stale_locks{kind="intent",source="web"}"#),
        None,
        "no lock, and no revision yet (known sources get a 0)"
    );

    // The next deploy goes through.
    let out = in_cluster(&sim, &next_deploy);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("the source known, with no stale lock", T, || {
        (daemon.sample(r#"driftd_stale_locks{kind="intent",source="web"}"#) == Some(0.0))
            .then_some(())
    });
    wait_for("StaleLockReleased Event on the pod", T, || {
        sim.events("ci", "StaleLockReleased").pop()
    });
    // Every replica's history, and the cluster log itself, say who released it.
    let history = wait_for("auto-release in the replica's history", T, || {
        let out = driftd(&["history", "--db", db, "--source", "web", "--format", "json"]);
        let text = String::from_utf8(out.stdout).ok()?;
        text.contains("\"auto-release\"").then_some(text)
    });
    assert!(history.contains("driftd/replica-a"), "{history}");
    let listed: Value = serde_json::from_str(&ok(in_cluster(
        &sim,
        &["intent", "list", "--cluster", "--all", "--format", "json"],
    )))
    .unwrap();
    let states: Vec<(i64, &str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["id"].as_i64().unwrap(),
                i["state"].as_str().unwrap(),
                i["ended_by"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        states[states.len() - 1],
        (1, "released", "driftd/replica-a")
    );
    assert_eq!(states[0].1, "committed", "the next deploy: {listed:#}");
}

fn hostname() -> String {
    let out = Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The header and the first four columns (ID SOURCE STATE HOLDER) of a table's rows.
fn table_rows(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let cells: Vec<&str> = l
                .split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            cells[..4.min(cells.len())].join(" | ")
        })
        .collect()
}

#[test]
fn intent_list_and_locks_read_the_cluster_log_with_the_columns_of_their_db_forms() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    let app = configmap(dir.path());
    let app = app.to_str().unwrap();
    let db = dir.path().join("d.db");
    let db = db.to_str().unwrap();
    // A deploy script of this host that died (its pid is free now), and a CI job on another
    // machine that stopped renewing.
    let mut script = Command::new("true").spawn().unwrap();
    let pid = script.id();
    script.wait().unwrap();
    let here = format!("tester@{} (pid {pid})", hostname());
    let begins: [&[&str]; 2] = [
        &["--source", "web", "-f", app, "--holder", &here],
        &[
            "--source", "api", "-f", app, "--holder", "ci-job-7", "--ttl", "1s",
        ],
    ];
    for extra in begins {
        for place in [&["--cluster"][..], &["--db", db][..]] {
            let mut args = vec!["intent", "begin"];
            args.extend(place);
            args.extend(extra);
            ok(in_cluster(&sim, &args));
        }
    }
    // Both forms, both commands; the TTL of intent 2 passes meanwhile.
    let both = |command: &[&str]| {
        let read = |place: &[&str]| {
            let mut args = command.to_vec();
            args.extend(place);
            ok(in_cluster(&sim, &args))
        };
        (read(&["--cluster"]), read(&["--db", db]))
    };
    let (cluster, local) = wait_for("intent 2 expired", T, || {
        let (cluster, local) = both(&["intent", "list"]);
        (cluster.contains("expired") && local.contains("expired")).then_some((cluster, local))
    });
    assert_eq!(
        table_rows(&cluster),
        table_rows(&local),
        "{cluster}\n{local}"
    );
    assert_eq!(
        table_rows(&cluster),
        [
            "ID | SOURCE | STATE | HOLDER",
            "2 | api | expired | ci-job-7",
            &format!("1 | web | pending | {here}"),
        ]
    );
    assert_eq!(
        cluster
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["ID", "SOURCE", "STATE", "HOLDER", "AGE", "EXPIRES", "OBJECTS", "MESSAGE"]
    );
    let (cluster, local) = both(&["intent", "list", "--all", "--format", "json"]);
    let keys = |text: &str| -> Vec<Vec<String>> {
        let list: Value = serde_json::from_str(text).unwrap();
        list.as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_object().unwrap().keys().cloned().collect())
            .collect()
    };
    assert_eq!(keys(&cluster), keys(&local), "the same fields");

    let (cluster, local) = both(&["locks"]);
    let gone = format!("holder process {pid} on {} is gone", hostname());
    for (table, flag) in [(&cluster, " --cluster"), (&local, "")] {
        assert!(table.contains(&gone), "stale at once, its TTL 10m: {table}");
        assert!(table.contains("not renewed for"), "{table}");
        assert!(
            table.contains(&format!("intent 1:  driftd intent release 1{flag}\n"))
                && table.contains(&format!("intent 2:  driftd intent release 2{flag}\n")),
            "{table}"
        );
        assert!(!table.contains("incomplete"), "no pod to look up: {table}");
    }
    assert_eq!(
        cluster
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        local
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    let json: Value = serde_json::from_str(&ok(in_cluster(
        &sim,
        &["locks", "--cluster", "--format", "json"],
    )))
    .unwrap();
    assert_eq!(json["ready"], true);
    let ids: Vec<&str> = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["2", "1"], "sorted as /locks: by kind, source, id");
}
