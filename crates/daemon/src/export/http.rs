//! The HTTP API for on-call engineers and Prometheus: `GET /drift`, `/locks`, `/metrics`,
//! `/healthz`, `/readyz`, and the drift page at `/` ([`super::page`]).

use super::metrics::Metrics;
use super::page;
use crate::drift::SharedIndex;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use driftd_core::report::{DriftFilter, DriftResponse, LocksResponse};
use std::sync::Arc;

/// What the handlers read: the drift index and the metrics rendered from it.
#[derive(Clone)]
pub struct Handles {
    pub index: SharedIndex,
    pub metrics: Arc<Metrics>,
}

pub fn router(handles: Handles) -> Router {
    Router::new()
        .route("/", get(drift_page))
        .route("/drift", get(drift))
        .route("/locks", get(locks))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(handles)
}

/// `GET /drift?source=&namespace=&kind=&class=`; an unknown filter or class is a 400 that
/// lists the valid ones (an empty list would read as "no drift").
async fn drift(
    State(handles): State<Handles>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let filter = match DriftFilter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    {
        Ok(filter) => filter,
        Err(err) => return (StatusCode::BAD_REQUEST, format!("{err}\n")).into_response(),
    };
    let response = {
        let index = handles.index.read().unwrap();
        DriftResponse {
            ready: index.ready(),
            objects: index.query(&filter),
        }
    };
    Json(response).into_response()
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

/// `GET /?source=&namespace=&kind=&class=`: the drift page, with the filters of `/drift`
/// (an unknown one is a 400 page naming the valid values).
async fn drift_page(
    State(handles): State<Handles>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let filter = DriftFilter::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let index = handles.index.read().unwrap();
    let choices = page::Choices::gather(index.entries(), index.revisions());
    let (status, html) = match filter {
        Err(err) => (
            StatusCode::BAD_REQUEST,
            page::render_bad_filter(&err, &choices),
        ),
        Ok(filter) => (
            StatusCode::OK,
            page::render(&page::Page {
                now: jiff::Timestamp::now(),
                ready: index.ready(),
                filter: &filter,
                objects: &index.query(&filter),
                revisions: index.revisions(),
                choices: &choices,
                locks: index.locks(),
                locks_ready: index.locks_ready(),
                intents: index.intents(),
            }),
        ),
    };
    drop(index);
    // Defence in depth behind the escaping: the page runs no script and loads nothing.
    let policy = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'";
    (
        status,
        [
            (header::CONTENT_SECURITY_POLICY, policy),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        Html(html),
    )
        .into_response()
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

async fn readyz(State(handles): State<Handles>) -> Response {
    if handles.index.read().unwrap().ready() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: waiting for watchers to finish their first list\n",
        )
            .into_response()
    }
}
