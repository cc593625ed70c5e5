//! autoscaling/v1: kubernetes/kubernetes `pkg/apis/autoscaling/v1/defaults_test.go`
//! (commit 05a720f8). v1 has only SetDefaults_HorizontalPodAutoscaler's `minReplicas`; the
//! metrics and behavior defaults are v2's.

use serde_json::json;

use super::{defaulted, expect};

#[test]
fn test_set_default_hpa() {
    for (name, spec, want) in [
        (
            "unspecified min replicas, use the default value",
            json!({}),
            1,
        ),
        ("set min replicas to 3", json!({"minReplicas": 3}), 3),
    ] {
        let got = defaulted(
            "autoscaling/v1",
            "HorizontalPodAutoscaler",
            json!({"spec": spec}),
        );
        expect(
            name,
            &got,
            &[
                ("/spec/minReplicas", Some(json!(want))),
                ("/spec/metrics", None),
            ],
        );
    }
}
