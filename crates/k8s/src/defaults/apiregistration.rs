//! apiregistration.k8s.io/v1
//! (`staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/defaults.go`): APIService.

use serde_json::{json, Value};

use super::fields::{default_ptr, map};

/// SetDefaults_ServiceReference on `spec.service`: an aggregated API is served on 443.
/// (An APIService without a service is served locally and has nothing to default.)
pub(super) fn api_service(object: &mut Value) {
    if let Some(svc) = object.pointer_mut("/spec/service").and_then(map) {
        default_ptr(svc, "port", json!(443));
    }
}
