//! `GET /history`: the drift episodes recorded in the database, newest first, with who
//! changed each object and how its drift ended. Takes `/drift`'s filters (`source`,
//! `namespace`, `kind`, `class`), a window (`since`, `until`: RFC 3339) and `limit`.

use super::Handles;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use driftd_core::report::{DriftFilter, FilterError};
use driftd_core::text::escape_control;
use driftd_store::{EpisodeRecord, HistoryQuery, Store};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Episodes answered when `limit` is absent or 0.
pub const DEFAULT_HISTORY_LIMIT: usize = 500;
/// The most episodes one answer holds; a larger `limit` is lowered to it.
pub const MAX_HISTORY_LIMIT: usize = 5000;

/// The query parameters `/history` takes besides `/drift`'s filters.
const WINDOW_PARAMS: [&str; 3] = ["since", "until", "limit"];

/// The database connection `/history` reads through, one request at a time (each is one
/// indexed query), off the async threads.
#[derive(Clone)]
pub struct HistoryReader(Arc<Mutex<Store>>);

impl HistoryReader {
    pub fn new(store: Store) -> HistoryReader {
        HistoryReader(Arc::new(Mutex::new(store)))
    }
}

/// Body of `GET /history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryResponse {
    /// Newest opened first.
    pub episodes: Vec<EpisodeRecord>,
    /// More episodes matched than `limit`: narrow the window (`until` = the oldest
    /// `opened_at` here) to see the rest.
    pub truncated: bool,
}

fn time(name: &str, value: &str) -> Result<Timestamp, String> {
    value.parse().map_err(|_| {
        format!(
            "{name} must be an RFC 3339 time such as 2026-12-01T00:00:00Z, not `{}`",
            escape_control(value)
        )
    })
}

/// The history query of `pairs`, or why none is.
pub(super) fn parse(pairs: &[(String, String)]) -> Result<HistoryQuery, String> {
    let mut query = HistoryQuery {
        limit: DEFAULT_HISTORY_LIMIT,
        ..Default::default()
    };
    let mut filters = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            _ if value.is_empty() && WINDOW_PARAMS.contains(&key.as_str()) => {}
            "since" => query.since = Some(time("since", value)?),
            "until" => query.until = Some(time("until", value)?),
            "limit" => {
                let limit: usize = value.parse().map_err(|_| {
                    format!(
                        "limit must be a count of episodes (0 or absent: \
                         {DEFAULT_HISTORY_LIMIT}), not `{}`",
                        escape_control(value)
                    )
                })?;
                query.limit = match limit {
                    0 => DEFAULT_HISTORY_LIMIT,
                    n => n.min(MAX_HISTORY_LIMIT),
                };
            }
            _ => filters.push((key.as_str(), value.as_str())),
        }
    }
    query.filter = DriftFilter::from_pairs(filters).map_err(|err| match err {
        FilterError::UnknownParam(name) => format!(
            "unknown parameter `{}`; valid: {}, {}",
            escape_control(&name),
            DriftFilter::PARAMS.join(", "),
            WINDOW_PARAMS.join(", ")
        ),
        other => escape_control(&other.to_string()).into_owned(),
    })?;
    if let (Some(since), Some(until)) = (query.since, query.until) {
        if since > until {
            return Err(format!("since ({since}) is after until ({until})"));
        }
    }
    Ok(query)
}

/// `GET /history?source=&namespace=&kind=&class=&since=&until=&limit=`. A bad parameter is
/// a 400 saying what is valid; a database that cannot be read a 500 saying why.
pub(super) async fn history(
    State(handles): State<Handles>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let mut query = match parse(&pairs) {
        Ok(query) => query,
        Err(message) => return (StatusCode::BAD_REQUEST, format!("{message}\n")).into_response(),
    };
    let Some(reader) = handles.history.clone() else {
        return (
            StatusCode::NOT_FOUND,
            "no drift history here: this server has no database\n",
        )
            .into_response();
    };
    let limit = query.limit;
    // One more than asked tells whether there are more.
    query.limit += 1;
    let read = tokio::task::spawn_blocking(move || {
        let store = reader.0.lock().unwrap_or_else(|e| e.into_inner());
        store.episode_history(&query)
    })
    .await;
    match read {
        Ok(Ok(mut episodes)) => {
            let truncated = episodes.len() > limit;
            episodes.truncate(limit);
            Json(HistoryResponse {
                episodes,
                truncated,
            })
            .into_response()
        }
        Ok(Err(err)) => {
            tracing::error!(error = %err, "cannot read the drift history");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot read the drift history: {err}\n"),
            )
                .into_response()
        }
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot read the drift history: {err}\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
