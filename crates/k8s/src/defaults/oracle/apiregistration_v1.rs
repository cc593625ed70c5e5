//! apiregistration.k8s.io/v1. kubernetes/kubernetes has no `defaults_test.go` for this
//! package; the case is read off
//! `staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/defaults.go` (commit
//! 0d173114: `if obj.Port == nil { 443 }`), an oracle of the source, not of a kube test.

use serde_json::json;

use super::defaulted;

const API: &str = "apiregistration.k8s.io/v1";

#[test]
fn set_defaults_service_reference() {
    let svc = json!({"spec": {"group": "metrics.k8s.io", "version": "v1beta1",
        "service": {"name": "metrics-server", "namespace": "kube-system"}}});
    let got = defaulted(API, "APIService", svc);
    assert_eq!(got["spec"]["service"]["port"], 443);
    let given = json!({"spec": {"service": {"name": "s", "namespace": "n", "port": 6443}}});
    assert_eq!(defaulted(API, "APIService", given.clone()), given);
    // A local APIService has no service, and gets none.
    let local = json!({"spec": {"group": "apps", "version": "v1"}});
    assert_eq!(defaulted(API, "APIService", local.clone()), local);
}
