//! admissionregistration.k8s.io/v1beta1: kubernetes/kubernetes
//! `pkg/apis/admissionregistration/v1beta1/defaults_test.go` (commit 0a74a85e). v1beta1
//! keeps the pre-GA webhook defaults (`Ignore`, `Exact`, 30 s, `Unknown` side effects,
//! `[v1beta1]` review versions); each case compares the whole object.

use serde_json::json;

use super::{check_admission_webhook_cases, defaulted};

const API: &str = "admissionregistration.k8s.io/v1beta1";

#[test]
fn test_default_admission_webhook() {
    check_admission_webhook_cases(
        API,
        json!({"failurePolicy": "Ignore", "matchPolicy": "Exact",
            "timeoutSeconds": 30, "namespaceSelector": {}, "objectSelector": {},
            "sideEffects": "Unknown", "admissionReviewVersions": ["v1beta1"]}),
    );
}

#[test]
fn set_defaults_validating_admission_policy_spec() {
    // v1beta1's SetDefaults_ValidatingAdmissionPolicySpec and SetDefaults_MatchResources
    // are v1's (`pkg/apis/admissionregistration/v1beta1/defaults.go`).
    let got = defaulted(
        API,
        "ValidatingAdmissionPolicy",
        json!({"spec": {"matchConstraints": {}}}),
    );
    let want = json!({"spec": {"failurePolicy": "Fail", "matchConstraints": {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}}});
    assert_eq!(got, want);
}
