//! Service, Secret, PersistentVolumeClaim and Namespace: the cases of kubernetes/kubernetes
//! `pkg/apis/core/v1/defaults_test.go` (commit b0d609f0) about them.

use serde_json::{json, Value};

use super::{defaulted, expect};

fn service(spec: Value) -> Value {
    defaulted("v1", "Service", json!({"spec": spec}))
}

#[test]
fn test_set_default_service() {
    let svc = service(json!({}));
    expect(
        "empty",
        &svc,
        &[
            ("/spec/sessionAffinity", Some(json!("None"))),
            ("/spec/sessionAffinityConfig", None),
            ("/spec/type", Some(json!("ClusterIP"))),
        ],
    );
}

#[test]
fn test_set_default_service_session_affinity_config() {
    for (name, config) in [
        ("SessionAffinityConfig is empty", Value::Null),
        ("ClientIP is empty", json!({"clientIP": null})),
        (
            "TimeoutSeconds is empty",
            json!({"clientIP": {"timeoutSeconds": null}}),
        ),
    ] {
        let svc = service(json!({"sessionAffinity": "ClientIP", "sessionAffinityConfig": config}));
        let p = "/spec/sessionAffinityConfig/clientIP/timeoutSeconds";
        expect(name, &svc, &[(p, Some(json!(10800)))]);
    }
}

#[test]
fn test_set_default_service_loadbalancer_ip_mode() {
    // LoadBalancerIPMode is on (beta) in v1.32: the two gate-enabled cases. ("Set IP but
    // not set IPMode with LoadbalancerIPMode disabled" is skipped: the gate is on.)
    for (name, ingress, want) in [
        (
            "Set IP but bot set IPMode with LoadbalancerIPMode enabled",
            json!({"ip": "1.2.3.4"}),
            "VIP",
        ),
        (
            "Both IP and IPMode are set with LoadbalancerIPMode enabled",
            json!({"ip": "1.2.3.4", "ipMode": "Proxy"}),
            "Proxy",
        ),
    ] {
        let svc = defaulted(
            "v1",
            "Service",
            json!({"spec": {"type": "LoadBalancer"},
                   "status": {"loadBalancer": {"ingress": [ingress]}}}),
        );
        let p = "/status/loadBalancer/ingress/0/ipMode";
        expect(name, &svc, &[(p, Some(json!(want)))]);
    }
}

#[test]
fn test_set_default_service_target_port() {
    let svc = service(json!({"ports": [{"port": 1234}]}));
    expect(
        "defaulted",
        &svc,
        &[("/spec/ports/0/targetPort", Some(json!(1234)))],
    );
    let svc = service(json!({"ports": [{"port": 1234, "targetPort": 5678}]}));
    expect(
        "unchanged",
        &svc,
        &[("/spec/ports/0/targetPort", Some(json!(5678)))],
    );
}

#[test]
fn test_set_default_service_port() {
    let svc = service(json!({"ports": [
        {"protocol": "UDP", "port": 9376, "targetPort": "p"},
        {"protocol": "UDP", "port": 8675, "targetPort": 309}]}));
    expect(
        "unchanged if set",
        &svc,
        &[
            ("/spec/ports/0/protocol", Some(json!("UDP"))),
            ("/spec/ports/0/targetPort", Some(json!("p"))),
            ("/spec/ports/1/protocol", Some(json!("UDP"))),
            ("/spec/ports/1/targetPort", Some(json!(309))),
        ],
    );
    let svc = service(json!({"ports": [
        {"protocol": "", "port": 9376, "targetPort": ""},
        {"protocol": "", "port": 8675, "targetPort": 0}]}));
    expect(
        "defaulted",
        &svc,
        &[
            ("/spec/ports/0/protocol", Some(json!("TCP"))),
            ("/spec/ports/0/targetPort", Some(json!(9376))),
            ("/spec/ports/1/protocol", Some(json!("TCP"))),
            ("/spec/ports/1/targetPort", Some(json!(8675))),
        ],
    );
}

#[test]
fn test_set_default_service_external_traffic() {
    for (spec, want) in [
        (json!({}), None),
        (json!({"type": "NodePort"}), Some(json!("Cluster"))),
        (json!({"type": "LoadBalancer"}), Some(json!("Cluster"))),
        (
            json!({"type": "ClusterIP", "externalIPs": ["1.2.3.4"]}),
            Some(json!("Cluster")),
        ),
        (json!({"type": "ClusterIP"}), None),
        (json!({"type": "ExternalName"}), None),
    ] {
        let svc = service(spec.clone());
        expect(
            &spec.to_string(),
            &svc,
            &[("/spec/externalTrafficPolicy", want)],
        );
    }
}

#[test]
fn test_set_default_service_internal_traffic_policy() {
    for (name, spec, want) in [
        (
            "must set default internalTrafficPolicy",
            json!({}),
            Some(json!("Cluster")),
        ),
        (
            "must not set default internalTrafficPolicy when it's cluster",
            json!({"internalTrafficPolicy": "Cluster"}),
            Some(json!("Cluster")),
        ),
        (
            "must not set default internalTrafficPolicy when type is ExternalName",
            json!({"type": "ExternalName"}),
            None,
        ),
        (
            "must not set default internalTrafficPolicy when it's local",
            json!({"internalTrafficPolicy": "Local"}),
            Some(json!("Local")),
        ),
    ] {
        expect(
            name,
            &service(spec),
            &[("/spec/internalTrafficPolicy", want)],
        );
    }
}

#[test]
fn test_set_default_secret() {
    let secret = defaulted("v1", "Secret", json!({}));
    expect("empty", &secret, &[("/type", Some(json!("Opaque")))]);
}

#[test]
fn test_set_default_persistent_volume_claim() {
    // The Go PVC always has a Status struct; a manifest spells it `status: {}`.
    for (mode, want) in [
        (None, "Filesystem"),
        (Some("Filesystem"), "Filesystem"),
        (Some("Block"), "Block"),
    ] {
        let mut pvc = json!({"spec": {}, "status": {}});
        if let Some(m) = mode {
            pvc["spec"]["volumeMode"] = json!(m);
        }
        let got = defaulted("v1", "PersistentVolumeClaim", pvc);
        expect(
            &format!("{mode:?}"),
            &got,
            &[
                ("/status/phase", Some(json!("Pending"))),
                ("/spec/volumeMode", Some(json!(want))),
            ],
        );
    }
}

#[test]
fn test_set_default_namespace() {
    let ns = defaulted("v1", "Namespace", json!({"status": {}}));
    expect("status", &ns, &[("/status/phase", Some(json!("Active")))]);
}

#[test]
fn test_set_default_namespace_labels() {
    let name = "default-ns-labels-are-great";
    let ns = defaulted("v1", "Namespace", json!({"metadata": {"name": name}}));
    let p = "/metadata/labels/kubernetes.io~1metadata.name";
    expect("label", &ns, &[(p, Some(json!(name)))]);
}
