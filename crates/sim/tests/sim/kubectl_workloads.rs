//! Workload controllers driven by kubectl: StatefulSets and DaemonSets get Pods and status;
//! rollout status, scale, wait and undo behave as against a cluster.

use crate::kubectl::wait_pods;
use crate::support::{wait_for, SimProc, WEB};
use std::time::Duration;

const T: Duration = Duration::from_secs(15);

#[test]
fn stateful_sets_and_daemon_sets_get_pods_and_status() {
    let sim = SimProc::start();
    let file = sim.file(
        "wl.yaml",
        r#"apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "fluent-bit:3"}]}
"#,
    );
    sim.kubectl(&["create", "-f", &file]);
    let names = wait_for("statefulset pods", T, || {
        let pods = sim.kubectl_json(&["get", "pods", "-l", "app=db"]);
        let mut names: Vec<String> = pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        (names.len() == 2).then_some(names)
    });
    assert_eq!(names, ["db-0", "db-1"]);
    let sts = wait_for("statefulset status", T, || {
        let s = sim.kubectl_json(&["get", "statefulset", "db"]);
        (s["status"]["readyReplicas"] == 2).then_some(s)
    });
    assert_eq!(
        sts["status"]["currentRevision"],
        sts["status"]["updateRevision"]
    );
    // Claims from volumeClaimTemplates, bound like a dynamic provisioner would.
    let pvc = wait_for("bound claim", T, || {
        let pvc = sim.kubectl_json(&["get", "pvc", "data-db-0"]);
        (pvc["status"]["phase"] == "Bound").then_some(pvc)
    });
    assert_eq!(pvc["status"]["capacity"]["storage"], "1Gi");
    assert!(pvc["spec"]["volumeName"]
        .as_str()
        .unwrap()
        .starts_with("pvc-"));
    assert_eq!(
        pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"],
        "yes"
    );
    let pod = sim.kubectl_json(&["get", "pod", "db-0"]);
    assert_eq!(
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "data-db-0"
    );

    let ds = wait_for("daemonset status", T, || {
        let d = sim.kubectl_json(&["get", "daemonset", "agent"]);
        (d["status"]["numberReady"] == 1).then_some(d)
    });
    assert_eq!(ds["status"]["desiredNumberScheduled"], 1);
    let pods = sim.kubectl_json(&["get", "pods", "-l", "app=agent"]);
    assert_eq!(
        pods["items"][0]["metadata"]["ownerReferences"][0]["kind"],
        "DaemonSet"
    );

    // A template change replaces the StatefulSet's pods with the new revision.
    sim.kubectl(&["patch", "statefulset", "db", "--type", "json", "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"postgres:17"}]"#]);
    wait_for("pods on the new revision", T, || {
        let pods = sim.kubectl_json(&["get", "pods", "-l", "app=db"]);
        let items = pods["items"].as_array().unwrap();
        (items.len() == 2
            && items
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "postgres:17"))
        .then_some(())
    });
}

#[test]
fn rollout_status_scale_wait_and_undo() {
    let sim = SimProc::start();
    let file = sim.file("web.yaml", WEB);
    sim.kubectl(&["apply", "-f", &file]);
    let out = sim.kubectl(&["rollout", "status", "deployment/web", "--timeout=15s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    sim.kubectl(&["scale", "deployment", "web", "--replicas=3"]);
    wait_pods(&sim, 3, "nginx:1.25");
    let out = sim.kubectl(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=15s",
    ]);
    assert!(out.contains("condition met"), "{out}");

    sim.kubectl(&["set", "image", "deployment/web", "app=nginx:1.28"]);
    wait_pods(&sim, 3, "nginx:1.28");
    sim.kubectl(&["rollout", "undo", "deployment/web"]);
    wait_pods(&sim, 3, "nginx:1.25");
    // The first ReplicaSet is reused as revision 3, not duplicated.
    let rs = sim.kubectl_json(&["get", "replicasets"]);
    let items = rs["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    let active = items.iter().find(|r| r["spec"]["replicas"] == 3).unwrap();
    assert_eq!(
        active["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    let history = sim.kubectl(&["rollout", "history", "deployment/web"]);
    assert!(
        history.contains('2') && history.contains('3') && !history.contains("\n1 "),
        "{history}"
    );
}
