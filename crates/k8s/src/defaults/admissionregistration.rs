//! admissionregistration.k8s.io (`pkg/apis/admissionregistration/{v1,v1beta1,v1alpha1}/defaults.go`):
//! webhook configurations, ValidatingAdmissionPolicy and MutatingAdmissionPolicy with their
//! bindings.
//!
//! The versions disagree on the webhook defaults, so the version picks them: v1 fails
//! closed (`Fail`, `Equivalent`, 10 s) and requires `sideEffects` and
//! `admissionReviewVersions`, while v1beta1 kept its pre-GA defaults (`Ignore`, `Exact`,
//! 30 s, `Unknown`, `[v1beta1]`). The policy defaults are the same in every version, except
//! `SetDefaults_ParamRef`, which only v1alpha1 has (v1beta1 and v1 made
//! `parameterNotFoundAction` required instead).

use serde_json::{json, Map, Value};

use super::apps::spec_of;
use super::fields::{default_list, default_ptr, for_each_item, map};

/// The webhook defaults of one API version.
struct WebhookDefaults {
    failure_policy: &'static str,
    match_policy: &'static str,
    timeout_seconds: i64,
    /// v1beta1 only: v1 validation requires the field.
    side_effects: Option<&'static str>,
    /// v1beta1 only: v1 validation requires the field.
    admission_review_versions: Option<&'static str>,
}

const V1: WebhookDefaults = WebhookDefaults {
    failure_policy: "Fail",
    match_policy: "Equivalent",
    timeout_seconds: 10,
    side_effects: None,
    admission_review_versions: None,
};

const V1BETA1: WebhookDefaults = WebhookDefaults {
    failure_policy: "Ignore",
    match_policy: "Exact",
    timeout_seconds: 30,
    side_effects: Some("Unknown"),
    admission_review_versions: Some("v1beta1"),
};

/// SetObjectDefaults_{Mutating,Validating}WebhookConfiguration: every webhook, its service
/// reference and its rules.
pub(super) fn webhook_configuration(object: &mut Value, version: &str, mutating: bool) {
    let Some(m) = map(object) else { return };
    let defaults = if version == "v1beta1" { &V1BETA1 } else { &V1 };
    for_each_item(m.get_mut("webhooks"), |w| {
        let Some(w) = map(w) else { return };
        webhook(w, defaults, mutating);
        if let Some(svc) = w
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(map)
        {
            service_reference(svc);
        }
        rules(w.get_mut("rules"));
    });
}

/// SetDefaults_ValidatingWebhook and SetDefaults_MutatingWebhook (the latter adds
/// `reinvocationPolicy`).
fn webhook(w: &mut Map<String, Value>, d: &WebhookDefaults, mutating: bool) {
    default_ptr(w, "failurePolicy", json!(d.failure_policy));
    default_ptr(w, "matchPolicy", json!(d.match_policy));
    default_ptr(w, "namespaceSelector", json!({}));
    default_ptr(w, "objectSelector", json!({}));
    if let Some(side_effects) = d.side_effects {
        default_ptr(w, "sideEffects", json!(side_effects));
    }
    default_ptr(w, "timeoutSeconds", json!(d.timeout_seconds));
    if mutating {
        default_ptr(w, "reinvocationPolicy", json!("Never"));
    }
    if let Some(v) = d.admission_review_versions {
        default_list(w, "admissionReviewVersions", json!([v]));
    }
}

/// SetDefaults_ServiceReference: a webhook served by a Service listens on 443.
fn service_reference(svc: &mut Map<String, Value>) {
    default_ptr(svc, "port", json!(443));
}

/// SetDefaults_Rule on each RuleWithOperations (the Rule is embedded inline): a rule with
/// no scope matches both cluster and namespaced resources.
fn rules(list: Option<&mut Value>) {
    for_each_item(list, |r| {
        if let Some(r) = map(r) {
            default_ptr(r, "scope", json!("*"));
        }
    });
}

/// SetDefaults_MatchResources with the Rule defaults of its resource rules.
fn match_resources(mr: &mut Map<String, Value>) {
    default_ptr(mr, "matchPolicy", json!("Equivalent"));
    default_ptr(mr, "namespaceSelector", json!({}));
    default_ptr(mr, "objectSelector", json!({}));
    rules(mr.get_mut("resourceRules"));
    rules(mr.get_mut("excludeResourceRules"));
}

/// SetObjectDefaults_ValidatingAdmissionPolicy and _MutatingAdmissionPolicy:
/// SetDefaults_{Validating,Mutating}AdmissionPolicySpec on the spec (a non-pointer struct,
/// so it exists once decoded), then its `matchConstraints` when given.
pub(super) fn policy(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    default_ptr(spec, "failurePolicy", json!("Fail"));
    if let Some(mc) = spec.get_mut("matchConstraints").and_then(map) {
        match_resources(mc);
    }
}

/// SetObjectDefaults_{Validating,Mutating}AdmissionPolicyBinding: the binding's
/// `matchResources` when given, and in v1alpha1 its `paramRef` (SetDefaults_ParamRef).
pub(super) fn binding(object: &mut Value, version: &str) {
    let Some(spec) = object.get_mut("spec").and_then(map) else {
        return;
    };
    if let Some(mr) = spec.get_mut("matchResources").and_then(map) {
        match_resources(mr);
    }
    if version == "v1alpha1" {
        if let Some(p) = spec.get_mut("paramRef").and_then(map) {
            param_ref(p);
        }
    }
}

/// SetDefaults_ParamRef (v1alpha1): a missing parameter object denies the request.
fn param_ref(p: &mut Map<String, Value>) {
    default_ptr(p, "parameterNotFoundAction", json!("Deny"));
}
