//! Server-side apply with `dryRun=All` and the modelled mutating webhooks, through the real
//! kubectl (`kubectl apply --server-side --dry-run=server -o json`) and the kube client
//! (`PatchParams::apply(..).dry_run()`): the answer is the object as it would be stored
//! (defaults, webhook, managedFields), and nothing is stored, no resourceVersion taken.

use crate::support::SimProc;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{json, Value};

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: REPLICAS
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.25
"#;

/// The container names, sorted (a strategic merge puts items new to a keyed list first).
fn names(d: &Value) -> Vec<String> {
    let mut names: Vec<String> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn a_server_dry_run_answers_what_would_be_stored_and_stores_nothing() {
    let sim = SimProc::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(sim.admin(
        "webhooks",
        json!({"name": "inject.example.com", "group": "apps", "kind": "Deployment",
            "patch": {"spec": {"template": {"spec": {"containers": [
                {"name": "log-shipper", "image": "example.com/log-shipper:1"}]}}}}}),
    ));
    let two = sim.file("two.yaml", &DEPLOYMENT.replace("REPLICAS", "2"));
    let three = sim.file("three.yaml", &DEPLOYMENT.replace("REPLICAS", "3"));
    let dry = |file: &str| -> Value {
        serde_json::from_str(&sim.kubectl(&[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            file,
        ]))
        .unwrap()
    };

    // A dry-run create: defaulted and mutated, not stored.
    let answer = dry(&two);
    assert_eq!(names(&answer), ["app", "log-shipper"]);
    let app = answer["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "app")
        .unwrap();
    assert_eq!(app["imagePullPolicy"], "IfNotPresent", "defaulted");
    let err = sim.kubectl_err(&["get", "deployment", "web"]);
    assert!(err.contains("not found"), "{err}");

    sim.kubectl(&["apply", "--server-side", "-f", &two]);
    let stored = sim.kubectl_json(&["get", "deployment", "web"]);
    assert_eq!(names(&stored), ["app", "log-shipper"]);
    let rv = stored["metadata"]["resourceVersion"].clone();

    // A dry-run update: the answer for the stored version, nothing written (the
    // resourceVersion, which every write and watch event takes, stays).
    let answer = dry(&three);
    assert_eq!(answer["spec"]["replicas"], 3);
    assert_eq!(names(&answer), ["app", "log-shipper"], "merged by name");
    assert_eq!(answer["metadata"]["resourceVersion"], rv);
    let after = sim.kubectl_json(&["get", "deployment", "web"]);
    assert_eq!(after["spec"]["replicas"], 2);
    assert_eq!(after["metadata"]["resourceVersion"], rv);

    // The kube client's dry-run apply (what driftd sends): field manager driftd, forced.
    rt.block_on(async {
        let api: Api<Deployment> = Api::namespaced(sim.client().await, "default");
        let manifest: Value = serde_saphyr::from_str(&DEPLOYMENT.replace("REPLICAS", "3")).unwrap();
        let answer = api
            .patch(
                "web",
                &PatchParams::apply("driftd").force().dry_run(),
                &Patch::Apply(&manifest),
            )
            .await
            .unwrap();
        let answer = serde_json::to_value(answer).unwrap();
        assert_eq!(answer["spec"]["replicas"], 3);
        assert_eq!(names(&answer), ["app", "log-shipper"]);
        assert!(answer["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["manager"] == "driftd" && m["operation"] == "Apply"));
        let now: Value = serde_json::to_value(api.get("web").await.unwrap()).unwrap();
        assert_eq!(now["metadata"]["resourceVersion"], rv);
    });
}
