//! `[http] auth = "kubernetes"`: who may read what, decided by the API server, the way
//! kube-rbac-proxy guards the in-cluster exporters kube-prometheus deploys
//! (`pkg/proxy/proxy.go` `Handle`, `pkg/filters/auth.go`):
//!
//! - the bearer token of the `Authorization` header is authenticated by a TokenReview; none,
//!   or one the API server does not recognise (or cannot be asked about), is `401
//!   Unauthorized`;
//! - the request is authorized by a SubjectAccessReview for that user with non-resource
//!   attributes: the request path and a verb from the method (`get` for GET and HEAD,
//!   `create`, `update`, `patch`, `delete` for POST, PUT, PATCH, DELETE; any other method
//!   its lower-case name), so RBAC grants `/metrics` and `/drift` separately with
//!   `nonResourceURLs`; not allowed is `403 Forbidden (user=..., verb=..., resource=,
//!   subresource=)`, a failed review `500 Authorization error (...)`, in kube-rbac-proxy's
//!   words;
//! - answers are cached for `auth_cache_seconds` (tokens by a keyed hash, never in
//!   clear), denials and unknown tokens included, failures to ask not.
//!
//! The path authorized is the raw request path, the string the router matches, so what is
//! authorized is what is served (Go's `URL.Path` would be the percent-decoded path; for
//! the paths driftd serves the two are the same). The verb for HEAD is `get` (kube-rbac-proxy
//! leaves it empty, which no rule but `*` matches), so `curl -I` works with a `get` grant.

mod cache;
mod review;

pub use review::{KubeReviewer, Reviewer, User};

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Response, StatusCode};
use axum::response::IntoResponse;
use cache::Cache;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::sync::Arc;
use std::time::Duration;

/// Distinct tokens and (user, verb, path) answers kept at most; beyond it the oldest go,
/// so a client sending random tokens cannot grow memory.
const CACHE_ENTRIES: usize = 4096;

/// How long a request waits for the API server's answer (k8s.io/apiserver's delegated
/// authorization `ClientTimeout`), a free review slot included.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// Reviews in flight to the API server at once: requests beyond wait (cached answers do not).
const MAX_REVIEWS: usize = 8;

/// The guard: the reviewer, its cached answers, and the key that hashes cache keys.
pub struct KubernetesAuth {
    reviewer: Arc<dyn Reviewer>,
    tokens: Cache<Option<User>>,
    decisions: Cache<bool>,
    key: [u8; 32],
    slots: tokio::sync::Semaphore,
}

impl KubernetesAuth {
    pub fn new(reviewer: Arc<dyn Reviewer>, cache_for: Duration) -> KubernetesAuth {
        KubernetesAuth {
            reviewer,
            tokens: Cache::new(cache_for, CACHE_ENTRIES),
            decisions: Cache::new(cache_for, CACHE_ENTRIES),
            key: rand::random(),
            slots: tokio::sync::Semaphore::new(MAX_REVIEWS),
        }
    }

    /// `Ok` when the request may go on; otherwise the answer to send instead.
    pub async fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<(), Response<Body>> {
        let Some(token) = bearer_token(headers) else {
            return Err(unauthorized());
        };
        let user = match self.authenticate(token).await {
            Ok(Some(user)) => user,
            Ok(None) => return Err(unauthorized()),
            Err(err) => {
                tracing::warn!(error = %err, "cannot authenticate an HTTP request: the TokenReview failed");
                return Err(unauthorized());
            }
        };
        let verb = verb_of(method);
        match self.authorize(&user, &verb, path).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::debug!(user = %user.name, %verb, path, "HTTP request forbidden by the SubjectAccessReview");
                Err(refusal(StatusCode::FORBIDDEN, "Forbidden", &user, &verb))
            }
            Err(err) => {
                tracing::warn!(user = %user.name, %verb, path, error = %err, "cannot authorize an HTTP request: the SubjectAccessReview failed");
                Err(refusal(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Authorization error",
                    &user,
                    &verb,
                ))
            }
        }
    }

    async fn authenticate(&self, token: &str) -> Result<Option<User>, String> {
        let key = self.digest(&[b"token", token.as_bytes()]);
        if let Some(known) = self.tokens.get(&key) {
            return Ok(known);
        }
        let answer = self.ask(self.reviewer.token(token)).await?;
        self.tokens.insert(key, answer.clone());
        Ok(answer)
    }

    async fn authorize(&self, user: &User, verb: &str, path: &str) -> Result<bool, String> {
        let mut parts: Vec<&[u8]> = vec![
            b"access",
            user.name.as_bytes(),
            user.uid.as_bytes(),
            verb.as_bytes(),
            path.as_bytes(),
        ];
        parts.extend(user.groups.iter().map(|g| g.as_bytes()));
        for (name, values) in &user.extra {
            parts.push(name.as_bytes());
            parts.extend(values.iter().map(|v| v.as_bytes()));
        }
        let key = self.digest(&parts);
        if let Some(known) = self.decisions.get(&key) {
            return Ok(known);
        }
        let allowed = self.ask(self.reviewer.access(user, verb, path)).await?;
        self.decisions.insert(key, allowed);
        Ok(allowed)
    }

    /// One review, within [`REVIEW_TIMEOUT`] and [`MAX_REVIEWS`].
    async fn ask<T>(
        &self,
        review: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        let asked = async {
            let _slot = self.slots.acquire().await.map_err(|e| e.to_string())?;
            review.await
        };
        tokio::time::timeout(REVIEW_TIMEOUT, asked)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {REVIEW_TIMEOUT:?}")))
    }

    /// A keyed hash of length-prefixed parts: cache keys that neither hold a token nor
    /// let two different requests collide.
    fn digest(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

/// The token of `Authorization: Bearer TOKEN` as k8s.io/apiserver's bearertoken
/// authenticator reads it: the header trimmed, split at spaces into at most three parts,
/// the scheme in any case, the second part non-empty.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The SubjectAccessReview verb for an HTTP method.
pub fn verb_of(method: &Method) -> String {
    match *method {
        Method::GET | Method::HEAD => "get".into(),
        Method::POST => "create".into(),
        Method::PUT => "update".into(),
        Method::PATCH => "patch".into(),
        Method::DELETE => "delete".into(),
        ref other => other.as_str().to_ascii_lowercase(),
    }
}

/// Go's `http.Error` answer with kube-rbac-proxy's body, and the challenge RFC 9110 asks
/// a 401 to carry.
fn unauthorized() -> Response<Body> {
    let mut response = text(StatusCode::UNAUTHORIZED, "Unauthorized".into());
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, "Bearer".parse().expect("valid"));
    response
}

fn refusal(status: StatusCode, what: &str, user: &User, verb: &str) -> Response<Body> {
    let name = driftd_core::text::escape_control(&user.name);
    text(
        status,
        format!("{what} (user={name}, verb={verb}, resource=, subresource=)"),
    )
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{body}\n"),
    )
        .into_response()
}

#[cfg(test)]
mod tests;
