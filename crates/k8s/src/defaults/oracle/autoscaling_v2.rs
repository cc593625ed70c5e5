//! kubernetes/kubernetes `pkg/apis/autoscaling/v2/defaults_test.go` (commit 0a74a85e).
//! The Go tests call `GenerateHPAScaleUpRules`/`GenerateHPAScaleDownRules` on one rules
//! struct; the port puts that struct in an HPA's `spec.behavior` and reads it back.
//! `TestHorizontalPodAutoscalerAnnotations` is skipped: it tests the conversion to the
//! internal version (annotations kube-apiserver strips), not defaulting.

use serde_json::{json, Value};

use super::defaulted;

/// The rules `given` (a `scaleUp` or `scaleDown` object, or null) after defaulting.
fn rules(direction: &str, given: Value) -> Value {
    let mut behavior = json!({});
    if !given.is_null() {
        behavior[direction] = given;
    }
    let hpa = json!({"spec": {"maxReplicas": 3, "behavior": behavior}});
    defaulted("autoscaling/v2", "HorizontalPodAutoscaler", hpa)["spec"]["behavior"][direction]
        .clone()
}

/// The rules struct of a Go case: the pods and percent policies it sets (value, period).
fn given(
    pods: Option<(i64, i64)>,
    percent: Option<(i64, i64)>,
    stab: Option<i64>,
    select: Option<&str>,
) -> Value {
    let mut r = json!({});
    let mut policies = Vec::new();
    if let Some((v, p)) = pods {
        policies.push(json!({"type": "Pods", "value": v, "periodSeconds": p}));
    }
    if let Some((v, p)) = percent {
        policies.push(json!({"type": "Percent", "value": v, "periodSeconds": p}));
    }
    if !policies.is_empty() {
        r["policies"] = json!(policies);
    }
    if let Some(s) = stab {
        r["stabilizationWindowSeconds"] = json!(s);
    }
    if let Some(s) = select {
        r["selectPolicy"] = json!(s);
    }
    r
}

#[test]
fn test_generate_scale_down_rules() {
    for (name, input, policies, stab, select) in [
        (
            "Default values",
            Value::Null,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
            None,
            "Max",
        ),
        (
            "All parameters are specified",
            given(Some((1, 2)), Some((3, 4)), Some(25), Some("Max")),
            json!([{"type": "Pods", "value": 1, "periodSeconds": 2},
                   {"type": "Percent", "value": 3, "periodSeconds": 4}]),
            Some(25),
            "Max",
        ),
        (
            "Percent policy is specified",
            given(None, Some((1, 2)), None, Some("Min")),
            json!([{"type": "Percent", "value": 1, "periodSeconds": 2}]),
            None,
            "Min",
        ),
        (
            "Pods policy is specified",
            given(Some((3, 4)), None, None, None),
            json!([{"type": "Pods", "value": 3, "periodSeconds": 4}]),
            None,
            "Max",
        ),
    ] {
        let down = rules("scaleDown", input);
        assert_eq!(down["policies"], policies, "{name}");
        assert_eq!(
            down.get("stabilizationWindowSeconds"),
            stab.map(|s| json!(s)).as_ref(),
            "{name}"
        );
        assert_eq!(down["selectPolicy"], select, "{name}");
    }
}

#[test]
fn test_generate_scale_up_rules() {
    for (name, input, policies, stab, select) in [
        (
            "Default values",
            Value::Null,
            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                   {"type": "Percent", "value": 100, "periodSeconds": 15}]),
            0,
            "Max",
        ),
        (
            "All parameters are specified",
            given(Some((1, 2)), Some((3, 4)), Some(25), Some("Max")),
            json!([{"type": "Pods", "value": 1, "periodSeconds": 2},
                   {"type": "Percent", "value": 3, "periodSeconds": 4}]),
            25,
            "Max",
        ),
        (
            "Pod policy is specified",
            given(Some((1, 2)), None, None, Some("Min")),
            json!([{"type": "Pods", "value": 1, "periodSeconds": 2}]),
            0,
            "Min",
        ),
        (
            "Percent policy is specified",
            given(None, Some((7, 10)), None, None),
            json!([{"type": "Percent", "value": 7, "periodSeconds": 10}]),
            0,
            "Max",
        ),
        (
            "Pod policy and stabilization window are specified",
            given(Some((4, 2)), None, Some(25), None),
            json!([{"type": "Pods", "value": 4, "periodSeconds": 2}]),
            25,
            "Max",
        ),
        (
            "Percent policy and stabilization window are specified",
            given(None, Some((7, 60)), Some(25), None),
            json!([{"type": "Percent", "value": 7, "periodSeconds": 60}]),
            25,
            "Max",
        ),
    ] {
        let up = rules("scaleUp", input);
        assert_eq!(up["policies"], policies, "{name}");
        assert_eq!(up["stabilizationWindowSeconds"], stab, "{name}");
        assert_eq!(up["selectPolicy"], select, "{name}");
    }
}

#[test]
fn set_defaults_horizontal_pod_autoscaler() {
    // Read off `pkg/apis/autoscaling/v2/defaults.go` (an oracle of the source, not of a
    // kube test): `MinReplicas == nil` -> 1; no metrics -> one Resource metric on cpu at
    // `autoscaling.DefaultCPUUtilization` (80) average utilization; no behavior, none made.
    let got = defaulted(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 5}}),
    );
    assert_eq!(
        got,
        json!({"spec": {"maxReplicas": 5, "minReplicas": 1, "metrics": [{"type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization",
                "averageUtilization": 80}}}]}})
    );
    let given = json!({"spec": {"maxReplicas": 5, "minReplicas": 2, "metrics": [{
        "type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "1Gi"}}}]}});
    let got = defaulted("autoscaling/v2", "HorizontalPodAutoscaler", given.clone());
    assert_eq!(got, given, "given minReplicas and metrics stay");
}
