//! admissionregistration.k8s.io/v1alpha1: kubernetes/kubernetes
//! `pkg/apis/admissionregistration/v1alpha1/defaults_test.go` (commit 39c66b2c), whose
//! cases compare the whole object. That version predates SetDefaults_ParamRef and
//! MutatingAdmissionPolicy (alpha in v1.32); their cases are read off
//! `pkg/apis/admissionregistration/v1alpha1/defaults.go` (file id 555747279 in the index)
//! and `zz_generated.defaults.go` (commit 168c15a3: the rules of a v1alpha1 policy get v1's
//! SetDefaults_Rule, their type being an alias of v1's), an oracle of the source rather
//! than of a kube test.

use serde_json::json;

use super::defaulted;

const API: &str = "admissionregistration.k8s.io/v1alpha1";

#[test]
fn test_default_admission_policy() {
    let matched =
        json!({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}});
    let got = defaulted(
        API,
        "ValidatingAdmissionPolicy",
        json!({"spec": {"matchConstraints": {}}}),
    );
    assert_eq!(
        got,
        json!({"spec": {"matchConstraints": matched, "failurePolicy": "Fail"}}),
        "ValidatingAdmissionPolicy"
    );
    let got = defaulted(
        API,
        "ValidatingAdmissionPolicyBinding",
        json!({"spec": {"matchResources": {}}}),
    );
    assert_eq!(
        got,
        json!({"spec": {"matchResources": matched}}),
        "ValidatingAdmissionPolicyBinding"
    );
}

#[test]
fn set_defaults_param_ref() {
    // `if obj.ParameterNotFoundAction == nil { DenyAction }`, on the paramRef of both
    // binding kinds; a given action stays.
    for kind in [
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicyBinding",
    ] {
        let got = defaulted(API, kind, json!({"spec": {"paramRef": {"name": "p"}}}));
        let want = json!({"spec": {"paramRef": {"name": "p", "parameterNotFoundAction": "Deny"}}});
        assert_eq!(got, want, "{kind}");
        let given =
            json!({"spec": {"paramRef": {"name": "p", "parameterNotFoundAction": "Allow"}}});
        assert_eq!(defaulted(API, kind, given.clone()), given, "{kind}");
    }
}

#[test]
fn set_defaults_mutating_admission_policy_spec() {
    // SetDefaults_MutatingAdmissionPolicySpec (`FailurePolicy == nil` -> Fail) and
    // SetDefaults_MatchResources with SetDefaults_Rule on its matchConstraints.
    let got = defaulted(
        API,
        "MutatingAdmissionPolicy",
        json!({"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"]}]}}}),
    );
    let want = json!({"spec": {"failurePolicy": "Fail", "matchConstraints": {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "resourceRules": [{"apiGroups": ["apps"], "scope": "*"}]}}});
    assert_eq!(got, want);
}
