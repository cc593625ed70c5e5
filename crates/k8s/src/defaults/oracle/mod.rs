//! An oracle for the table that does not come from it: the cases of kube's own defaulting
//! tests, ported case by case. The differ and the simulator both apply this table, so a
//! wrong default would hide in every simulator test; these cases pin it to what
//! kube-apiserver's `SetDefaults_*` functions were tested to do.
//!
//! Each module ports one file of kubernetes/kubernetes and each `#[test]` one Go test
//! function (same name in snake case). Kube's tests round-trip Go structs, where a
//! non-pointer struct (a `status`, a `roleRef`) always exists; a manifest may leave one out,
//! and the table then creates nothing, so a ported case spells such a struct as `{}` where
//! the Go case relies on it. Cases that depend on a feature gate are ported for the gate's
//! state in v1.32, the version the table models (the simulator is a v1.32 server); cases
//! for the other state are skipped with the reason beside them.

mod admissionregistration_v1;
mod admissionregistration_v1alpha1;
mod admissionregistration_v1beta1;
mod apiextensions_v1;
mod apiregistration_v1;
mod apps_v1;
mod autoscaling_v1;
mod autoscaling_v2;
mod batch_v1;
mod core_v1_objects;
mod core_v1_pods;
mod discovery_v1;
mod flowcontrol_v1;
mod networking_v1;
mod rbac_v1;
mod scheduling_v1;
mod storage_v1;
mod upstream_table;

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// `object` after the table.
fn defaulted(api_version: &str, kind: &str, object: Value) -> Value {
    let mut object = object;
    super::apply(api_version, kind, &mut object);
    object
}

/// Asserts every `(pointer, value)` of `want` in `got`; a `None` value must be absent.
#[track_caller]
fn expect(case: &str, got: &Value, want: &[(&str, Option<Value>)]) {
    for (pointer, value) in want {
        assert_eq!(
            got.pointer(pointer),
            value.as_ref(),
            "{case}: {pointer} in {got:#}"
        );
    }
}

/// What defaulting added or changed: every leaf (scalar, empty object or list, or a list
/// whose length changed) of `after` that `before` lacks or holds differently, by pointer.
/// Kube's `detectDefaults` reports the same: each field defaulting set.
fn added(before: &Value, after: &Value) -> BTreeMap<String, Value> {
    fn walk(
        path: String,
        before: Option<&Value>,
        after: &Value,
        out: &mut BTreeMap<String, Value>,
    ) {
        match (before, after) {
            (Some(Value::Object(b)), Value::Object(a)) => {
                for (k, v) in a {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    walk(format!("{path}/{key}"), b.get(k), v, out);
                }
            }
            (Some(Value::Array(b)), Value::Array(a)) if a.len() == b.len() => {
                for (i, (bv, av)) in b.iter().zip(a).enumerate() {
                    walk(format!("{path}/{i}"), Some(bv), av, out);
                }
            }
            (Some(b), a) if b == a => {}
            (_, a) => {
                out.insert(path, a.clone());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(String::new(), Some(before), after, &mut out);
    out
}

/// The replicas cases kube tests for each replicated kind: unset is 1, a given 0 or 3 stays.
fn check_replicas(api_version: &str, kind: &str) {
    for (replicas, want) in [(None, 1), (Some(0), 0), (Some(3), 3)] {
        let mut object = json!({"spec": {"template": {"metadata": {"labels": {"foo": "bar"}}}}});
        if let Some(r) = replicas {
            object["spec"]["replicas"] = json!(r);
        }
        let got = defaulted(api_version, kind, object);
        assert_eq!(got["spec"]["replicas"], want, "{kind} {replicas:?}");
    }
}

/// Requests default to limits in Pods only: a pod template of `kind` keeps none.
fn check_no_template_requests(api_version: &str, kind: &str) {
    let object = json!({"spec": {"replicas": 3, "template": {"metadata": {"labels": {"foo": "bar"}},
        "spec": {"containers": [{"resources": {"limits": {"cpu": "100m"}}}]}}}});
    let got = defaulted(api_version, kind, object);
    let requests = "/spec/template/spec/containers/0/resources/requests";
    expect(kind, &got, &[(requests, None)]);
}

/// The four cases both admissionregistration `TestDefaultAdmissionWebhook`s share (v1 and
/// v1beta1, same names and inputs). `defaults` is what the version gives every webhook; a
/// mutating one also gets `reinvocationPolicy: Never` in both. Each compares the whole
/// object.
fn check_admission_webhook_cases(api_version: &str, defaults: Value) {
    let webhook = |given: Value, mutating: bool| {
        let mut w = defaults.clone();
        if mutating {
            w["reinvocationPolicy"] = json!("Never");
        }
        for (k, v) in given.as_object().into_iter().flatten() {
            w[k] = v.clone();
        }
        w
    };
    let mutating = "MutatingWebhookConfiguration";
    for (name, kind, original, want) in [
        (
            "ValidatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            json!({}),
            webhook(json!({}), false),
        ),
        (
            "MutatingWebhookConfiguration",
            mutating,
            json!({}),
            webhook(json!({}), true),
        ),
        (
            "scope=*",
            mutating,
            json!({"rules": [{}]}),
            webhook(json!({"rules": [{"scope": "*"}]}), true),
        ),
        (
            "port=443",
            mutating,
            json!({"clientConfig": {"service": {}}}),
            webhook(json!({"clientConfig": {"service": {"port": 443}}}), true),
        ),
    ] {
        let got = defaulted(api_version, kind, json!({"webhooks": [original]}));
        assert_eq!(got, json!({"webhooks": [want]}), "{api_version} {name}");
    }
}
