//! Pods running on stale config, end to end: five Deployments in the simulator, reading one
//! Secret through env, envFrom, a subPath mount, a whole-volume mount, and not at all. The
//! Secret changes after their pods started: exactly the first three become `stale_config`
//! (the volume one only until the configured kubelet sync period ends), with the metric and
//! a `StaleConfigConsumer` Event and no Secret value anywhere; `kubectl rollout restart`
//! (the real kubectl) resolves them.

use crate::plan::{keyed_config, run, text as text_of};
use crate::scaffold::*;
use serde_json::{json, Value};
use std::time::Duration;

const T: Duration = Duration::from_secs(60);
/// `[stale_config] kubelet_sync_seconds` in this test: the window in which the volume reader
/// is stale must outlast the time a loaded machine takes to see the change (the whole suite
/// on 2 cores once missed a 4 s window).
const SYNC_SECONDS: u64 = 8;
const OLD: &str = "0ld-s3cr3t-value";
const OLD_B64: &str = "MGxkLXMzY3IzdC12YWx1ZQ==";
const NEW: &str = "n3w-s3cr3t-value";
const NEW_B64: &str = "bjN3LXMzY3IzdC12YWx1ZQ==";

/// Deployment `name` whose container reads Secret `creds` as `how` says.
fn deployment(name: &str, how: &str) -> String {
    let (reads, volumes) = match how {
        "env" => ("        env:\n        - name: PASSWORD\n          valueFrom: {secretKeyRef: {name: creds, key: password}}\n", ""),
        "envFrom" => ("        envFrom:\n        - secretRef: {name: creds}\n", ""),
        "subPath" => (
            "        volumeMounts:\n        - {name: creds, mountPath: /etc/password, subPath: password}\n",
            "      volumes:\n      - name: creds\n        secret: {secretName: creds}\n",
        ),
        "volume" => (
            "        volumeMounts:\n        - {name: creds, mountPath: /etc/creds}\n",
            "      volumes:\n      - name: creds\n        secret: {secretName: creds}\n",
        ),
        _ => ("", ""),
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: cfg}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n{reads}{volumes}---\n"
    )
}

const READERS: [(&str, &str); 5] = [
    ("env", "env"),
    ("envfrom", "envFrom"),
    ("subpath", "subPath"),
    ("volume", "volume"),
    ("nothing", "none"),
];

fn app() -> String {
    let mut yaml = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: cfg}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: cfg}}\ntype: Opaque\ndata: {{password: {OLD_B64}}}\n---\n"
    );
    for (name, how) in READERS {
        yaml.push_str(&deployment(name, how));
    }
    yaml
}

/// Every Deployment's entry (any class), by name.
fn workloads(daemon: &Daemon) -> Vec<(String, Value)> {
    let all = [daemon.drift(""), daemon.drift("?class=in_sync")];
    READERS
        .iter()
        .filter_map(|(name, _)| {
            all.iter()
                .find_map(|d| find(d, "Deployment", name).cloned())
                .map(|e| (name.to_string(), e))
        })
        .collect()
}

fn class_of(entries: &[(String, Value)], name: &str) -> String {
    entries
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, e)| e["class"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

/// The newest `status.startTime` of the running pods in `cfg`, once every Deployment has one.
fn pods_started(sim: &Sim) -> Option<jiff::Timestamp> {
    let pods = sim.kubectl_json(&["-n", "cfg", "get", "pods"]);
    let items = pods["items"].as_array()?;
    let running: Vec<jiff::Timestamp> = items
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .filter_map(|p| p["status"]["startTime"].as_str()?.parse().ok())
        .collect();
    (running.len() == READERS.len()).then(|| running.into_iter().max().unwrap())
}

#[test]
fn a_changed_secret_makes_exactly_its_stale_readers_stale_config_until_a_rollout() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let app_file = dir.path().join("app.yaml");
    std::fs::write(&app_file, app()).unwrap();
    commit(&dir.path().join("driftd.db"), "cfg", &app_file);
    sim.kubectl(&["apply", "-f", app_file.to_str().unwrap()]);
    let config = write_config(
        dir.path(),
        &format!("[stale_config]\nkubelet_sync_seconds = {SYNC_SECONDS}\n"),
    );
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();

    // Every pod runs and every workload is in sync; then a second boundary passes (startTime
    // counts whole seconds), so the change is surely later than every start.
    let started = wait_for("a running pod per Deployment", T, || pods_started(&sim));
    wait_for("every Deployment in sync", T, || {
        let w = workloads(&daemon);
        (w.len() == READERS.len() && w.iter().all(|(_, e)| e["class"] == "in_sync")).then_some(())
    });
    wait_for("a second after the last pod started", T, || {
        (jiff::Timestamp::now().as_second() > started.as_second()).then_some(())
    });

    sim.merge_patch(
        "cfg",
        &["secret", "creds"],
        &json!({"data": {"password": NEW_B64}}),
    );
    let changed = jiff::Timestamp::now();

    // The three that never update are stale at once; the volume one until the sync period
    // ends, then in sync; the one reading nothing never.
    let mut volume_seen_stale = false;
    let entries = wait_for("env, envFrom and subPath stale; volume synced", T, || {
        let w = workloads(&daemon);
        volume_seen_stale |= class_of(&w, "volume") == "stale_config";
        let stale: Vec<bool> = ["env", "envfrom", "subpath"]
            .iter()
            .map(|n| class_of(&w, n) == "stale_config")
            .collect();
        (stale.iter().all(|s| *s)
            && class_of(&w, "volume") == "in_sync"
            && class_of(&w, "nothing") == "in_sync")
            .then_some(w)
    });
    assert!(
        volume_seen_stale,
        "the volume reader is stale within the {SYNC_SECONDS}s sync period"
    );
    assert!(
        jiff::Timestamp::now().as_second() - changed.as_second() >= SYNC_SECONDS as i64 - 1,
        "the volume reader was in sync again before its sync period ended"
    );
    for (name, how) in [
        ("env", "env"),
        ("envfrom", "envFrom"),
        ("subpath", "subPath"),
    ] {
        let (_, entry) = entries.iter().find(|(n, _)| n == name).unwrap();
        let note = &entry["stale_config"];
        assert_eq!(
            note["fix"],
            format!("kubectl rollout restart deployment/{name} -n cfg"),
            "{entry}"
        );
        let configs = note["configs"].as_array().unwrap();
        assert_eq!(configs.len(), 1, "{entry}");
        assert_eq!(configs[0]["config"], "Secret/creds");
        let pods = configs[0]["pods"].as_array().unwrap();
        assert_eq!(pods.len(), 1, "{entry}");
        assert!(
            pods[0]["name"].as_str().unwrap().starts_with(name),
            "{entry}"
        );
        assert_eq!(pods[0]["reads"], json!([how]), "{entry}");
    }

    // The metric, per workload and config.
    let series = |workload: &str| {
        format!(
            r#"driftd_stale_config_pods{{config="Secret/creds",namespace="cfg",workload="{workload}"}}"#
        )
    };
    let metrics = wait_for("the stale_config metric", T, || {
        let (_, m) = daemon.get("/metrics");
        (sample(&m, &series("env")) == Some(1.0)).then_some(m)
    });
    for name in ["envfrom", "subpath"] {
        assert_eq!(sample(&metrics, &series(name)), Some(1.0), "{metrics}");
    }
    for name in ["volume", "nothing"] {
        assert_eq!(sample(&metrics, &series(name)), None, "{metrics}");
    }

    // A StaleConfigConsumer Event on each stale Deployment.
    let events = wait_for("StaleConfigConsumer Events", T, || {
        let events = sim.events("cfg", "StaleConfigConsumer");
        ["env", "envfrom", "subpath"]
            .iter()
            .all(|n| {
                events
                    .iter()
                    .any(|e| e["regarding"]["name"] == *n && e["regarding"]["kind"] == "Deployment")
            })
            .then_some(events)
    });
    let env_event = events
        .iter()
        .find(|e| e["regarding"]["name"] == "env")
        .unwrap();
    let note = env_event["note"].as_str().unwrap();
    assert!(note.contains("Secret/creds"), "{note}");
    assert!(
        note.contains("kubectl rollout restart deployment/env -n cfg"),
        "{note}"
    );

    // No Secret value, old or new, in any output.
    let outputs = format!(
        "{} {} {} {}",
        daemon.get("/drift").1,
        daemon.get("/drift?class=stale_config").1,
        daemon.get("/metrics").1,
        Value::Array(events)
    );
    for value in [OLD, OLD_B64, NEW, NEW_B64] {
        assert!(!outputs.contains(value), "{value} leaked");
    }

    // The fix, with the real kubectl: new pods, started after the change, read the new
    // content; the old ones are gone.
    sim.kubectl(&[
        "-n",
        "cfg",
        "rollout",
        "restart",
        "deployment/env",
        "deployment/envfrom",
        "deployment/subpath",
    ]);
    wait_for("every Deployment in sync after the rollout", T, || {
        let w = workloads(&daemon);
        (w.len() == READERS.len()
            && w.iter()
                .all(|(_, e)| e["class"] == "in_sync" && e.get("stale_config").is_none()))
        .then_some(())
    });
    let (_, metrics) = daemon.get("/metrics");
    assert!(!metrics.contains("driftd_stale_config_pods{"), "{metrics}");
}

/// Namespace `cfg`, Secret `creds` holding `password_b64`, and Deployment `env` reading it
/// through env, its pod template annotated with the Secret's `checksum` as charts do (so a
/// new Secret rolls the pods out).
fn chart(password_b64: &str, checksum: &str) -> String {
    let reader = deployment("env", "env").replace(
        "    metadata: {labels: {app: env}}\n",
        &format!(
            "    metadata:\n      labels: {{app: env}}\n      annotations: {{checksum/creds: \"{checksum}\"}}\n"
        ),
    );
    assert!(reader.contains("checksum/creds"), "{reader}");
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: cfg}}\n---\n{reader}apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: cfg}}\ntype: Opaque\ndata: {{password: {password_b64}}}\n"
    )
}

/// Running pods of Deployment `env` with their start times, once there is exactly one.
fn env_pod(sim: &Sim) -> Option<(String, jiff::Timestamp)> {
    let pods = sim.kubectl_json(&["-n", "cfg", "get", "pods", "-l", "app=env"]);
    let running: Vec<(String, jiff::Timestamp)> = pods["items"]
        .as_array()?
        .iter()
        .filter(|p| {
            p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
        })
        .filter_map(|p| {
            Some((
                p["metadata"]["name"].as_str()?.to_string(),
                p["status"]["startTime"].as_str()?.parse().ok()?,
            ))
        })
        .collect();
    (running.len() == 1).then(|| running[0].clone())
}

/// The apply order charts use, end to end: a new revision changes the Secret and, as charts do,
/// the checksum on the pod template of the Deployment reading it (the manifest lists the
/// Deployment first). `driftd reconcile --apply` writes the Secret before the Deployment
/// (plan order) and waits for the rollout, so the new pod starts after the new Secret: no
/// `stale_config` is left, and the old pod is gone.
#[test]
fn reconcile_writes_a_secret_before_its_reader_whose_rollout_leaves_no_stale_pods() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let sim = Sim::start(dir.path());
    // Secret values are restored from the store: it keeps them sealed under a key.
    let config = keyed_config(dir.path(), "[stale_config]\nkubelet_sync_seconds = 4\n");
    let commit = |version: &str, text: String| {
        let file = dir.path().join(format!("{version}.yaml"));
        std::fs::write(&file, text).unwrap();
        let out = run(
            &[
                "commit",
                "--db",
                db.to_str().unwrap(),
                "--source",
                "cfg",
                "-f",
                file.to_str().unwrap(),
            ],
            None,
            &config,
        );
        assert!(out.status.success(), "{:?}", text_of(&out));
        file
    };
    let v1 = commit("v1", chart(OLD_B64, "1"));
    sim.kubectl(&["apply", "-f", v1.to_str().unwrap()]);
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let (old_pod, started) = wait_for("the reader's pod running", T, || env_pod(&sim));
    wait_for("the reader in sync", T, || {
        find(&daemon.drift("?class=in_sync"), "Deployment", "env").map(|_| ())
    });
    wait_for("a second after the pod started", T, || {
        (jiff::Timestamp::now().as_second() > started.as_second()).then_some(())
    });

    commit("v2", chart(NEW_B64, "2"));
    let out = run(
        &[
            "reconcile",
            "--db",
            db.to_str().unwrap(),
            "--source",
            "cfg",
            "--apply",
            // The objects were applied with kubectl before: driftd takes their fields over.
            "--force-conflicts",
            "--timeout",
            "60",
        ],
        Some(&sim.kubeconfig),
        &config,
    );
    let (stdout, stderr) = text_of(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let applied: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("applied "))
        .collect();
    let at = |kind: &str| applied.iter().position(|l| l.contains(kind));
    assert!(
        at("Secret").unwrap() < at("Deployment").unwrap(),
        "the Secret is applied before its reader: {stdout}"
    );
    for value in [OLD, OLD_B64, NEW, NEW_B64] {
        assert!(!stdout.contains(value), "{value} in reconcile's output");
    }

    // The rollout replaced the pod; the new one started with the new Secret in place.
    let (new_pod, _) = wait_for("a new pod", T, || {
        env_pod(&sim).filter(|(name, _)| *name != old_pod)
    });
    let entry = wait_for("the reader in sync, nothing stale", T, || {
        find(&daemon.drift("?class=in_sync"), "Deployment", "env")
            .filter(|e| e.get("stale_config").is_none())
            .cloned()
    });
    assert_eq!(entry["revision"], 2, "{entry}");
    assert!(
        find(&daemon.drift("?class=stale_config"), "Deployment", "env").is_none(),
        "{new_pod} is not stale"
    );
    let (_, metrics) = daemon.get("/metrics");
    assert!(!metrics.contains("driftd_stale_config_pods{"), "{metrics}");
}

/// Deployment `name` in namespace `ns` whose containers `containers` each read Secret
/// `creds` (key `password`) through env.
fn env_readers(ns: &str, name: &str, containers: &[&str]) -> String {
    let mut yaml = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n"
    );
    for c in containers {
        yaml.push_str(&format!(
            "      - name: {c}\n        image: nginx:1.27\n        env:\n        - name: PASSWORD\n          valueFrom: {{secretKeyRef: {{name: creds, key: password}}}}\n"
        ));
    }
    yaml + "---\n"
}

/// The one pod of Deployment `app` in `ns`, as kubectl shows it.
fn only_pod(sim: &Sim, ns: &str, app: &str) -> Option<Value> {
    let pods = sim.kubectl_json(&["-n", ns, "get", "pods", "-l", &format!("app={app}")]);
    let items = pods["items"].as_array()?;
    (items.len() == 1).then(|| items[0].clone())
}

fn container_status<'a>(pod: &'a Value, name: &str) -> &'a Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

fn time(v: &Value) -> jiff::Timestamp {
    v.as_str().unwrap().parse().unwrap()
}

/// Waits until a whole second has passed after `t` (start times count whole seconds).
fn past_the_second_of(t: jiff::Timestamp) {
    wait_for("the next second", T, || {
        (jiff::Timestamp::now().as_second() > t.as_second()).then_some(())
    });
}

/// A pod whose Secret did not exist yet waits (CreateContainerConfigError, as `kubectl get
/// pods` shows it) and starts once the Secret is created: its `startTime` is older than
/// the Secret, its container's start is not, and driftd does not call it stale. A control
/// Deployment reading a ConfigMap changed afterwards shows driftd has judged by then.
#[test]
fn a_pod_that_waited_for_its_secret_is_not_stale_config() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let control = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sentinel, namespace: late}\ndata: {mode: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: control, namespace: late}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: control}}\n  template:\n    metadata: {labels: {app: control}}\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n        envFrom:\n        - configMapRef: {name: sentinel}\n---\n";
    let app = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: late}}\n---\n{control}{}",
        env_readers("late", "waiter", &["app"])
    );
    let app_file = dir.path().join("app.yaml");
    std::fs::write(&app_file, app).unwrap();
    commit(&dir.path().join("driftd.db"), "late", &app_file);
    sim.kubectl(&["apply", "-f", app_file.to_str().unwrap()]);
    let config = write_config(dir.path(), "");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();

    // The kubelet accepted the pod and holds its container for the missing Secret.
    let waiting = wait_for("the waiter's container held", T, || {
        only_pod(&sim, "late", "waiter").filter(|p| {
            container_status(p, "app")["state"]["waiting"]["reason"] == "CreateContainerConfigError"
        })
    });
    assert_eq!(waiting["status"]["phase"], "Pending");
    assert_eq!(
        container_status(&waiting, "app")["state"]["waiting"]["message"],
        "secret \"creds\" not found"
    );
    let listed = sim.kubectl(&["-n", "late", "get", "pods", "-l", "app=waiter"]);
    assert!(listed.contains("CreateContainerConfigError"), "{listed}");
    let accepted = time(&waiting["status"]["startTime"]);
    past_the_second_of(accepted);

    sim.kubectl(&[
        "-n",
        "late",
        "create",
        "secret",
        "generic",
        "creds",
        &format!("--from-literal=password={NEW}"),
    ]);
    let created = time(
        &sim.kubectl_json(&["-n", "late", "get", "secret", "creds"])["metadata"]
            ["creationTimestamp"],
    );
    let started = wait_for("the waiter running", T, || {
        only_pod(&sim, "late", "waiter").filter(|p| p["status"]["phase"] == "Running")
    });
    let container_start = time(&container_status(&started, "app")["state"]["running"]["startedAt"]);
    assert!(
        accepted < created && container_start >= created,
        "accepted {accepted}, Secret {created}, container {container_start}"
    );
    assert_eq!(time(&started["status"]["startTime"]), accepted);

    // driftd has seen it all once the later ConfigMap change makes the control stale.
    past_the_second_of(container_start);
    sim.merge_patch(
        "late",
        &["configmap", "sentinel"],
        &json!({"data": {"mode": "b"}}),
    );
    wait_for("the control stale", T, || {
        (daemon.entry("Deployment", "control")?["class"] == "stale_config").then_some(())
    });
    let waiter = daemon.entry("Deployment", "waiter").unwrap();
    assert_eq!(waiter["class"], "in_sync", "{waiter}");
    assert!(waiter.get("stale_config").is_none(), "{waiter}");
    let outputs = daemon.get("/drift").1 + &daemon.get("/metrics").1;
    assert!(!outputs.contains(NEW), "the Secret's value leaked");
}

/// The Secret changes after two pods started: Deployment `single` (one container) and
/// `pair` (containers `app` and `sidecar`) both become stale_config. A container restarted
/// after the change read the new value: `single` is in sync again, `pair` stays stale
/// through `app` alone, which started before the change.
#[test]
fn a_container_restarted_after_the_change_is_not_stale_and_one_started_before_is() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let app = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: cfg}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: cfg}}\ntype: Opaque\ndata: {{password: {OLD_B64}}}\n---\n{}{}",
        env_readers("cfg", "single", &["app"]),
        env_readers("cfg", "pair", &["app", "sidecar"]),
    );
    let app_file = dir.path().join("app.yaml");
    std::fs::write(&app_file, app).unwrap();
    commit(&dir.path().join("driftd.db"), "cfg", &app_file);
    sim.kubectl(&["apply", "-f", app_file.to_str().unwrap()]);
    let config = write_config(dir.path(), "");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();

    let running = |app: &str| {
        wait_for("a running pod", T, || {
            only_pod(&sim, "cfg", app).filter(|p| p["status"]["phase"] == "Running")
        })
    };
    let (single, pair) = (running("single"), running("pair"));
    for name in ["single", "pair"] {
        wait_for("in sync", T, || {
            (daemon.entry("Deployment", name)?["class"] == "in_sync").then_some(())
        });
    }
    let first = time(&container_status(&pair, "app")["state"]["running"]["startedAt"]);
    past_the_second_of(first.max(time(
        &container_status(&single, "app")["state"]["running"]["startedAt"],
    )));

    sim.merge_patch(
        "cfg",
        &["secret", "creds"],
        &json!({"data": {"password": NEW_B64}}),
    );
    let changed = jiff::Timestamp::now();
    let stale_containers = |name: &str| -> Option<Vec<Value>> {
        let entry = daemon.entry("Deployment", name)?;
        (entry["class"] == "stale_config")
            .then(|| entry["stale_config"]["configs"][0]["pods"][0]["containers"].clone())
            .and_then(|c| c.as_array().cloned())
    };
    for name in ["single", "pair"] {
        wait_for("stale_config", T, || stale_containers(name));
    }
    assert_eq!(
        stale_containers("pair").unwrap(),
        [json!("app"), json!("sidecar")]
    );

    // The containers restart in a later second than the change, as the kubelet restarts a
    // crashed container: restartCount, lastState and a new startedAt.
    past_the_second_of(changed);
    let restart = |pod: &Value, container: &str| {
        sim.admin(
            "POST",
            "restart-container",
            json!({"namespace": "cfg", "pod": pod["metadata"]["name"], "container": container}),
        )
    };
    restart(&single, "app");
    restart(&pair, "sidecar");
    let restarted = only_pod(&sim, "cfg", "pair").unwrap();
    let sidecar = container_status(&restarted, "sidecar");
    assert_eq!(sidecar["restartCount"], 1, "{sidecar}");
    assert_eq!(sidecar["lastState"]["terminated"]["reason"], "Error");
    assert!(time(&sidecar["state"]["running"]["startedAt"]).as_second() > changed.as_second());
    let listed = sim.kubectl(&["-n", "cfg", "get", "pods", "-l", "app=pair"]);
    assert!(listed.contains("Running"), "{listed}");

    wait_for("single in sync after its container restarted", T, || {
        let entry = daemon.entry("Deployment", "single")?;
        (entry["class"] == "in_sync" && entry.get("stale_config").is_none()).then_some(())
    });
    let pods = wait_for("pair stale through app alone", T, || {
        let entry = daemon.entry("Deployment", "pair")?;
        let pods = entry["stale_config"]["configs"][0]["pods"].clone();
        (entry["class"] == "stale_config" && pods[0]["containers"] == json!(["app"]))
            .then_some(pods)
    });
    assert_eq!(time(&pods[0]["started_at"]), first, "{pods}");
    assert_eq!(pods[0]["reads"], json!(["env"]), "{pods}");
    let series =
        r#"driftd_stale_config_pods{config="Secret/creds",namespace="cfg",workload="pair"}"#;
    wait_for("the metric for pair alone", T, || {
        let (_, m) = daemon.get("/metrics");
        (sample(&m, series) == Some(1.0) && !m.contains(r#"workload="single""#)).then_some(())
    });
}
