//! The HTTP API for on-call engineers and Prometheus: `GET /drift`, `/metrics`, `/healthz`,
//! `/readyz`.

use crate::drift::EngineHandles;
use crate::drift::{DriftEntry, DriftFilter};
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

/// Body of `GET /drift`.
#[derive(Debug, Serialize, Deserialize)]
pub struct DriftResponse {
    /// False until every watcher finished its first list: the answer may be incomplete.
    pub ready: bool,
    pub objects: Vec<DriftEntryOut>,
}

/// `DriftEntry` as it travels over HTTP (also what `driftd drift` reads back).
pub type DriftEntryOut = serde_json::Value;

pub fn router(handles: EngineHandles) -> Router {
    Router::new()
        .route("/drift", get(drift))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(handles)
}

async fn drift(
    State(handles): State<EngineHandles>,
    Query(filter): Query<DriftFilter>,
) -> Response {
    let (ready, entries): (bool, Vec<DriftEntry>) = {
        let index = handles.index.read().unwrap();
        (index.ready(), index.query(&filter))
    };
    let objects = entries
        .iter()
        .map(|e| serde_json::to_value(e).expect("entries serialize"))
        .collect();
    Json(DriftResponse { ready, objects }).into_response()
}

async fn metrics(State(handles): State<EngineHandles>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handles.metrics.render(),
    )
        .into_response()
}

async fn readyz(State(handles): State<EngineHandles>) -> Response {
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
