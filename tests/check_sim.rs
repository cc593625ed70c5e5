//! `driftd check` against what a cluster really returns: the fixture applied with the real
//! `kubectl` to the simulator, read back with `kubectl get -o json`, then edited by hand.

mod common;

use common::{Sim, DRIFTD};
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
