//! HorizontalPodAutoscaler conversions checked against kube's own conversion tests and
//! hand derivations from `pkg/apis/autoscaling/v1/conversion.go` (kubernetes/kubernetes);
//! each case names its source. The v2 inputs are written as kube's tests write the
//! internal type, in v2's field names (the two have one shape).

use serde_json::{json, Value};

use super::super::{also_served, convert, storage_type};
use super::{hpa_v1_to_v2, hpa_v2_to_v1};

fn v2(spec: Value) -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "ns"}, "spec": spec})
}

fn v1(spec: Value) -> Value {
    json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "ns"}, "spec": spec})
}

fn cpu(target: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": target}})
}

/// `pkg/apis/autoscaling/v1/conversion_test.go`,
/// `TestConvert_autoscaling_HorizontalPodAutoscalerSpec_To_v1_HorizontalPodAutoscalerSpec`,
/// case "TestConversionWithCPUAverageValueAndUtilizationBoth1" (kubernetes#101370): the CPU
/// target is the first CPU metric *with a utilization*, not the first CPU metric.
#[test]
fn v1_takes_the_first_cpu_metric_with_a_utilization() {
    let hpa = v2(json!({"minReplicas": 1, "maxReplicas": 3, "metrics": [
        cpu(json!({"type": "AverageValue", "averageValue": "300m"})),
        cpu(json!({"type": "Utilization", "averageUtilization": 70})),
    ]}));
    let out = hpa_v2_to_v1(&hpa);
    assert_eq!(
        out["spec"],
        json!({"minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 70})
    );
    // The other metric travels in the annotation, as
    // Convert_autoscaling_ResourceMetricSource_To_v1_ResourceMetricSource writes it
    // (name, targetAverageUtilization, targetAverageValue; nil pointers omitted).
    assert_eq!(
        out["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Resource","resource":{"name":"cpu","targetAverageValue":"300m"}}]"#
    );
}

/// Same test, case "TestConversionWithCPUUtilizationOnly": nothing left for annotations.
#[test]
fn a_cpu_utilization_alone_is_v1s_field() {
    let hpa = v2(json!({"minReplicas": 1, "maxReplicas": 3, "metrics": [
        cpu(json!({"type": "Utilization", "averageUtilization": 60})),
    ]}));
    let out = hpa_v2_to_v1(&hpa);
    assert_eq!(
        out["spec"],
        json!({"minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 60})
    );
    assert!(out["metadata"].get("annotations").is_none());
}

/// Same test, case "TestConversionWithoutMetrics": with no metric the conversion leaves
/// `targetCPUUtilizationPercentage` as it found it (the case's output already held 60 and
/// keeps it); converting a whole object, it starts unset and stays so.
#[test]
fn no_metric_writes_no_cpu_target() {
    let out = hpa_v2_to_v1(&v2(
        json!({"minReplicas": 1, "maxReplicas": 3, "metrics": []}),
    ));
    assert_eq!(out["spec"], json!({"minReplicas": 1, "maxReplicas": 3}));
}

/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`: "if
/// len(out.Spec.Metrics) == 0" the conversion adds a CPU Resource metric with a
/// Utilization target of `autoscaling.DefaultCPUUtilization` (80): a v1 HPA written
/// without a CPU target is stored with one, and reads back in v1 with
/// `targetCPUUtilizationPercentage: 80`.
#[test]
fn a_v1_hpa_without_metrics_gets_the_80_percent_cpu_target() {
    let hpa = v1(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 5}),
    );
    let stored = hpa_v1_to_v2(&hpa);
    assert_eq!(
        stored["spec"]["metrics"],
        json!([cpu(
            json!({"type": "Utilization", "averageUtilization": 80})
        )])
    );
    assert_eq!(
        hpa_v2_to_v1(&stored)["spec"]["targetCPUUtilizationPercentage"],
        80
    );
}

/// `Convert_v1_HorizontalPodAutoscalerSpec_To_autoscaling_HorizontalPodAutoscalerSpec`:
/// `targetCPUUtilizationPercentage` becomes one CPU Resource metric with a Utilization
/// target; scaleTargetRef, minReplicas and maxReplicas are copied. Input: kubernetes/website
/// `content/en/examples/controllers/hpa-rs.yaml`.
#[test]
fn the_website_example_converts_both_ways() {
    let hpa = v1(json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "frontend"},
        "minReplicas": 3, "maxReplicas": 10, "targetCPUUtilizationPercentage": 50,
    }));
    let stored = convert(&hpa, "autoscaling/v2").unwrap();
    assert_eq!(stored["apiVersion"], "autoscaling/v2");
    assert_eq!(
        stored["spec"],
        json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "frontend"},
            "minReplicas": 3, "maxReplicas": 10,
            "metrics": [cpu(json!({"type": "Utilization", "averageUtilization": 50}))],
        })
    );
    // An empty status reads as the encoder writes the zero v2 status: desiredReplicas and
    // currentMetrics have no omitempty, currentReplicas has.
    assert_eq!(
        stored["status"],
        json!({"desiredReplicas": 0, "currentMetrics": null})
    );
    let back = convert(&stored, "autoscaling/v1").unwrap();
    assert_eq!(back["spec"], hpa["spec"]);
    // v1's currentReplicas and desiredReplicas have no omitempty.
    assert_eq!(
        back["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    assert_eq!(back["metadata"], hpa["metadata"]);
}

/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`: metrics
/// from the `autoscaling.alpha.kubernetes.io/metrics` annotation come first, the CPU
/// target after them; `Convert_v1_PodsMetricSource_To_autoscaling_PodsMetricSource` gives a
/// Pods metric an AverageValue target; the annotation is dropped after conversion
/// (`DropRoundTripHorizontalPodAutoscalerAnnotations`, kubernetes#89963).
#[test]
fn annotated_metrics_come_first_and_the_annotation_goes() {
    let mut hpa = v1(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}),
    );
    hpa["metadata"]["annotations"] = json!({
        "autoscaling.alpha.kubernetes.io/metrics":
            r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#,
        "team": "a",
    });
    let stored = hpa_v1_to_v2(&hpa);
    assert_eq!(
        stored["spec"]["metrics"],
        json!([
            {"type": "Pods", "pods": {"metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"}}},
            cpu(json!({"type": "Utilization", "averageUtilization": 70})),
        ])
    );
    assert_eq!(stored["metadata"]["annotations"], json!({"team": "a"}));
    // And back: `Convert_autoscaling_PodsMetricSource_To_v1_PodsMetricSource` (metricName,
    // targetAverageValue, selector).
    let back = hpa_v2_to_v1(&stored);
    assert_eq!(back["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(
        back["metadata"]["annotations"],
        json!({
            "autoscaling.alpha.kubernetes.io/metrics":
                r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#,
            "team": "a",
        })
    );
}

/// kubernetes#89963 ("Fix HPA conversion handling of annotations"): malformed round-trip
/// annotations are ignored, and every round-trip annotation is dropped on the way to the
/// internal type, so none survives a round trip through storage.
#[test]
fn malformed_round_trip_annotations_are_ignored_and_dropped() {
    for bad in ["", "abc", "{}", "[1]"] {
        let mut hpa = v1(
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}),
        );
        hpa["metadata"]["annotations"] = json!({
            "autoscaling.alpha.kubernetes.io/metrics": bad,
            "autoscaling.alpha.kubernetes.io/current-metrics": bad,
            "autoscaling.alpha.kubernetes.io/conditions": bad,
            "autoscaling.alpha.kubernetes.io/behavior": bad,
        });
        let stored = hpa_v1_to_v2(&hpa);
        assert!(stored["metadata"].get("annotations").is_none(), "{bad}");
        assert!(stored["spec"].get("behavior").is_none(), "{bad}");
        assert_eq!(
            stored["spec"]["metrics"],
            json!([cpu(
                json!({"type": "Utilization", "averageUtilization": 70})
            )]),
            "{bad}"
        );
        let back = hpa_v2_to_v1(&stored);
        assert!(back["metadata"].get("annotations").is_none(), "{bad}");
    }
}

/// `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler` marshals
/// the internal `HorizontalPodAutoscalerBehavior` into the behavior annotation; the internal
/// type (`pkg/apis/autoscaling/types.go`) has no JSON tags, so Go's field names are the keys
/// and a nil pointer is `null`. The way back (`json.Unmarshal` into the internal type,
/// kept when not empty) restores it.
#[test]
fn behavior_travels_as_the_internal_type() {
    let behavior = json!({"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}});
    let mut spec = json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 5, "metrics": [cpu(json!({"type": "Utilization", "averageUtilization": 50}))]});
    spec["behavior"] = behavior.clone();
    let out = hpa_v2_to_v1(&v2(spec));
    assert_eq!(
        out["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/behavior"],
        r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}]},"ScaleDown":null}"#
    );
    let stored = hpa_v1_to_v2(&out);
    assert_eq!(stored["spec"]["behavior"], behavior);
    assert!(stored["metadata"].get("annotations").is_none());
}

/// `Convert_autoscaling_HorizontalPodAutoscalerStatus_To_v1_HorizontalPodAutoscalerStatus`
/// and the current-metrics and conditions annotations: the CPU utilization is v1's status
/// field, every current metric is kept in the annotation ("we need to save the status even
/// if it maps to a CPU utilization status in order to save the raw value as well"), and
/// `Convert_autoscaling_ResourceMetricStatus_To_v1_ResourceMetricStatus` writes
/// currentAverageValue (a non-pointer Quantity) always.
#[test]
fn status_maps_cpu_and_keeps_the_rest_in_annotations() {
    let mut hpa = v2(
        json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 5, "metrics": [cpu(json!({"type": "Utilization", "averageUtilization": 50}))]}),
    );
    hpa["status"] = json!({
        "currentReplicas": 2, "desiredReplicas": 3,
        "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 40, "averageValue": "120m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale"}],
    });
    let out = hpa_v2_to_v1(&hpa);
    assert_eq!(
        out["status"],
        json!({"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 40})
    );
    let a = &out["metadata"]["annotations"];
    assert_eq!(
        a["autoscaling.alpha.kubernetes.io/current-metrics"],
        r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"120m"}}]"#
    );
    assert_eq!(
        a["autoscaling.alpha.kubernetes.io/conditions"],
        r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"ReadyForNewScale"}]"#
    );
    // And back: the annotations replace what v1's own fields say, then go.
    let back = hpa_v1_to_v2(&out);
    assert_eq!(back["status"], hpa["status"]);
    assert!(back["metadata"].get("annotations").is_none());
}

#[test]
fn unknown_pairs_are_not_converted() {
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
    assert!(convert(&deploy, "apps/v1beta2").is_none());
    assert_eq!(convert(&deploy, "apps/v1"), Some(deploy.clone()));
    assert!(convert(&deploy, "batch/v1").is_none());
}

#[test]
fn autoscaling_v1_is_served_besides_v2() {
    let extra: Vec<String> = also_served().map(|t| t.api_version()).collect();
    assert!(extra.contains(&"autoscaling/v1".to_string()), "{extra:?}");
    let v1 = also_served()
        .find(|t| t.kind == "HorizontalPodAutoscaler")
        .unwrap();
    assert_eq!(storage_type(v1).unwrap().version, "v2");
}
