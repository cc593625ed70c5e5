//! scheduling.k8s.io/v1: kubernetes/kubernetes `pkg/apis/scheduling/v1/defaults_test.go`
//! (commit 2a64f222). NonPreemptingPriority, set on by the Go test, is GA in v1.32.

use serde_json::json;

use super::{defaulted, expect};

#[test]
fn test_set_default_preemption_policy() {
    let got = defaulted("scheduling.k8s.io/v1", "PriorityClass", json!({"value": 1}));
    expect(
        "preemptionPolicy",
        &got,
        &[("/preemptionPolicy", Some(json!("PreemptLowerPriority")))],
    );
    let never = json!({"value": 1, "preemptionPolicy": "Never"});
    let got = defaulted("scheduling.k8s.io/v1", "PriorityClass", never.clone());
    assert_eq!(got, never, "a given policy stays");
}
