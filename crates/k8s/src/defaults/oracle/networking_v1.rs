//! kubernetes/kubernetes `pkg/apis/networking/v1/defaults_test.go` (the version with
//! IngressClass cases, file id 103858992 in the index). Each Go case compares the whole
//! `spec`. `TestSetDefaultsForIngressClassParametersReference` is skipped: IngressClass is
//! a kind the table does not cover.

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
