//! Kubernetes semantics beyond the eight rules: finalizers as a set, driftd's annotations,
//! ports, zero values and default-only fields, omitted replicas, custom resources.

use super::*;
use serde_json::json;

#[test]
fn finalizers_are_a_set_controllers_may_extend() {
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "finalizers": ["example.com/keep"]}});
    let mut live = desired.clone();
    live["metadata"]["finalizers"] = json!(["kubernetes.io/pvc-protection", "example.com/keep"]);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["metadata"]["finalizers"] = json!(["kubernetes.io/pvc-protection"]);
    let c = cmp(&desired, &live);
    assert_eq!(
        paths(&c),
        vec![("/metadata/finalizers/0".to_string(), ChangeOp::Add)]
    );
    assert_patch_restores(&desired, &live, &c);
    // Dropped from desired since the previous revision and still live: pruned.
    let mut previous = desired.clone();
    previous["metadata"]["finalizers"] = json!(["example.com/keep", "example.com/old"]);
    live["metadata"]["finalizers"] = json!(["example.com/old", "example.com/keep", "x.io/y"]);
    let c = cmp_full(
        &desired,
        Some(&live),
        Some(&previous),
        &ClusterFacts::default(),
    );
    assert_eq!(
        paths(&c),
        vec![("/metadata/finalizers/0".to_string(), ChangeOp::Remove)]
    );
    assert_eq!(c.changes[0].live, Some(json!("example.com/old")));
    // The same when desired drops finalizers altogether.
    let mut bare = desired.clone();
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("finalizers");
    let c = cmp_full(
        &bare,
        Some(&live),
        Some(&previous),
        &ClusterFacts::default(),
    );
    let mut got = paths(&c);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("/metadata/finalizers/0".to_string(), ChangeOp::Remove),
            ("/metadata/finalizers/1".to_string(), ChangeOp::Remove)
        ]
    );
    let mut patched = live.clone();
    json_patch::patch(&mut patched, &c.patch).unwrap();
    assert_eq!(patched["metadata"]["finalizers"], json!(["x.io/y"]));
}

#[test]
fn driftd_annotations_are_validated() {
    let mut d = deployment();
    assert!(validate_annotations(&d).is_ok());
    d["metadata"]["annotations"] =
        json!({"driftd.io/ignore": "/spec/replicas, /spec/template/spec/containers/name=x"});
    assert!(validate_annotations(&d).is_ok());
    d["metadata"]["annotations"] = json!({"driftd.io/ignore": "/spec/replicas,spec/paused"});
    let err = validate_annotations(&d).unwrap_err();
    assert!(
        err.contains("driftd.io/ignore") && err.contains("spec/paused"),
        "{err}"
    );
    d["metadata"]["annotations"] = json!({"driftd.io/compare": "no"});
    assert!(validate_annotations(&d)
        .unwrap_err()
        .contains("driftd.io/compare"));
}

#[test]
fn ports_pair_up_by_number_and_protocol() {
    let desired = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dns", "namespace": "default"},
        "spec": {"ports": [{"name": "dns-tcp", "port": 53, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}]}});
    let mut live = served(&desired);
    live["spec"]["ports"].as_array_mut().unwrap().reverse();
    assert_eq!(
        cmp(&desired, &live).class,
        DriftClass::InSync,
        "{:?}",
        cmp(&desired, &live).changes
    );
    live["spec"]["ports"][0]["name"] = json!("renamed");
    let c = cmp(&desired, &live);
    assert_eq!(
        paths(&c),
        vec![("/spec/ports/1/name".to_string(), ChangeOp::Replace)]
    );
    assert_patch_restores(&desired, &live, &c);
}

#[test]
fn zero_values_the_server_omits_are_not_drift() {
    let mut desired = deployment();
    let spec = &mut desired["spec"]["template"]["spec"];
    spec["hostNetwork"] = json!(false);
    spec["serviceAccountName"] = json!("");
    spec["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/data", "readOnly": false}]);
    let mut live = live_deployment();
    live["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/data"}]);
    assert_eq!(
        cmp(&desired, &live).class,
        DriftClass::InSync,
        "{:?}",
        cmp(&desired, &live).changes
    );
    // A pointer field keeps an explicit false: its absence live is drift.
    desired["spec"]["template"]["spec"]["automountServiceAccountToken"] = json!(false);
    desired["spec"]["template"]["spec"]["hostPID"] = json!(true);
    let mut got = paths(&cmp(&desired, &live));
    got.sort();
    assert_eq!(
        got,
        vec![
            (
                "/spec/template/spec/automountServiceAccountToken".to_string(),
                ChangeOp::Add
            ),
            ("/spec/template/spec/hostPID".to_string(), ChangeOp::Add)
        ]
    );
}

fn cron_job() -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "reports"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure",
            "containers": [{"name": "r", "image": "report:1",
                "livenessProbe": {"httpGet": {"path": "/", "port": 8080}}}]}}}}}})
}

#[test]
fn default_only_fields_changed_by_hand_are_drift() {
    let desired = cron_job();
    let mut live = served(&desired);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["spec"]["suspend"] = json!(true);
    let probe = "/spec/jobTemplate/spec/template/spec/containers/0/livenessProbe";
    live.pointer_mut(probe).unwrap()["failureThreshold"] = json!(10);
    let c = cmp(&desired, &live);
    let mut got = paths(&c);
    got.sort();
    assert_eq!(
        got,
        vec![
            (format!("{probe}/failureThreshold"), ChangeOp::Replace),
            ("/spec/suspend".to_string(), ChangeOp::Replace),
        ]
    );
    let suspend = c
        .changes
        .iter()
        .find(|c| c.path == "/spec/suspend")
        .unwrap();
    assert_eq!(
        (suspend.desired.clone(), suspend.live.clone()),
        (Some(json!(false)), Some(json!(true)))
    );
    assert_patch_restores(&desired, &live, &c);
}

#[test]
fn a_default_only_field_absent_live_is_an_add() {
    let desired = deployment();
    let mut live = live_deployment();
    live["spec"]["strategy"] = json!({"type": "Recreate"});
    let c = cmp(&desired, &live);
    let mut got = paths(&c);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("/spec/strategy/rollingUpdate".to_string(), ChangeOp::Add),
            ("/spec/strategy/type".to_string(), ChangeOp::Replace),
        ]
    );
    assert_patch_restores(&desired, &live, &c);
}

#[test]
fn omitted_replicas_are_committed_as_one_unless_an_hpa_owns_them() {
    let mut desired = deployment();
    desired["spec"].as_object_mut().unwrap().remove("replicas");
    let mut live = served(&desired);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    live["spec"]["replicas"] = json!(4);
    let c = cmp(&desired, &live);
    assert_eq!(
        paths(&c),
        vec![("/spec/replicas".to_string(), ChangeOp::Replace)]
    );
    assert_eq!(c.changes[0].desired, Some(json!(1)));
    let mut facts = ClusterFacts::default();
    facts.hpa_targets.insert(deployment_key("web"));
    assert_eq!(
        cmp_full(&desired, Some(&live), None, &facts).class,
        DriftClass::InSync
    );
    // The ignore annotation applies to default-only fields as to committed ones.
    desired["metadata"]["annotations"] = json!({"driftd.io/ignore": "/spec/replicas"});
    live["metadata"]["annotations"] = desired["metadata"]["annotations"].clone();
    let c = cmp(&desired, &live);
    assert_eq!(c.class, DriftClass::InSync, "{:?}", c.changes);
    assert_eq!(c.ignored[0].count, 1);
}

#[test]
fn service_type_switched_by_hand_is_one_finding() {
    let desired = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}});
    let live = served(&desired);
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    // What the server keeps after `kubectl patch svc web -p '{"spec":{"type":"NodePort"}}'`.
    let mut node_port = desired.clone();
    node_port["spec"]["type"] = json!("NodePort");
    let mut live2 = node_port.clone();
    driftd_sim::server_defaults::on_update(
        &mut driftd_sim::server_defaults::IdentityAllocator::for_object(&live),
        "v1",
        "Service",
        &live,
        &mut live2,
    );
    assert!(live2["spec"]["ports"][0]["nodePort"].is_i64());
    let c = cmp(&desired, &live2);
    assert_eq!(
        paths(&c),
        vec![("/spec/type".to_string(), ChangeOp::Replace)]
    );
    assert_eq!(c.changes[0].desired, Some(json!("ClusterIP")));
}

#[test]
fn custom_resources_get_no_defaults() {
    let desired = json!({"apiVersion": "example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"}, "spec": {"size": 1}});
    let mut live = desired.clone();
    live["spec"]["replicas"] = json!(5);
    live["spec"]["strategy"] = json!({"type": "Recreate"});
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
}

#[test]
fn tolerations_admission_adds_to_pods_are_not_drift() {
    let desired = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "c:1"}],
                 "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}});
    let mut live = served(&desired);
    let t = live["spec"]["tolerations"].as_array_mut().unwrap();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        t.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
    }
    assert_eq!(
        cmp(&desired, &live).class,
        DriftClass::InSync,
        "{:?}",
        cmp(&desired, &live).changes
    );
    live["spec"]["tolerations"][0]["effect"] = json!("NoExecute");
    assert_eq!(
        paths(&cmp(&desired, &live)),
        vec![("/spec/tolerations".to_string(), ChangeOp::Replace)]
    );
}

#[test]
fn generic_omitempty_names_only_count_where_they_are_struct_fields() {
    // EnvVar.value is omitempty: `value: ""` comes back absent.
    let mut desired = deployment();
    desired["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("");
    let mut live = served(&desired);
    live["spec"]["template"]["spec"]["containers"][0]["env"][0]
        .as_object_mut()
        .unwrap()
        .remove("value");
    assert_eq!(cmp(&desired, &live).class, DriftClass::InSync);
    // A ConfigMap key that happens to be called `value` is data: its absence is drift.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
        "data": {"value": "", "other": "1"}});
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
        "data": {"other": "1"}});
    assert_eq!(
        paths(&cmp(&cm, &live)),
        vec![("/data/value".to_string(), ChangeOp::Add)]
    );
}

/// A `[]byte` value wrapped as GNU `base64` prints it (76 columns): the text below is
/// `printf 'driftd-wrapped-value: %s' "$(seq -s, 1 40)" | base64`, and the one-line form
/// is the same command with `-w0`, which is how kube-apiserver prints the bytes it stored
/// (Go's `base64.StdEncoding` decoder skips `\r` and `\n`: `encoding/base64/base64.go`,
/// `decodeQuantum`; its encoder never wraps).
const WRAPPED: &str =
    "ZHJpZnRkLXdyYXBwZWQtdmFsdWU6IDEsMiwzLDQsNSw2LDcsOCw5LDEwLDExLDEyLDEzLDE0LDE1\n\
LDE2LDE3LDE4LDE5LDIwLDIxLDIyLDIzLDI0LDI1LDI2LDI3LDI4LDI5LDMwLDMxLDMyLDMzLDM0\n\
LDM1LDM2LDM3LDM4LDM5LDQw\n";
const ONE_LINE: &str = "ZHJpZnRkLXdyYXBwZWQtdmFsdWU6IDEsMiwzLDQsNSw2LDcsOCw5LDEwLDExLDEyLDEzLDE0LDE1LDE2LDE3LDE4LDE5LDIwLDIxLDIyLDIzLDI0LDI1LDI2LDI3LDI4LDI5LDMwLDMxLDMyLDMzLDM0LDM1LDM2LDM3LDM4LDM5LDQw";

#[test]
fn bytes_wrapped_over_lines_are_the_bytes_they_decode_to() {
    let meta = json!({"name": "c", "namespace": "default"});
    let webhook = |ca: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w"},
               "webhooks": [{"name": "w.example.com", "sideEffects": "None",
                             "admissionReviewVersions": ["v1"],
                             // Spelled out, so this case does not depend on the defaults
                             // table (admissionregistration/v1 SetDefaults_ValidatingWebhook).
                             "failurePolicy": "Fail", "matchPolicy": "Equivalent",
                             "namespaceSelector": {}, "objectSelector": {}, "timeoutSeconds": 10,
                             "clientConfig": {"url": "https://example.com", "caBundle": ca}}]})
    };
    for (what, desired, live) in [
        (
            "Secret data",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                   "data": {"k": WRAPPED}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                   "data": {"k": ONE_LINE}}),
        ),
        (
            "ConfigMap binaryData",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                   "binaryData": {"k": WRAPPED}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                   "binaryData": {"k": ONE_LINE}}),
        ),
        ("webhook caBundle", webhook(WRAPPED), webhook(ONE_LINE)),
    ] {
        let c = cmp(&desired, &live);
        assert_eq!(c.class, DriftClass::InSync, "{what}: {:?}", c.changes);
    }
    // Other bytes are drift; so is the same text in a field that is not bytes.
    let cm = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
               "binaryData": {"k": v}, "data": {"t": v}})
    };
    let mut live = cm(ONE_LINE);
    live["binaryData"]["k"] = json!("eA==");
    let mut got = paths(&cmp(&cm(WRAPPED), &live));
    got.sort();
    assert_eq!(
        got,
        vec![
            ("/binaryData/k".to_string(), ChangeOp::Replace),
            ("/data/t".to_string(), ChangeOp::Replace)
        ]
    );
}

/// An autoscaling/v1 HorizontalPodAutoscaler without a CPU target, read back in v1. Expected
/// values derived from kube-apiserver v1.32: `pkg/apis/autoscaling/v1/defaults.go`
/// `SetDefaults_HorizontalPodAutoscaler` sets only `minReplicas` = 1 ("we apply a default for
/// CPU utilization in conversion"); `pkg/apis/autoscaling/v1/conversion.go`
/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler` gives an
/// object with neither a CPU target nor metrics in its annotation the CPU `Utilization`
/// metric at `autoscaling.DefaultCPUUtilization` (80), and
/// `Convert_autoscaling_HorizontalPodAutoscalerSpec_To_v1_HorizontalPodAutoscalerSpec`
/// reads `targetCPUUtilizationPercentage` back from that metric. So the committed target is
/// 80, and a hand edit to 70 is drift.
#[test]
fn an_autoscaling_v1_hpa_without_a_cpu_target_is_committed_at_80_percent() {
    let desired = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 5}});
    let live = |target: i64| {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "5"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 5,
                     "targetCPUUtilizationPercentage": target}})
    };
    assert_eq!(cmp(&desired, &live(80)).class, DriftClass::InSync);
    let c = cmp(&desired, &live(70));
    assert_eq!(c.class, DriftClass::Modified);
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/targetCPUUtilizationPercentage".to_string(),
            ChangeOp::Replace
        )]
    );
    assert_eq!(c.changes[0].desired, Some(json!(80)));
    assert_patch_restores(&desired, &live(70), &c);
    // A target in the manifest is the committed one.
    let mut set = desired.clone();
    set["spec"]["targetCPUUtilizationPercentage"] = json!(70);
    assert_eq!(cmp(&set, &live(70)).class, DriftClass::InSync);
}
