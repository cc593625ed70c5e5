//! kubernetes/kubernetes `pkg/apis/networking/v1/defaults_test.go` (the version with
//! IngressClass cases, file id 103858992 in the index). Each Go case compares the whole
//! `spec`.

use serde_json::json;

use super::defaulted;

#[test]
fn test_set_default_network_policy() {
    let sel = json!({"matchLabels": {"a": "b"}});
    let cd = json!({"matchLabels": {"c": "d"}});
    let ingress = json!([{"from": [{"podSelector": cd, "namespaceSelector": cd}]}]);
    let egress = json!([{"to": [{"namespaceSelector": cd}]}]);
    let only = json!([{"to": [{"namespaceSelector": {"matchLabels": {"Egress": "only"}}}]}]);
    for (name, spec, want) in [
        (
            "Empty NetworkPolicy should be set to PolicyTypes Ingress",
            json!({"podSelector": sel}),
            json!({"podSelector": sel, "policyTypes": ["Ingress"]}),
        ),
        (
            "Empty Ingress NetworkPolicy should be set to PolicyTypes Ingress",
            json!({"podSelector": sel, "ingress": []}),
            json!({"podSelector": sel, "ingress": [], "policyTypes": ["Ingress"]}),
        ),
        (
            "Defined Ingress and Egress should be set to Ingress,Egress",
            json!({"podSelector": sel, "ingress": ingress, "egress": egress}),
            json!({"podSelector": sel, "ingress": ingress, "egress": egress,
                   "policyTypes": ["Ingress", "Egress"]}),
        ),
        (
            "Egress only with unset PolicyTypes should be set to Ingress, Egress",
            json!({"podSelector": sel, "egress": egress}),
            json!({"podSelector": sel, "egress": egress, "policyTypes": ["Ingress", "Egress"]}),
        ),
        (
            "Egress only with PolicyTypes set to Egress should be set to only Egress",
            json!({"podSelector": sel, "egress": only, "policyTypes": ["Egress"]}),
            json!({"podSelector": sel, "egress": only, "policyTypes": ["Egress"]}),
        ),
    ] {
        let got = defaulted(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            json!({"spec": spec}),
        );
        assert_eq!(got["spec"], want, "{name}");
    }
}

#[test]
fn test_set_defaults_for_ingress_class_parameters_reference() {
    for (name, spec, want) in [
        (
            "populated parameters sets the default Scope",
            json!({"controller": "controller", "parameters": {"kind": "k", "name": "n"}}),
            json!({"controller": "controller",
                   "parameters": {"kind": "k", "name": "n", "scope": "Cluster"}}),
        ),
        (
            "existing scope is not overridden",
            json!({"controller": "controller", "parameters": {"kind": "k", "name": "n",
                   "scope": "Namespace", "namespace": "foo-ns"}}),
            json!({"controller": "controller", "parameters": {"kind": "k", "name": "n",
                   "scope": "Namespace", "namespace": "foo-ns"}}),
        ),
        (
            "empty Parameters does not set the default Scope",
            json!({"controller": "controller"}),
            json!({"controller": "controller"}),
        ),
    ] {
        let got = defaulted(
            "networking.k8s.io/v1",
            "IngressClass",
            json!({"spec": spec}),
        );
        assert_eq!(got["spec"], want, "{name}");
    }
}

#[test]
fn set_defaults_network_policy_port() {
    // Read off SetDefaults_NetworkPolicyPort (`Protocol == nil` -> TCP), run on the ports
    // of every ingress and egress rule; a given protocol stays.
    let got = defaulted(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}],
            "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53}]}]}}),
    );
    assert_eq!(
        got["spec"]["ingress"],
        json!([{"ports": [{"port": 80, "protocol": "TCP"}]}])
    );
    assert_eq!(
        got["spec"]["egress"],
        json!([{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}])
    );
}
