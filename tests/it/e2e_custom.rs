//! Custom resources and bare Pods end to end: the simulator stores them as kube-apiserver
//! does (CRD pruning, defaulting and list types; the default admission chain on Pods), and
//! `driftd serve` compares them by their CRD's schema and admission rules.

use crate::scaffold::*;
use serde_json::{json, Value};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string, default: small}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
                    protocol: {type: string, default: TCP}
"#;

fn widget(name: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  ports:\n  - {{name: a, port: 1}}\n  - {{name: b, port: 2}}\n---\n"
    )
}

/// A bare Pod with a volume list of its own: admission appends the token volume to it.
const POD: &str = r#"apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: default}
spec:
  containers:
  - name: sh
    image: busybox:1.36
    command: [sleep, "3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {}
"#;

fn paths(entry: &Value) -> Vec<String> {
    entry["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn custom_resources_by_their_crd_and_bare_pods_with_admission() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sim = Sim::start(dir);
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("crd.yaml"), CRD).unwrap();
    std::fs::write(
        manifests.join("widgets.yaml"),
        widget("edited") + &widget("reordered"),
    )
    .unwrap();
    std::fs::write(manifests.join("pod.yaml"), POD).unwrap();
    commit(&dir.join("driftd.db"), "app", &manifests);
    sim.kubectl(&["apply", "-f", manifests.join("crd.yaml").to_str().unwrap()]);
    // kubectl learns the new kind on a retry, as against a real cluster.
    wait_for("kubectl apply of the custom resources", T, || {
        sim.kubectl_output(&["apply", "-f", manifests.to_str().unwrap()], None)
            .status
            .success()
            .then_some(())
    });

    // What the cluster stores: the default filled in, the token volume appended.
    let edited = sim.kubectl_json(&["get", "widget", "edited", "-n", "default"]);
    assert_eq!(edited["spec"]["size"], "small", "{edited:#}");
    assert_eq!(edited["spec"]["ports"][0]["protocol"], "TCP", "{edited:#}");
    let pod = sim.kubectl_json(&["get", "pod", "debug", "-n", "default"]);
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 2, "{pod:#}");
    assert!(volumes[1]["name"]
        .as_str()
        .unwrap()
        .starts_with("kube-api-access-"));
    assert_eq!(pod["spec"]["serviceAccountName"], "default");

    // A map-list with a repeated key is refused as kube-apiserver refuses it.
    let dup = widget("dup").replace("name: b", "name: a");
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(dup.as_str()));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.ports[1]: Duplicate value"),
        "{stderr}"
    );

    let daemon = Daemon::start(&write_config(dir, ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    for (kind, name) in [
        ("Widget", "edited"),
        ("Widget", "reordered"),
        ("Pod", "debug"),
        ("CustomResourceDefinition", "widgets.example.com"),
    ] {
        let e = wait_for(&format!("{kind}/{name} in sync"), T, || {
            daemon.entry(kind, name).filter(|e| e["class"] == "in_sync")
        });
        if kind == "Widget" {
            assert_eq!(e["schema"], "crd", "{e:#}");
        } else {
            assert!(e.get("schema").is_none(), "{e:#}");
        }
    }

    // A controller reorders a map-list: not drift. Then a person edits a defaulted field:
    // drift. Both arrive through the same watch, in order.
    sim.merge_patch(
        "default",
        &["widget", "reordered"],
        &json!({"spec": {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}}),
    );
    let reordered = sim.kubectl_json(&["get", "widget", "reordered", "-n", "default"]);
    assert_eq!(reordered["spec"]["ports"][0]["name"], "b");
    sim.merge_patch(
        "default",
        &["widget", "edited"],
        &json!({"spec": {"size": "large"}}),
    );
    let e = wait_for("the hand-edited default is drift", T, || {
        daemon
            .entry("Widget", "edited")
            .filter(|e| e["class"] == "modified")
    });
    assert_eq!(paths(&e), ["/spec/size"], "{e:#}");
    assert_eq!(e["changes"][0]["desired"], "small");
    assert_eq!(e["changes"][0]["live"], "large");
    let e = daemon.entry("Widget", "reordered").unwrap();
    assert_eq!(e["class"], "in_sync", "{e:#}");
    let e = daemon.entry("Pod", "debug").unwrap();
    assert_eq!(e["class"], "in_sync", "{e:#}");
}

/// The Widget CRD of [`CRD`] with a `color` field, without or with a default.
fn colored_crd(default: Option<&str>) -> String {
    let color = match default {
        Some(d) => format!("color: {{type: string, default: {d}}}"),
        None => "color: {type: string}".to_string(),
    };
    CRD.replace(
        "size: {type: string, default: small}",
        &format!("size: {{type: string, default: small}}\n              {color}"),
    )
}

#[test]
fn a_default_a_crd_gains_shows_on_existing_objects_and_is_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let sim = Sim::start(dir);
    let before = dir.join("crd-before.yaml");
    std::fs::write(&before, colored_crd(None)).unwrap();
    sim.kubectl(&["apply", "-f", before.to_str().unwrap()]);
    let widgets = widget("plain") + &widget("painted");
    wait_for("kubectl apply of the widgets", T, || {
        sim.kubectl_output(&["apply", "-f", "-"], Some(widgets.as_str()))
            .status
            .success()
            .then_some(())
    });
    let stored = sim.kubectl_json(&["get", "widget", "plain", "-n", "default"]);
    assert!(stored["spec"].get("color").is_none(), "{stored:#}");

    // Committed: the CRD with `color` defaulting to blue, one widget leaving it to the
    // default and one asking for green.
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("crd.yaml"), colored_crd(Some("blue"))).unwrap();
    let painted = widget("painted").replace("spec:\n", "spec:\n  color: green\n");
    std::fs::write(manifests.join("widgets.yaml"), widget("plain") + &painted).unwrap();
    commit(&dir.join("driftd.db"), "app", &manifests);
    let daemon = Daemon::start(&write_config(dir, ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    // The cluster's CRD has no default yet: the committed default is missing live.
    let e = wait_for("the default the cluster lacks is drift", T, || {
        daemon
            .entry("Widget", "plain")
            .filter(|e| e["class"] == "modified")
    });
    assert_eq!(paths(&e), ["/spec/color"], "{e:#}");

    // The cluster's CRD gains the default: reads of the stored widgets show it at once,
    // with no write (same resourceVersion).
    sim.kubectl(&["apply", "-f", manifests.join("crd.yaml").to_str().unwrap()]);
    let read = sim.kubectl_json(&["get", "widget", "plain", "-n", "default"]);
    assert_eq!(read["spec"]["color"], "blue", "{read:#}");
    assert_eq!(
        read["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    wait_for("the widget left to the default is in sync", T, || {
        daemon
            .entry("Widget", "plain")
            .filter(|e| e["class"] == "in_sync")
    });
    let e = wait_for("a committed value other than the default drifts", T, || {
        daemon
            .entry("Widget", "painted")
            .filter(|e| e["class"] == "modified" && e["changes"][0]["live"] == "blue")
    });
    assert_eq!(paths(&e), ["/spec/color"], "{e:#}");
    assert_eq!(e["changes"][0]["desired"], "green");
}
