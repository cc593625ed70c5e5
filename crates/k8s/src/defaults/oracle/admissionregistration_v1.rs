//! admissionregistration.k8s.io/v1: kubernetes/kubernetes
//! `pkg/apis/admissionregistration/v1/defaults_test.go` (commit 0a74a85e), whose cases
//! compare the whole object, and so do their ports. That file's version has no policy
//! cases; `set_defaults_validating_admission_policy_spec` and `set_defaults_match_resources`
//! are read off `pkg/apis/admissionregistration/v1/defaults.go` (the VAP defaults, GA in
//! v1.30) and the order of `zz_generated.defaults.go` (commit 2595aa13), an oracle of the
//! source rather than of a kube test.

use serde_json::json;

use super::{check_admission_webhook_cases, defaulted};

const API: &str = "admissionregistration.k8s.io/v1";

#[test]
fn test_default_admission_webhook() {
    check_admission_webhook_cases(
        API,
        json!({"failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "timeoutSeconds": 10, "namespaceSelector": {}, "objectSelector": {}}),
    );
}

#[test]
fn set_defaults_validating_admission_policy_spec() {
    // `if obj.FailurePolicy == nil { Fail }`; a given policy stays.
    let got = defaulted(API, "ValidatingAdmissionPolicy", json!({"spec": {}}));
    assert_eq!(got, json!({"spec": {"failurePolicy": "Fail"}}));
    let got = defaulted(
        API,
        "ValidatingAdmissionPolicy",
        json!({"spec": {"failurePolicy": "Ignore"}}),
    );
    assert_eq!(got, json!({"spec": {"failurePolicy": "Ignore"}}));
}

#[test]
fn set_defaults_match_resources() {
    // SetDefaults_MatchResources on a policy's matchConstraints and a binding's
    // matchResources, SetDefaults_Rule on both rule lists of each.
    let given = json!({"resourceRules": [{"operations": ["CREATE"]}],
                       "excludeResourceRules": [{"scope": "Namespaced"}]});
    let want = json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "resourceRules": [{"operations": ["CREATE"], "scope": "*"}],
        "excludeResourceRules": [{"scope": "Namespaced"}]});
    let got = defaulted(
        API,
        "ValidatingAdmissionPolicy",
        json!({"spec": {"matchConstraints": given}}),
    );
    assert_eq!(
        got,
        json!({"spec": {"failurePolicy": "Fail", "matchConstraints": want}})
    );
    let got = defaulted(
        API,
        "ValidatingAdmissionPolicyBinding",
        json!({"spec": {"policyName": "p", "matchResources": given,
                        "paramRef": {"name": "x"}}}),
    );
    // v1 has no SetDefaults_ParamRef: `parameterNotFoundAction` is required.
    assert_eq!(
        got,
        json!({"spec": {"policyName": "p", "matchResources": want, "paramRef": {"name": "x"}}})
    );
}
