//! Who holds a token and what it may do, as kube-apiserver answers a component that
//! delegates its authentication and authorization (kube-rbac-proxy, the kubelet,
//! aggregated API servers): TokenReview ([`tokens`]), SubjectAccessReview ([`access`])
//! decided by RBAC over the stored roles and bindings ([`rbac`]), and the TokenRequest
//! subresource `kubectl create token` calls to get a ServiceAccount's token.
//!
//! The simulator itself still serves every request without checking who sends it; these
//! APIs only answer questions about tokens and permissions.

pub mod access;
pub mod rbac;
pub mod tokens;

pub use tokens::{Tokens, UserInfo, ADMIN_USER, API_AUDIENCE};

use std::sync::atomic::{AtomicU64, Ordering};

/// The tokens, and how many reviews were answered (`/_sim/stats`), so a test can tell
/// whether a client cached its answers.
#[derive(Default)]
pub struct Auth {
    pub tokens: Tokens,
    token_reviews: AtomicU64,
    access_reviews: AtomicU64,
}

impl Auth {
    pub fn counted_token_review(&self) {
        self.token_reviews.fetch_add(1, Ordering::Relaxed);
    }

    pub fn counted_access_review(&self) {
        self.access_reviews.fetch_add(1, Ordering::Relaxed);
    }

    /// (TokenReviews, SubjectAccessReviews) answered so far.
    pub fn reviews(&self) -> (u64, u64) {
        (
            self.token_reviews.load(Ordering::Relaxed),
            self.access_reviews.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests;
