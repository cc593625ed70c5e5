//! Pods, pod templates and ReplicationControllers: the cases of
//! kubernetes/kubernetes `pkg/apis/core/v1/defaults_test.go` (commit b0d609f0) about them.
//! The Service, Secret, PVC and Namespace cases of that file are in `core_v1_objects`.
//!
//! Skipped from that file: `TestSetDefaultResizePolicy` (InPlacePodVerticalScaling is
//! alpha, off, in v1.32, so no resize policy is defaulted).

use serde_json::{json, Value};

use super::{added, check_no_template_requests, check_replicas, defaulted, expect};

/// A pod spec with every list holding one item and every optional struct present, as
/// kube's `detectDefaults` builds it before defaulting. Two volumes stand for its one: a
/// bare one (that becomes an `emptyDir`) and one with every source set. `limits` is the
/// resource list kube's walker leaves in each container (`{"": 0}`).
fn everything_pod_spec(limits: Value) -> Value {
    let handler = json!({"exec": {}, "httpGet": {}, "tcpSocket": {}, "grpc": {"port": 0}});
    let container = json!({
        "env": [{"valueFrom": {"fieldRef": {}, "configMapKeyRef": {}, "secretKeyRef": {}}}],
        "ports": [{}],
        "lifecycle": {"postStart": {"exec": {}, "httpGet": {}, "tcpSocket": {}},
                      "preStop": {"exec": {}, "httpGet": {}, "tcpSocket": {}}},
        "livenessProbe": handler, "readinessProbe": handler, "startupProbe": handler,
        "securityContext": {}, "volumeMounts": [{}],
        "resources": if limits.is_null() { json!({}) } else { json!({"limits": limits}) }
    });
    let mut ephemeral = container.clone();
    ephemeral["resources"] = json!({});
    json!({
        "containers": [container],
        "initContainers": [container],
        "ephemeralContainers": [ephemeral],
        "affinity": {}, "dnsConfig": {}, "tolerations": [{}],
        "volumes": [
            {"name": "bare"},
            {"name": "all",
             "azureDisk": {}, "configMap": {}, "csi": {}, "nfs": {}, "secret": {},
             "downwardAPI": {"items": [{"fieldRef": {}}]},
             "ephemeral": {"volumeClaimTemplate": {"metadata": {}, "spec": {}}},
             "hostPath": {}, "iscsi": {}, "rbd": {}, "scaleIO": {},
             "persistentVolumeClaim": {}, "gcePersistentDisk": {}, "cephfs": {},
             "projected": {"sources": [{"downwardAPI": {"items": [{"fieldRef": {}}]},
                                        "serviceAccountToken": {}, "configMap": {}, "secret": {}}]}}
        ]
    })
}

/// The `expectedDefaults` map of `TestWorkloadDefaults`/`TestPodDefaults`, as pointers
/// under `spec` (the pod spec) for [`everything_pod_spec`].
fn expected_pod_spec_defaults(spec: &str) -> Vec<(String, Value)> {
    let mut want = Vec::new();
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let c = format!("{spec}/{list}/0");
        want.push((
            format!("{c}/env/0/valueFrom/fieldRef/apiVersion"),
            json!("v1"),
        ));
        want.push((format!("{c}/imagePullPolicy"), json!("IfNotPresent")));
        for hook in ["postStart", "preStop"] {
            want.push((format!("{c}/lifecycle/{hook}/httpGet/path"), json!("/")));
            want.push((
                format!("{c}/lifecycle/{hook}/httpGet/scheme"),
                json!("HTTP"),
            ));
        }
        for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
            let p = format!("{c}/{probe}");
            want.push((format!("{p}/failureThreshold"), json!(3)));
            want.push((format!("{p}/httpGet/path"), json!("/")));
            want.push((format!("{p}/httpGet/scheme"), json!("HTTP")));
            want.push((format!("{p}/grpc/service"), json!("")));
            want.push((format!("{p}/periodSeconds"), json!(10)));
            want.push((format!("{p}/successThreshold"), json!(1)));
            want.push((format!("{p}/timeoutSeconds"), json!(1)));
        }
        want.push((format!("{c}/ports/0/protocol"), json!("TCP")));
        want.push((
            format!("{c}/terminationMessagePath"),
            json!("/dev/termination-log"),
        ));
        want.push((format!("{c}/terminationMessagePolicy"), json!("File")));
    }
    want.push((format!("{spec}/dnsPolicy"), json!("ClusterFirst")));
    want.push((format!("{spec}/restartPolicy"), json!("Always")));
    want.push((format!("{spec}/schedulerName"), json!("default-scheduler")));
    want.push((format!("{spec}/securityContext"), json!({})));
    want.push((format!("{spec}/terminationGracePeriodSeconds"), json!(30)));
    want.push((format!("{spec}/volumes/0/emptyDir"), json!({})));
    let v = format!("{spec}/volumes/1");
    for (field, value) in [
        ("azureDisk/cachingMode", json!("ReadWrite")),
        ("azureDisk/fsType", json!("ext4")),
        ("azureDisk/kind", json!("Shared")),
        ("azureDisk/readOnly", json!(false)),
        ("configMap/defaultMode", json!(420)),
        ("downwardAPI/defaultMode", json!(420)),
        ("downwardAPI/items/0/fieldRef/apiVersion", json!("v1")),
        (
            "ephemeral/volumeClaimTemplate/spec/volumeMode",
            json!("Filesystem"),
        ),
        ("hostPath/type", json!("")),
        ("iscsi/iscsiInterface", json!("default")),
        ("projected/defaultMode", json!(420)),
        (
            "projected/sources/0/downwardAPI/items/0/fieldRef/apiVersion",
            json!("v1"),
        ),
        (
            "projected/sources/0/serviceAccountToken/expirationSeconds",
            json!(3600),
        ),
        ("rbd/keyring", json!("/etc/ceph/keyring")),
        ("rbd/pool", json!("rbd")),
        ("rbd/user", json!("admin")),
        ("scaleIO/fsType", json!("xfs")),
        ("scaleIO/storageMode", json!("ThinProvisioned")),
        ("secret/defaultMode", json!(420)),
    ] {
        want.push((format!("{v}/{field}"), value));
    }
    want
}

fn sorted(want: Vec<(String, Value)>) -> std::collections::BTreeMap<String, Value> {
    want.into_iter().collect()
}

#[test]
fn test_workload_defaults() {
    // "empty PodTemplateSpec": every default inside a template, and nothing else.
    let rc =
        json!({"spec": {"template": {"metadata": {}, "spec": everything_pod_spec(Value::Null)}}});
    let got = defaulted("v1", "ReplicationController", rc.clone());
    assert_eq!(
        added(&rc["spec"]["template"], &got["spec"]["template"]),
        sorted(expected_pod_spec_defaults("/spec")),
        "defaults for PodTemplateSpec changed"
    );
    // "hostnet PodTemplateSpec with ports": DefaultHostNetworkHostPortsInPodTemplates is
    // off, so a template gets no hostPort. (Its gate-on expectation is skipped: the gate
    // is deprecated and off.)
    let rc = json!({"spec": {"template": {"spec": {"hostNetwork": true,
        "containers": [{"ports": [{"containerPort": 12345, "protocol": "TCP"}]}]}}}});
    let got = defaulted("v1", "ReplicationController", rc);
    let c = &got["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 12345, "protocol": "TCP"}])
    );
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
}

#[test]
fn test_pod_defaults() {
    let pod = json!({"metadata": {}, "spec": everything_pod_spec(json!({"": "0"}))});
    let got = defaulted("v1", "Pod", pod.clone());
    let mut want = expected_pod_spec_defaults("/spec");
    want.push(("/spec/enableServiceLinks".into(), json!(true)));
    // Requests default to limits, on Pods only (kube's walker left `{"": 0}` in limits).
    for list in ["containers", "initContainers"] {
        want.push((
            format!("/spec/{list}/0/resources/requests"),
            json!({"": "0"}),
        ));
    }
    assert_eq!(
        added(&pod, &got),
        sorted(want),
        "defaults for PodSpec changed"
    );
}

#[test]
fn test_pod_host_network_defaults() {
    // Only the gate-disabled cases: DefaultHostNetworkHostPortsInPodTemplates is off.
    for (name, host_network, pod_default) in [
        ("gate disabled, hostNetwork=false", false, false),
        ("gate disabled, hostNetwork=true", true, true),
    ] {
        let spec = json!({"hostNetwork": host_network,
            "containers": [{"ports": [{"containerPort": 12345, "protocol": "TCP"}]}]});
        let pod = defaulted("v1", "Pod", json!({"spec": spec}));
        let want = pod_default.then(|| json!(12345));
        expect(name, &pod, &[("/spec/containers/0/ports/0/hostPort", want)]);
        // The same spec in a template (SetDefaults_PodSpec alone) never gets one.
        let rc = defaulted(
            "v1",
            "ReplicationController",
            json!({"spec": {"template": {"spec": spec}}}),
        );
        let hp = "/spec/template/spec/containers/0/ports/0/hostPort";
        expect(name, &rc, &[(hp, None)]);
    }
}

#[test]
fn test_set_default_pod_spec_host_network() {
    let port = json!([{"ports": [{"containerPort": 8080}]}]);
    let pod = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"hostNetwork": true, "containers": port, "initContainers": port}}),
    );
    expect(
        "host network",
        &pod,
        &[
            ("/spec/containers/0/ports/0/hostPort", Some(json!(8080))),
            ("/spec/initContainers/0/ports/0/hostPort", Some(json!(8080))),
        ],
    );
}

#[test]
fn test_set_default_replication_controller() {
    let tpl = json!({"metadata": {"labels": {"foo": "bar"}}});
    for (labels, selector, expect_labels, expect_selector) in [
        (None, None, true, true),
        (Some(json!({"bar": "foo"})), None, false, true),
        (
            Some(json!({"bar": "foo"})),
            Some(json!({"some": "other"})),
            false,
            false,
        ),
        (None, Some(json!({"some": "other"})), true, false),
    ] {
        let mut rc = json!({"metadata": {}, "spec": {"template": tpl}});
        if let Some(l) = labels {
            rc["metadata"]["labels"] = l;
        }
        if let Some(s) = selector {
            rc["spec"]["selector"] = s;
        }
        let got = defaulted("v1", "ReplicationController", rc);
        let tpl_labels = &got["spec"]["template"]["metadata"]["labels"];
        assert_eq!(
            got["spec"]["selector"] == *tpl_labels,
            expect_selector,
            "{got}"
        );
        assert_eq!(
            got["metadata"]["labels"] == *tpl_labels,
            expect_labels,
            "{got}"
        );
    }
}

#[test]
fn test_set_default_replication_controller_replicas() {
    check_replicas("v1", "ReplicationController");
}

#[test]
fn test_set_default_replication_controller_init_containers() {
    let http = json!({"httpGet": {"path": "/", "scheme": "HTTP", "host": "localhost"},
        "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
    let cases = [
        (
            "imagePullIPolicy",
            json!({"name": "install", "image": "busybox"}),
            vec![("/imagePullPolicy", Some(json!("Always")))],
        ),
        (
            "FieldRef",
            json!({"name": "fun", "image": "alpine", "env": [{"name": "MY_POD_IP",
                "valueFrom": {"fieldRef": {"apiVersion": "", "fieldPath": "status.podIP"}}}]}),
            vec![("/env/0/valueFrom/fieldRef/apiVersion", Some(json!("v1")))],
        ),
        (
            "ContainerPort",
            json!({"name": "fun", "image": "alpine", "ports": [{"name": "default"}]}),
            vec![(
                "/ports/0",
                Some(json!({"name": "default", "protocol": "TCP"})),
            )],
        ),
        (
            "Resources",
            json!({"name": "fun", "image": "alpine", "resources": {
                "limits": {"cpu": "100m", "memory": "100Mi"},
                "requests": {"cpu": "100m", "memory": "100Mi"}}}),
            vec![(
                "/resources",
                Some(json!({"limits": {"cpu": "100m", "memory": "100Mi"},
                            "requests": {"cpu": "100m", "memory": "100Mi"}})),
            )],
        ),
        (
            "Probe",
            json!({"name": "fun", "image": "alpine",
                "livenessProbe": {"httpGet": {"host": "localhost"}},
                "readinessProbe": {"httpGet": {"host": "localhost"}}}),
            vec![
                ("/livenessProbe", Some(http.clone())),
                ("/readinessProbe", Some(http.clone())),
            ],
        ),
        (
            "LifeCycle",
            json!({"name": "fun", "image": "alpine", "ports": [{"name": "default"}],
                "lifecycle": {"postStart": {"httpGet": {"host": "localhost"}},
                              "preStop": {"httpGet": {"host": "localhost"}}}}),
            vec![(
                "/lifecycle",
                Some(json!({
                    "postStart": {"httpGet": {"host": "localhost", "path": "/", "scheme": "HTTP"}},
                    "preStop": {"httpGet": {"host": "localhost", "path": "/", "scheme": "HTTP"}}})),
            )],
        ),
    ];
    for (name, init, want) in cases {
        let rc = json!({"spec": {"template": {"spec": {"initContainers": [init]}}}});
        let got = defaulted("v1", "ReplicationController", rc);
        let c = &got["spec"]["template"]["spec"]["initContainers"][0];
        expect(name, c, &want);
    }
}

#[test]
fn test_default_request_is_not_set_for_replication_controller() {
    check_no_template_requests("v1", "ReplicationController");
}

/// `TestSetDefaultSecretVolumeSource`, `TestSetDefaultConfigMapVolumeSource`,
/// `TestSetDefaultDownwardAPIVolumeSource`, `TestSetDefaultProjectedVolumeSource`.
#[test]
fn test_set_default_volume_source_modes() {
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        let pod = defaulted("v1", "Pod", json!({"spec": {"volumes": [{source: {}}]}}));
        let mode = format!("/spec/volumes/0/{source}/defaultMode");
        expect(source, &pod, &[(&mode, Some(json!(420)))]);
    }
}

#[test]
fn test_set_default_ephemeral() {
    for (mode, want) in [
        (None, "Filesystem"),
        (Some("Filesystem"), "Filesystem"),
        (Some("Block"), "Block"),
    ] {
        let mut spec = json!({});
        if let Some(m) = mode {
            spec["volumeMode"] = json!(m);
        }
        let pod =
            json!({"spec": {"volumes": [{"ephemeral": {"volumeClaimTemplate": {"spec": spec}}}]}});
        let got = defaulted("v1", "Pod", pod);
        let p = "/spec/volumes/0/ephemeral/volumeClaimTemplate/spec/volumeMode";
        expect(&format!("{mode:?}"), &got, &[(p, Some(json!(want)))]);
    }
}

#[test]
fn test_set_default_object_field_selector_api_version() {
    let pod = json!({"spec": {"containers": [{"env": [{"valueFrom": {"fieldRef": {}}}]}]}});
    let got = defaulted("v1", "Pod", pod);
    let p = "/spec/containers/0/env/0/valueFrom/fieldRef/apiVersion";
    expect("fieldRef", &got, &[(p, Some(json!("v1")))]);
}

#[test]
fn test_set_minimum_scale_pod() {
    // Quantities are rounded up to milli scale (and requests memory=1n kept, not replaced).
    let c = json!({"resources": {"requests": {"memory": "1n"}, "limits": {"cpu": "2n"}}});
    let got = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [c], "initContainers": [c]}}),
    );
    for list in ["containers", "initContainers"] {
        let p = format!("/spec/{list}/0/resources/requests/memory");
        expect(list, &got, &[(&p, Some(json!("1m")))]);
    }
}

#[test]
fn test_set_default_requests_pod() {
    let c = json!({"resources": {"requests": {"memory": "0"},
        "limits": {"cpu": "100m", "memory": "1Gi"}}});
    let got = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [c], "initContainers": [c]}}),
    );
    for list in ["containers", "initContainers"] {
        let p = format!("/spec/{list}/0/resources/requests");
        expect(
            list,
            &got,
            &[(&p, Some(json!({"memory": "0", "cpu": "100m"})))],
        );
    }
    // Nothing is done when no limits are given.
    let got = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [{}], "initContainers": [{}]}}),
    );
    for list in ["containers", "initContainers"] {
        let p = format!("/spec/{list}/0/resources");
        expect(list, &got, &[(&p, None)]);
    }
}

#[test]
fn test_set_default_probe() {
    let pod = json!({"spec": {"containers": [{"livenessProbe": {}}]}});
    let got = defaulted("v1", "Pod", pod);
    let want = json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
        "failureThreshold": 3});
    expect(
        "probe",
        &got,
        &[("/spec/containers/0/livenessProbe", Some(want))],
    );
}

#[test]
fn test_set_default_scheduler_name() {
    let got = defaulted("v1", "Pod", json!({}));
    expect(
        "pod",
        &got,
        &[("/spec/schedulerName", Some(json!("default-scheduler")))],
    );
}

#[test]
fn test_set_default_host_path_volume_source() {
    let pod = json!({"spec": {"volumes": [{"hostPath": {"path": "foo"}}]}});
    let got = defaulted("v1", "Pod", pod);
    expect(
        "hostPath",
        &got,
        &[("/spec/volumes/0/hostPath/type", Some(json!("")))],
    );
}

#[test]
fn test_set_default_enable_service_links() {
    let got = defaulted("v1", "Pod", json!({}));
    expect(
        "pod",
        &got,
        &[("/spec/enableServiceLinks", Some(json!(true)))],
    );
}
