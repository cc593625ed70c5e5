//! The two questions put to the API server, behind a trait so the guard's tests can count
//! and script the answers.

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;

/// The user a TokenReview names, as the SubjectAccessReview must repeat it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Errors are strings that never hold the token.
pub trait Reviewer: Send + Sync {
    /// Who holds `token`, `None` when the API server does not authenticate it.
    fn token<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<User>, String>>;
    /// Whether `user` may `verb` the non-resource URL `path`.
    fn access<'a>(
        &'a self,
        user: &'a User,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>>;
}

/// The API server, through driftd's client (its ServiceAccount needs `create` on
/// `tokenreviews` and `subjectaccessreviews`, as `system:auth-delegator` grants).
pub struct KubeReviewer {
    client: kube::Client,
}

impl KubeReviewer {
    pub fn new(client: kube::Client) -> KubeReviewer {
        KubeReviewer { client }
    }
}

impl Reviewer for KubeReviewer {
    fn token<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<User>, String>> {
        Box::pin(async move {
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token: token.to_string(),
                    audiences: None,
                },
                ..TokenReview::default()
            };
            let answer = Api::<TokenReview>::all(self.client.clone())
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| e.to_string())?;
            let status = answer.status.unwrap_or_default();
            if status.authenticated != Some(true) {
                return Ok(None);
            }
            let user = status.user.unwrap_or_default();
            Ok(Some(User {
                name: user.username.unwrap_or_default(),
                uid: user.uid.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default(),
            }))
        })
    }

    fn access<'a>(
        &'a self,
        user: &'a User,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: some(&user.name),
                    uid: some(&user.uid),
                    groups: (!user.groups.is_empty()).then(|| user.groups.clone()),
                    extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
                    non_resource_attributes: Some(NonResourceAttributes {
                        path: Some(path.to_string()),
                        verb: Some(verb.to_string()),
                    }),
                    resource_attributes: None,
                },
                ..SubjectAccessReview::default()
            };
            let answer = Api::<SubjectAccessReview>::all(self.client.clone())
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| e.to_string())?;
            Ok(answer.status.is_some_and(|s| s.allowed))
        })
    }
}
