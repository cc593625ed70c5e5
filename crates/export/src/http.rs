//! The HTTP API for on-call engineers and Prometheus: `GET /drift`, `/history`, `/locks`,
//! `/metrics`, `/healthz`, `/readyz`, and the drift page at `/` ([`super::page`]). The routes are here;
//! `app` puts limits and authentication in front of them, `server` drives the connections.

mod app;
pub mod audit;
mod auth;
mod delegated;
mod history;
mod list;
pub mod server;

pub use app::{App, HEALTH_PATHS};
pub use history::{HistoryReader, HistoryResponse, DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT};

use super::metrics::Metrics;
use super::web_config::WebConfig;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use driftd_config::{HttpAuth, HttpConfig};
use driftd_core::report::LocksResponse;
use driftd_engine::Leadership;
use driftd_engine::SharedIndex;
use std::sync::Arc;
use std::time::SystemTime;

/// What the handlers read: the drift index and the metrics rendered from it.
#[derive(Clone)]
pub struct Handles {
    pub index: SharedIndex,
    pub metrics: Arc<Metrics>,
    /// Whether this replica leads, and why not (`/readyz`, `/drift` and the page say so).
    pub leadership: Leadership,
    /// The database `/history` reads the drift episodes from (`None`: answered 404).
    pub history: Option<HistoryReader>,
}

pub fn router(handles: Handles) -> Router {
    Router::new()
        .route("/", get(list::drift_page))
        .route("/drift", get(list::drift))
        .route("/history", get(history::history))
        .route("/locks", get(locks))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(handles)
}

/// The routes behind `[http]`'s request limits and authentication (the web config's, or
/// the API server's with `auth = "kubernetes"`, asked through `client`), and the web
/// config's headers.
///
/// With `audit`, `POST /audit` takes audit events, behind its own authentication
/// ([`audit`]).
pub fn app(
    handles: Handles,
    config: &HttpConfig,
    web: &WebConfig,
    client: kube::Client,
    audit: Option<Arc<audit::AuditIntake>>,
) -> App {
    let guard = match config.auth {
        HttpAuth::Kubernetes => Some(app::Guard::Kubernetes(delegated::KubernetesAuth::new(
            std::sync::Arc::new(delegated::KubeReviewer::new(client)),
            config.auth_cache(),
        ))),
        HttpAuth::None => auth::BasicAuth::new(web.users.clone()).map(app::Guard::Basic),
    };
    let routes = match audit {
        Some(intake) => router(handles).merge(audit::router(intake)),
        None => router(handles),
    };
    App::new(
        routes,
        app::AppSettings {
            max_in_flight_requests: config.max_in_flight_requests,
            request_timeout: config.request_timeout(),
            auth: guard,
            health_requires_auth: config.health_requires_auth,
            headers: web.headers.clone(),
        },
    )
}

/// How `[http] auth` combines with the web config, checked at start: the Kubernetes auth
/// and `basic_auth_users` both read the `Authorization` header, so not both; TLS combines
/// with either (and should carry bearer tokens: without it they cross the network in clear,
/// which is only warned about, as the NetworkPolicy or a service mesh may protect them).
pub fn check_auth(config: &HttpConfig, web: &WebConfig) -> Result<(), String> {
    if config.auth != HttpAuth::Kubernetes {
        return Ok(());
    }
    if !web.users.is_empty() {
        return Err(
            "http.auth = \"kubernetes\" and the web config's basic_auth_users both read the \
             Authorization header: remove basic_auth_users (TLS settings may stay) or set \
             http.auth = \"none\""
                .into(),
        );
    }
    if web.tls.is_none() {
        tracing::warn!(
            "http.auth = \"kubernetes\" without TLS: clients' bearer tokens cross the network \
             in clear; configure tls_server_config in the web config (http.web_config_file)"
        );
    }
    Ok(())
}

/// `GET /locks`: every stale deploy lock with why and the command that releases it; ages
/// as of the request.
async fn locks(State(handles): State<Handles>) -> Response {
    let now = jiff::Timestamp::now();
    let mut response = {
        let index = handles.index.read().unwrap();
        LocksResponse {
            ready: index.locks_ready(),
            locks: index.locks().to_vec(),
        }
    };
    for lock in &mut response.locks {
        lock.age_seconds = now.duration_since(lock.created_at).as_secs();
    }
    Json(response).into_response()
}

async fn metrics(State(handles): State<Handles>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handles.metrics.render(),
    )
        .into_response()
}

/// 503 until every watcher finished its first list. Failed database operations do not make
/// driftd unready (a 503 takes the pod out of its Service, yet `/drift` and `/metrics` are
/// still right from memory; only drift episodes go unrecorded), but the body says them, and
/// `driftd_store_errors_total` counts them for alerting.
///
/// Nor does an API server outage once every kind was listed: unready, the pod would leave
/// its Service and Prometheus (scraping through it) would lose `driftd_watch_healthy` and
/// the stale marks just when they matter, and a restart cannot fix the API server. The
/// outage shows as `stale` in `/drift`, on the page and in `driftd_watch_healthy`.
async fn readyz(State(handles): State<Handles>) -> Response {
    let store = handles.metrics.store_errors.summary(SystemTime::now());
    let ready = handles.index.read().unwrap().ready();
    let (status, mut body) = if ready {
        (StatusCode::OK, "ready".to_string())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: waiting for watchers to finish their first list".to_string(),
        )
    };
    if let Some(store) = store {
        body.push_str("; but ");
        body.push_str(&store);
    }
    // Not a reason to be unready (a follower serves reads as well as the leader does), but
    // what a probe's body should tell whoever looks.
    if let Some(why) = handles.leadership.standing().no_events_because() {
        body.push_str("; this replica publishes no Kubernetes Events: ");
        body.push_str(&why);
    }
    body.push('\n');
    (status, body).into_response()
}
