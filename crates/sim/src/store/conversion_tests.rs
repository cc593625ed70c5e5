//! A kind served in two versions from one storage (autoscaling/v1 and autoscaling/v2
//! HorizontalPodAutoscalers), and the initial status of PersistentVolumes and Nodes.
//! Expected values are derived by hand from kube's source, cited at each case
//! (kubernetes/kubernetes `pkg/apis/autoscaling/v1/conversion.go`, `pkg/apis/autoscaling/v2/defaults.go`,
//! the registries' strategies, the API types' JSON tags).

use super::*;
use serde_json::json;

fn hpa_v1() -> Value {
    // kubernetes/website content/en/examples/controllers/hpa-rs.yaml
    json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "frontend-scaler"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "frontend"},
            "minReplicas": 3, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50}})
}

fn types(store: &Store) -> (ResourceType, ResourceType) {
    let v1 = store
        .resolve("autoscaling", "v1", "horizontalpodautoscalers")
        .expect("autoscaling/v1 is served");
    let v2 = store
        .resolve("autoscaling", "v2", "horizontalpodautoscalers")
        .expect("autoscaling/v2 is served");
    (v1, v2)
}

/// Convert_v1_HorizontalPodAutoscalerSpec_To_autoscaling_HorizontalPodAutoscalerSpec: the
/// CPU target is one Resource metric with a Utilization target; the object lives in one
/// storage, so both versions read the same object.
#[test]
fn a_v1_hpa_is_one_object_read_in_either_version() {
    let store = Store::new(100);
    let (v1, v2) = types(&store);
    let created = store
        .create(&v1, Some("default"), hpa_v1(), &WriteCtx::new("test"))
        .unwrap();
    assert_eq!(created["apiVersion"], "autoscaling/v1");
    assert_eq!(created["spec"], hpa_v1()["spec"]);
    // v1's status: currentReplicas and desiredReplicas have no omitempty.
    assert_eq!(
        created["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    let as_v2 = store.get(&v2, Some("default"), "frontend-scaler").unwrap();
    assert_eq!(as_v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        as_v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}])
    );
    // The zero v2 status as encoded: currentMetrics has no omitempty (null), nor has
    // desiredReplicas; currentReplicas has.
    assert_eq!(
        as_v2["status"],
        json!({"currentMetrics": null, "desiredReplicas": 0})
    );
    assert_eq!(as_v2["metadata"]["uid"], created["metadata"]["uid"]);
    let listed = store.list(&v1, &ListParams::default()).unwrap();
    assert_eq!(listed["apiVersion"], "autoscaling/v1");
    assert_eq!(listed["items"][0]["spec"], hpa_v1()["spec"]);
    // The field manager records the fields of the version the request was made in.
    let mf = &created["metadata"]["managedFields"][0];
    assert_eq!(mf["apiVersion"], "autoscaling/v1");
    assert!(
        mf["fieldsV1"]["f:spec"]
            .get("f:targetCPUUtilizationPercentage")
            .is_some(),
        "{mf}"
    );
}

/// Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler adds the CPU
/// 80% metric (`autoscaling.DefaultCPUUtilization`) when the v1 object has none, and v1's
/// SetDefaults_HorizontalPodAutoscaler sets minReplicas 1: a v1 HPA written without a CPU
/// target reads back with `targetCPUUtilizationPercentage: 80`.
#[test]
fn a_v1_hpa_without_a_cpu_target_reads_back_with_80() {
    let store = Store::new(100);
    let (v1, v2) = types(&store);
    let mut hpa = hpa_v1();
    let spec = hpa["spec"].as_object_mut().unwrap();
    spec.remove("targetCPUUtilizationPercentage");
    spec.remove("minReplicas");
    let created = store
        .create(&v1, Some("default"), hpa, &WriteCtx::new("test"))
        .unwrap();
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(created["spec"]["minReplicas"], 1);
    let as_v2 = store.get(&v2, Some("default"), "frontend-scaler").unwrap();
    assert_eq!(
        as_v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
}

/// Writes through either version change the one stored object: a v2 metric v1 has no field
/// for reads in v1 as the `autoscaling.alpha.kubernetes.io/metrics` annotation
/// (Convert_autoscaling_PodsMetricSource_To_v1_PodsMetricSource), and a v1 update that
/// keeps the annotation keeps the metric.
#[test]
fn updates_through_either_version_meet_in_storage() {
    let store = Store::new(100);
    let (v1, v2) = types(&store);
    let ctx = WriteCtx::new("test");
    store.create(&v1, Some("default"), hpa_v1(), &ctx).unwrap();
    let mut as_v2 = store.get(&v2, Some("default"), "frontend-scaler").unwrap();
    as_v2["spec"]["metrics"].as_array_mut().unwrap().insert(
        0,
        json!({"type": "Pods", "pods": {"metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"}}}),
    );
    store
        .update(&v2, Some("default"), "frontend-scaler", as_v2, None, &ctx)
        .unwrap();
    let mut read = store.get(&v1, Some("default"), "frontend-scaler").unwrap();
    assert_eq!(read["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(
        read["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#
    );
    read["spec"]["targetCPUUtilizationPercentage"] = json!(70);
    store
        .update(&v1, Some("default"), "frontend-scaler", read, None, &ctx)
        .unwrap();
    let stored = store.get(&v2, Some("default"), "frontend-scaler").unwrap();
    assert_eq!(
        stored["spec"]["metrics"],
        json!([
            {"type": "Pods", "pods": {"metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 70}}},
        ])
    );
    // The round-trip annotation is consumed, never stored.
    assert!(stored["metadata"].get("annotations").is_none());
}

/// The persistentvolume strategy's PrepareForCreate with PersistentVolumeLastPhaseTransitionTime
/// (GA, locked on, in v1.31 and v1.32): the status a client sends is replaced by phase
/// Pending stamped with the time of the create.
#[test]
fn a_created_persistent_volume_is_pending() {
    let store = Store::new(100);
    let pvs = store.resolve("", "v1", "persistentvolumes").unwrap();
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/mnt/data"}},
        "status": {"phase": "Bound"}});
    let created = store
        .create(&pvs, None, pv, &WriteCtx::new("test"))
        .unwrap();
    assert_eq!(created["status"]["phase"], "Pending");
    let stamp = created["status"]["lastPhaseTransitionTime"]
        .as_str()
        .unwrap();
    assert_eq!(
        stamp,
        created["metadata"]["creationTimestamp"].as_str().unwrap()
    );
}

/// The node strategy: "Nodes allow *all* fields, including status, to be set on create"
/// (only `status.config` is cleared); NodeStatus's `daemonEndpoints` and `nodeInfo` are
/// structs without omitempty, so their zero values are written (`Port` 0, the ten strings
/// of NodeSystemInfo empty).
#[test]
fn a_created_node_keeps_its_status_and_shows_the_zero_structs() {
    let store = Store::new(100);
    let nodes = store.resolve("", "v1", "nodes").unwrap();
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "4"}, "config": {"active": {}}}});
    let created = store
        .create(&nodes, None, node, &WriteCtx::new("test"))
        .unwrap();
    let status = &created["status"];
    assert_eq!(status["capacity"]["cpu"], "4");
    assert!(status.get("config").is_none());
    assert_eq!(
        status["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert_eq!(
        status["nodeInfo"],
        json!({"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
            "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
            "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""})
    );
}
