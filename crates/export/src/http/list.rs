//! `GET /drift` and the drift page `/`: the drift list, a page at a time, as Kubernetes
//! answers a list with `limit` and `continue` (the index's `page` keeps the semantics; here
//! the query parameters and the answers). Errors about a `continue` token are Kubernetes
//! `Status` bodies, as a client of a paged list reads the 410's `metadata.continue`.

use super::Handles;
use crate::page;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use driftd_core::report::{DriftFilter, DriftResponse, FilterError};
use driftd_core::text::escape_control;
use driftd_engine::{PageError, DEFAULT_PAGE_SIZE};
use std::time::Instant;

/// The filters of a list, and which page of it.
struct ListRequest {
    filter: DriftFilter,
    /// As given: `None` or 0 is [`DEFAULT_PAGE_SIZE`] (the index lowers what is over its
    /// maximum).
    limit: Option<usize>,
    continue_token: Option<String>,
}

impl ListRequest {
    fn page_size(&self) -> usize {
        match self.limit {
            None | Some(0) => DEFAULT_PAGE_SIZE,
            Some(n) => n,
        }
    }
}

/// A query no page answers: an unknown filter or class, or a `limit` that is no count.
enum BadQuery {
    Filter(FilterError),
    Limit(String),
}

impl BadQuery {
    fn message(&self) -> String {
        match self {
            BadQuery::Filter(err) => escape_control(&err.to_string()).into_owned(),
            BadQuery::Limit(message) => message.clone(),
        }
    }
}

fn parse(pairs: &[(String, String)]) -> Result<ListRequest, BadQuery> {
    let mut limit = None;
    let mut continue_token = None;
    let mut filters = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            "limit" if value.is_empty() => {}
            "limit" => {
                limit = Some(value.parse::<usize>().map_err(|_| {
                    BadQuery::Limit(format!(
                        "limit must be a count of entries (0 or absent: {DEFAULT_PAGE_SIZE}), \
                         not `{}`",
                        escape_control(value)
                    ))
                })?)
            }
            "continue" => continue_token = (!value.is_empty()).then(|| value.clone()),
            _ => filters.push((key.as_str(), value.as_str())),
        }
    }
    let filter = DriftFilter::from_pairs(filters).map_err(BadQuery::Filter)?;
    Ok(ListRequest {
        filter,
        limit,
        continue_token,
    })
}

/// A Kubernetes `Status` failure: what kubectl and client-go read from a list's errors.
fn status(code: StatusCode, reason: &str, message: &str, continue_token: Option<&str>) -> Response {
    let mut body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    if let Some(token) = continue_token {
        body["metadata"]["continue"] = token.into();
    }
    (code, Json(body)).into_response()
}

fn page_error(err: &PageError) -> Response {
    match err {
        PageError::Expired { continue_token } => status(
            StatusCode::GONE,
            "Expired",
            &err.to_string(),
            Some(continue_token),
        ),
        _ => status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            &err.to_string(),
            None,
        ),
    }
}

/// `GET /drift?source=&namespace=&kind=&class=&limit=&continue=`: one page of the drift list.
/// An unknown filter or class, or a bad `limit`, is a 400 that says what is valid (an empty
/// list would read as "no drift"); a bad `continue` a 400 `Status`, an expired one a 410.
pub(super) async fn drift(
    State(handles): State<Handles>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let request = match parse(&pairs) {
        Ok(request) => request,
        Err(bad) => {
            return (StatusCode::BAD_REQUEST, format!("{}\n", bad.message())).into_response()
        }
    };
    let response = {
        let index = handles.index.read().unwrap();
        let page = match index.page(
            &request.filter,
            request.page_size(),
            request.continue_token.as_deref(),
            Instant::now(),
        ) {
            Ok(page) => page,
            Err(err) => return page_error(&err),
        };
        DriftResponse {
            ready: index.ready(),
            stale: index.stale_kinds(),
            no_events: handles.leadership.standing().no_events_because(),
            objects: page.objects,
            continue_token: page.continue_token,
            remaining_item_count: page.remaining_item_count,
        }
    };
    Json(response).into_response()
}

/// `GET /?source=&namespace=&kind=&class=&limit=&continue=`: the drift page, with the
/// filters of `/drift` (an unknown one is a 400 page naming the valid values), one page of
/// the list and a link to the next. A next link whose list expired shows the rest from the
/// current state and says so, as a person following it wants the rest rather than an error.
pub(super) async fn drift_page(
    State(handles): State<Handles>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Response {
    let request = parse(&pairs);
    let index = handles.index.read().unwrap();
    let choices = page::Choices::gather(index.entries(), index.revisions());
    let (status, html) = match request {
        Err(BadQuery::Filter(err)) => (
            StatusCode::BAD_REQUEST,
            page::render_bad_filter(&err, &choices),
        ),
        Err(bad) => (
            StatusCode::BAD_REQUEST,
            page::render_bad_request(&bad.message()),
        ),
        Ok(request) => {
            let now = Instant::now();
            let size = request.page_size();
            let mut result = index.page(
                &request.filter,
                size,
                request.continue_token.as_deref(),
                now,
            );
            let mut inconsistent = false;
            if let Err(PageError::Expired { continue_token }) = &result {
                inconsistent = true;
                result = index.page(&request.filter, size, Some(continue_token), now);
            }
            match result {
                Err(err) => (
                    StatusCode::BAD_REQUEST,
                    page::render_bad_request(&err.to_string()),
                ),
                Ok(list) => (
                    StatusCode::OK,
                    page::render(&page::Page {
                        now: jiff::Timestamp::now(),
                        ready: index.ready(),
                        stale: &index.stale_kinds(),
                        no_events: handles.leadership.standing().no_events_because(),
                        filter: &request.filter,
                        objects: &list.objects,
                        paging: page::Paging {
                            continued: request.continue_token.is_some(),
                            inconsistent,
                            next: list.continue_token,
                            remaining: list.remaining_item_count,
                            limit: request.limit,
                        },
                        revisions: index.revisions(),
                        choices: &choices,
                        locks: index.locks(),
                        locks_ready: index.locks_ready(),
                        intents: index.intents(),
                    }),
                ),
            }
        }
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

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
