//! `driftd check` against what a cluster really returns: the fixture applied with the real
//! `kubectl` to the simulator, read back with `kubectl get -o json`, then edited by hand.

use crate::scaffold::{Sim, DRIFTD};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/check")
        .join(rel)
}

fn desired() -> PathBuf {
    fixture("in_sync/desired.yaml")
}

fn snapshot(sim: &Sim, dir: &Path) -> PathBuf {
    snapshot_of(sim, dir, "deployments,services,secrets,configmaps")
}

fn snapshot_of(sim: &Sim, dir: &Path, kinds: &str) -> PathBuf {
    // --show-managed-fields: kubectl strips managedFields otherwise, and with them attribution.
    let live = sim.kubectl(&["get", kinds, "-A", "-o", "json", "--show-managed-fields"]);
    let path = dir.join("live.json");
    std::fs::write(&path, live).unwrap();
    path
}

fn check(live: &Path) -> Output {
    check_with(&desired(), live)
}

fn check_with(desired: &Path, live: &Path) -> Output {
    Command::new(DRIFTD)
        .args(["check", "--format", "json", "--desired"])
        .arg(desired)
        .arg("--live")
        .arg(live)
        .output()
        .unwrap()
}

#[test]
fn applied_objects_are_in_sync_and_hand_edits_are_drift() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n";
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(ns));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sim.kubectl(&["apply", "-f", desired().to_str().unwrap()]);

    let o = check(&snapshot(&sim, dir.path()));
    assert_eq!(
        o.status.code(),
        Some(0),
        "freshly applied objects must be in sync:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=registry.example.com/web:9",
    ]);
    sim.kubectl(&["-n", "shop", "label", "service", "web", "extra=yes"]);
    sim.kubectl(&["delete", "configmap", "settings"]);
    sim.kubectl(&[
        "-n",
        "shop",
        "patch",
        "secret",
        "db",
        "-p",
        r#"{"stringData":{"password":"leaked?"}}"#,
    ]);
    let o = check(&snapshot(&sim, dir.path()));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let objects = report["objects"].as_array().unwrap();
    // The extra label is not set by desired: not drift. The image, the Secret value and the
    // deletion are.
    assert_eq!(objects.len(), 3, "{report:#}");
    let dep = &objects[0];
    assert_eq!(dep["kind"], "Deployment");
    let changes = dep["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{dep:#}");
    assert_eq!(changes[0]["path"], "/spec/template/spec/containers/0/image");
    assert_eq!(changes[0]["live"], "registry.example.com/web:9");
    assert_eq!(changes[0]["manager"], "kubectl-set");
    let secret = &objects[1];
    assert_eq!(secret["kind"], "Secret");
    // Reported where the manifest sets it; the manager comes from the stored data key.
    assert_eq!(secret["changes"][0]["path"], "/stringData/password");
    assert_eq!(secret["changes"][0]["manager"], "kubectl-patch");
    let text = String::from_utf8_lossy(&o.stdout);
    for plain in ["hunter2", "leaked?", "aHVudGVyMg", "bGVha2VkPw"] {
        assert!(!text.contains(plain), "{plain} leaked: {text}");
    }
    assert_eq!(
        (objects[2]["kind"].as_str(), objects[2]["class"].as_str()),
        (Some("ConfigMap"), Some("missing"))
    );
}

#[test]
fn heavily_defaulted_kinds_are_in_sync_after_apply() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let desired = fixture("kinds/desired.yaml");
    sim.kubectl(&["apply", "-f", desired.to_str().unwrap()]);
    let kinds = "namespaces,statefulsets,daemonsets,cronjobs,jobs,pvc,hpa,clusterroles,ingresses";
    let o = check_with(&desired, &snapshot_of(&sim, dir.path(), kinds));
    assert_eq!(
        o.status.code(),
        Some(0),
        "server defaults, canonical quantities and Job labels are not drift:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    // The HPA in the input owns the StatefulSet's replicas; a schedule edit is drift.
    sim.kubectl(&["-n", "data", "scale", "statefulset/db", "--replicas=3"]);
    sim.kubectl(&[
        "-n",
        "data",
        "patch",
        "cronjob",
        "backup",
        "-p",
        r#"{"spec":{"schedule":"0 4 * * *"}}"#,
    ]);
    let o = check_with(&desired, &snapshot_of(&sim, dir.path(), kinds));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1, "{report:#}");
    assert_eq!(objects[0]["kind"], "CronJob");
    assert_eq!(objects[0]["changes"][0]["path"], "/spec/schedule");
    assert_eq!(objects[0]["changes"][0]["live"], "0 4 * * *");
    assert_eq!(objects[0]["changes"][0]["manager"], "kubectl-patch");
}

/// The paths of an object's changes in a `check --format json` report, sorted.
fn change_paths(object: &Value) -> Vec<String> {
    let mut paths: Vec<String> = object["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    paths
}

#[test]
fn hand_edits_of_defaulted_fields_and_atomic_lists_are_drift() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let desired = fixture("kinds/desired.yaml");
    sim.kubectl(&["apply", "-f", desired.to_str().unwrap()]);
    let kinds = "namespaces,statefulsets,daemonsets,cronjobs,jobs,pvc,hpa,clusterroles,ingresses";

    // None of these fields is in the manifest; each hand edit changes a server default.
    sim.kubectl(&[
        "-n",
        "data",
        "patch",
        "cronjob",
        "backup",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ]);
    // Tolerations are atomic: the committed `{operator: Exists}` narrowed to one taint.
    sim.kubectl(&[
        "-n",
        "data",
        "patch",
        "daemonset",
        "agent",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/template/spec/tolerations/0/key","value":"dedicated"},
            {"op":"add","path":"/spec/template/spec/tolerations/0/effect","value":"NoSchedule"}]"#,
    ]);
    sim.kubectl(&[
        "-n",
        "data",
        "patch",
        "daemonset",
        "agent",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"agent","imagePullPolicy":"Always"}]}}}}"#,
    ]);
    let o = check_with(&desired, &snapshot_of(&sim, dir.path(), kinds));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let objects = report["objects"].as_array().unwrap();
    let by_kind = |kind: &str| {
        objects
            .iter()
            .find(|o| o["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {report:#}"))
    };
    assert_eq!(objects.len(), 2, "{report:#}");
    let cron = by_kind("CronJob");
    assert_eq!(change_paths(cron), ["/spec/suspend"]);
    assert_eq!(cron["changes"][0]["desired"], false);
    assert_eq!(cron["changes"][0]["live"], true);
    assert_eq!(cron["changes"][0]["op"], "replace");
    let ds = by_kind("DaemonSet");
    assert_eq!(
        change_paths(ds),
        [
            "/spec/template/spec/containers/0/imagePullPolicy",
            "/spec/template/spec/tolerations"
        ]
    );
    let tolerations = ds["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == "/spec/template/spec/tolerations")
        .unwrap();
    assert_eq!(
        tolerations["desired"],
        serde_json::json!([{"operator": "Exists"}])
    );
    assert_eq!(tolerations["live"][0]["key"], "dedicated");
}

#[test]
fn service_type_and_replicas_left_to_defaults_are_committed() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n";
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(ns));
    assert!(out.status.success());
    // The Deployment leaves replicas to the default (1); no HPA targets it.
    let manifest = dir.path().join("app.yaml");
    let text = std::fs::read_to_string(desired())
        .unwrap()
        .replace("  replicas: 2\n", "");
    std::fs::write(&manifest, text).unwrap();
    sim.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    assert_eq!(
        check_with(&manifest, &snapshot(&sim, dir.path()))
            .status
            .code(),
        Some(0)
    );

    sim.kubectl(&["-n", "shop", "scale", "deployment/web", "--replicas=4"]);
    sim.kubectl(&[
        "-n",
        "shop",
        "patch",
        "service",
        "web",
        "-p",
        r#"{"spec":{"type":"NodePort"}}"#,
    ]);
    let o = check_with(&manifest, &snapshot(&sim, dir.path()));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2, "{report:#}");
    assert_eq!(objects[0]["kind"], "Deployment");
    assert_eq!(change_paths(&objects[0]), ["/spec/replicas"]);
    assert_eq!(objects[0]["changes"][0]["desired"], 1);
    assert_eq!(objects[0]["changes"][0]["live"], 4);
    // The node port and traffic policy that come with NodePort are not separate findings.
    assert_eq!(objects[1]["kind"], "Service");
    assert_eq!(change_paths(&objects[1]), ["/spec/type"]);
    assert_eq!(objects[1]["changes"][0]["desired"], "ClusterIP");
}
