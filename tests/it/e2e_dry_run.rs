//! `compare = "dry-run"` end to end: the simulator models a mutating webhook (a sidecar
//! injector registered through `/_sim/webhooks`); a source compared by server-side dry run
//! finds the mutated Deployment in sync where the static model reports the sidecar, still
//! reports a hand edit, and reports a manifest the server refuses as `rejected`.

use crate::scaffold::*;
use serde_json::json;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn deployment(name: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
---
"#
    )
}

/// A ConfigMap in a namespace that does not exist: the server refuses it.
const ORPHAN: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: orphan, namespace: nowhere}\ndata: {k: v}\n";

#[test]
fn a_dry_run_source_is_in_sync_with_a_webhooks_changes_and_still_sees_hand_edits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sim = Sim::start(dir);
    sim.admin(
        "POST",
        "webhooks",
        json!({"name": "inject.example.com", "group": "apps", "kind": "Deployment",
            "patch": {"spec": {"template": {"spec": {"containers": [
                {"name": "log-shipper", "image": "example.com/log-shipper:1"}]}}}}}),
    );
    let shop = dir.join("shop");
    let plain = dir.join("plain");
    for (d, text) in [
        (&shop, deployment("web") + ORPHAN),
        (&plain, deployment("api")),
    ] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("objects.yaml"), text).unwrap();
    }
    let db = dir.join("driftd.db");
    commit(&db, "shop", &shop);
    commit(&db, "plain", &plain);
    let both = deployment("web") + &deployment("api");
    sim.kubectl_output(&["apply", "-f", "-"], Some(both.as_str()));
    // The injected container's live index (a strategic merge puts new items first).
    let sidecar_at = |name: &str| {
        let d = sim.kubectl_json(&["get", "deployment", name, "-n", "default"]);
        d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c["name"] == "log-shipper")
            .unwrap_or_else(|| panic!("the webhook did not run: {d:#}"))
    };
    let app_at = 1 - sidecar_at("web");
    let api_sidecar = sidecar_at("api");

    let config = write_config(
        dir,
        "[[sources]]\nname = \"shop\"\ncompare = \"dry-run\"\n[dry_run]\nrefresh_seconds = 5\nmax_per_second = 20\n",
    );
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let e = wait_for("web in sync against the dry run", T, || {
        daemon
            .entry("Deployment", "web")
            .filter(|e| e["class"] == "in_sync")
    });
    assert_eq!(e["dry_run"]["state"], "expected", "{e:#}");
    // The static model of the other source reports the injected container.
    let e = wait_for("api drifts by the static model", T, || {
        daemon
            .entry("Deployment", "api")
            .filter(|e| e["class"] == "modified")
    });
    assert_eq!(
        e["changes"][0]["path"],
        format!("/spec/template/spec/containers/{api_sidecar}"),
        "{e:#}"
    );
    assert!(e.get("dry_run").is_none());
    // The server refuses the ConfigMap: a finding with its message, not drift.
    let e = wait_for("the refused manifest is rejected", T, || {
        daemon
            .entry("ConfigMap", "orphan")
            .filter(|e| e["class"] == "rejected")
    });
    let message = e["dry_run"]["message"].as_str().unwrap();
    assert!(message.contains("nowhere"), "{e:#}");

    // A hand edit of a field the manifest sets is still drift.
    sim.kubectl(&[
        "-n",
        "default",
        "set",
        "image",
        "deployment/web",
        "app=nginx:hand",
    ]);
    let e = wait_for("the hand-set image is drift", T, || {
        daemon
            .entry("Deployment", "web")
            .filter(|e| e["class"] == "modified")
    });
    // The path points into the answer, whose containers are in live order.
    assert_eq!(
        e["changes"][0]["path"],
        format!("/spec/template/spec/containers/{app_at}/image"),
        "{e:#}"
    );
    assert_eq!(e["changes"][0]["desired"], "nginx:1.25");
    assert_eq!(e["changes"][0]["live"], "nginx:hand");
    assert_eq!(e["changes"].as_array().unwrap().len(), 1, "{e:#}");
    let answers = daemon
        .sample("driftd_dry_runs_total{outcome=\"expected\"}")
        .unwrap_or(0.0);
    assert!(answers >= 2.0, "{answers}");
    assert!(
        daemon
            .sample("driftd_dry_runs_total{outcome=\"rejected\"}")
            .unwrap_or(0.0)
            >= 1.0
    );
}
