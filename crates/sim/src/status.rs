//! API errors rendered as `kind: Status` bodies, worded like kube-apiserver's
//! `k8s.io/apimachinery/pkg/api/errors` constructors so clients branch on them the same way.

use serde_json::{json, Value};

/// A failed request: HTTP code, `reason`, message and optional `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

/// `group/kind` as `details` carry it: kube-apiserver puts the *resource* (plural) in
/// `details.kind` for errors built from a GroupResource.
#[derive(Debug, Clone, Copy)]
pub struct Gr<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl Gr<'_> {
    /// `deployments.apps`, or `configmaps` for the core group (`GroupResource.String()`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
    /// `details` for errors about `name`.
    pub fn details(&self, name: &str) -> Value {
        let mut d = json!({"group": self.group, "kind": self.resource});
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        if self.group.is_empty() {
            d.as_object_mut().unwrap().remove("group");
        }
        d
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }
    pub fn not_found(gr: Gr, name: &str) -> ApiError {
        ApiError {
            details: Some(gr.details(name)),
            ..ApiError::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", gr.qualified()),
            )
        }
    }
    pub fn already_exists(gr: Gr, name: &str) -> ApiError {
        ApiError {
            details: Some(gr.details(name)),
            ..ApiError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", gr.qualified()),
            )
        }
    }
    /// The optimistic-concurrency failure of an update with a stale resourceVersion.
    pub fn conflict(gr: Gr, name: &str) -> ApiError {
        ApiError {
            details: Some(gr.details(name)),
            ..ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                     please apply your changes to the latest version and try again",
                    gr.qualified()
                ),
            )
        }
    }
    /// 422 with one field cause; `kind` is the Kind (kube-apiserver's `NewInvalid` takes a GroupKind).
    pub fn invalid(group: &str, kind: &str, name: &str, field: &str, detail: &str) -> ApiError {
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut details = json!({"name": name, "group": group, "kind": kind,
            "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}]});
        if group.is_empty() {
            details.as_object_mut().unwrap().remove("group");
        }
        ApiError {
            details: Some(details),
            ..ApiError::new(
                422,
                "Invalid",
                format!("{gk} \"{name}\" is invalid: {field}: {detail}"),
            )
        }
    }
    /// A write kube-apiserver refuses (apimachinery `pkg/api/errors/errors.go`): a body that
    /// does not decode is `400 BadRequest` with the decoder's words; a decoded object that
    /// fails validation is `NewInvalid`'s `422 Invalid`, one cause per field error
    /// (`field/errors.go`: `Type`, `ErrorBody()`, `Field`), the message their aggregate.
    pub fn rejected(rejection: driftd_k8s::validation::Rejection) -> ApiError {
        use driftd_k8s::validation::Rejection;
        let invalid = match rejection {
            Rejection::BadRequest(e) => return ApiError::bad_request(e.message),
            Rejection::Invalid(invalid) => invalid,
        };
        let causes: Vec<Value> = invalid
            .errors
            .iter()
            .map(|e| {
                let text = e.to_string();
                let body = text
                    .strip_prefix(&format!("{}: ", e.field))
                    .unwrap_or(&text)
                    .to_string();
                json!({"reason": e.error_type.cause_type(), "message": body, "field": e.field})
            })
            .collect();
        let mut details = json!({"name": invalid.name, "group": invalid.group,
            "kind": invalid.kind, "causes": causes});
        if invalid.group.is_empty() {
            details.as_object_mut().unwrap().remove("group");
        }
        ApiError {
            details: Some(details),
            ..ApiError::new(422, "Invalid", invalid.to_string())
        }
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }
    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(405, "MethodNotAllowed", message)
    }
    /// `410 Expired`, for a watch or list from a compacted resourceVersion.
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }
    /// The reason kube-apiserver uses for a bare HTTP code (used by fault injection).
    pub fn from_code(code: u16, message: impl Into<String>) -> ApiError {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Gone",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        ApiError::new(code, reason, message)
    }

    /// The `Status` object clients decode.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}
