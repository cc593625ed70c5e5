//! `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: may this user do this?
//! Checked as `pkg/apis/authorization/validation` `ValidateSubjectAccessReview` checks it
//! (metadata empty, exactly one of `resourceAttributes` and `nonResourceAttributes`, a user
//! or a group), decided by [`super::rbac`], answered as
//! `pkg/registry/authorization/subjectaccessreview/rest.go` answers: the review with
//! `status.allowed` and, when there is one, `status.reason`.

use super::rbac::{self, Policy, Request, User};
use crate::status::ApiError;
use crate::store::Store;
use serde_json::{json, Value};

const GROUP: &str = "authorization.k8s.io";
const KIND: &str = "SubjectAccessReview";

pub fn review(store: &Store, body: &Value) -> Result<Value, ApiError> {
    let spec = &body["spec"];
    validate(body)?;
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let user = User {
        name: text(&spec["user"]),
        groups: spec["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect(),
    };
    let request = match spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        Some(attrs) => Request::Resource {
            verb: text(&attrs["verb"]),
            namespace: text(&attrs["namespace"]),
            group: text(&attrs["group"]),
            resource: text(&attrs["resource"]),
            subresource: text(&attrs["subresource"]),
            name: text(&attrs["name"]),
        },
        None => Request::NonResource {
            verb: text(&spec["nonResourceAttributes"]["verb"]),
            path: text(&spec["nonResourceAttributes"]["path"]),
        },
    };
    let namespace = match &request {
        Request::Resource { namespace, .. } => namespace.as_str(),
        Request::NonResource { .. } => "",
    };
    let decision = rbac::authorize(&Policy::load(store, namespace), &user, &request);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    Ok(json!({
        "kind": KIND,
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    }))
}

/// `field.Invalid` errors as `NewInvalid` reports them (name ""), in the validator's order.
fn validate(body: &Value) -> Result<(), ApiError> {
    let spec = &body["spec"];
    let present = |key: &str| spec.get(key).is_some_and(|v| !v.is_null());
    let mut errors: Vec<(&str, String)> = Vec::new();
    let (resource, non_resource) = (
        present("resourceAttributes"),
        present("nonResourceAttributes"),
    );
    if resource && non_resource {
        errors.push((
            "spec.nonResourceAttributes",
            format!(
                "Invalid value: {}: cannot be specified in combination with resourceAttributes",
                spec["nonResourceAttributes"]
            ),
        ));
    }
    if !resource && !non_resource {
        errors.push((
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
        ));
    }
    let user = spec["user"].as_str().unwrap_or("");
    let no_groups = spec["groups"].as_array().is_none_or(Vec::is_empty);
    if user.is_empty() && no_groups {
        errors.push((
            "spec.user",
            format!("Invalid value: {user:?}: at least one of user or group must be specified"),
        ));
    }
    if !metadata_empty(&body["metadata"]) {
        errors.push((
            "metadata",
            format!("Invalid value: {}: must be empty", body["metadata"]),
        ));
    }
    match errors.as_slice() {
        [] => Ok(()),
        [(field, detail)] => Err(ApiError::invalid(GROUP, KIND, "", field, detail)),
        many => {
            let mut error = ApiError::invalid(GROUP, KIND, "", many[0].0, &many[0].1);
            let causes: Vec<Value> = many
                .iter()
                .map(|(field, detail)| {
                    json!({"reason": "FieldValueInvalid", "message": detail, "field": field})
                })
                .collect();
            let joined: Vec<String> = many.iter().map(|(f, d)| format!("{f}: {d}")).collect();
            error.message = format!("{KIND}.{GROUP} \"\" is invalid: [{}]", joined.join(", "));
            if let Some(details) = error.details.as_mut() {
                details["causes"] = json!(causes);
            }
            Err(error)
        }
    }
}

/// Go compares the decoded ObjectMeta with an empty one (managedFields aside): JSON nulls
/// and empty values decode to the zero value.
fn metadata_empty(metadata: &Value) -> bool {
    fn empty(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.values().all(empty),
        }
    }
    match metadata {
        Value::Object(fields) => fields
            .iter()
            .all(|(key, value)| key == "managedFields" || empty(value)),
        other => empty(other),
    }
}
