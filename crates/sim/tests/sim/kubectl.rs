//! The simulator driven by the real kubectl, as a user would: create, get (table and JSON),
//! patch (merge, JSON, strategic), set image, edit, apply, replace, delete; and the objects
//! the simulator then holds (server metadata, controller-made Pods, managedFields).

use crate::support::{wait_for, SimProc, WEB};
use serde_json::{json, Value};
use std::time::Duration;

const T: Duration = Duration::from_secs(15);

fn managers(obj: &Value) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap().to_string())
        .collect()
}

fn manager<'a>(obj: &'a Value, name: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == name && m.get("subresource").is_none())
        .unwrap_or_else(|| panic!("no managedFields entry for {name}: {:?}", managers(obj)))
}

/// Waits until the Deployment's Pods (found through their ReplicaSet) match `image` and count.
pub(crate) fn wait_pods(sim: &SimProc, replicas: usize, image: &str) -> Vec<Value> {
    wait_for(&format!("{replicas} running pods with {image}"), T, || {
        let pods = sim.kubectl_json(&["get", "pods", "-l", "app=web"]);
        let items = pods["items"].as_array().unwrap().clone();
        let ok = items.len() == replicas
            && items.iter().all(|p| {
                p["status"]["phase"] == "Running" && p["spec"]["containers"][0]["image"] == image
            });
        ok.then_some(items)
    })
}

#[test]
fn create_get_patch_and_delete_a_deployment() {
    let sim = SimProc::start();
    let file = sim.file("web.yaml", WEB);
    let out = sim.kubectl(&["create", "-f", &file]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    assert!(out.contains("service/web created"), "{out}");

    let d = sim.kubectl_json(&["get", "deployment", "web"]);
    assert_eq!(d["metadata"]["generation"], 1);
    assert!(d["metadata"]["uid"].as_str().unwrap().len() == 36);
    assert!(d["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .is_ok());
    assert!(d["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));

    // The controller made a ReplicaSet and Running Pods owned through it.
    let pods = wait_pods(&sim, 2, "nginx:1.25");
    let rs = sim.kubectl_json(&["get", "replicasets", "-l", "app=web"]);
    let rs = &rs["items"][0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap();
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    assert_eq!(
        rs["metadata"]["ownerReferences"][0]["uid"],
        d["metadata"]["uid"]
    );
    for p in &pods {
        let name = p["metadata"]["name"].as_str().unwrap();
        let suffix = name
            .strip_prefix(&format!("web-{hash}-"))
            .expect("pod named after its ReplicaSet");
        assert_eq!(suffix.len(), 5);
        assert_eq!(
            p["metadata"]["ownerReferences"][0]["name"],
            rs["metadata"]["name"]
        );
        assert_eq!(p["metadata"]["labels"]["pod-template-hash"], hash);
        assert!(p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True"));
        assert!(p["status"]["startTime"].is_string());
    }
    let d = wait_for("deployment status", T, || {
        let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
        (d["status"]["readyReplicas"] == 2).then_some(d)
    });
    assert_eq!(d["status"]["observedGeneration"], 1);
    assert_eq!(d["status"]["updatedReplicas"], 2);
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    let status_writer = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["subresource"] == "status")
        .expect("status written via the status subresource");
    assert_eq!(status_writer["manager"], "kube-controller-manager");

    // Default table output.
    let table = sim.kubectl(&["get", "deployments"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("web ") && l.contains("2/2")),
        "{table}"
    );

    // Merge patch: generation moves, manager recorded, ownership of replicas moves.
    sim.kubectl(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
    assert_eq!(d["metadata"]["generation"], 2);
    assert_eq!(
        manager(&d, "kubectl-patch")["fieldsV1"]["f:spec"],
        json!({"f:replicas": {}})
    );
    assert!(manager(&d, "kubectl-create")["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_none());
    wait_pods(&sim, 3, "nginx:1.25");

    // JSON patch of the template: a new ReplicaSet (revision 2) replaces the pods.
    sim.kubectl(&["patch", "deployment", "web", "--type", "json", "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]"#]);
    wait_pods(&sim, 3, "nginx:1.27");
    wait_for("revision 2", T, || {
        let d = sim.kubectl_json(&["get", "deployment", "web"]);
        (d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2").then_some(())
    });
    let rs = sim.kubectl_json(&["get", "replicasets"]);
    assert_eq!(
        rs["items"].as_array().unwrap().len(),
        2,
        "old ReplicaSet kept, scaled to 0"
    );

    // A JSON patch whose test fails changes nothing.
    let err = sim.kubectl_err(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":9}]"#,
    ]);
    assert!(err.contains("The request is invalid"), "{err}");
    assert_eq!(
        sim.kubectl_json(&["get", "deployment", "web"])["spec"]["replicas"],
        3
    );

    let out = sim.kubectl(&["delete", "deployment", "web"]);
    assert!(out.contains(r#"deployment.apps "web" deleted"#), "{out}");
    wait_for("dependents garbage-collected", T, || {
        let pods = sim.kubectl_json(&["get", "pods"]);
        let rs = sim.kubectl_json(&["get", "replicasets"]);
        (pods["items"].as_array().unwrap().is_empty() && rs["items"].as_array().unwrap().is_empty())
            .then_some(())
    });
}

#[test]
fn errors_read_like_kube_apiserver() {
    let sim = SimProc::start();
    let err = sim.kubectl_err(&["get", "deployment", "nope"]);
    assert!(
        err.contains(r#"Error from server (NotFound): deployments.apps "nope" not found"#),
        "{err}"
    );

    let file = sim.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ghost}\ndata: {k: v}\n",
    );
    let err = sim.kubectl_err(&["create", "-f", &file]);
    assert!(err.contains(r#"namespaces "ghost" not found"#), "{err}");

    let file = sim.file(
        "cm2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
    );
    sim.kubectl(&["create", "-f", &file]);
    let err = sim.kubectl_err(&["create", "-f", &file]);
    assert!(
        err.contains(r#"Error from server (AlreadyExists)"#)
            && err.contains(r#"configmaps "a" already exists"#),
        "{err}"
    );

    let file = sim.file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n",
    );
    let err = sim.kubectl_err(&["create", "-f", &file]);
    assert!(
        err.contains(
            r#"ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name""#
        ),
        "{err}"
    );

    let bad = WEB.split("---").next().unwrap().replace(
        "    metadata:\n      labels: {app: web}",
        "    metadata:\n      labels: {app: other}",
    );
    let file = sim.file("bad-deploy.yaml", &bad);
    let err = sim.kubectl_err(&["create", "-f", &file]);
    assert!(
        err.contains(r#"The Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: `selector` does not match template `labels`"#),
        "{err}"
    );

    let err = sim.kubectl_err(&["delete", "namespace", "default"]);
    assert!(err.contains("this namespace may not be deleted"), "{err}");
}

#[test]
fn replace_updates_and_refuses_stale_versions() {
    let sim = SimProc::start();
    let file = sim.file("web.yaml", WEB);
    sim.kubectl(&["create", "-f", &file]);
    let cm = sim.kubectl_json(&["get", "configmap", "settings"]);
    let rv = cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    let mut edited = cm.clone();
    edited["data"]["color"] = json!("green");
    let path = sim.file("cm.json", &edited.to_string());
    sim.kubectl(&["replace", "-f", &path]);
    let now = sim.kubectl_json(&["get", "configmap", "settings", "--show-managed-fields"]);
    assert_eq!(now["data"]["color"], "green");
    assert_ne!(now["metadata"]["resourceVersion"], rv);
    assert_eq!(
        manager(&now, "kubectl-replace")["fieldsV1"],
        json!({"f:data": {"f:color": {}}})
    );

    // The same file again carries the old resourceVersion: 409 Conflict.
    let err = sim.kubectl_err(&["replace", "-f", &path]);
    assert!(err.contains("Operation cannot be fulfilled on configmaps \"settings\": the object has been modified"), "{err}");

    sim.kubectl(&["delete", "-f", &file]);
    let err = sim.kubectl_err(&["get", "configmap", "settings"]);
    assert!(err.contains("NotFound"), "{err}");
}

#[test]
fn custom_resource_definitions_make_kinds_servable() {
    let sim = SimProc::start();
    let crd = sim.file(
        "crd.yaml",
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"#,
    );
    sim.kubectl(&["create", "-f", &crd]);
    let w = sim.file(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n",
    );
    wait_for("widget kind servable", T, || {
        sim.kubectl_output(&["create", "-f", &w], &[])
            .status
            .success()
            .then_some(())
    });
    // Legacy discovery (kubectl falls back from aggregated discovery) shows the new kind.
    let resources = sim.kubectl(&["api-resources", "--api-group=example.com"]);
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("widgets") && l.contains("wd") && l.contains("Widget")),
        "{resources}"
    );
    let table = sim.kubectl(&["get", "widgets"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SIZE", "AGE"], "{table}");
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .take(2)
            .eq(["w1", "3"]),
        "{table}"
    );
    let got = sim.kubectl_json(&["get", "wd", "w1"]);
    assert_eq!(got["spec"]["size"], 3);
    assert_eq!(got["metadata"]["generation"], 1);

    // Custom resources take merge patches but not strategic ones (415), like kube-apiserver.
    sim.kubectl(&[
        "patch",
        "widget",
        "w1",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":4}}"#,
    ]);
    assert_eq!(
        sim.kubectl_json(&["get", "widget", "w1"])["metadata"]["generation"],
        2
    );
    let err = sim.kubectl_err(&[
        "patch",
        "widget",
        "w1",
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"size":5}}"#,
    ]);
    assert!(
        err.contains("UnsupportedMediaType") || err.contains("unknown format"),
        "{err}"
    );

    sim.kubectl(&["delete", "crd", "widgets.example.com"]);
    let err = sim.kubectl_err(&["get", "widgets.example.com"]);
    assert!(
        err.contains("doesn't have a resource type") || err.contains("NotFound"),
        "{err}"
    );
}

#[test]
fn events_of_both_apis_are_listed() {
    let sim = SimProc::start();
    let ev = sim.file(
        "ev.yaml",
        r#"apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web.1, namespace: default}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: driftd
reportingInstance: driftd-1
action: Drift
reason: Drifted
type: Warning
note: live object differs from desired state
regarding: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default}
"#,
    );
    sim.kubectl(&["create", "-f", &ev]);
    let listed = sim.kubectl(&["get", "events.v1.events.k8s.io"]);
    let header: Vec<&str> = listed.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert!(
        listed.contains("Drifted") && listed.contains("deployment/web"),
        "{listed}"
    );
    let got = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "web.1"]);
    assert_eq!(got["reason"], "Drifted");
    // kube-runtime's Recorder bumps a series with a merge patch.
    sim.kubectl(&[
        "patch",
        "events.v1.events.k8s.io",
        "web.1",
        "--type",
        "merge",
        "-p",
        r#"{"series":{"count":2,"lastObservedTime":"2026-01-01T00:01:00.000000Z"}}"#,
    ]);
    let got = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "web.1"]);
    assert_eq!(got["series"]["count"], 2);

    // One storage, two shapes: the same Event read through core v1.
    let core = sim.kubectl_json(&["get", "events", "web.1"]);
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["involvedObject"]["kind"], "Deployment");
    assert_eq!(core["message"], "live object differs from desired state");
    assert_eq!(core["reportingComponent"], "driftd");

    // The controllers report their work as Events, which `kubectl describe` finds.
    let file = sim.file("web.yaml", WEB);
    sim.kubectl(&["create", "-f", &file]);
    let described = wait_for("ScalingReplicaSet event", T, || {
        let out = sim.kubectl(&["describe", "deployment", "web"]);
        out.contains("ScalingReplicaSet").then_some(out)
    });
    assert!(
        described.contains("Scaled up replica set web-"),
        "{described}"
    );
    let rs_events = sim.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=ReplicaSet,reason=SuccessfulCreate",
    ]);
    assert!(rs_events.contains("Created pod: web-"), "{rs_events}");
    let pod = sim.kubectl(&["describe", "pods", "-l", "app=web"]);
    assert!(
        pod.contains("default-scheduler") && pod.contains("Started container app"),
        "{pod}"
    );
}

#[test]
fn apply_set_image_strategic_patch_and_edit() {
    let sim = SimProc::start();
    let file = sim.file("web.yaml", WEB);
    sim.kubectl(&["apply", "-f", &file]);
    // Second apply after editing the manifest: new image, one env var dropped, one added.
    let edited = WEB.replace("nginx:1.25", "nginx:1.26").replace(
        "        - {name: MODE, value: prod}\n",
        "        - {name: LEVEL, value: debug}\n",
    );
    let file = sim.file("web.yaml", &edited);
    let out = sim.kubectl(&["apply", "-f", &file]);
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    assert!(out.contains("service/web unchanged"), "{out}");
    let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:1.26");
    assert_eq!(c["env"], json!([{"name": "LEVEL", "value": "debug"}]));
    assert!(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    let csa = manager(&d, "kubectl-client-side-apply");
    let key = r#"k:{"name":"app"}"#;
    assert!(
        csa["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][key]["f:image"]
            .is_object()
    );
    assert_eq!(d["metadata"]["generation"], 2);

    // Server-side defaults, as kube-apiserver fills them in.
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(
        c["resources"]["requests"]["cpu"], "1",
        "1000m is stored canonically"
    );
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    let svc = sim.kubectl_json(&["get", "service", "web"]);
    assert!(svc["spec"]["clusterIP"]
        .as_str()
        .unwrap()
        .starts_with("10."));
    assert_eq!(svc["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
    let secret = sim.kubectl_json(&["get", "secret", "creds"]);
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert!(secret.get("stringData").is_none());

    // kubectl set image: a strategic merge patch, recorded as kubectl-set.
    sim.kubectl(&["set", "image", "deployment/web", "app=nginx:1.26.1"]);
    wait_pods(&sim, 2, "nginx:1.26.1");
    let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
    let set = manager(&d, "kubectl-set");
    assert_eq!(
        set["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][key],
        json!({"f:image": {}})
    );

    // Default `kubectl patch` is strategic: a keyed list item merges instead of replacing.
    sim.kubectl(&["patch", "deployment", "web", "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"EXTRA","value":"1"}]}]}}}}"#]);
    let d = sim.kubectl_json(&["get", "deployment", "web"]);
    let env = &d["spec"]["template"]["spec"]["containers"][0]["env"];
    let names: Vec<&str> = env
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"EXTRA") && names.contains(&"LEVEL"),
        "{env}"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26.1"
    );

    // kubectl edit with an editor that bumps the replicas.
    let editor = sim.file(
        "edit.sh",
        "#!/bin/sh\nsed -i 's/^  replicas: 2$/  replicas: 4/' \"$1\"\n",
    );
    std::process::Command::new("chmod")
        .args(["+x", &editor])
        .status()
        .unwrap();
    let out = sim.kubectl_output(
        &["edit", "deployment", "web"],
        &[("EDITOR", &editor), ("KUBE_EDITOR", &editor)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(
        manager(&d, "kubectl-edit")["fieldsV1"]["f:spec"],
        json!({"f:replicas": {}})
    );
    wait_pods(&sim, 4, "nginx:1.26.1");
}

#[test]
fn generator_commands_sending_protobuf_work_for_simple_kinds() {
    let sim = SimProc::start();
    sim.kubectl(&["create", "namespace", "team-a"]);
    sim.kubectl(&[
        "create",
        "configmap",
        "cfg",
        "-n",
        "team-a",
        "--from-literal=color=blue",
    ]);
    sim.kubectl(&[
        "create",
        "secret",
        "generic",
        "pw",
        "-n",
        "team-a",
        "--from-literal=pw=s3cret",
    ]);
    // Like kube-controller-manager, the simulator fills a new namespace with its system objects.
    wait_for("default ServiceAccount and kube-root-ca.crt", T, || {
        let sa = sim.kubectl_output(&["get", "serviceaccount", "default", "-n", "team-a"], &[]);
        let cm = sim.kubectl_output(
            &["get", "configmap", "kube-root-ca.crt", "-n", "team-a"],
            &[],
        );
        (sa.status.success() && cm.status.success()).then_some(())
    });
    let ns = sim.kubectl_json(&["get", "namespace", "team-a"]);
    assert_eq!(ns["status"]["phase"], "Active");
    assert!(ns["metadata"].get("generateName").is_none());
    let cm = sim.kubectl_json(&["get", "configmap", "cfg", "-n", "team-a"]);
    assert_eq!(cm["data"], json!({"color": "blue"}));
    let secret = sim.kubectl_json(&["get", "secret", "pw", "-n", "team-a"]);
    assert_eq!(secret["data"]["pw"], "czNjcmV0");
    assert_eq!(secret["type"], "Opaque");
    // Kinds whose protobuf form is not decoded get a clear 415 instead of a wrong object.
    let err = sim.kubectl_err(&["create", "deployment", "d", "--image=nginx"]);
    assert!(err.contains("send JSON"), "{err}");
}

#[test]
fn get_watch_prints_table_rows_as_changes_happen() {
    use std::io::{BufRead, BufReader};
    let sim = SimProc::start();
    let file = sim.file("web.yaml", WEB);
    sim.kubectl(&["apply", "-f", &file]);
    wait_pods(&sim, 2, "nginx:1.25");
    let mut child = std::process::Command::new(crate::support::KUBECTL)
        .args(["get", "deployments", "-w"])
        .env("KUBECONFIG", &sim.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let header = rx.recv_timeout(T).unwrap();
    assert!(
        header.starts_with("NAME") && header.contains("UP-TO-DATE"),
        "{header}"
    );
    assert!(rx.recv_timeout(T).unwrap().contains("2/2"));
    sim.kubectl(&["scale", "deployment", "web", "--replicas=3"]);
    let mut seen = Vec::new();
    while !seen.last().is_some_and(|l: &String| l.contains("3/3")) {
        seen.push(
            rx.recv_timeout(T)
                .unwrap_or_else(|_| panic!("no 3/3 row; saw {seen:?}")),
        );
    }
    assert!(seen.iter().all(|l| l.starts_with("web ")), "{seen:?}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn server_side_apply_owns_fields_conflicts_and_forces() {
    let sim = SimProc::start();
    let file = sim.file("web.yaml", WEB);
    let out = sim.kubectl(&["apply", "--server-side", "-f", &file]);
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
    let entry = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl" && m["operation"] == "Apply")
        .expect("Apply entry");
    let key = r#"k:{"name":"app"}"#;
    let fields = &entry["fieldsV1"]["f:spec"];
    assert_eq!(fields["f:replicas"], json!({}));
    assert!(fields["f:template"]["f:spec"]["f:containers"][key]["f:image"].is_object());
    // Defaults applied by the server are not the applier's.
    assert!(fields["f:template"]["f:spec"]["f:containers"][key]
        .get("f:imagePullPolicy")
        .is_none());

    // Another manager takes replicas; re-applying a different value conflicts (409).
    sim.kubectl(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"replicas":5}}"#,
    ]);
    let changed = WEB.replace("nginx:1.25", "nginx:1.26");
    let file = sim.file("web.yaml", &changed);
    let err = sim.kubectl_err(&["apply", "--server-side", "-f", &file]);
    assert!(err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1: .spec.replicas"#), "{err}");
    let d = sim.kubectl_json(&["get", "deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 5, "a refused apply changes nothing");

    sim.kubectl(&["apply", "--server-side", "--force-conflicts", "-f", &file]);
    let d = sim.kubectl_json(&["get", "deployment", "web", "--show-managed-fields"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert!(
        managers(&d).iter().all(|m| m != "kubectl-patch"),
        "forced fields leave the old manager"
    );

    // Dropping a field from the configuration removes it from the object.
    let without_env = changed.replace("        env:\n        - {name: MODE, value: prod}\n", "");
    let file = sim.file("web.yaml", &without_env);
    sim.kubectl(&["apply", "--server-side", "-f", &file]);
    let d = sim.kubectl_json(&["get", "deployment", "web"]);
    assert!(
        d["spec"]["template"]["spec"]["containers"][0]
            .get("env")
            .is_none(),
        "{d}"
    );
}

#[test]
fn jobs_run_pods_to_completion() {
    let sim = SimProc::start();
    let file = sim.file(
        "job.yaml",
        r#"apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "busybox:1.36", command: [sh, -c, "true"]}]
"#,
    );
    sim.kubectl(&["create", "-f", &file]);
    let out = sim.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/migrate",
        "--timeout=15s",
    ]);
    assert!(out.contains("condition met"), "{out}");
    let job = sim.kubectl_json(&["get", "job", "migrate"]);
    assert_eq!(job["status"]["succeeded"], 2);
    assert!(job["status"]["completionTime"].is_string());
    let pods = sim.kubectl_json(&["get", "pods"]);
    let phases: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["ownerReferences"][0]["kind"] == "Job")
        .map(|p| p["status"]["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["Succeeded", "Succeeded"]);
}
