//! Routes the create-only review APIs and the TokenRequest subresource to [`crate::auth`]
//! instead of generic storage: kube-apiserver stores none of them, answers a create with
//! `201 Created` and the review filled in, and any other verb with `405`.

use super::{json_response, parse_body, take_fault, App, Target};
use crate::status::ApiError;
use axum::body::Bytes;
use axum::http::Method;
use axum::response::Response;

enum Review {
    Token,
    Access,
    TokenRequest,
}

/// `None` when `target` is none of them.
pub(super) fn serve(
    app: &App,
    method: &Method,
    target: &Target,
    body: &Bytes,
) -> Option<Result<Response, ApiError>> {
    let info = &target.info;
    let sub = target.subresource.as_deref();
    let review = match (info.group.as_str(), info.plural.as_str(), sub) {
        ("authentication.k8s.io", "tokenreviews", None) => Review::Token,
        ("authorization.k8s.io", "subjectaccessreviews", None) => Review::Access,
        ("", "serviceaccounts", Some("token")) => Review::TokenRequest,
        _ => return None,
    };
    let collection = matches!(review, Review::Token | Review::Access);
    if method != Method::POST || (collection && target.name.is_some()) {
        return Some(Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )));
    }
    if let Some(fault) = take_fault(app, &info.plural, "create") {
        return Some(Err(fault));
    }
    let answer = parse_body(body).and_then(|body| match review {
        Review::Token => {
            app.auth.counted_token_review();
            app.auth.tokens.review(&app.store, &body)
        }
        Review::Access => {
            app.auth.counted_access_review();
            crate::auth::access::review(&app.store, &body)
        }
        Review::TokenRequest => app.auth.tokens.request(
            &app.store,
            target.namespace.as_deref().unwrap_or(""),
            target.name.as_deref().unwrap_or(""),
            &body,
        ),
    });
    Some(answer.map(|value| json_response(201, &value)))
}
