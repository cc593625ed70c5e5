//! End to end, as a user runs driftd: commit the example app, apply it with kubectl to the
//! simulator, run `driftd serve`, edit the cluster with kubectl, and watch drift appear in
//! `/drift`, `/metrics`, Kubernetes Events and `driftd drift`; revert it; commit a new
//! revision; restart the daemon.

use crate::scaffold::*;
use serde_json::Value;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

fn events(sim: &Sim, reason: &str, name: &str) -> Vec<Value> {
    let list = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "-n", "shop"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] == reason && e["regarding"]["name"] == name)
        .cloned()
        .collect()
}

fn metric_line(metrics: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        if !rest.starts_with('{') {
            return None;
        }
        let (label_part, value) = rest.rsplit_once(' ')?;
        labels
            .iter()
            .all(|(k, v)| label_part.contains(&format!("{k}=\"{v}\"")))
            .then(|| value.parse().ok())?
    })
}

#[test]
fn drift_appears_resolves_and_follows_new_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let db = dir.path().join("driftd.db");
    let out = commit(&db, "shop", &examples());
    assert!(out.contains("revision"), "{out}");
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);

    let config = write_config(dir.path(), "");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();

    // Freshly applied: everything in sync, nothing drifting.
    let in_sync = daemon.drift("?class=in_sync");
    assert_eq!(
        in_sync["objects"].as_array().unwrap().len(),
        5,
        "all five example objects in sync: {in_sync:#}"
    );
    assert_eq!(daemon.drift("")["objects"].as_array().unwrap().len(), 0);

    // A person changes the image by hand.
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    let web = wait_for("web drift in /drift", T, || {
        find(&daemon.drift(""), "Deployment", "web").cloned()
    });
    assert_eq!(web["class"], "modified");
    assert_eq!(web["source"], "shop");
    assert!(web["since"].is_string());
    let change = web["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "/spec/template/spec/containers/0/image")
        .unwrap_or_else(|| panic!("image change reported: {web:#}"));
    assert_eq!(change["op"], "replace");
    assert_eq!(change["desired"], "nginx:1.27");
    assert_eq!(change["live"], "nginx:1.28");
    // The patch that would restore the desired image, applicable to the live object.
    assert_eq!(
        web["patch"],
        serde_json::json!([
            // The container at position 0 is still `app`, or the patch fails.
            {"op": "test", "path": "/spec/template/spec/containers/0/name", "value": "app"},
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.27"}
        ])
    );

    // Filters.
    assert_eq!(
        daemon.drift("?kind=ConfigMap")["objects"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        daemon.drift("?namespace=shop&source=shop&class=modified")["objects"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Metrics.
    let (_, metrics) = daemon.get("/metrics");
    let labels = [
        ("source", "shop"),
        ("namespace", "shop"),
        ("kind", "Deployment"),
        ("name", "web"),
        ("class", "modified"),
    ];
    assert_eq!(
        metric_line(&metrics, "driftd_object_drift", &labels),
        Some(1.0)
    );
    assert!(
        metric_line(
            &metrics,
            "driftd_object_drift_since_timestamp_seconds",
            &labels
        )
        .unwrap()
            > 1.7e9
    );
    assert_eq!(
        metric_line(
            &metrics,
            "driftd_objects",
            &[("source", "shop"), ("class", "modified")]
        ),
        Some(1.0)
    );
    assert_eq!(
        metric_line(
            &metrics,
            "driftd_objects",
            &[("source", "shop"), ("class", "in_sync")]
        ),
        Some(4.0)
    );
    assert_eq!(
        metric_line(&metrics, "driftd_ready", &[]).or_else(|| {
            metrics
                .lines()
                .find_map(|l| l.strip_prefix("driftd_ready ").and_then(|v| v.parse().ok()))
        }),
        Some(1.0)
    );
    assert!(metrics.contains("driftd_watch_events_total{kind=\"Deployment\"}"));
    assert!(metrics.contains("driftd_desired_revision_timestamp_seconds{source=\"shop\"}"));
    assert!(metrics.contains("driftd_diff_duration_seconds_bucket"));
    assert!(metrics.contains("driftd_build_info{version="));

    // One DriftDetected Event on the Deployment.
    let detected = wait_for("DriftDetected event", T, || {
        let e = events(&sim, "DriftDetected", "web");
        (!e.is_empty()).then_some(e)
    });
    assert_eq!(detected.len(), 1, "one event per transition: {detected:#?}");
    let note = detected[0]["note"].as_str().unwrap();
    assert!(note.contains("spec.template.spec.containers"), "{note}");

    // The CLI table.
    let out = driftd(&["drift", "--server", &daemon.url]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    assert!(
        table.contains("SOURCE") && table.contains("web") && table.contains("modified"),
        "{table}"
    );
    assert!(table.contains("nginx:1.28"), "{table}");

    // Revert: resolved, and an Event says so.
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.27",
    ]);
    wait_for("web back in sync", T, || {
        find(&daemon.drift(""), "Deployment", "web")
            .is_none()
            .then_some(())
    });
    wait_for("DriftResolved event", T, || {
        (!events(&sim, "DriftResolved", "web").is_empty()).then_some(())
    });
    // The per-object series is gone once /metrics shows the revert at all: all five objects
    // counted in sync again (a failed scrape or a stale one would hide nothing).
    let metrics = wait_for("/metrics counting five objects in sync", T, || {
        let (status, metrics) = daemon.get("/metrics");
        let in_sync = [("source", "shop"), ("class", "in_sync")];
        (status == 200 && metric_line(&metrics, "driftd_objects", &in_sync) == Some(5.0))
            .then_some(metrics)
    });
    assert_eq!(metric_line(&metrics, "driftd_object_drift", &labels), None);

    // Deleted live: missing.
    sim.kubectl(&["-n", "shop", "delete", "configmap", "web-config"]);
    let cm = wait_for("web-config missing", T, || {
        find(&daemon.drift(""), "ConfigMap", "web-config").cloned()
    });
    assert_eq!(cm["class"], "missing");
    sim.kubectl(&[
        "apply",
        "-f",
        examples().join("10-config.yaml").to_str().unwrap(),
    ]);
    wait_for("web-config back", T, || {
        find(&daemon.drift(""), "ConfigMap", "web-config")
            .is_none()
            .then_some(())
    });

    // A new revision that moves the image: re-evaluated without a restart.
    let next = edited_examples(&dir.path().join("next"), |text| {
        text.replace("nginx:1.27", "nginx:1.29")
    });
    let out = commit(&db, "shop", &next);
    assert!(out.contains("revision"), "{out}");
    let web = wait_for("drift against the new revision", T, || {
        find(&daemon.drift(""), "Deployment", "web").cloned()
    });
    assert_eq!(web["changes"][0]["desired"], "nginx:1.29");
    assert_eq!(web["changes"][0]["live"], "nginx:1.27");
    assert!(web["revision"].as_i64().unwrap() >= 2);
    let since = web["since"].clone();
    // The episode is recorded once the drift has settled (its Event tells us when).
    wait_for("second DriftDetected event", T, || {
        (events(&sim, "DriftDetected", "web").len() == 2).then_some(())
    });

    // A restart keeps "drifting since".
    let mut daemon = daemon;
    assert!(daemon.proc.terminate().success(), "clean exit on SIGTERM");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let web = wait_for("drift after restart", T, || {
        find(&daemon.drift(""), "Deployment", "web").cloned()
    });
    assert_eq!(web["since"], since, "since survives a restart");
    // No new DriftDetected for the same drift after the restart. A drift that starts after
    // the restarted daemon saw web's is published after web's would have been (same settle
    // time, one publishing queue): once its Event is there, web's absence is a decision.
    let marker_before = events(&sim, "DriftDetected", "web-config").len();
    let resolved_before = events(&sim, "DriftResolved", "web-config").len();
    let marker = serde_json::json!({"data": {"LOG_LEVEL": "debug"}});
    sim.merge_patch("shop", &["configmap", "web-config"], &marker);
    wait_for("DriftDetected for the marker change", T, || {
        (events(&sim, "DriftDetected", "web-config").len() == marker_before + 1).then_some(())
    });
    assert_eq!(events(&sim, "DriftDetected", "web").len(), 2);
    sim.kubectl(&[
        "apply",
        "-f",
        examples().join("10-config.yaml").to_str().unwrap(),
    ]);
    wait_for("the marker reverted", T, || {
        (events(&sim, "DriftResolved", "web-config").len() == resolved_before + 1).then_some(())
    });
    // The restarted daemon agrees the episode is still open (one open episode for web).
    let open = |db: &std::path::Path| -> Vec<String> {
        driftd_store::Store::open(db)
            .unwrap()
            .open_episodes()
            .unwrap()
            .into_iter()
            .map(|e| e.key.name)
            .collect()
    };
    assert_eq!(open(&db), vec!["web".to_string()]);

    // Stopped, the Deployment leaves the desired state, restarted: its episode is closed.
    let mut daemon = daemon;
    assert!(daemon.proc.terminate().success());
    let without = dir.path().join("without-web");
    std::fs::create_dir(&without).unwrap();
    for name in ["00-namespace.yaml", "10-config.yaml"] {
        std::fs::copy(examples().join(name), without.join(name)).unwrap();
    }
    commit(&db, "shop", &without);
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    wait_for("the orphaned episode closed", T, || {
        open(&db).is_empty().then_some(())
    });
    assert!(find(&daemon.drift(""), "Deployment", "web").is_none());
    assert_eq!(events(&sim, "DriftDetected", "web").len(), 2);
}
