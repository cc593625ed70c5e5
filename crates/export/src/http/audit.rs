//! `POST /audit`: kube-apiserver's audit webhook backend (`--audit-webhook-config-file`)
//! posts batches of `audit.k8s.io/v1` `EventList`s here; the successful writes they hold
//! go to the engine, which names the people behind the changes it reports.
//!
//! The endpoint has its own authentication, not `[http]`'s (the webhook backend sends what
//! its kubeconfig holds: a bearer token or a client certificate): the token of
//! `[audit] webhook_token_file`, compared in constant time, or a TLS client certificate the
//! web config's `client_ca_file` verified (`webhook_client_certificates`). What comes in is
//! checked in the order that costs least to an attacker's target: credentials (401, the
//! body is not read), the rate (429, a token bucket), the size (413, before and while
//! reading), then the content (400). Only metadata of successful writes is kept
//! ([`driftd_core::audit`]); bodies are read past and never logged.

use crate::events::RateLimit;
use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use driftd_config::AuditConfig;
use driftd_core::audit::{parse_event_list, AuditRecord};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The path kube-apiserver's webhook kubeconfig points at.
pub const AUDIT_PATH: &str = "/audit";

/// Set by the server on a request whose connection presented a TLS client certificate that
/// the web config's client CA verified.
#[derive(Debug, Clone, Copy)]
pub struct VerifiedClientCert;

/// What `POST /audit` needs: its credentials, limits, and the engine's queue.
pub struct AuditIntake {
    token: Option<String>,
    client_certificates: bool,
    max_body_bytes: usize,
    rate: Mutex<RateLimit>,
    records: mpsc::Sender<Vec<AuditRecord>>,
}

impl AuditIntake {
    /// The intake `config` describes, sending to `records`; `token` is the content of
    /// `webhook_token_file`.
    pub fn new(
        config: &AuditConfig,
        token: Option<String>,
        records: mpsc::Sender<Vec<AuditRecord>>,
    ) -> AuditIntake {
        AuditIntake {
            token,
            client_certificates: config.webhook_client_certificates,
            max_body_bytes: config.max_body_bytes,
            rate: Mutex::new(RateLimit::new(
                config.max_requests_per_second,
                config.burst,
                Instant::now(),
            )),
            records,
        }
    }

    /// Whether the caller holds the token, or presented a verified client certificate.
    fn authenticated(&self, headers: &HeaderMap, cert: bool) -> bool {
        if cert && self.client_certificates {
            return true;
        }
        let Some(expected) = &self.token else {
            return false;
        };
        let Some(given) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().get(..7).zip(v.as_bytes().get(7..)))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|(_, token)| token)
        else {
            return false;
        };
        bool::from(given.ct_eq(expected.as_bytes()))
    }

    /// `Err(wait)` when the bucket is empty.
    fn take_token(&self) -> Result<(), Duration> {
        let mut rate = self.rate.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let ready = rate.ready_at(now);
        if ready > now {
            return Err(ready - now);
        }
        rate.take(now);
        Ok(())
    }
}

/// The `/audit` route over `intake`.
pub fn router(intake: Arc<AuditIntake>) -> Router {
    Router::new()
        .route(AUDIT_PATH, post(receive))
        .with_state(intake)
}

async fn receive(State(intake): State<Arc<AuditIntake>>, request: Request<Body>) -> Response {
    let cert = request.extensions().get::<VerifiedClientCert>().is_some();
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if !intake.authenticated(&headers, cert) {
        tracing::warn!("POST /audit refused: no valid bearer token or client certificate");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized\n",
        )
            .into_response();
    }
    if let Err(wait) = intake.take_token() {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, seconds.to_string())],
            "too many audit requests (audit.max_requests_per_second); retry\n",
        )
            .into_response();
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "audit batch larger than {} bytes (audit.max_body_bytes)\n",
                intake.max_body_bytes
            ),
        )
            .into_response()
    };
    if declared.is_some_and(|n| n > intake.max_body_bytes as u64) {
        return too_large();
    }
    let Ok(bytes) = to_bytes(body, intake.max_body_bytes).await else {
        return too_large();
    };
    let records = match parse_event_list(&bytes) {
        Ok(records) => records,
        Err(err) => {
            tracing::warn!(error = %err, "POST /audit: bad batch");
            return (StatusCode::BAD_REQUEST, format!("{err}\n")).into_response();
        }
    };
    let count = records.len();
    if count > 0 && intake.records.try_send(records).is_err() {
        // The engine is behind: the webhook backend retries a batch on 5xx/429.
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "audit queue full; retry\n",
        )
            .into_response();
    }
    tracing::debug!(writes = count, "audit batch taken in");
    (StatusCode::OK, "ok\n").into_response()
}

#[cfg(test)]
mod tests;
