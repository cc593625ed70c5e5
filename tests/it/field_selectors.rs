//! Field selectors with the real kubectl against the simulator, answered as kube-apiserver
//! answers them: core/v1 Events select on `involvedObject.*` and refuse events.k8s.io's
//! `regarding.*` (and the reverse) with 400 BadRequest; a kind without field labels of its
//! own accepts only `metadata.name` and `metadata.namespace`. The server's messages come
//! from kube-apiserver's conversions (`pkg/apis/core/v1/conversion.go`,
//! `pkg/apis/events/v1/conversion.go`, `runtime.DefaultMetaV1FieldSelectorConversion`);
//! kubectl wraps them in "Unable to find ... that match label selector ..., field selector
//! ...:" itself.

use crate::scaffold::*;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

fn refused(sim: &Sim, args: &[&str]) -> String {
    let out = sim.kubectl_output(args, None);
    assert!(!out.status.success(), "kubectl {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn kubectl_gets_kube_apiservers_answer_to_unsupported_field_selectors() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let web = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: app, image: nginx:1.27}]\n";
    let file = dir.path().join("web.yaml");
    std::fs::write(&file, web).unwrap();
    sim.kubectl(&["apply", "-f", file.to_str().unwrap()]);
    // The deployment controller's Event about `web`, through both APIs.
    let core = wait_for("the controller's Event", T, || {
        let out = sim.kubectl(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=Deployment,involvedObject.name=web",
        ]);
        out.contains("ScalingReplicaSet").then_some(out)
    });
    assert!(core.contains("deployment/web"), "{core}");
    let events = sim.kubectl(&[
        "get",
        "events.v1.events.k8s.io",
        "--field-selector",
        "regarding.name=web,reason=ScalingReplicaSet",
    ]);
    assert!(events.contains("ScalingReplicaSet"), "{events}");

    assert_eq!(
        refused(
            &sim,
            &["get", "events", "--field-selector", "regarding.name=web"]
        ),
        "Error from server (BadRequest): Unable to find \"/v1, Resource=events\" that match \
         label selector \"\", field selector \"regarding.name=web\": field label not \
         supported: regarding.name\n"
    );
    assert_eq!(
        refused(
            &sim,
            &[
                "get",
                "events.v1.events.k8s.io",
                "--field-selector",
                "involvedObject.name=web"
            ]
        ),
        "Error from server (BadRequest): Unable to find \"events.k8s.io/v1, Resource=events\" \
         that match label selector \"\", field selector \"involvedObject.name=web\": field \
         label not supported: involvedObject.name\n"
    );
    assert_eq!(
        refused(
            &sim,
            &["get", "configmaps", "--field-selector", "foo.bar=baz"]
        ),
        "Error from server (BadRequest): Unable to find \"/v1, Resource=configmaps\" that \
         match label selector \"\", field selector \"foo.bar=baz\": \"foo.bar\" is not a \
         known field selector: only \"metadata.name\", \"metadata.namespace\"\n"
    );
    // A watch is refused the same way, before it starts.
    let watched = refused(
        &sim,
        &[
            "get",
            "pods",
            "--watch",
            "--field-selector",
            "spec.containers=x",
        ],
    );
    assert!(
        watched.contains("field label not supported: spec.containers"),
        "{watched}"
    );
    // Supported fields still select.
    let running = sim.kubectl(&["get", "pods", "--field-selector", "status.phase=Running"]);
    assert!(running.contains("web-"), "{running}");
}
