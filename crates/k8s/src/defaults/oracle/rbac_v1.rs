//! rbac.authorization.k8s.io/v1. kubernetes/kubernetes has no `defaults_test.go` for this
//! package; these cases are read off `pkg/apis/rbac/v1/defaults.go` (commit 7c30c06e), one
//! per branch of its `SetDefaults_RoleBinding`, `SetDefaults_ClusterRoleBinding` and
//! `SetDefaults_Subject`, so they are an oracle of the source, not of a kube test.

use serde_json::json;

use super::{defaulted, expect};

const GROUP: &str = "rbac.authorization.k8s.io";

#[test]
fn set_defaults_role_binding_and_cluster_role_binding() {
    for kind in ["RoleBinding", "ClusterRoleBinding"] {
        let got = defaulted(
            "rbac.authorization.k8s.io/v1",
            kind,
            json!({"roleRef": {"kind": "ClusterRole", "name": "view"}}),
        );
        expect(kind, &got, &[("/roleRef/apiGroup", Some(json!(GROUP)))]);
        let got = defaulted(
            "rbac.authorization.k8s.io/v1",
            kind,
            json!({"roleRef": {"apiGroup": "example.com", "kind": "Thing", "name": "x"}}),
        );
        expect(
            kind,
            &got,
            &[("/roleRef/apiGroup", Some(json!("example.com")))],
        );
    }
}

#[test]
fn set_defaults_subject() {
    let got = defaulted(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [
            {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"},
            {"kind": "User", "name": "bob", "apiGroup": "example.com"},
            {"kind": "Robot", "name": "r2"}]}),
    );
    expect(
        "subjects",
        &got,
        &[
            ("/subjects/0/apiGroup", None),
            ("/subjects/1/apiGroup", Some(json!(GROUP))),
            ("/subjects/2/apiGroup", Some(json!(GROUP))),
            ("/subjects/3/apiGroup", Some(json!("example.com"))),
            ("/subjects/4/apiGroup", None),
        ],
    );
}
