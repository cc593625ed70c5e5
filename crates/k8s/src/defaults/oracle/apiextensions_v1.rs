//! kubernetes/kubernetes
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults_test.go`
//! (k8s.io/apiextensions-apiserver commit 1aa2717a, 2026-07-22). The Go CRD always has a
//! Status struct; the port spells it `status: {}`.

use serde_json::json;

use super::defaulted;

#[test]
fn test_defaults() {
    let none = json!({"strategy": "None"});
    for (name, original, want) in [
        (
            "empty",
            json!({"spec": {}, "status": {}}),
            json!({"spec": {"conversion": none}, "status": {}}),
        ),
        (
            "conversion defaults",
            json!({"spec": {"scope": "Namespaced", "conversion": {"strategy": "Webhook",
                "webhook": {"clientConfig": {"service": {}}}}}, "status": {}}),
            json!({"spec": {"scope": "Namespaced", "conversion": {"strategy": "Webhook",
                "webhook": {"clientConfig": {"service": {"port": 443}}}}}, "status": {}}),
        ),
        (
            "storage status defaults",
            json!({"spec": {"scope": "Namespaced", "conversion": none, "versions": [
                {"name": "v1", "storage": false, "served": true},
                {"name": "v2", "storage": true, "served": true},
                {"name": "v3", "storage": false, "served": true}]}, "status": {}}),
            json!({"spec": {"scope": "Namespaced", "conversion": none, "versions": [
                {"name": "v1", "storage": false, "served": true},
                {"name": "v2", "storage": true, "served": true},
                {"name": "v3", "storage": false, "served": true}]},
                "status": {"storedVersions": ["v2"]}}),
        ),
        (
            "version defaults",
            json!({"spec": {"scope": "Namespaced", "conversion": none,
                "versions": [{"name": "v1", "storage": true}]}, "status": {}}),
            json!({"spec": {"scope": "Namespaced", "conversion": none,
                "versions": [{"name": "v1", "storage": true}]},
                "status": {"storedVersions": ["v1"]}}),
        ),
    ] {
        let got = defaulted(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            original,
        );
        assert_eq!(got, want, "{name}");
    }
}
