//! rbac.authorization.k8s.io/v1 (`pkg/apis/rbac/v1/defaults.go`): RoleBinding and
//! ClusterRoleBinding.

use serde_json::Value;

use super::fields::{default_str, for_each_item, map};

pub(super) fn role_binding(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(rr) = m.get_mut("roleRef").and_then(map) {
        default_str(rr, "apiGroup", "rbac.authorization.k8s.io");
    }
    for_each_item(m.get_mut("subjects"), |s| {
        let Some(s) = map(s) else { return };
        if matches!(
            s.get("kind").and_then(Value::as_str),
            Some("User" | "Group")
        ) {
            default_str(s, "apiGroup", "rbac.authorization.k8s.io");
        }
    });
}
