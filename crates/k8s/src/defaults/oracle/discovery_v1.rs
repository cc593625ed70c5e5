//! discovery.k8s.io/v1: kubernetes/kubernetes `pkg/apis/discovery/v1/defaults_test.go`
//! (commit 48440740), whose cases compare the whole object.

use serde_json::json;

use super::defaulted;

#[test]
fn test_set_default_endpoint_port() {
    for (name, original, want) in [
        (
            "should set appropriate defaults",
            json!({"ports": [{"port": 80}]}),
            json!({"ports": [{"name": "", "protocol": "TCP", "port": 80}]}),
        ),
        (
            "should not overwrite values with defaults when set",
            json!({"ports": [{"name": "foo", "protocol": "UDP"}]}),
            json!({"ports": [{"name": "foo", "protocol": "UDP"}]}),
        ),
    ] {
        let got = defaulted("discovery.k8s.io/v1", "EndpointSlice", original);
        assert_eq!(got, want, "{name}");
    }
}
