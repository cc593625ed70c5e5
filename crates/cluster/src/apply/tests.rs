use super::*;
use serde_json::json;

#[test]
fn a_409_answer_names_each_conflicting_field_and_its_manager() {
    // The shape kube-apiserver answers an apply with when another manager owns a field
    // (`Apply failed with 2 conflicts: ...`, one cause per field).
    let status: kube::core::Status = serde_json::from_value(json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 409,
        "reason": "Conflict",
        "message": "Apply failed with 2 conflicts: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas",
        "details": {"causes": [
            {"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-edit\" using apps/v1", "field": ".spec.replicas"},
            {"reason": "FieldManagerConflict", "message": "conflict with \"helm\" using apps/v1", "field": ".spec.template.spec.containers[name=\"web\"].image"},
            {"reason": "FieldValueInvalid", "message": "other", "field": ".x"}
        ]}
    }))
    .unwrap();
    let found = conflicts(&status);
    assert_eq!(
        found,
        [
            Conflict {
                field: ".spec.replicas".into(),
                manager: "kubectl-edit".into()
            },
            Conflict {
                field: ".spec.template.spec.containers[name=\"web\"].image".into(),
                manager: "helm".into()
            }
        ]
    );
    let err = ApplyError::Conflict {
        object: Box::new(ObjectKey {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        }),
        conflicts: found,
    };
    let text = err.to_string();
    assert!(
        text.starts_with("Deployment.apps shop/web: conflict with another field manager: .spec.replicas is owned by \"kubectl-edit\""),
        "{text}"
    );
    assert!(text.contains("--force-conflicts"), "{text}");
}
