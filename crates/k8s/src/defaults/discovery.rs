//! discovery.k8s.io/v1 (`pkg/apis/discovery/v1/defaults.go`): EndpointSlice.

use serde_json::{json, Value};

use super::fields::{default_ptr, for_each_item, map};

/// SetDefaults_EndpointPort on every port: both fields are pointers, so an unnamed port
/// is stored with `name: ""`, and a port without protocol is TCP.
pub(super) fn endpoint_slice(object: &mut Value) {
    let Some(m) = map(object) else { return };
    for_each_item(m.get_mut("ports"), |p| {
        if let Some(p) = map(p) {
            default_ptr(p, "name", json!(""));
            default_ptr(p, "protocol", json!("TCP"));
        }
    });
}
