//! Service, Secret, PersistentVolumeClaim, Namespace, PersistentVolume, Endpoints, Node and
//! LimitRange: the cases of kubernetes/kubernetes `pkg/apis/core/v1/defaults_test.go`
//! (commit b0d609f0; the PersistentVolume, Endpoints, Node and LimitRange tests read from
//! its version with file id 17525748 in the index, which has the same four tests) about
//! them. ResourceQuota has no test upstream; `set_object_defaults_resource_quota` is read
//! off `zz_generated.defaults.go` (SetDefaults_ResourceList on its lists).

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

#[test]
fn test_set_default_persistent_volume() {
    // The Go PV always has a Status struct; a manifest spells it `status: {}`.
    for (name, mode, want) in [
        ("volume mode nil", None, "Filesystem"),
        ("volume mode filesystem", Some("Filesystem"), "Filesystem"),
        ("volume mode block", Some("Block"), "Block"),
    ] {
        let mut pv = json!({"spec": {}, "status": {}});
        if let Some(m) = mode {
            pv["spec"]["volumeMode"] = json!(m);
        }
        let got = defaulted("v1", "PersistentVolume", pv);
        expect(
            name,
            &got,
            &[
                ("/status/phase", Some(json!("Pending"))),
                ("/spec/persistentVolumeReclaimPolicy", Some(json!("Retain"))),
                ("/spec/volumeMode", Some(json!(want))),
            ],
        );
    }
}

#[test]
fn test_set_default_endpoints_protocol() {
    let got = defaulted(
        "v1",
        "Endpoints",
        json!({"subsets": [{"ports": [{}, {"protocol": "UDP"}, {}]}]}),
    );
    assert_eq!(
        got,
        json!({"subsets": [{"ports": [{"protocol": "TCP"}, {"protocol": "UDP"}, {"protocol": "TCP"}]}]})
    );
}

#[test]
fn test_set_default_node_status_allocatable() {
    // The Go test compares quantities with Cmp; the port compares canonical forms
    // (1000m is stored as "1").
    let capacity = json!({"cpu": "1000m", "memory": "10G"});
    let allocatable = json!({"cpu": "500m", "memory": "5G"});
    for (name, capacity, allocatable, want) in [
        (
            "Everything set, no defaulting.",
            Some(capacity.clone()),
            Some(allocatable.clone()),
            Some(json!({"cpu": "500m", "memory": "5G"})),
        ),
        (
            "Allocatable set, no defaulting.",
            None,
            Some(allocatable.clone()),
            Some(json!({"cpu": "500m", "memory": "5G"})),
        ),
        (
            "Capacity set, allocatable defaults to capacity.",
            Some(capacity.clone()),
            None,
            Some(json!({"cpu": "1", "memory": "10G"})),
        ),
        (
            "Nothing set, allocatable \"defaults\" to capacity.",
            None,
            None,
            None,
        ),
    ] {
        let mut status = json!({});
        if let Some(c) = capacity {
            status["capacity"] = c;
        }
        if let Some(a) = allocatable {
            status["allocatable"] = a;
        }
        let got = defaulted("v1", "Node", json!({"status": status}));
        expect(name, &got, &[("/status/allocatable", want)]);
    }
}

#[test]
fn test_set_default_limit_range_item() {
    let got = defaulted(
        "v1",
        "LimitRange",
        json!({"metadata": {"name": "test-defaults"}, "spec": {"limits": [{
            "type": "Container", "max": {"cpu": "100m"}, "min": {"memory": "100Mi"},
            "default": {}, "defaultRequest": {}}]}}),
    );
    let item = "/spec/limits/0";
    expect(
        "limit range item",
        &got,
        &[
            (&format!("{item}/default/cpu"), Some(json!("100m"))),
            (&format!("{item}/defaultRequest/cpu"), Some(json!("100m"))),
            (
                &format!("{item}/defaultRequest/memory"),
                Some(json!("100Mi")),
            ),
        ],
    );
}

#[test]
fn set_defaults_limit_range_item() {
    // The branches the Go test leaves out, read off SetDefaults_LimitRangeItem: a given
    // default limit is the default request (before `min`), an item of another type gets
    // nothing, and an item with nothing to copy gets no empty lists (the encoder's
    // `omitempty` drops the empty maps Go makes).
    let got = defaulted(
        "v1",
        "LimitRange",
        json!({"spec": {"limits": [
            {"type": "Container", "default": {"cpu": "200m"}, "min": {"cpu": "50m"},
             "max": {"cpu": "1", "memory": "1Gi"}},
            {"type": "Pod", "max": {"cpu": "2"}},
            {"type": "Container"}]}}),
    );
    assert_eq!(
        got["spec"]["limits"],
        json!([
            {"type": "Container", "default": {"cpu": "200m", "memory": "1Gi"},
             "defaultRequest": {"cpu": "200m", "memory": "1Gi"}, "min": {"cpu": "50m"},
             "max": {"cpu": "1", "memory": "1Gi"}},
            {"type": "Pod", "max": {"cpu": "2"}},
            {"type": "Container"}])
    );
}

#[test]
fn set_object_defaults_resource_quota() {
    // SetDefaults_ResourceList rounds up to milli and stores canonically (1.5Gi is 1536Mi).
    let got = defaulted(
        "v1",
        "ResourceQuota",
        json!({"spec": {"hard": {"requests.cpu": "0.5", "limits.memory": "1.5Gi", "pods": "10"}}}),
    );
    assert_eq!(
        got["spec"]["hard"],
        json!({"requests.cpu": "500m", "limits.memory": "1536Mi", "pods": "10"})
    );
    assert!(got.get("status").is_none(), "no status is created");
}
